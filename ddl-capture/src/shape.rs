//! The record's `tables`: what each table a statement created or changed looks like to a row.
//!
//! A subscriber that cannot run a statement (a role, tablespace or temporary table only the
//! publisher has) must still take the rows of the tables it made or changed, or the first of
//! them stops its subscription. A row needs little of a table: its columns by name and type
//! (pgoutput sends no generated column), and for UPDATE and DELETE the replica identity key. So
//! the record describes each such table as `CREATE TABLE <schema>.<name> (<column> <type>
//! [COLLATE c], ..., [PRIMARY KEY (<key>)]);`, types and collations schema-qualified, and the
//! subscriber makes what it lacks from that (ddl-apply's `replay/tables.rs`).

use crate::definition::{column, text};
use ddl_server::text::utf8_identifier as identifier;
use pgrx::pg_sys;
use std::ffi::CStr;

/// The definitions of the permanent tables among `relations` (OIDs from the command
/// collection), one per line; empty when there are none.
///
/// # Safety
/// In the transaction of the statement that reported `relations`.
pub unsafe fn tables(relations: &[u32]) -> String {
    let mut seen = Vec::with_capacity(relations.len());
    let mut out = Vec::new();
    for &oid in relations {
        if seen.contains(&oid) {
            continue;
        }
        seen.push(oid);
        // A relation that is gone was dropped again by the same statement.
        // SAFETY: `rel` is open for the call, in the caller's transaction.
        let made = ddl_server::relcache::with_relation(pg_sys::Oid::from(oid), |rel| unsafe {
            definition(rel)
        });
        out.extend(made.flatten());
    }
    out.join("\n")
}

/// `CREATE TABLE ...;` of `rel` when rows of it can be published: a permanent table, outside the
/// server's own schemas.
///
/// # Safety
/// `rel` is an open relation; in a transaction.
unsafe fn definition(rel: pg_sys::Relation) -> Option<String> {
    // SAFETY: the caller's promise: an open relation's pg_class row.
    let class = unsafe { &*(*rel).rd_rel };
    let is_table = class.relkind == pg_sys::RELKIND_RELATION as std::ffi::c_char
        || class.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char;
    if !is_table
        || class.relpersistence != pg_sys::RELPERSISTENCE_PERMANENT as std::ffi::c_char
        // SAFETY: tests of a namespace OID (syscache lookups at most).
        || unsafe {
            pg_sys::IsCatalogNamespace(class.relnamespace)
                || pg_sys::IsToastNamespace(class.relnamespace)
                || pg_sys::isAnyTempNamespace(class.relnamespace)
        }
    {
        return None;
    }
    // SAFETY: a syscache lookup, NULL for a namespace that is gone.
    let schema = unsafe { pg_sys::get_namespace_name(class.relnamespace) };
    // SAFETY: not NULL: a NUL-terminated name.
    if schema.is_null() || unsafe { CStr::from_ptr(schema) }.to_bytes() == b"information_schema" {
        return None;
    }
    // SAFETY: the open relation's descriptor, of `natts` attributes.
    let attrs = unsafe { ddl_server::versions::attributes((*rel).rd_att) };
    let mut items: Vec<String> = attrs
        .iter()
        .filter(|a| !a.attisdropped && a.attgenerated == 0)
        .map(|a| {
            // SAFETY: a NameData is NUL-terminated; the type, typmod and collation are the
            // column's own.
            unsafe {
                column(
                    a.attname.data.as_ptr(),
                    a.atttypid,
                    a.atttypmod,
                    a.attcollation,
                )
            }
        })
        .collect();
    if items.is_empty() {
        return None; // a table of no columns: its rows need nothing either
    }
    // SAFETY: the open relation and its attributes.
    if let Some(key) = unsafe { replica_identity_key(rel, attrs) } {
        items.push(format!("PRIMARY KEY ({key})"));
    }
    // SAFETY: two NUL-terminated names, the schema's and the relation's.
    let table = unsafe {
        text(pg_sys::quote_qualified_identifier(
            schema,
            class.relname.data.as_ptr(),
        ))
    };
    Some(format!("CREATE TABLE {table} ({});", items.join(", ")))
}

/// The columns of the replica identity index (the primary key, or `REPLICA IDENTITY USING
/// INDEX`), which a subscriber needs to apply UPDATE and DELETE; `None` for `FULL` (the old row
/// carries every column), `NOTHING`, or no key.
///
/// # Safety
/// `rel` is an open relation and `attrs` its attributes; in a transaction.
unsafe fn replica_identity_key(
    rel: pg_sys::Relation,
    attrs: &[pg_sys::FormData_pg_attribute],
) -> Option<String> {
    // SAFETY: the caller's promise: an open relation's pg_class row.
    let class = unsafe { &*(*rel).rd_rel };
    // Only DEFAULT (the primary key) and USING INDEX have a key, and only a table that has (or
    // had) an index: asked first, as RelationGetReplicaIndex of a relation just made or changed
    // scans pg_index for its index list, a tenth of the capture's cost for the tables that
    // have none.
    let keyed = class.relreplident == pg_sys::REPLICA_IDENTITY_DEFAULT as std::ffi::c_char
        || class.relreplident == pg_sys::REPLICA_IDENTITY_INDEX as std::ffi::c_char;
    if !keyed || !class.relhasindex {
        return None;
    }
    // SAFETY: the caller's promise.
    let index = unsafe { pg_sys::RelationGetReplicaIndex(rel) };
    if index == pg_sys::InvalidOid {
        return None;
    }
    // SAFETY: an index OID from the relcache; NULL for an index that is gone.
    let index_rel = unsafe { pg_sys::RelationIdGetRelation(index) };
    if index_rel.is_null() {
        return None;
    }
    // SAFETY: an open index: its pg_index row, with `indnkeyatts` key columns.
    let keys = unsafe {
        let form = &*(*index_rel).rd_index;
        form.indkey.values.as_slice(form.indnkeyatts as usize)
    };
    let names: Option<Vec<String>> = keys
        .iter()
        .map(|&attnum| {
            // 0 is an expression, which an identity index cannot have; checked anyway.
            let at = usize::try_from(attnum).ok()?.checked_sub(1)?;
            let attribute = attrs.get(at)?;
            // SAFETY: a NameData is NUL-terminated.
            Some(unsafe { identifier(attribute.attname.data.as_ptr()) })
        })
        .collect();
    // SAFETY: opened above, closed once; `keys` is not used after.
    unsafe { pg_sys::RelationClose(index_rel) };
    names.map(|n| n.join(", "))
}
