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
