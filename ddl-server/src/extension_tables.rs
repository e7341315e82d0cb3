//! The `ddl_sync` extension's own tables, as C-level code finds and reads (and deletes from)
//! them, with no SPI and no search_path: the output plugin while decoding, the capture's event
//! triggers, the apply path's checks; and the message that says their configuration rows
//! changed.

use pgrx::pg_sys;
use pgrx::prelude::*;
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
    let relid = unsafe { relid(table) };
    if relid == pg_sys::InvalidOid {
        return relid;
    }
    let lockmode = lockmode as pg_sys::LOCKMODE;
    // SAFETY: the relation exists (just looked up) and stays open, with its descriptor, until
    // the table_close below; `natts` is the length of the descriptor's attribute array.
    let (rel, desc, attrs) = unsafe {
        let rel = pg_sys::table_open(relid, lockmode);
        let desc = (*rel).rd_att;
        (rel, desc, crate::versions::attributes(desc))
    };
    let natts = attrs.len();
    let position = |name: &&CStr| {
        attrs.iter().position(|a| {
            // SAFETY: a NameData is NUL-terminated within its array.
            !a.attisdropped && unsafe { CStr::from_ptr(a.attname.data.as_ptr()) } == *name
        })
    };
    let Some(at) = columns.iter().map(position).collect::<Option<Vec<usize>>>() else {
        // SAFETY: opened above, closed once, by the call.
        unsafe { outdated(rel, lockmode, table, "lacks a column this version reads") };
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

/// The number of column `name` in descriptor `desc`; `None` when it has none (a table still at
/// an older version's SQL objects may lack a column this version reads).
///
/// # Safety
/// `desc` is a valid descriptor.
pub unsafe fn column_number(desc: pg_sys::TupleDesc, name: &CStr) -> Option<i32> {
    // SAFETY: the caller's promise; a NUL-terminated name.
    let number = unsafe { pg_sys::SPI_fnumber(desc, name.as_ptr()) };
    (number > 0).then_some(number)
}

/// The value of column `name` of `tuple`, a row of `desc`; `None` when NULL or when there is
/// no such column (see [`column_number`]).
///
/// # Safety
/// `tuple` is a row of `desc`, both valid.
pub unsafe fn column_value(
    tuple: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
    name: &CStr,
) -> Option<pg_sys::Datum> {
    // SAFETY: the caller's promise.
    let number = unsafe { column_number(desc, name) }?;
    let mut null = false;
    // SAFETY: the caller's promise; one of the row's columns.
    let datum = unsafe { pg_sys::SPI_getbinval(tuple, desc, number, &mut null) };
    (!null).then_some(datum)
}

/// Adds the row of `values` (one per column, in order, none NULL) to `ddl_sync.<table>` as a
/// catalog row: no trigger fires and no privilege is checked, so the caller decides who may.
/// Nothing when the extension is not installed.
///
/// # Safety
/// Runs in a backend inside a transaction; `values` are of the columns' types.
pub unsafe fn insert(table: &CStr, values: &[pg_sys::Datum]) {
    // SAFETY: the caller's promise.
    let relid = unsafe { relid(table) };
    if relid == pg_sys::InvalidOid {
        return;
    }
    let lockmode = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;
    // SAFETY: the relation exists (just looked up) and stays open until the close below.
    let rel = unsafe { pg_sys::table_open(relid, lockmode) };
    // SAFETY: `rel` is open: its descriptor.
    let natts = unsafe { (*(*rel).rd_att).natts } as usize;
    if natts != values.len() {
        // SAFETY: opened above, closed once, by the call.
        unsafe {
            outdated(
                rel,
                lockmode,
                table,
                "has not the columns this version writes",
            )
        };
    }
    let mut values = values.to_vec();
    let mut nulls = vec![false; natts];
    // SAFETY: a tuple of `natts` values of the descriptor's types (the caller's promise),
    // inserted with its index entries into the open, locked table, then closed.
    unsafe {
        let tuple = pg_sys::heap_form_tuple((*rel).rd_att, values.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::CatalogTupleInsert(rel, tuple);
        pg_sys::heap_freetuple(tuple);
        pg_sys::table_close(rel, lockmode);
    }
}

/// Closes `rel` (`ddl_sync.<table>`, open in `lockmode`) and raises the ERROR of an extension
/// older than the library: the table `is` not what this version expects.
///
/// # Safety
/// `rel` is open, and not used again.
unsafe fn outdated(rel: pg_sys::Relation, lockmode: pg_sys::LOCKMODE, table: &CStr, is: &str) -> ! {
    // SAFETY: the caller's promise.
    unsafe { pg_sys::table_close(rel, lockmode) };
    crate::errors::Error::new(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format_args!("ddl_sync.{} {is}", table.to_string_lossy()),
    )
    .hint("Update the extension to this library's version: ALTER EXTENSION ddl_sync UPDATE.")
    .raise()
}

/// The OID of `ddl_sync.<table>` and whether it has a row (InvalidOid and false when the
/// extension is not installed), so that code running at every statement or event can skip a
/// query that would find nothing.
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn has_rows(table: &CStr) -> (pg_sys::Oid, bool) {
    let mut found = false;
    // SAFETY: the caller's promise; no column is read.
    let relid = unsafe { scan(table, &[], pg_sys::AccessShareLock, |_, _, _| found = true) };
    (relid, found)
}

/// The tables whose rows decide what the capture does; it caches them (`ddl-capture`'s
/// `invalidation` module) until [`capture_config_changed`] says otherwise.
pub const CAPTURE_CONFIG: [&CStr; 3] = [c"publication_sync", c"adapter", c"keyless_identity"];

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
