//! The `ddl_sync` extension's own tables, as C-level code finds them (no SPI, no search_path),
//! and the message that says their configuration rows changed.

use pgrx::pg_sys;
use std::ffi::CStr;

/// The OID of `ddl_sync.<table>`, InvalidOid when the extension is not installed (catalog
/// lookups with missing_ok, in the current or historic snapshot).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn relid(table: &CStr) -> pg_sys::Oid {
    // SAFETY: the caller's promise; catalog lookups of NUL-terminated names, missing_ok.
    unsafe {
        let nsp = pg_sys::get_namespace_oid(c"ddl_sync".as_ptr(), true);
        if nsp == pg_sys::InvalidOid {
            pg_sys::InvalidOid
        } else {
            pg_sys::get_relname_relid(table.as_ptr(), nsp)
        }
    }
}

/// The OID of `ddl_sync.<table>` and whether it has a row (InvalidOid and false when the
/// extension is not installed): a systable scan that stops at the first row, in the catalog
/// snapshot, so that code running at every statement or event can skip a query that would
/// find nothing.
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn has_rows(table: &CStr) -> (pg_sys::Oid, bool) {
    // SAFETY: the caller's promise.
    let relid = unsafe { relid(table) };
    if relid == pg_sys::InvalidOid {
        return (relid, false);
    }
    // SAFETY: an existing relation, open and locked until the close; no scan key, no index.
    let found = unsafe {
        let lock = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
        let rel = pg_sys::table_open(relid, lock);
        let scan = pg_sys::systable_beginscan(
            rel,
            pg_sys::InvalidOid,
            false,
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        );
        let found = !pg_sys::systable_getnext(scan).is_null();
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, lock);
        found
    };
    (relid, found)
}

/// The tables whose rows decide what the capture does; it caches them (`ddl-capture`'s
/// `invalidation` module) until [`capture_config_changed`] says otherwise.
pub const CAPTURE_CONFIG: [&CStr; 2] = [c"publication_sync", c"adapter"];

/// Says that rows of the [`CAPTURE_CONFIG`] tables changed: a relcache invalidation of each,
/// which this backend processes at its next command (or when the transaction rolls back) and
/// the others when the transaction commits, as for PostgreSQL's own catalogs.
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn capture_config_changed() {
    for table in CAPTURE_CONFIG {
        // SAFETY: the caller's promise.
        let relid = unsafe { relid(table) };
        if relid != pg_sys::InvalidOid {
            // SAFETY: an existing relation; the message is queued in this transaction.
            unsafe { pg_sys::CacheInvalidateRelcacheByRelid(relid) };
        }
    }
}
