//! A primary key's or unique constraint's definition as `pg_get_constraintdef` writes it.
//!
//! `pg_get_constraintdef` finds the constraint's row again with a scan of its own, under a
//! snapshot of its own, and looks every column's name up in the catalog cache: some 20,000
//! instructions for a primary key, which most tables have, on the publisher and on every
//! subscriber. Both keys are written here from the row the description read already and the
//! table's descriptor, as ruleutils.c's `pg_get_constraintdef_worker` writes them (without
//! `fullCommand`: no `WITH` options, no tablespace), the same on 15 to 19; what it writes
//! only from 18 on (`WITHOUT OVERLAPS`, `NOT ENFORCED`) is left to it, as is every other kind.

use crate::text::{quote_identifier, utf8_ptr};
use pgrx::array::RawArray;
use pgrx::pg_sys;
use std::ptr::NonNull;

/// The definition of constraint `tuple` (a pg_constraint row, of descriptor `desc`) of the
/// open table `rel` when it is a primary key or unique constraint written here; `None` when
/// it is `pg_get_constraintdef`'s to write. Public for ddl-apply's tests, which compare it
/// with `pg_get_constraintdef` on every major.
///
/// # Safety
/// `rel` is open; `tuple` is one of its pg_constraint rows; in a transaction.
pub unsafe fn written(
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
) -> Option<String> {
    // SAFETY: the caller's promise: a pg_constraint row.
    let row = unsafe { &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_constraint>(tuple) };
    let primary = match row.contype as u8 {
        b'p' => true,
        b'u' => false,
        _ => return None,
    };
    if crate::versions::constraint_of_18(row) {
        return None;
    }
    // SAFETY: the caller's promise; a column of the row's catalog.
    let conkey =
        unsafe { super::relation::attribute(tuple, desc, pg_sys::Anum_pg_constraint_conkey) }?;
    // SAFETY: conkey is an int2[] (detoasted here: a catalog row may hold it with a short
    // header).
    let keys = unsafe { int2_array(conkey) }?;
    // SAFETY: the caller's promise: the open relation's descriptor.
    let attributes = unsafe { crate::versions::attributes((*rel).rd_att) };
    let name = |attnum: i16| {
        let attribute = attributes.get(usize::try_from(attnum).ok()?.checked_sub(1)?)?;
        // SAFETY: a NameData is NUL-terminated within its array.
        (!attribute.attisdropped)
            .then(|| quote_identifier(&unsafe { utf8_ptr(attribute.attname.data.as_ptr()) }))
    };
    // SAFETY: a catalog cache entry, released before returning; its vector holds `indnatts`
    // entries.
    let (nulls_not_distinct, included) = unsafe {
        let index = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::INDEXRELID as _,
            row.conindid.into(),
        );
        if index.is_null() {
            return None;
        }
        let form = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_index>(index);
        let natts = usize::try_from(form.indnatts).unwrap_or(0);
        let included = form
            .indkey
            .values
            .as_slice(natts)
            .get(keys.len()..)
            .map(<[i16]>::to_vec);
        let nulls_not_distinct = form.indnullsnotdistinct;
        pg_sys::ReleaseSysCache(index);
        (nulls_not_distinct, included?)
    };
    let list = |attnums: &[i16]| {
        attnums
            .iter()
            .map(|&attnum| name(attnum))
            .collect::<Option<Vec<_>>>()
            .map(|names| names.join(", "))
    };
    let mut sql = String::from(if primary { "PRIMARY KEY " } else { "UNIQUE " });
    if !primary && nulls_not_distinct {
        sql.push_str("NULLS NOT DISTINCT ");
    }
    sql.push('(');
    sql.push_str(&list(&keys)?);
    sql.push(')');
    if !included.is_empty() {
        sql.push_str(" INCLUDE (");
        sql.push_str(&list(&included)?);
        sql.push(')');
    }
    if row.condeferrable {
        sql.push_str(" DEFERRABLE");
    }
    if row.condeferred {
        sql.push_str(" INITIALLY DEFERRED");
    }
    if !row.convalidated {
        sql.push_str(" NOT VALID");
    }
    Some(sql)
}

/// The elements of a one-dimensional int2[] without NULLs; `None` for any other array.
///
/// # Safety
/// `datum` is an int2[] value, in a transaction (a detoasted copy is made in the current
/// memory context).
unsafe fn int2_array(datum: pg_sys::Datum) -> Option<Vec<i16>> {
    // SAFETY: the caller's promise: an array, detoasted into its full form.
    let mut array = unsafe {
        let detoasted = pg_sys::pg_detoast_datum(datum.cast_mut_ptr());
        RawArray::from_ptr(NonNull::new(detoasted)?.cast())
    };
    // SAFETY: a detoasted array; a NULL is told by the array's bitmap.
    if array.dims().len() != 1 || array.oid() != pg_sys::INT2OID || unsafe { array.any_nulls() } {
        return None;
    }
    // SAFETY: `len` int2 values, aligned as int2 (an array's data starts MAXALIGNed), none NULL.
    Some(unsafe { array.data::<i16>().as_ref() }.to_vec())
}
