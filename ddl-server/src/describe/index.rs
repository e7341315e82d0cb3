//! An index's definition as `pg_get_indexdef` writes it.
//!
//! `pg_get_indexdef` decides for every key column whether to name its operator class by asking
//! `GetDefaultOpClass`, which scans every operator class of the access method (no catalog
//! cache; 53 rows for btree), about 75,000 instructions for an index of one column: most of
//! what describing a table costs, on the publisher and on every subscriber. The indexes most
//! tables have, on columns whose type has a default operator class of its own, with no
//! expression, predicate, options, or collation other than the column's, are written here
//! from the catalog caches as `pg_get_indexdef` writes them (ruleutils.c's
//! `pg_get_indexdef_worker`, the same on 15 to 19); any other is left to it.

use super::text_of;
use crate::text::{quote_identifier, utf8_ptr};
use pgrx::pg_sys;

/// The definition of index `index` of the open table `rel`, as `pg_get_indexdef(index)` writes
/// it.
///
/// # Safety
/// `rel` is open; in a transaction, with `pg_catalog` alone on the search_path.
pub(super) unsafe fn definition(rel: pg_sys::Relation, index: pg_sys::Oid) -> String {
    // SAFETY: the caller's promise; pg_get_indexdef takes an index's OID.
    unsafe {
        plain(rel, index)
            .or_else(|| text_of(pg_sys::pg_get_indexdef, &[index.into()]))
            .unwrap_or_default()
    }
}

/// The definition when it is written here (nothing in it to deparse, no operator class to
/// name); `None` when it is `pg_get_indexdef`'s to write. Public for ddl-apply's tests, which
/// compare it with `pg_get_indexdef` on every major.
///
/// # Safety
/// As for [`definition`].
pub unsafe fn plain(rel: pg_sys::Relation, index: pg_sys::Oid) -> Option<String> {
    // SAFETY: the caller's promise: catalog cache entries, released before returning; the
    // index's pg_index row holds `indnatts` entries in each vector.
    unsafe {
        let tuple =
            pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::INDEXRELID as _, index.into());
        if tuple.is_null() {
            return None;
        }
        let written = written(rel, index, tuple);
        pg_sys::ReleaseSysCache(tuple);
        written
    }
}

/// [`plain`] from the index's pg_index row `tuple`.
///
/// # Safety
/// As for [`plain`]; `tuple` is `index`'s pg_index row.
unsafe fn written(
    rel: pg_sys::Relation,
    index: pg_sys::Oid,
    tuple: pg_sys::HeapTuple,
) -> Option<String> {
    // SAFETY: the caller's promise; each vector read as PostgreSQL's own code reads it.
    unsafe {
        let form = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_index>(tuple);
        let null =
            |attribute: u32| pg_sys::heap_attisnull(tuple, attribute as i32, std::ptr::null_mut());
        if !null(pg_sys::Anum_pg_index_indexprs) || !null(pg_sys::Anum_pg_index_indpred) {
            return None;
        }
        let vector = |attribute: u32| {
            let mut isnull = false;
            let datum = pg_sys::SysCacheGetAttr(
                pg_sys::SysCacheIdentifier::INDEXRELID as _,
                tuple,
                attribute as _,
                &mut isnull,
            );
            (!isnull).then(|| datum.cast_mut_ptr::<u8>())
        };
        let classes = vector(pg_sys::Anum_pg_index_indclass)?.cast::<pg_sys::oidvector>();
        let collations = vector(pg_sys::Anum_pg_index_indcollation)?.cast::<pg_sys::oidvector>();
        let options = vector(pg_sys::Anum_pg_index_indoption)?.cast::<pg_sys::int2vector>();
        let natts = usize::try_from(form.indnatts).ok()?;
        let nkeys = usize::try_from(form.indnkeyatts).ok()?;
        let keys = form.indkey.values.as_slice(natts);
        let classes = (*classes).values.as_slice(nkeys);
        let collations = (*collations).values.as_slice(nkeys);
        let options = (*options).values.as_slice(nkeys);

        let class_tuple =
            pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::RELOID as _, index.into());
        if class_tuple.is_null() {
            return None;
        }
        let class = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_class>(class_tuple);
        let head = (pg_sys::heap_attisnull(
            class_tuple,
            pg_sys::Anum_pg_class_reloptions as i32,
            std::ptr::null_mut(),
        ))
        .then(|| {
            let routine = pg_sys::GetIndexAmRoutineByAmId(class.relam, false);
            (
                utf8_ptr(class.relname.data.as_ptr()),
                class.relkind as u8 == pg_sys::RELKIND_PARTITIONED_INDEX,
                utf8_ptr(pg_sys::get_am_name(class.relam)),
                (*routine).amcanorder,
            )
        });
        pg_sys::ReleaseSysCache(class_tuple);
        let (name, partitioned, am, ordered) = head?;

        let table = &*(*rel).rd_rel;
        let mut sql = format!(
            "CREATE {}INDEX {} ON {}{}.{} USING {} (",
            if form.indisunique { "UNIQUE " } else { "" },
            quote_identifier(&name),
            if partitioned { "ONLY " } else { "" },
            quote_identifier(&utf8_ptr(pg_sys::get_namespace_name_or_temp(
                table.relnamespace
            ))),
            quote_identifier(&utf8_ptr(table.relname.data.as_ptr())),
            quote_identifier(&am),
        );
        let attributes = crate::versions::attributes((*rel).rd_att);
        for (keyno, &attnum) in keys.iter().enumerate() {
            let attribute = attributes.get(usize::try_from(attnum).ok()?.checked_sub(1)?)?;
            if keyno == nkeys {
                sql.push_str(") INCLUDE (");
            } else if keyno > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&quote_identifier(&utf8_ptr(
                attribute.attname.data.as_ptr(),
            )));
            if keyno >= nkeys {
                continue;
            }
            let collation = collations[keyno];
            let attoptions = pg_sys::get_attoptions(index, i16::try_from(keyno + 1).ok()?);
            if (collation != pg_sys::InvalidOid && collation != attribute.attcollation)
                || attoptions != pg_sys::Datum::from(0)
                || !default_class(classes[keyno], attribute.atttypid)
            {
                return None;
            }
            if ordered {
                let option = i32::from(options[keyno]);
                let descending = option & pg_sys::INDOPTION_DESC as i32 != 0;
                let nulls_first = option & pg_sys::INDOPTION_NULLS_FIRST as i32 != 0;
                sql.push_str(match (descending, nulls_first) {
                    (true, true) => " DESC",
                    (true, false) => " DESC NULLS LAST",
                    (false, true) => " NULLS FIRST",
                    (false, false) => "",
                });
            }
        }
        sql.push(')');
        if form.indnullsnotdistinct {
            sql.push_str(" NULLS NOT DISTINCT");
        }
        Some(sql)
    }
}

/// Whether `pg_get_indexdef` leaves operator class `class` of a column of type `column_type`
/// unnamed: `GetDefaultOpClass` returns the default class whose input type is the column's
/// (its base type for a domain) when there is one, and at most one can be. Any other case
/// (a class of a binary-compatible or polymorphic type, a class not the default) is not
/// decided here.
///
/// # Safety
/// In a transaction.
unsafe fn default_class(class: pg_sys::Oid, column_type: pg_sys::Oid) -> bool {
    // SAFETY: the caller's promise; a catalog cache entry, released at once.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::CLAOID as _, class.into());
        if tuple.is_null() {
            return false;
        }
        let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_opclass>(tuple);
        let default = row.opcdefault && row.opcintype == pg_sys::getBaseType(column_type);
        pg_sys::ReleaseSysCache(tuple);
        default
    }
}
