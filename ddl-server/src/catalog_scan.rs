//! Catalog rows found by OID columns through an index, without SPI (which logical decoding does
//! not allow): the scans both libraries make.

use pgrx::pg_sys;

/// Calls `each` with every row of catalog `catalog` whose OID columns equal the keys, each key
/// `(attribute number, OID)`, read through index `index`, and the catalog's row descriptor
/// (for the columns a row's struct does not hold: arrays, text, expressions).
///
/// # Safety
/// `index` is an index of `catalog` that starts with the keys' columns, in their order; in a
/// transaction (the scan sees its catalog snapshot, or decoding's historic one).
pub unsafe fn scan(
    catalog: pg_sys::Oid,
    index: pg_sys::Oid,
    keys: &[(pg_sys::AttrNumber, pg_sys::Oid)],
    mut each: impl FnMut(pg_sys::HeapTuple, pg_sys::TupleDesc),
) {
    // SAFETY: the caller's promise; the catalog is opened, scanned and closed here (an ERROR in
    // between leaves both to the abort). Each key is an OID equality.
    unsafe {
        let rel = pg_sys::table_open(catalog, pg_sys::AccessShareLock as i32);
        let mut scan_keys: Vec<pg_sys::ScanKeyData> = keys
            .iter()
            .map(|&(column, value)| oid_equals(column, value))
            .collect();
        let scan = pg_sys::systable_beginscan(
            rel,
            index,
            true,
            std::ptr::null_mut(),
            scan_keys.len() as i32,
            scan_keys.as_mut_ptr(),
        );
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            each(tuple, (*rel).rd_att);
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as i32);
    }
}

/// The scan key "column `column` (an oid) equals `value`".
pub fn oid_equals(column: pg_sys::AttrNumber, value: pg_sys::Oid) -> pg_sys::ScanKeyData {
    // SAFETY: a zeroed key, then filled by PostgreSQL with the oid equality's function (found
    // by OID: no lookup that could fail).
    unsafe {
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            column,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(value),
        );
        key
    }
}
