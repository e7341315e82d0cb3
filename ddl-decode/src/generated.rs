//! Which stored generated columns this stream sends: the event's `sent_generated_columns`.
//!
//! PostgreSQL 18 sends the values of a table's stored generated columns when a publication says
//! `publish_generated_columns = stored`, or its column list names them, and a subscriber's
//! apply worker refuses a value for a column that is generated there ("logical replication
//! target relation ... has incompatible generated column"), on every retry. A replayed CREATE or
//! ALTER TABLE makes the column generated on the subscriber as on the publisher, so the
//! subscriber must know which of them this stream sends, to make those plain columns that take
//! the values. That depends on the session's publications and is answered here, for the table
//! the statement made or changed, from the catalogs as of the statement (the historic snapshot
//! of the message), the way pgoutput answers it for the table's rows: a publication that
//! publishes the table (for all tables, its schema, itself, or as a partition an ancestor's)
//! sends the columns of its column list, or without one its stored generated columns when it
//! says `publish_generated_columns = stored`. With `publish_via_partition_root` the column
//! list is the topmost published ancestor's, matched by column name.

use ddl_server::versions;
use ddl_wire::DdlEvent;
use pgrx::list::PgList;
use pgrx::pg_sys;
use std::ffi::{CStr, CString};

/// The field for `event`, decoded by a session of `publications`: the names of the stored
/// generated columns whose values it sends ([`ddl_wire::encode_name_set`]), empty for a
/// statement that is not a CREATE or ALTER TABLE or a table that has none.
///
/// # Safety
/// In a decoding callback's transaction (catalog lookups see the message's historic
/// snapshot); allocations go to the current memory context.
pub unsafe fn sent_generated_columns(event: &DdlEvent<'_>, publications: &[CString]) -> String {
    if !versions::PUBLICATIONS_SEND_GENERATED_COLUMNS
        || !(event.command_tag.starts_with("CREATE TABLE")
            || event.command_tag.starts_with("ALTER TABLE"))
    {
        return String::new();
    }
    let Some(relid) = ddl_server::relcache::relation_named(event.object_identity) else {
        return String::new();
    };
    let stored = stored_generated_columns(relid);
    if stored.is_empty() {
        return String::new();
    }
    let mut sent = Vec::new();
    for name in publications {
        // SAFETY: the caller's promise; a catalog lookup that misses quietly.
        let publication = unsafe { pg_sys::GetPublicationByName(name.as_ptr(), true) };
        if publication.is_null() {
            continue;
        }
        // SAFETY: a publication just read from the catalog.
        sent.extend(unsafe { sent_by(publication, relid, &stored) });
    }
    ddl_wire::encode_name_set(sent)
}

/// The stored generated columns of `relid`, by attribute number and name (none for most
/// tables, which the relcache says without a lookup).
fn stored_generated_columns(relid: pg_sys::Oid) -> Vec<(i16, String)> {
    ddl_server::relcache::with_relation(relid, |rel| {
        // SAFETY: the open relation's descriptor, its constraints (NULL when none) and its
        // attributes.
        unsafe {
            let desc = (*rel).rd_att;
            let constr = (*desc).constr;
            if constr.is_null() || !(*constr).has_generated_stored {
                return Vec::new();
            }
            ddl_server::versions::attributes(desc)
                .iter()
                .filter(|a| {
                    !a.attisdropped && a.attgenerated == pg_sys::ATTRIBUTE_GENERATED_STORED as i8
                })
                .map(|a| {
                    let name = CStr::from_ptr(a.attname.data.as_ptr());
                    (a.attnum, ddl_server::text::utf8(name))
                })
                .collect()
        }
    })
    .unwrap_or_default()
}

/// The names among `stored` (columns of `relid`) whose values `publication` sends.
///
/// # Safety
/// `publication` is live; in a transaction.
unsafe fn sent_by(
    publication: *mut pg_sys::Publication,
    relid: pg_sys::Oid,
    stored: &[(i16, String)],
) -> Vec<String> {
    // SAFETY: the caller's promise.
    let Some(listed_as) = (unsafe { published_as(publication, relid) }) else {
        return Vec::new();
    };
    // SAFETY: as above.
    match unsafe { versions::column_list(publication, listed_as) } {
        Some(columns) => stored
            .iter()
            .filter(|(attnum, name)| {
                let attnum = if listed_as == relid {
                    *attnum
                } else {
                    attnum_in(listed_as, name)
                };
                // SAFETY: a Bitmapset the catalog lookup made (NULL: empty).
                attnum > 0 && unsafe { pg_sys::bms_is_member(attnum.into(), columns) }
            })
            .map(|(_, name)| name.clone())
            .collect(),
        // SAFETY: as above.
        None if unsafe { versions::publishes_stored_generated(publication) } => {
            stored.iter().map(|(_, name)| name.clone()).collect()
        }
        None => Vec::new(),
    }
}

/// The relation whose column list `publication` applies to `relid`'s rows: `relid` itself,
/// or with `publish_via_partition_root` its topmost published ancestor; `None` when the
/// publication does not publish `relid`.
///
/// # Safety
/// `publication` is live; in a transaction.
unsafe fn published_as(
    publication: *mut pg_sys::Publication,
    relid: pg_sys::Oid,
) -> Option<pg_sys::Oid> {
    // SAFETY: the caller's promise; catalog cache lookups and scans of pg_inherits.
    unsafe {
        let (pubid, all_tables, via_root) = (
            (*publication).oid,
            (*publication).alltables,
            (*publication).pubviaroot,
        );
        // The table, then its ancestors from its parent up to the root.
        let mut lineage = vec![relid];
        if pg_sys::get_rel_relispartition(relid) {
            let ancestors = pg_sys::get_partition_ancestors(relid);
            lineage.extend(PgList::<pg_sys::Oid>::from_pg(ancestors).iter_oid());
        }
        if lineage
            .iter()
            .any(|&r| versions::publication_excepts(pubid, r))
        {
            return None;
        }
        let published: Vec<pg_sys::Oid> = if all_tables {
            lineage.clone()
        } else {
            lineage
                .iter()
                .copied()
                .filter(|&r| {
                    pg_sys::list_member_oid(versions::relation_publications(r), pubid)
                        || pg_sys::list_member_oid(
                            pg_sys::GetSchemaPublications(pg_sys::get_rel_namespace(r)),
                            pubid,
                        )
                })
                .collect()
        };
        match (published.last(), via_root) {
            (None, _) => None,
            (Some(&topmost), true) => Some(topmost),
            (Some(_), false) => Some(relid),
        }
    }
}

/// The attribute number of column `name` of `relid`, 0 when it has none.
fn attnum_in(relid: pg_sys::Oid, name: &str) -> i16 {
    // SAFETY: in the caller's transaction; a catalog cache lookup by a NUL-terminated name in
    // the database encoding.
    unsafe {
        ddl_server::text::server_cstring(name)
            .map_or(0, |name| pg_sys::get_attnum(relid, name.as_ptr()))
    }
}
