//! What a statement made, described from the catalogs the same way on every node: the
//! event's `description` ([`ddl_wire::Description`]). The publisher's plugin describes the
//! statement's objects as of its message (the historic snapshot), the subscriber's replay
//! after running it, and the two are compared.
//!
//! Everything here reads the catalog caches and scans catalogs: no SPI, which logical decoding
//! does not allow (it has no query snapshot). Expressions and definitions are PostgreSQL's own
//! deparsing (`pg_get_expr`, `pg_get_constraintdef`, `pg_get_indexdef`, `format_type`), run
//! with `pg_catalog` alone on the search_path so that every other object is schema-qualified
//! whatever either node's settings.

use crate::text::{utf8_ptr, utf8_text};
use crate::{guc, relcache, versions};
use ddl_wire::{
    Action, ColumnDescription, ConstraintDescription, Description, IndexDescription,
    ObjectDescription, TableDescription, DESCRIPTION_VERSION,
};
use pgrx::list::PgList;
use pgrx::pg_sys;

/// The description of a statement (`command_tag` on `identity`), or `None` for a kind this
/// version does not describe yet (it describes tables, and the indexes of a table as the
/// table); `Err` with the message of an ERROR that describing raised. Such an ERROR is caught in
/// a subtransaction, which undoes what it did: in a walsender it would otherwise stop the
/// stream for good (every retry decodes the same statement again), in an apply worker the
/// subscription.
///
/// In a transaction whose catalogs are those after the statement.
pub fn statement(command_tag: &str, identity: &str) -> Result<Option<Description>, String> {
    crate::xact::in_subtransaction(
        // SAFETY: the caller's promise.
        || unsafe { statement_unguarded(command_tag, identity) },
        |_| true,
    )
    .map_err(|caught| caught.message)
}

/// [`statement`], without the subtransaction.
///
/// # Safety
/// In a transaction whose catalogs are those after the statement.
unsafe fn statement_unguarded(command_tag: &str, identity: &str) -> Option<Description> {
    let action = if command_tag.starts_with("CREATE TABLE") || command_tag == "SELECT INTO" {
        Action::Created
    } else if command_tag == "DROP TABLE" {
        Action::Dropped
    } else if command_tag.starts_with("ALTER TABLE")
        || command_tag == "CREATE INDEX"
        || command_tag == "ALTER INDEX"
    {
        Action::Altered
    } else {
        return None;
    };
    // A column's statement (`ALTER TABLE ... RENAME COLUMN`) names the column: its table is
    // described.
    let relid = relcache::relation_named(identity).or_else(|| {
        (action == Action::Altered)
            .then(|| relcache::relation_of_column(identity))
            .flatten()
    });
    let object = match (relid, action) {
        (None, Action::Dropped) => ObjectDescription {
            action,
            kind: "table".into(),
            identity: identity.into(),
            table: None,
        },
        // Not what the statement claims (a table still there after DROP TABLE, one missing
        // after CREATE or ALTER): nothing to describe.
        (Some(_), Action::Dropped) | (None, _) => return None,
        (Some(relid), _) => {
            // An index is described as part of its table.
            // SAFETY: catalog cache lookups.
            let table = unsafe {
                if pg_sys::get_rel_relkind(relid) as u8 == pg_sys::RELKIND_INDEX
                    || pg_sys::get_rel_relkind(relid) as u8 == pg_sys::RELKIND_PARTITIONED_INDEX
                {
                    pg_sys::IndexGetRelation(relid, true)
                } else {
                    relid
                }
            };
            // SAFETY: a lock on an existing relation.
            if !unsafe { lock_soon(table) } {
                return None;
            }
            let (identity, description) = guc::with_search_path("pg_catalog", || {
                // SAFETY: the caller's promise.
                (relcache::qualified_name(table), unsafe {
                    self::table(table)
                })
            });
            // SAFETY: the lock taken above (what the deparsing took, it released).
            unsafe { pg_sys::UnlockRelationOid(table, pg_sys::AccessShareLock as i32) };
            ObjectDescription {
                action,
                kind: "table".into(),
                identity: identity?,
                table: Some(description?),
            }
        }
    };
    Some(Description {
        version: DESCRIPTION_VERSION,
        objects: vec![object],
    })
}

/// Takes AccessShareLock on `relid` if it is free within a second: PostgreSQL's deparsing opens
/// the table with that lock. In a walsender an unbounded wait could last for ever: the
/// transaction that ran the statement may hold its stronger lock while it waits for a
/// synchronous standby fed by this very walsender. Usually the lock is free at once, or after
/// the microseconds a committed transaction takes to release its locks (the walsender may read
/// its commit first). Not taken: the statement is not described, and subscribers do not
/// compare it.
///
/// # Safety
/// In a transaction.
unsafe fn lock_soon(relid: pg_sys::Oid) -> bool {
    for _ in 0..100 {
        // SAFETY: the caller's promise; a lock without waiting.
        if unsafe { pg_sys::ConditionalLockRelationOid(relid, pg_sys::AccessShareLock as i32) } {
            return true;
        }
        // SAFETY: a sleep of this backend, which answers interrupts between tries.
        unsafe { pg_sys::pg_usleep(10_000) };
        pgrx::check_for_interrupts!();
    }
    false
}

/// The table `relid`, or `None` when it is not a table (or is gone).
///
/// # Safety
/// In a transaction, with `pg_catalog` alone on the search_path.
unsafe fn table(relid: pg_sys::Oid) -> Option<TableDescription> {
    relcache::with_relation(relid, |rel| {
        // SAFETY: the open relation's pg_class row and descriptor.
        let class = unsafe { &*(*rel).rd_rel };
        let relkind = class.relkind as u8;
        if relkind != pg_sys::RELKIND_RELATION && relkind != pg_sys::RELKIND_PARTITIONED_TABLE {
            return None;
        }
        // SAFETY: as above; catalog lookups and deparsing in the caller's transaction.
        unsafe {
            Some(TableDescription {
                owner: utf8_ptr(pg_sys::GetUserNameFromId(class.relowner, true)),
                columns: columns(rel, relid),
                constraints: constraints(relid),
                indexes: indexes(rel),
                replica_identity: replica_identity(rel, class.relreplident as u8),
                partition_key: (relkind == pg_sys::RELKIND_PARTITIONED_TABLE)
                    .then(|| text_of(pg_sys::pg_get_partkeydef, &[relid.into()]))
                    .flatten(),
                partition_of: class.relispartition.then(|| partition_of(relid)).flatten(),
                inherits: if class.relispartition {
                    Vec::new()
                } else {
                    parents(relid)
                },
            })
        }
    })
    .flatten()
}

/// The columns of the open `rel` (`relid`), in order.
///
/// # Safety
/// `rel` is open; as for [`table`].
unsafe fn columns(rel: pg_sys::Relation, relid: pg_sys::Oid) -> Vec<ColumnDescription> {
    // SAFETY: the caller's promise: the relation's descriptor and its constraints (NULL when
    // none), whose `defval` holds `num_defval` defaults.
    let (attrs, defaults) = unsafe {
        let desc = (*rel).rd_att;
        let constr = (*desc).constr;
        let defaults: &[pg_sys::AttrDefault] = if constr.is_null() || (*constr).num_defval == 0 {
            &[]
        } else {
            std::slice::from_raw_parts((*constr).defval, (*constr).num_defval as usize)
        };
        (versions::attributes(desc), defaults)
    };
    attrs
        .iter()
        .filter(|a| !a.attisdropped && a.attnum > 0)
        .map(|a| {
            // SAFETY: the default's expression, a NUL-terminated node string of this relation.
            let expression = defaults
                .iter()
                .find(|d| d.adnum == a.attnum)
                .and_then(|d| unsafe {
                    let text = pg_sys::cstring_to_text(d.adbin);
                    text_of(
                        pg_sys::pg_get_expr,
                        &[pg_sys::Datum::from(text), relid.into()],
                    )
                });
            let generated = match a.attgenerated as u8 {
                0 => None,
                b's' => Some("STORED"),
                _ => Some("VIRTUAL"),
            };
            // SAFETY: catalog lookups of the column's type and collation.
            unsafe {
                ColumnDescription {
                    name: utf8_ptr(a.attname.data.as_ptr()),
                    type_name: utf8_ptr(pg_sys::format_type_with_typemod(a.atttypid, a.atttypmod)),
                    collation: (a.attcollation != pg_sys::InvalidOid
                        && a.attcollation != pg_sys::get_typcollation(a.atttypid))
                    .then(|| utf8_ptr(pg_sys::generate_collation_name(a.attcollation))),
                    not_null: a.attnotnull,
                    default: expression.clone().filter(|_| generated.is_none()),
                    identity: match a.attidentity as u8 {
                        b'a' => Some("always".into()),
                        b'd' => Some("by default".into()),
                        _ => None,
                    },
                    generated: generated
                        .zip(expression)
                        .map(|(kind, e)| format!("{e} {kind}")),
                }
            }
        })
        .collect()
}

/// The constraints of `relid` other than NOT NULL (a column's `not_null` says those; 18
/// catalogs them, older majors do not), by name.
///
/// # Safety
/// As for [`table`].
unsafe fn constraints(relid: pg_sys::Oid) -> Vec<ConstraintDescription> {
    let mut found: Vec<(String, pg_sys::Oid)> = Vec::new();
    // SAFETY: a scan of pg_constraint by conrelid (its first key column), closed below.
    unsafe {
        crate::catalog_scan::scan(
            pg_sys::ConstraintRelationId,
            pg_sys::Oid::from(pg_sys::ConstraintRelidTypidNameIndexId),
            &[(
                pg_sys::Anum_pg_constraint_conrelid as pg_sys::AttrNumber,
                relid,
            )],
            |tuple| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_constraint>(tuple);
                if row.contype as u8 != b'n' {
                    found.push((utf8_ptr(row.conname.data.as_ptr()), row.oid));
                }
            },
        )
    };
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
        .into_iter()
        .map(|(name, oid)| ConstraintDescription {
            name,
            // SAFETY: a constraint just read from the catalog.
            definition: unsafe { text_of(pg_sys::pg_get_constraintdef, &[oid.into()]) }
                .unwrap_or_default(),
        })
        .collect()
}

/// The indexes of the open `rel`, by name.
///
/// # Safety
/// `rel` is open; as for [`table`].
unsafe fn indexes(rel: pg_sys::Relation) -> Vec<IndexDescription> {
    // SAFETY: the relcache's list of the relation's index OIDs, a copy of ours.
    let list = unsafe { PgList::<pg_sys::Oid>::from_pg(pg_sys::RelationGetIndexList(rel)) };
    let mut found: Vec<IndexDescription> = list
        .iter_oid()
        .filter_map(|oid| {
            // SAFETY: catalog lookups and deparsing of an index of the open relation.
            unsafe {
                let name = pg_sys::get_rel_name(oid);
                (!name.is_null()).then(|| IndexDescription {
                    name: utf8_ptr(name),
                    definition: text_of(pg_sys::pg_get_indexdef, &[oid.into()]).unwrap_or_default(),
                })
            }
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `default`, `nothing`, `full` or `index <name>`.
///
/// # Safety
/// `rel` is open; in a transaction.
unsafe fn replica_identity(rel: pg_sys::Relation, relreplident: u8) -> String {
    match relreplident {
        b'n' => "nothing".into(),
        b'f' => "full".into(),
        b'i' => {
            // SAFETY: the caller's promise; a relcache lookup, then a catalog lookup.
            let name = unsafe { pg_sys::get_rel_name(pg_sys::RelationGetReplicaIndex(rel)) };
            if name.is_null() {
                "index".into()
            } else {
                // SAFETY: a NUL-terminated name from the catalog.
                format!("index {}", unsafe { utf8_ptr(name) })
            }
        }
        _ => "default".into(),
    }
}

/// `<parent> <bound>` of partition `relid`.
///
/// # Safety
/// As for [`table`].
unsafe fn partition_of(relid: pg_sys::Oid) -> Option<String> {
    // SAFETY: the caller's promise; a pg_inherits lookup, then the pg_class row's bound from
    // the catalog cache, deparsed, and the row released.
    unsafe {
        let parent = relcache::qualified_name(pg_sys::get_partition_parent(relid, true))?;
        let tuple = pg_sys::SearchSysCache1(
            versions::syscache(pg_sys::SysCacheIdentifier::RELOID),
            relid.into(),
        );
        if tuple.is_null() {
            return None;
        }
        let mut isnull = true;
        let bound = pg_sys::SysCacheGetAttr(
            versions::syscache(pg_sys::SysCacheIdentifier::RELOID),
            tuple,
            pg_sys::Anum_pg_class_relpartbound as pg_sys::AttrNumber,
            &mut isnull,
        );
        let bound = if isnull {
            None
        } else {
            text_of(pg_sys::pg_get_expr, &[bound, relid.into()])
        };
        pg_sys::ReleaseSysCache(tuple);
        Some(format!("{parent} {}", bound?))
    }
}

/// The tables `relid` inherits from, in order.
///
/// # Safety
/// As for [`table`].
unsafe fn parents(relid: pg_sys::Oid) -> Vec<String> {
    let mut seqno_parent: Vec<(i32, pg_sys::Oid)> = Vec::new();
    // SAFETY: a scan of pg_inherits by inhrelid (its first key column).
    unsafe {
        crate::catalog_scan::scan(
            pg_sys::InheritsRelationId,
            pg_sys::Oid::from(pg_sys::InheritsRelidSeqnoIndexId),
            &[(
                pg_sys::Anum_pg_inherits_inhrelid as pg_sys::AttrNumber,
                relid,
            )],
            |tuple| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_inherits>(tuple);
                seqno_parent.push((row.inhseqno, row.inhparent));
            },
        )
    };
    seqno_parent.sort_by_key(|&(seqno, _)| seqno);
    seqno_parent
        .into_iter()
        // SAFETY: catalog lookups.
        .filter_map(|(_, parent)| relcache::qualified_name(parent))
        .collect()
}

/// The text a deparsing function returns for `args`, in UTF-8; `None` for NULL.
///
/// # Safety
/// `function` is one of PostgreSQL's `pg_get_*` functions, with its arguments; in a
/// transaction.
unsafe fn text_of(
    function: unsafe fn(pg_sys::FunctionCallInfo) -> pg_sys::Datum,
    args: &[pg_sys::Datum],
) -> Option<String> {
    let args: Vec<Option<pg_sys::Datum>> = args.iter().copied().map(Some).collect();
    // SAFETY: the caller's promise; the result is a text datum or NULL.
    unsafe {
        let datum = pgrx::fcinfo::direct_function_call_as_datum(function, &args)?;
        Some(utf8_text(datum))
    }
}
