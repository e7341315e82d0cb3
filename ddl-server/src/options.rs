//! Our options in a utility statement's `WITH (...)` list (`ddl` of CREATE/ALTER PUBLICATION,
//! `ddl`, `ddl_conflict`, ... of CREATE/ALTER SUBSCRIPTION), which PostgreSQL would reject as
//! unknown: found, read and taken out before PostgreSQL parses the rest, with its own errors
//! for what it would have refused (a repeated option, a value of the wrong kind).

use pgrx::list::PgList;
use pgrx::pg_sys;
use std::ffi::CStr;

/// The option `name` of `options`; a second one is PostgreSQL's ERROR "conflicting or redundant
/// options", as for its own options.
///
/// # Safety
/// `options` is a statement's list of `DefElem`s (or NIL).
pub unsafe fn find(options: *mut pg_sys::List, name: &str) -> Option<*mut pg_sys::DefElem> {
    let mut found = None;
    // SAFETY: the caller's promise: every element is a DefElem with a NUL-terminated name.
    for def in unsafe { PgList::<pg_sys::DefElem>::from_pg(options) }.iter_ptr() {
        // SAFETY: as above.
        if unsafe { CStr::from_ptr((*def).defname) }.to_bytes() == name.as_bytes() {
            if found.is_some() {
                // SAFETY: raises PostgreSQL's ERROR (no parse state: no cursor position).
                unsafe { pg_sys::errorConflictingDefElem(def, std::ptr::null_mut()) };
            }
            found = Some(def);
        }
    }
    found
}

/// The option's value as text (`defGetString`), in UTF-8.
///
/// # Safety
/// `def` is a `DefElem` of a statement; in a backend.
pub unsafe fn string_value(def: *mut pg_sys::DefElem) -> String {
    // SAFETY: defGetString returns a NUL-terminated string, or raises PostgreSQL's ERROR for
    // an option without a value.
    unsafe { crate::text::utf8_ptr(pg_sys::defGetString(def)) }
}

/// The option's value as a boolean (`defGetBoolean`: no value is true).
///
/// # Safety
/// As [`string_value`].
pub unsafe fn bool_value(def: *mut pg_sys::DefElem) -> bool {
    // SAFETY: the caller's promise; PostgreSQL's ERROR for a value that is not a boolean.
    unsafe { pg_sys::defGetBoolean(def) }
}

/// Takes the option `name` out of `*options`, if it is there.
///
/// # Safety
/// As [`find`]; `*options` belongs to a statement tree the caller may change (see
/// [`writable`]).
pub unsafe fn remove(options: *mut *mut pg_sys::List, name: &str) {
    // SAFETY: the caller's promise.
    unsafe {
        if let Some(def) = find(*options, name) {
            *options = pg_sys::list_delete_ptr(*options, def.cast());
        }
    }
}

/// The statement to take options out of: `pstmt` itself, or a copy when its tree is read-only
/// (a cached plan: a prepared statement, a PL/pgSQL plan, which must not change).
///
/// # Safety
/// `pstmt` is the statement ProcessUtility was given, `read_only_tree` its flag.
pub unsafe fn writable(
    pstmt: *mut pg_sys::PlannedStmt,
    read_only_tree: bool,
) -> *mut pg_sys::PlannedStmt {
    if read_only_tree {
        // SAFETY: copies a valid node tree into the current memory context.
        unsafe { pg_sys::copyObjectImpl(pstmt.cast()).cast() }
    } else {
        pstmt
    }
}
