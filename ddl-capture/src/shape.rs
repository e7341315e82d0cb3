//! The record's `tables`: what each table a statement created or changed looks like to a row.
//!
//! A subscriber that cannot run a statement (a role, tablespace or temporary table only the
//! publisher has) must still take the rows of the tables it made or changed, or the first of
//! them stops its subscription. A row needs little of a table: its columns by name and type
//! (pgoutput sends no generated column), and for UPDATE and DELETE the replica identity key. So
//! the record describes each such table as `CREATE TABLE <schema>.<name> (<column> <type>
//! [COLLATE c], ..., [PRIMARY KEY (<key>)]);`, and the subscriber makes what it lacks from that
//! (ddl-apply's `replay/tables.rs`, which reads it with `pg_catalog` alone on the search_path).
//! Types and collations are written as the record's description writes them
//! (`ddl_server::describe`): those of `pg_catalog` unqualified, any other schema-qualified; so
//! the columns of the table the description describes are taken from it, not read again.

use ddl_server::text::{quote_identifier, utf8_identifier as identifier};
use ddl_wire::ObjectDescription;
use pgrx::pg_sys;

/// The definitions of the permanent tables among `relations` (OIDs from the command
/// collection), one per line; empty when there are none. `described`: a table among them and
/// its description, made after the statement (its columns are taken from it).
///
/// # Safety
/// In the transaction of the statement that reported `relations`.
pub unsafe fn tables(relations: &[u32], described: Option<(u32, &ObjectDescription)>) -> String {
    let mut seen = Vec::with_capacity(relations.len());
    let mut out = Vec::new();
    for &oid in relations {
        if seen.contains(&oid) {
            continue;
        }
        seen.push(oid);
        let description = described.filter(|(relid, _)| *relid == oid).map(|(_, d)| d);
        // A relation that is gone was dropped again by the same statement.
        // SAFETY: `rel` is open for the call, in the caller's transaction.
        let made = ddl_server::relcache::with_relation(pg_sys::Oid::from(oid), |rel| unsafe {
            definition(rel, description)
        });
        out.extend(made.flatten());
    }
    out.join("\n")
}

/// `CREATE TABLE ...;` of `rel` when rows of it can be published: a permanent table, outside the
/// server's own schemas. Its name and columns are those of `described` (its description) when
/// given.
///
/// # Safety
/// `rel` is an open relation; in a transaction.
unsafe fn definition(
    rel: pg_sys::Relation,
    described: Option<&ObjectDescription>,
) -> Option<String> {
    // SAFETY: the caller's promise: an open relation's pg_class row.
    let class = unsafe { &*(*rel).rd_rel };
    let is_table = class.relkind == pg_sys::RELKIND_RELATION as std::ffi::c_char
        || class.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char;
    // A temporary table is not permanent either.
    if !is_table
        || class.relpersistence != pg_sys::RELPERSISTENCE_PERMANENT as std::ffi::c_char
        // SAFETY: tests of a namespace OID.
        || unsafe {
            pg_sys::IsCatalogNamespace(class.relnamespace)
                || pg_sys::IsToastNamespace(class.relnamespace)
        }
    {
        return None;
    }
    // SAFETY: the open relation's descriptor, of `natts` attributes.
    let attrs = unsafe { ddl_server::versions::attributes((*rel).rd_att) };
    let mut columns = String::with_capacity(128);
    let table = match described {
        // Named as the description names it: `quote_qualified_identifier` of its schema and name.
        Some(described) => {
            for c in described.columns.iter().filter(|c| c.generated.is_none()) {
                let name = quote_identifier(&c.name);
                push_column(&mut columns, &name, &c.type_name, c.collation.as_deref());
            }
            described.identity.clone()
        }
        // SAFETY: as above.
        None => unsafe {
            push_columns(&mut columns, attrs);
            ddl_server::relcache::class_qualified_name(class)?
        },
    };
    // A table of no columns: its rows need nothing either. information_schema's are the
    // server's own (and its name is never quoted).
    if columns.is_empty() || table.starts_with("information_schema.") {
        return None;
    }
    // SAFETY: the open relation and its attributes.
    if let Some(key) = unsafe { replica_identity_key(rel, attrs) } {
        columns.push_str(", PRIMARY KEY (");
        columns.push_str(&key);
        columns.push(')');
    }
    let mut sql = String::with_capacity(table.len() + columns.len() + 18);
    for part in ["CREATE TABLE ", &table, " (", &columns, ");"] {
        sql.push_str(part);
    }
    Some(sql)
}

/// Adds to `columns` those of `attrs` that rows carry (not dropped, not generated), as
/// [`push_column`] writes them.
///
/// # Safety
/// `attrs` are an open relation's; in a transaction.
unsafe fn push_columns(columns: &mut String, attrs: &[pg_sys::FormData_pg_attribute]) {
    for a in attrs
        .iter()
        .filter(|a| !a.attisdropped && a.attgenerated == 0)
    {
        // SAFETY: a NameData is NUL-terminated; the type, typmod and collation are the
        // column's own (catalog cache lookups).
        unsafe {
            let collation = ddl_server::describe::column_collation(a.atttypid, a.attcollation);
            push_column(
                columns,
                &identifier(a.attname.data.as_ptr()),
                &ddl_server::describe::type_name(a.atttypid, a.atttypmod),
                collation.as_deref(),
            );
        }
    }
}

/// Adds `<name> <type>[ COLLATE <collation>]` (the name quoted) to the list `columns`.
fn push_column(columns: &mut String, name: &str, type_name: &str, collation: Option<&str>) {
    if !columns.is_empty() {
        columns.push_str(", ");
    }
    columns.push_str(name);
    columns.push(' ');
    columns.push_str(type_name);
    if let Some(collation) = collation {
        columns.push_str(" COLLATE ");
        columns.push_str(collation);
    }
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
