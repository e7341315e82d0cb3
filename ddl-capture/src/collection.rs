//! PostgreSQL's command collection, read by calling its set-returning functions directly.
//!
//! `pg_event_trigger_ddl_commands()` and `pg_event_trigger_dropped_objects()` are the only way
//! to the collection (its state is private to event_trigger.c). Calling them through SPI cost
//! a parse, an analysis and a plan of the query for every captured statement: about a fifth of
//! a DDL statement's time in `cargo xtask bench capture`. Called here as the executor would
//! call them, in materialize mode, they cost only what they compute.

use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::PgMemoryContexts;
use std::ffi::CStr;

/// One row of a set-returning function's result, read by column name.
pub struct Row {
    desc: pg_sys::TupleDesc,
    slot: *mut pg_sys::TupleTableSlot,
}

impl Row {
    /// The value of column `name`; `None` when NULL or no such column.
    fn datum(&self, name: &CStr) -> Option<pg_sys::Datum> {
        // SAFETY: the slot holds a row of `desc`; all its attributes were deformed.
        unsafe {
            let at = ddl_server::versions::attributes(self.desc)
                .iter()
                .position(|a| CStr::from_ptr(a.attname.data.as_ptr()) == name)?;
            let isnull = *(*self.slot).tts_isnull.add(at);
            (!isnull).then(|| *(*self.slot).tts_values.add(at))
        }
    }

    pub fn oid(&self, name: &CStr) -> u32 {
        self.datum(name).map_or(0, |d| d.value() as u32)
    }

    pub fn int(&self, name: &CStr) -> i32 {
        self.datum(name).map_or(0, |d| d.value() as i32)
    }

    pub fn bool(&self, name: &CStr) -> bool {
        self.datum(name).is_some_and(|d| d.value() != 0)
    }

    /// A pointer-valued column (`pg_ddl_command`); null when NULL.
    pub fn pointer(&self, name: &CStr) -> *mut std::ffi::c_void {
        self.datum(name)
            .map_or(std::ptr::null_mut(), |d| d.cast_mut_ptr())
    }

    /// Whether the `text` column `name` holds exactly `expected` (false when NULL): compared
    /// as bytes, without a conversion (for ASCII values such as command tags).
    pub fn text_is(&self, name: &CStr, expected: &str) -> bool {
        self.datum(name).is_some_and(|d| {
            // SAFETY: the column is of type text; the copy lives in the call's memory context.
            unsafe { CStr::from_ptr(pg_sys::text_to_cstring(d.cast_mut_ptr())) }.to_bytes()
                == expected.as_bytes()
        })
    }

    pub fn text(&self, name: &CStr) -> String {
        self.datum(name).map_or_else(String::new, |d| {
            // SAFETY: the column is of type text; the copy lives in the call's memory context.
            unsafe {
                let s = pg_sys::text_to_cstring(d.cast_mut_ptr());
                ddl_server::text::utf8(CStr::from_ptr(s))
            }
        })
    }
}

/// Calls the argument-less set-returning function `fn_oid` and gives `each` every row, in
/// order. Everything the call allocates lives in a memory context deleted on return.
///
/// # Safety
/// Runs in a backend inside a transaction; `fn_oid` is a built-in SRF that supports
/// materialize mode and takes no argument.
pub unsafe fn for_each_row(fn_oid: u32, mut each: impl FnMut(&Row)) {
    let call = |_: &mut PgMemoryContexts| {
        // SAFETY: plain C structs (integers, pointers, nullable function pointers), for which
        // all zeroes is a valid value.
        let (mut flinfo, mut rsinfo): (pg_sys::FmgrInfo, pg_sys::ReturnSetInfo) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        // SAFETY: the caller's promise: `fn_oid` is a built-in function.
        unsafe { pg_sys::fmgr_info(pg_sys::Oid::from(fn_oid), &mut flinfo) };
        rsinfo.type_ = pg_sys::NodeTag::T_ReturnSetInfo;
        rsinfo.allowedModes = pg_sys::SetFunctionReturnMode::SFRM_Materialize as i32;
        rsinfo.returnMode = pg_sys::SetFunctionReturnMode::SFRM_Materialize;
        // SAFETY: palloc0 gives zeroed memory of each struct's size in the current (scratch)
        // context, which outlives the call; `flinfo` and `rsinfo` outlive it too.
        let fcinfo = unsafe {
            // The functions only take the per-query memory context from it.
            let econtext = pg_sys::palloc0(std::mem::size_of::<pg_sys::ExprContext>())
                .cast::<pg_sys::ExprContext>();
            (*econtext).type_ = pg_sys::NodeTag::T_ExprContext;
            (*econtext).ecxt_per_query_memory = pg_sys::CurrentMemoryContext;
            (*econtext).ecxt_per_tuple_memory = pg_sys::CurrentMemoryContext;
            rsinfo.econtext = econtext;
            // No argument: the fixed part of FunctionCallInfoBaseData is the whole call frame.
            let fcinfo = pg_sys::palloc0(std::mem::size_of::<pg_sys::FunctionCallInfoBaseData>())
                .cast::<pg_sys::FunctionCallInfoBaseData>();
            (*fcinfo).flinfo = &mut flinfo;
            (*fcinfo).resultinfo = std::ptr::addr_of_mut!(rsinfo).cast();
            (*fcinfo).fncollation = pg_sys::InvalidOid;
            (*fcinfo).nargs = 0;
            fcinfo
        };
        let function = flinfo.fn_addr.expect("fmgr_info sets fn_addr");
        // SAFETY: the function's own calling convention, with the frame the executor would
        // give it in materialize mode (the caller's promise: it takes no argument). A raw C
        // function pointer: an ERROR inside becomes a Rust panic and unwinds to here.
        unsafe { pg_guard_ffi_boundary(|| function(fcinfo)) };
        if rsinfo.setResult.is_null() {
            return; // no row at all
        }
        // SAFETY: the function left a tuplestore of rows of `setDesc`, both in the current
        // context; the slot is made for that descriptor.
        let slot = unsafe {
            pg_sys::MakeSingleTupleTableSlot(rsinfo.setDesc, &pg_sys::TTSOpsMinimalTuple)
        };
        let row = Row {
            desc: rsinfo.setDesc,
            slot,
        };
        // SAFETY: the tuplestore and the slot above.
        while unsafe { pg_sys::tuplestore_gettupleslot(rsinfo.setResult, true, false, slot) } {
            // SAFETY: the slot holds a row of `setDesc`: every attribute is deformed before
            // `each` reads it (see `Row::datum`).
            unsafe { pg_sys::slot_getsomeattrs_int(slot, (*rsinfo.setDesc).natts) };
            each(&row);
        }
        // SAFETY: both made above, each ended once; `row` is not used after.
        unsafe {
            pg_sys::ExecDropSingleTupleTableSlot(slot);
            pg_sys::tuplestore_end(rsinfo.setResult);
        }
    };
    let mut scratch = PgMemoryContexts::new("ddl_sync command collection");
    // SAFETY: `scratch` is a context of our own, made just now: current while `call` runs,
    // and deleted only when it drops, after everything allocated in it is done with.
    unsafe { scratch.switch_to(call) };
}
