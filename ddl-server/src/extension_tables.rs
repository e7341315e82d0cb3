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
    // the table_close below.
    let (rel, desc) = unsafe {
        let rel = pg_sys::table_open(relid, lockmode);
        (rel, (*rel).rd_att)
    };
    // SAFETY: the open relation's descriptor.
    let natts = unsafe { (*desc).natts } as usize;
    // SAFETY: the open relation's descriptor.
    let position = |name: &&CStr| unsafe { column_number(desc, name) }.map(|n| n as usize - 1);
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
    // Not SPI_fnumber: the same loop, behind a guarded FFI call that costs more than the loop
    // (the apply trigger reads some 15 columns an event).
    // SAFETY: the caller's promise.
    let attrs = unsafe { crate::versions::attributes(desc) };
    let at = attrs.iter().position(|a| {
        // SAFETY: a NameData is NUL-terminated within its array.
        !a.attisdropped && unsafe { CStr::from_ptr(a.attname.data.as_ptr()) } == name
    })?;
    Some(at as i32 + 1)
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

/// The values of a row of one of the extension's tables, by column name, as [`write_row`]
/// gives them to be changed.
pub struct RowValues {
    desc: pg_sys::TupleDesc,
    values: Vec<pg_sys::Datum>,
    nulls: Vec<bool>,
}

impl RowValues {
    /// Column `name`'s value; `None` when NULL or when the table has no such column.
    pub fn get(&self, name: &CStr) -> Option<pg_sys::Datum> {
        let at = self.at(name)?;
        (!self.nulls[at]).then_some(self.values[at])
    }

    /// Sets column `name` (`None`: NULL); nothing when the table has no such column (a table
    /// still at an older version's SQL objects).
    pub fn set(&mut self, name: &CStr, value: Option<pg_sys::Datum>) {
        if let Some(at) = self.at(name) {
            self.values[at] = value.unwrap_or(pg_sys::Datum::from(0usize));
            self.nulls[at] = value.is_none();
        }
    }

    /// A row of descriptor `desc`, every column NULL.
    fn empty(desc: pg_sys::TupleDesc) -> RowValues {
        // SAFETY: the caller's descriptor, of an open relation.
        let natts = unsafe { (*desc).natts } as usize;
        RowValues {
            desc,
            values: vec![pg_sys::Datum::from(0usize); natts],
            nulls: vec![true; natts],
        }
    }

    /// Reads `tuple`'s values (pointing into it: valid while it is).
    ///
    /// # Safety
    /// `tuple` is a row of the descriptor.
    unsafe fn deform(&mut self, tuple: pg_sys::HeapTuple) {
        // SAFETY: the caller's promise; arrays of the descriptor's length.
        unsafe {
            pg_sys::heap_deform_tuple(
                tuple,
                self.desc,
                self.values.as_mut_ptr(),
                self.nulls.as_mut_ptr(),
            )
        };
    }

    /// The row as a new tuple.
    fn form(&mut self) -> pg_sys::HeapTuple {
        // SAFETY: values of the descriptor's columns (the setters' promise), arrays of its
        // length.
        unsafe {
            pg_sys::heap_form_tuple(self.desc, self.values.as_mut_ptr(), self.nulls.as_mut_ptr())
        }
    }

    fn at(&self, name: &CStr) -> Option<usize> {
        // SAFETY: the descriptor of the table open in `write_row`, which outlives `self`'s use.
        let number = unsafe { column_number(self.desc, name) }?;
        Some(number as usize - 1)
    }
}

/// Changes the row of `ddl_sync.<table>` whose primary key, its one oid column `key_column`,
/// is `key`, or adds that row (every other column NULL until `change` sets it) when there is
/// none: as a catalog row, as [`insert`] does. Nothing when the extension is not installed.
///
/// Why no UPDATE through SPI: with its executor's start and run it cost some 106,000
/// instructions, this 46,000, and the apply worker writes a row at every commit (see
/// ddl-apply's `counters`). What the executor would do that this does not: privilege checks
/// (the caller decides who may), triggers (the tables' only ones keep the extension's own
/// changes, which these are), and re-reading a row that another transaction updated
/// meanwhile. That last one is done by a lock instead: the writers of a row take the lock of
/// `(table, key)` first ([`lock_row`]) and hold it to their transaction's end, and the row is
/// then read with a new snapshot: every other writer has committed or rolled back.
///
/// # Safety
/// Runs in a backend inside a transaction, not in logical decoding; every transaction that
/// changes such a row takes [`lock_row`] first; `change` sets columns to values of their types.
pub unsafe fn write_row(
    table: &CStr,
    key_column: &CStr,
    key: pg_sys::Oid,
    change: impl FnOnce(&mut RowValues),
) {
    // SAFETY: the caller's promise.
    let relid = unsafe { lock_row(table, key) };
    if relid == pg_sys::InvalidOid {
        return;
    }
    let lockmode = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;
    // SAFETY: the relation exists (just looked up) and stays open, with its descriptor, until
    // the table_close below.
    let (rel, desc) = unsafe {
        let rel = pg_sys::table_open(relid, lockmode);
        (rel, (*rel).rd_att)
    };
    // SAFETY: `rel` is open.
    let index = unsafe { crate::versions::primary_key_index(rel) };
    // SAFETY: the descriptor of the open relation.
    let column = unsafe { column_number(desc, key_column) };
    let Some(column) = column.filter(|_| index != pg_sys::InvalidOid) else {
        // SAFETY: opened above, closed once, by the call.
        unsafe {
            outdated(
                rel,
                lockmode,
                table,
                "lacks the primary key this version reads",
            )
        };
    };
    let mut row = RowValues::empty(desc);
    // SAFETY: an oid equality on the primary key's column, scanned through that index with a
    // snapshot taken after the lock (the scan's tuple stays valid until the scan ends, after
    // the new row is formed from its values); the row changed or added with its index
    // entries into the open, locked table, then closed.
    unsafe {
        let mut scan_key = crate::catalog_scan::oid_equals(column as pg_sys::AttrNumber, key);
        let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
        let scan = pg_sys::systable_beginscan(rel, index, true, snapshot, 1, &mut scan_key);
        let old = pg_sys::systable_getnext(scan);
        if old.is_null() {
            row.set(key_column, Some(pg_sys::Datum::from(key)));
        } else {
            row.deform(old);
        }
        change(&mut row);
        let new = row.form();
        if old.is_null() {
            pg_sys::CatalogTupleInsert(rel, new);
        } else {
            pg_sys::CatalogTupleUpdate(rel, &raw mut (*old).t_self, new);
        }
        pg_sys::heap_freetuple(new);
        pg_sys::systable_endscan(scan);
        pg_sys::UnregisterSnapshot(snapshot);
        pg_sys::table_close(rel, lockmode);
    }
}

/// Adds a row to `ddl_sync.<table>`, its columns NULL until `fill` sets them, as a catalog row
/// (as [`insert`] does). Nothing when the extension is not installed.
///
/// # Safety
/// Runs in a backend inside a transaction, not in logical decoding; `fill` sets columns to
/// values of their types, and every NOT NULL one.
pub unsafe fn insert_row(table: &CStr, fill: impl FnOnce(&mut RowValues)) {
    // SAFETY: the caller's promise.
    let relid = unsafe { relid(table) };
    if relid == pg_sys::InvalidOid {
        return;
    }
    let lockmode = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;
    // SAFETY: the relation exists (just looked up); the row formed of the caller's values,
    // inserted with its index entries into the open, locked table, then closed.
    unsafe {
        let rel = pg_sys::table_open(relid, lockmode);
        let mut row = RowValues::empty((*rel).rd_att);
        fill(&mut row);
        let tuple = row.form();
        pg_sys::CatalogTupleInsert(rel, tuple);
        pg_sys::heap_freetuple(tuple);
        pg_sys::table_close(rel, lockmode);
    }
}

/// Gives `each` every row of `ddl_sync.<table>` whose oid column `key_column` is `key` that a
/// new snapshot sees, and deletes it, as catalog rows. Nothing when the extension is not
/// installed.
///
/// # Safety
/// Runs in a backend inside a transaction, not in logical decoding, holding the lock that
/// every transaction that deletes such rows takes first (see [`lock_row`]).
pub unsafe fn take_rows(
    table: &CStr,
    key_column: &CStr,
    key: pg_sys::Oid,
    mut each: impl FnMut(&RowValues),
) {
    // SAFETY: the caller's promise.
    let relid = unsafe { relid(table) };
    if relid == pg_sys::InvalidOid {
        return;
    }
    let lockmode = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;
    // SAFETY: the relation exists (just looked up) and stays open until the close below.
    let rel = unsafe { pg_sys::table_open(relid, lockmode) };
    // SAFETY: the open relation's descriptor.
    let desc = unsafe { (*rel).rd_att };
    // SAFETY: as above.
    let Some(column) = (unsafe { column_number(desc, key_column) }) else {
        // SAFETY: opened above, closed once, by the call.
        unsafe { outdated(rel, lockmode, table, "lacks a column this version reads") };
    };
    // SAFETY: an oid equality on the key's column, a scan of the table (few rows, no index)
    // with a snapshot taken now; each row deformed with its descriptor and deleted while the
    // scan holds it; everything ended and closed here.
    unsafe {
        let mut scan_key = crate::catalog_scan::oid_equals(column as pg_sys::AttrNumber, key);
        let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
        let scan =
            pg_sys::systable_beginscan(rel, pg_sys::InvalidOid, false, snapshot, 1, &mut scan_key);
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            let mut row = RowValues::empty(desc);
            row.deform(tuple);
            each(&row);
            pg_sys::CatalogTupleDelete(rel, &raw mut (*tuple).t_self);
        }
        pg_sys::systable_endscan(scan);
        pg_sys::UnregisterSnapshot(snapshot);
        pg_sys::table_close(rel, lockmode);
    }
}

/// Takes the lock that [`write_row`]'s writers of the row of `ddl_sync.<table>` keyed `key`
/// hold to their transaction's end (an object lock of that table's class, which nothing else
/// takes, in a mode that conflicts with itself). Returns the table's OID (InvalidOid, and no
/// lock, when the extension is not installed).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn lock_row(table: &CStr, key: pg_sys::Oid) -> pg_sys::Oid {
    // SAFETY: the caller's promise.
    let relid = unsafe { relid(table) };
    if relid != pg_sys::InvalidOid {
        // SAFETY: in a transaction, which releases it.
        unsafe {
            pg_sys::LockDatabaseObject(relid, key, 0, pg_sys::ExclusiveLock as pg_sys::LOCKMODE)
        };
    }
    relid
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
