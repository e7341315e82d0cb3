//! Small pieces of server machinery that several parts of the extension use.

use pgrx::pg_sys;
use std::ffi::CString;

/// The OID of the relation `rv` names, resolved with the current search_path, without a lock;
/// `None` when there is none (the statement that names it then fails on its own).
///
/// # Safety
/// `rv` is a valid `RangeVar`; runs in a transaction.
pub unsafe fn relation_oid(rv: *mut pg_sys::RangeVar) -> Option<pg_sys::Oid> {
    let relid = pg_sys::RangeVarGetRelidExtended(
        rv,
        pg_sys::NoLock as pg_sys::LOCKMODE,
        pg_sys::RVROption::RVR_MISSING_OK,
        None,
        std::ptr::null_mut(),
    );
    (relid != pg_sys::InvalidOid).then_some(relid)
}

/// Runs `f` with `path` as search_path, then undoes every setting changed inside (an ERROR
/// inside leaves that to the abort of the (sub)transaction).
///
/// The replay runs only the event's own statement (and the name lookups that must see what it
/// sees) under the event's search_path: anything else ddl_sync does in between (its own
/// queries, as the subscription owner) would otherwise resolve operators and functions in
/// schemas the publisher's roles can write to.
pub fn with_search_path<R>(path: &str, f: impl FnOnce() -> R) -> R {
    // The output plugin sends no record with a NUL byte; a row that has one runs nothing.
    let value = CString::new(path).unwrap_or_default();
    // SAFETY: a new GUC nest level, the setting saved in it, and the level popped after, as
    // fmgr does for a function's `SET` clause, but popped as on abort (as PostgreSQL's index
    // builds do): code the statement runs (a function in a USING expression, say) may call
    // set_config(..., false), which a committed level would keep for the apply worker's
    // session, its search_path included.
    unsafe {
        let nest = pg_sys::NewGUCNestLevel();
        pg_sys::set_config_option(
            c"search_path".as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        let result = f();
        pg_sys::AtEOXact_GUC(false, nest);
        result
    }
}
