//! What ddl_pgoutput keeps per decoding context.
//!
//! pgoutput owns `ctx->output_plugin_private`, so our state lives in a backend-local slot. A
//! decoding context can end without the shutdown callback (an ERROR in
//! `pg_logical_slot_get_changes` just drops the transaction's memory), so the slot is not
//! cleared by shutdown but by a reset callback on `ctx->context`: whenever PostgreSQL frees
//! the context, the state goes with it and can never leak into the next decoding context.

use ddl_capture::rules::RulesCache;
use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::ffi::{CStr, CString};

/// The state of the current decoding context.
pub struct Session {
    /// The `publication_names` the client asked for, as pgoutput reads them (in the database
    /// encoding: they are only looked up in the catalog).
    pub publications: Vec<CString>,
    /// Per-message allocations (the synthetic tuple), reset after each DDL event.
    pub scratch: pg_sys::MemoryContext,
    /// `publication_sync` as of the point being decoded, kept between DDL events. Its own to
    /// the context: a later context of the same slot may decode the same history again, from
    /// an earlier point (`pg_logical_slot_peek_changes`).
    pub rules: RulesCache,
}

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
}

/// Starts the session of `ctx`, after pgoutput's startup has validated the options. Guarded:
/// the startup callback that calls it is not.
///
/// # Safety
/// `ctx` is the live decoding context of this backend.
#[pg_guard]
pub unsafe extern "C-unwind" fn begin(ctx: *mut pg_sys::LogicalDecodingContext) {
    // SAFETY: the caller's promise.
    let (parent, options) = unsafe { ((*ctx).context, (*ctx).output_plugin_options) };
    // SAFETY: a child of the decoding context's memory context, deleted with it.
    let scratch = unsafe {
        pg_sys::AllocSetContextCreateInternal(
            parent,
            c"ddl_pgoutput events".as_ptr(),
            0,
            8 * 1024,
            8 * 1024 * 1024,
        )
    };
    // SAFETY: the callback is allocated in the context it watches: it is there until that
    // context is reset or deleted, when it runs once.
    unsafe {
        let callback = pg_sys::MemoryContextAlloc(
            parent,
            std::mem::size_of::<pg_sys::MemoryContextCallback>(),
        ) as *mut pg_sys::MemoryContextCallback;
        callback.write(pg_sys::MemoryContextCallback {
            func: Some(end),
            arg: std::ptr::null_mut(),
            next: std::ptr::null_mut(),
        });
        pg_sys::MemoryContextRegisterResetCallback(parent, callback);
    }
    // SAFETY: the context's options, which pgoutput's startup has just read: DefElems.
    let publications = unsafe { publication_names(options) };
    SESSION.with(|s| {
        *s.borrow_mut() = Some(Session {
            publications,
            scratch,
            rules: RulesCache::new(),
        })
    });
}

/// Forgets the session when its decoding context's memory goes.
///
/// # Safety
/// Called by PostgreSQL as the reset callback `begin` registered.
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
///
/// # Safety
/// `options` is NIL or a List of DefElems: a decoding context's options.
unsafe fn publication_names(options: *mut pg_sys::List) -> Vec<CString> {
    let mut names = Vec::new();
    // SAFETY: the caller's promise.
    for def in unsafe { PgList::<pg_sys::DefElem>::from_pg(options) }.iter_ptr() {
        // SAFETY: a DefElem of the list, with a NUL-terminated name.
        if unsafe { CStr::from_ptr((*def).defname) }.to_bytes() != b"publication_names" {
            continue;
        }
        // SAFETY: an option with a value (pgoutput's startup read it). SplitIdentifierString
        // splits in place into a List of pointers into the string it is given, and for a String
        // value defGetString returns the option's own string, so it splits a copy: the
        // options stay as the client sent them.
        let list = unsafe {
            let raw = pg_sys::pstrdup(pg_sys::defGetString(def));
            let mut list: *mut pg_sys::List = std::ptr::null_mut();
            if !pg_sys::SplitIdentifierString(raw, b',' as std::ffi::c_char, &mut list) {
                continue;
            }
            list
        };
        // SAFETY: a List of NUL-terminated names, valid while the option's string is.
        for name in unsafe { PgList::<std::ffi::c_char>::from_pg(list) }.iter_ptr() {
            // SAFETY: as above.
            names.push(unsafe { CStr::from_ptr(name) }.to_owned());
        }
    }
    names
}
