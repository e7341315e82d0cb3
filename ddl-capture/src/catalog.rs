//! Reading (and deleting from) the tables of the `ddl_sync` extension, from C-level code that
//! cannot use SPI: the output plugin while decoding, and the capture's event triggers.

use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::CStr;

/// Gives `each` every row of `ddl_sync.<table>`: the table (locked in `lockmode`), the row's
/// tuple (valid until the next row) and the values of `columns`, in their order (`None` for
/// NULL). Nothing when the extension is not installed. Returns the table's OID (InvalidOid
/// then).
///
/// A systable scan, not a heap scan: while decoding an in-progress (streamed) or prepared
/// transaction PostgreSQL allows only these, which check for a concurrent abort.
///
/// # Safety
/// Runs in a backend inside a transaction; `columns` are of by-value types or `text`, read as
/// the caller expects.
pub unsafe fn scan(
    table: &CStr,
    columns: &[&CStr],
    lockmode: u32,
    mut each: impl FnMut(pg_sys::Relation, pg_sys::HeapTuple, &[Option<pg_sys::Datum>]),
) -> pg_sys::Oid {
    // SAFETY: the caller's promise.
    let relid = unsafe { ddl_server::extension_tables::relid(table) };
    if relid == pg_sys::InvalidOid {
        return relid;
    }
    let lockmode = lockmode as pg_sys::LOCKMODE;
    // SAFETY: the relation exists (just looked up) and stays open, with its descriptor, until
    // the table_close below; `natts` is the length of the descriptor's attribute array.
    let (rel, desc, attrs) = unsafe {
        let rel = pg_sys::table_open(relid, lockmode);
        let desc = (*rel).rd_att;
        (rel, desc, ddl_server::versions::attributes(desc))
    };
    let natts = attrs.len();
    let position = |name: &&CStr| {
        attrs.iter().position(|a| {
            // SAFETY: a NameData is NUL-terminated within its array.
            !a.attisdropped && unsafe { CStr::from_ptr(a.attname.data.as_ptr()) } == *name
        })
    };
    let Some(at) = columns.iter().map(position).collect::<Option<Vec<usize>>>() else {
        // SAFETY: opened above, closed once before the ERROR.
        unsafe { pg_sys::table_close(rel, lockmode) };
        error!(
            "ddl_sync: ddl_sync.{} lacks a column this version reads",
            table.to_string_lossy()
        );
    };
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    let mut row = vec![None; at.len()];
    // SAFETY: `rel` is open and locked; no scan key, and no index (indexOK false).
    let scan = unsafe {
        pg_sys::systable_beginscan(
            rel,
            pg_sys::InvalidOid,
            false,
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        )
    };
    loop {
        // SAFETY: the scan is open; the tuple it returns stays valid until the next call.
        let tuple = unsafe { pg_sys::systable_getnext(scan) };
        if tuple.is_null() {
            break;
        }
        // SAFETY: a tuple of `rel`, deformed with its own descriptor into arrays of `natts`.
        unsafe { pg_sys::heap_deform_tuple(tuple, desc, values.as_mut_ptr(), nulls.as_mut_ptr()) };
        for (value, &i) in row.iter_mut().zip(&at) {
            *value = (!nulls[i]).then_some(values[i]);
        }
        each(rel, tuple, &row);
    }
    // SAFETY: the scan and the relation opened above, each ended once.
    unsafe {
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, lockmode);
    }
    relid
}
