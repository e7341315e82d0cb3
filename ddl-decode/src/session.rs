//! What ddl_pgoutput keeps per decoding context.
//!
//! pgoutput owns `ctx->output_plugin_private`, so our state lives in a backend-local slot. A
//! decoding context can end without the shutdown callback (an ERROR in
//! `pg_logical_slot_get_changes` just drops the transaction's memory), so the slot is not
//! cleared by shutdown but by a reset callback on `ctx->context`: whenever PostgreSQL frees
//! the context, the state goes with it and can never leak into the next decoding context.

use pgrx::list::PgList;
use pgrx::pg_sys;
use std::cell::RefCell;
use std::ffi::CStr;

/// The state of the current decoding context.
pub struct Session {
    /// The `publication_names` the client asked for, as pgoutput reads them.
    pub publications: Vec<String>,
    /// Per-message allocations (the synthetic tuple), reset after each DDL event.
    pub scratch: pg_sys::MemoryContext,
}

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
}

/// Starts the session of `ctx`, after pgoutput's startup has validated the options.
///
/// # Safety
/// `ctx` is the live decoding context of this backend.
pub unsafe fn begin(ctx: *mut pg_sys::LogicalDecodingContext) {
    let parent = (*ctx).context;
    let scratch = pg_sys::AllocSetContextCreateInternal(
        parent,
        c"ddl_pgoutput events".as_ptr(),
        0,
        8 * 1024,
        8 * 1024 * 1024,
    );
    let callback =
        pg_sys::MemoryContextAlloc(parent, std::mem::size_of::<pg_sys::MemoryContextCallback>())
            as *mut pg_sys::MemoryContextCallback;
    callback.write(pg_sys::MemoryContextCallback {
        func: Some(end),
        arg: std::ptr::null_mut(),
        next: std::ptr::null_mut(),
    });
    pg_sys::MemoryContextRegisterResetCallback(parent, callback);
    let publications = publication_names((*ctx).output_plugin_options);
    SESSION.with(|s| {
        *s.borrow_mut() = Some(Session {
            publications,
            scratch,
        })
    });
}

unsafe extern "C-unwind" fn end(_arg: *mut std::ffi::c_void) {
    SESSION.with(|s| s.borrow_mut().take());
}

/// Runs `f` with the current session; `None` outside a decoding context.
pub fn with<R>(f: impl FnOnce(&Session) -> R) -> Option<R> {
    SESSION.with(|s| s.borrow().as_ref().map(f))
}

/// The `publication_names` option, split as pgoutput splits it (SplitIdentifierString:
/// comma-separated, unquoted names folded to lower case). pgoutput's startup already refused a
/// malformed list, so a failure here only means "no publications".
unsafe fn publication_names(options: *mut pg_sys::List) -> Vec<String> {
    let mut names = Vec::new();
    for def in PgList::<pg_sys::DefElem>::from_pg(options).iter_ptr() {
        if CStr::from_ptr((*def).defname).to_bytes() != b"publication_names" {
            continue;
        }
        let raw = pg_sys::defGetString(def); // a palloc'd copy we may scribble on
        let mut list: *mut pg_sys::List = std::ptr::null_mut();
        if !pg_sys::SplitIdentifierString(raw, b',' as std::ffi::c_char, &mut list) {
            continue;
        }
        for name in PgList::<std::ffi::c_char>::from_pg(list).iter_ptr() {
            names.push(CStr::from_ptr(name).to_string_lossy().into_owned());
        }
    }
    names
}
