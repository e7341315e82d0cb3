//! PostgreSQL's command collection, read by calling its set-returning functions directly.
//!
//! `pg_event_trigger_ddl_commands()` and `pg_event_trigger_dropped_objects()` are the only way
//! to the collection (its state is private to event_trigger.c). Calling them through SPI cost
//! a parse, an analysis and a plan of the query for every captured statement: about a fifth of
//! a DDL statement's time in `cargo xtask bench capture`. Called here as the executor would
//! call them, in materialize mode, they cost only what they compute.
//!
//! Almost: PostgreSQL declares them with OUT parameters, so each call rebuilds its row type
//! from `pg_proc` (arrays deconstructed, a syscache lookup per column, the record type
//! registered again): two thirds of what a call costs, 16 k instructions of the capture's
//! 80 k per statement. The extension declares the same internal functions again returning
//! plain `record` (`ddl_sync.ddl_commands()`, `ddl_sync.dropped_objects()`, sql/capture.sql),
//! and the capture calls those with the row type in `ReturnSetInfo.expectedDesc`, where
//! `get_call_result_type` takes it for a function that returns `record`: the row type is
//! built once per backend, from PostgreSQL's own declaration. Without those declarations (a
//! library newer than the extension's installed version) the functions are called as
//! PostgreSQL declares them.

use crate::invalidation;
use ddl_server::errors::{self, OrInternal};
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

/// One of the command collection's set-returning functions.
#[derive(Clone, Copy)]
pub enum Collection {
    /// `pg_event_trigger_ddl_commands()`: what each command of the statement made or changed
    /// (in a `ddl_command_end` trigger).
    Commands,
    /// `pg_event_trigger_dropped_objects()`: what the statement dropped (in a `sql_drop`
    /// trigger).
    Dropped,
}

impl Collection {
    /// PostgreSQL's own declaration.
    fn builtin(self) -> pg_sys::Oid {
        pg_sys::Oid::from(match self {
            Collection::Commands => pg_sys::F_PG_EVENT_TRIGGER_DDL_COMMANDS,
            Collection::Dropped => pg_sys::F_PG_EVENT_TRIGGER_DROPPED_OBJECTS,
        })
    }

    /// The name of the extension's declaration of the same function, returning `record`, in
    /// the extension's schema `ddl_sync`.
    fn record_alias(self) -> &'static CStr {
        match self {
            Collection::Commands => c"ddl_commands",
            Collection::Dropped => c"dropped_objects",
        }
    }

    /// The OID of [`record_alias`](Self::record_alias), 0 when there is none. Read from the
    /// catalog without privilege checks: the capture runs as whoever runs the statement.
    ///
    /// # Safety
    /// Runs in a backend inside a transaction.
    unsafe fn find_alias(self) -> pg_sys::Oid {
        // SAFETY: the caller's promise; syscache lookups of NUL-terminated names (missing_ok),
        // the argument types an empty oidvector.
        unsafe {
            let namespace = pg_sys::get_namespace_oid(c"ddl_sync".as_ptr(), true);
            if namespace == pg_sys::InvalidOid {
                return pg_sys::InvalidOid;
            }
            pg_sys::GetSysCacheOid(
                ddl_server::versions::syscache(pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP),
                pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
                pg_sys::Datum::from(self.record_alias().as_ptr()),
                pg_sys::Datum::from(pg_sys::buildoidvector(std::ptr::null(), 0)),
                pg_sys::Datum::from(namespace),
                pg_sys::Datum::from(0usize),
            )
        }
    }

    /// The function to call, looked up, and the row type to give it (null: it builds its
    /// own).
    ///
    /// # Safety
    /// Runs in a backend inside a transaction.
    unsafe fn callee(self) -> (pg_sys::FmgrInfo, pg_sys::TupleDesc) {
        thread_local! {
            static ALIASES: [invalidation::Cached<Option<pg_sys::FmgrInfo>>; 2] =
                const { [invalidation::Cached::new(), invalidation::Cached::new()] };
        }
        // The alias lives as long as the extension, whose DROP invalidates publication_sync.
        // Looked up once: finding an internal function that is not PostgreSQL's own by its
        // name (fmgr_info) compares it with every built-in function's.
        // SAFETY: the caller's promise; fmgr_info of a function, kept in a context as
        // long-lived as the cache.
        let alias = ALIASES.with(|a| unsafe {
            a[self as usize].get(|| {
                let watched = ddl_server::extension_tables::relid(c"publication_sync");
                let alias = self.find_alias();
                let flinfo = (alias != pg_sys::InvalidOid).then(|| {
                    let mut flinfo: pg_sys::FmgrInfo = std::mem::zeroed();
                    pg_sys::fmgr_info_cxt(alias, &mut flinfo, pg_sys::TopMemoryContext);
                    flinfo
                });
                // Only PostgreSQL's own function under another declaration is called with a
                // row type of ours: whatever else bears the name is ignored. (C functions of
                // the server, compared by address.)
                let address = |f: &pg_sys::FmgrInfo| f.fn_addr.map(|p| p as usize);
                let builtin = address(&Self::info(self.builtin()));
                (
                    watched,
                    flinfo.filter(|f| builtin.is_some() && address(f) == builtin),
                )
            })
        });
        match alias {
            // SAFETY: the caller's promise.
            Some(flinfo) => (flinfo, unsafe { self.row_type() }),
            // SAFETY: a built-in function, found by its OID.
            None => (unsafe { Self::info(self.builtin()) }, std::ptr::null_mut()),
        }
    }

    /// The call information of built-in function `oid`.
    ///
    /// # Safety
    /// `oid` is a built-in function's.
    unsafe fn info(oid: pg_sys::Oid) -> pg_sys::FmgrInfo {
        // SAFETY: plain C struct, for which all zeroes is a valid value; the caller's promise.
        unsafe {
            let mut flinfo: pg_sys::FmgrInfo = std::mem::zeroed();
            pg_sys::fmgr_info(oid, &mut flinfo);
            flinfo
        }
    }

    /// The row type PostgreSQL declares for the function, built once per backend (it is
    /// the server's, fixed while the backend runs).
    ///
    /// # Safety
    /// Runs in a backend inside a transaction.
    unsafe fn row_type(self) -> pg_sys::TupleDesc {
        thread_local! {
            static ROW_TYPES: [std::cell::Cell<pg_sys::TupleDesc>; 2] = const {
                [std::cell::Cell::new(std::ptr::null_mut()), std::cell::Cell::new(std::ptr::null_mut())]
            };
        }
        let at = self as usize;
        let cached = ROW_TYPES.with(|r| r[at].get());
        if !cached.is_null() {
            return cached;
        }
        // SAFETY: the caller's promise; a built-in function with OUT parameters, whose row type
        // is copied into a context that lives as long as the backend.
        let desc = unsafe {
            let mut built: pg_sys::TupleDesc = std::ptr::null_mut();
            let class =
                pg_sys::get_func_result_type(self.builtin(), std::ptr::null_mut(), &mut built);
            if class != pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE || built.is_null() {
                errors::internal(format_args!(
                    "{:?} does not return rows",
                    self.record_alias()
                ));
            }
            PgMemoryContexts::TopMemoryContext.switch_to(|_| pg_sys::CreateTupleDescCopy(built))
        };
        ROW_TYPES.with(|r| r[at].set(desc));
        desc
    }
}

/// Calls `collection`'s function and gives `each` every row, in order. Everything the call
/// allocates lives in a memory context deleted on return.
///
/// # Safety
/// Runs in a backend inside a transaction, in the event trigger that may call the function.
pub unsafe fn for_each_row(collection: Collection, mut each: impl FnMut(&Row)) {
    // SAFETY: the caller's promise.
    let (mut flinfo, row_type) = unsafe { collection.callee() };
    let call = |_: &mut PgMemoryContexts| {
        // SAFETY: a plain C struct (integers, pointers), for which all zeroes is a valid value.
        let mut rsinfo: pg_sys::ReturnSetInfo = unsafe { std::mem::zeroed() };
        rsinfo.type_ = pg_sys::NodeTag::T_ReturnSetInfo;
        // Kept for the backend's life: the function uses it as its result's row type, and
        // nothing here frees it.
        rsinfo.expectedDesc = row_type;
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
        let function = flinfo.fn_addr.or_internal("fmgr_info set no fn_addr");
        // SAFETY: the function's own calling convention, with the frame the executor would
        // give it in materialize mode (it takes no argument). A raw C
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
