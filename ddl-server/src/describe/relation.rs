//! Relations: tables (with their constraints, indexes, triggers, policies and rules), views,
//! materialized views and sequences.

use super::{role_name, text_of};
use crate::text::{utf8_identifier, utf8_ptr};
use crate::{relcache, versions};
use ddl_wire::{Action, ColumnDescription, ObjectDescription, Part, TableDescription};
use pgrx::list::PgList;
use pgrx::pg_sys;

/// The table of index `relid`; `None` when `relid` is not an index.
///
/// # Safety
/// In a transaction.
pub(super) unsafe fn owning_table(relid: pg_sys::Oid) -> Option<pg_sys::Oid> {
    // SAFETY: the caller's promise; catalog cache lookups.
    unsafe {
        let relkind = pg_sys::get_rel_relkind(relid) as u8;
        (relkind == pg_sys::RELKIND_INDEX || relkind == pg_sys::RELKIND_PARTITIONED_INDEX)
            .then(|| pg_sys::IndexGetRelation(relid, true))
    }
}

/// The relation `relid` after a statement did `action` to it; `None` for a kind not described
/// (a foreign table, a TOAST table) or when its lock is not free within a second.
///
/// # Safety
/// In a transaction, with `pg_catalog` alone on the search_path.
pub(super) unsafe fn described(relid: pg_sys::Oid, action: Action) -> Option<ObjectDescription> {
    // SAFETY: the caller's promise; a catalog cache lookup.
    let relkind = unsafe { pg_sys::get_rel_relkind(relid) } as u8;
    let kind = match relkind {
        pg_sys::RELKIND_RELATION | pg_sys::RELKIND_PARTITIONED_TABLE => "table",
        pg_sys::RELKIND_VIEW => "view",
        pg_sys::RELKIND_MATVIEW => "materialized view",
        pg_sys::RELKIND_SEQUENCE => "sequence",
        _ => return None,
    };
    // SAFETY: the caller's promise.
    unsafe {
        with_lock(relid, || {
            relcache::with_relation(relid, |rel| {
                let class = &*(*rel).rd_rel;
                Some(ObjectDescription {
                    action,
                    kind: kind.into(),
                    identity: relcache::class_qualified_name(class)?,
                    owner: role_name(class.relowner),
                    definition: match relkind {
                        pg_sys::RELKIND_VIEW | pg_sys::RELKIND_MATVIEW => view_query(relid),
                        pg_sys::RELKIND_SEQUENCE => sequence_options(relid),
                        _ => None,
                    },
                    columns: if relkind == pg_sys::RELKIND_SEQUENCE {
                        Vec::new()
                    } else {
                        columns(rel, relid)
                    },
                    labels: Vec::new(),
                    table: (kind == "table" || kind == "materialized view")
                        .then(|| table(rel, relid)),
                    renamed_from: None,
                })
            })
            .flatten()
        })
        .flatten()
    }
}

/// `f`, with AccessShareLock on `relid` (what PostgreSQL's deparsing of its expressions
/// takes) if it is free within a second; `None` when it is not. Usually it is this backend's
/// already (the capture and the replay describe what their statement just locked), or free
/// at once. Not taken: not described, and subscribers do not compare it. Waited for without
/// an ERROR: a WARNING for every statement on a table another transaction keeps locked would
/// say nothing useful.
///
/// # Safety
/// In a transaction.
pub(super) unsafe fn with_lock<T>(relid: pg_sys::Oid, f: impl FnOnce() -> T) -> Option<T> {
    let mut locked = false;
    for _ in 0..100 {
        // SAFETY: the caller's promise; a lock without waiting.
        locked =
            unsafe { pg_sys::ConditionalLockRelationOid(relid, pg_sys::AccessShareLock as i32) };
        if locked {
            break;
        }
        // SAFETY: a sleep of this backend, which answers interrupts between tries.
        unsafe { pg_sys::pg_usleep(10_000) };
        pgrx::check_for_interrupts!();
    }
    if !locked {
        return None;
    }
    let out = f();
    // SAFETY: the lock taken above (what the deparsing took, it released).
    unsafe { pg_sys::UnlockRelationOid(relid, pg_sys::AccessShareLock as i32) };
    Some(out)
}

/// What table (or materialized view) `rel` has besides its columns.
///
/// # Safety
/// `rel` is open; as for [`described`].
unsafe fn table(rel: pg_sys::Relation, relid: pg_sys::Oid) -> TableDescription {
    // SAFETY: the caller's promise: the open relation's pg_class row; catalog lookups and
    // deparsing in the caller's transaction.
    unsafe {
        let class = &*(*rel).rd_rel;
        TableDescription {
            constraints: constraints_of(relid, Some(rel)),
            indexes: indexes(rel),
            triggers: if class.relhastriggers {
                triggers(relid)
            } else {
                Vec::new()
            },
            // Only while row security is on, when they are what reading the table obeys (a
            // statement on a policy describes the policy whatever the table's row security).
            policies: if class.relrowsecurity {
                policies(relid)
            } else {
                Vec::new()
            },
            rules: if class.relhasrules {
                rules(relid)
            } else {
                Vec::new()
            },
            row_security: match (class.relrowsecurity, class.relforcerowsecurity) {
                (false, _) => None,
                (true, false) => Some("enabled".into()),
                (true, true) => Some("forced".into()),
            },
            replica_identity: replica_identity(rel, class.relreplident as u8),
            partition_key: (class.relkind as u8 == pg_sys::RELKIND_PARTITIONED_TABLE)
                .then(|| text_of(pg_sys::pg_get_partkeydef, &[relid.into()]))
                .flatten(),
            partition_of: class.relispartition.then(|| partition_of(relid)).flatten(),
            inherits: if class.relispartition {
                Vec::new()
            } else {
                parents(relid)
            },
        }
    }
}

/// The columns of the open `rel` (`relid`), in order.
///
/// # Safety
/// `rel` is open; as for [`described`].
pub(super) unsafe fn columns(rel: pg_sys::Relation, relid: pg_sys::Oid) -> Vec<ColumnDescription> {
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
                    type_name: type_name(a.atttypid, a.atttypmod),
                    collation: column_collation(a.atttypid, a.attcollation),
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
                    renamed_from: None,
                }
            }
        })
        .collect()
}

/// Type `typid` with `typmod`, as `format_type_with_typemod` writes it under `search_path =
/// pg_catalog` whatever the search_path is: a type of `pg_catalog` unqualified (or by its SQL
/// name, `integer`), any other schema-qualified.
///
/// # Safety
/// In a transaction.
pub unsafe fn type_name(typid: pg_sys::Oid, typmod: i32) -> String {
    // SAFETY: the caller's promise; a catalog cache lookup, the result a new server string.
    let qualified = unsafe {
        utf8_ptr(pg_sys::format_type_extended(
            typid,
            typmod,
            (pg_sys::FORMAT_TYPE_TYPEMOD_GIVEN | pg_sys::FORMAT_TYPE_FORCE_QUALIFY) as u16,
        ))
    };
    match qualified.strip_prefix("pg_catalog.") {
        Some(name) => name.to_string(),
        None => qualified,
    }
}

/// The collation `collid` of a column of type `typid`, as [`collation_name`] writes it, when it
/// is not the type's own (as CREATE TABLE would infer it); `None` when it is, or there is none.
///
/// # Safety
/// In a transaction.
pub unsafe fn column_collation(typid: pg_sys::Oid, collid: pg_sys::Oid) -> Option<String> {
    // SAFETY: the caller's promise; catalog cache lookups.
    unsafe {
        (collid != pg_sys::InvalidOid && collid != pg_sys::get_typcollation(typid))
            .then(|| collation_name(collid))
            .flatten()
    }
}

/// Collation `collid` as `generate_collation_name` writes it under `search_path = pg_catalog`
/// whatever the search_path is: one of `pg_catalog` unqualified, any other qualified; `None`
/// for one that is gone.
///
/// # Safety
/// In a transaction.
pub(super) unsafe fn collation_name(collid: pg_sys::Oid) -> Option<String> {
    // SAFETY: the caller's promise; catalog cache lookups (NULL when gone), the row released.
    unsafe {
        let cache = versions::syscache(pg_sys::SysCacheIdentifier::COLLOID);
        let tuple = pg_sys::SearchSysCache1(cache, collid.into());
        if tuple.is_null() {
            return None;
        }
        let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_collation>(tuple);
        let name = crate::text::quote_identifier(&utf8_ptr(row.collname.data.as_ptr()));
        let schema = (row.collnamespace != pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE))
            .then(|| pg_sys::get_namespace_name(row.collnamespace));
        pg_sys::ReleaseSysCache(tuple);
        Some(match schema {
            None => name,
            Some(schema) if schema.is_null() => return None,
            Some(schema) => format!(
                "{}.{name}",
                crate::text::quote_identifier(&utf8_ptr(schema))
            ),
        })
    }
}

/// Table `relid` after a statement did `action` to it, when it has nothing that PostgreSQL's
/// deparsing writes (a default or generated column, a CHECK, an index and so a key, a foreign
/// key, a trigger, a rule, row security and with it policies, partitioning): then describing it reads
/// names and flags only, which no setting changes and which raise no ERROR, and needs neither
/// the settings nor the subtransaction that deparsing is done in (they cost more than the
/// description). `None` for any other relation, which [`described`] describes in full.
///
/// What makes a table not plain is in its pg_class row and descriptor, which the statement
/// just rebuilt: an index leaves `relhasindex` set, a foreign key (before 18, where all are
/// enforced) its triggers `relhastriggers`; 18's NOT ENFORCED foreign keys have no triggers,
/// and are in the relation cache's list (a pg_constraint scan); policies are described only with
/// row security. Its parents are not: pg_inherits is scanned. `made_alone` (the statement made
/// the table without parents or foreign keys) spares both scans. `identity`: the table's
/// `schema.name`, when the caller has it.
///
/// # Safety
/// In a transaction whose catalogs are those after the statement.
// Not inlined: `cargo xtask bench instructions` profiles it.
#[inline(never)]
pub(super) unsafe fn plain(
    relid: pg_sys::Oid,
    action: Action,
    made_alone: bool,
    identity: Option<&str>,
) -> Option<ObjectDescription> {
    // SAFETY: the caller's promise; the open relation's descriptor, pg_class row and relcache
    // lists (copies of ours), and scans of two catalogs by their indexes' first key column.
    unsafe {
        relcache::with_relation(relid, |rel| {
            let class = &*(*rel).rd_rel;
            let constr = (*(*rel).rd_att).constr;
            // A generated column's expression is kept with the defaults.
            let expressions =
                !constr.is_null() && ((*constr).num_defval > 0 || (*constr).num_check > 0);
            let flags_say_plain = class.relkind as u8 == pg_sys::RELKIND_RELATION
                && !class.relispartition
                && !class.relhastriggers
                && !class.relhasrules
                && !class.relrowsecurity
                && !class.relhasindex
                && !expressions;
            let unenforced_foreign_keys = || {
                pg_sys::PG_VERSION_NUM >= 180000
                    && !PgList::<pg_sys::ForeignKeyCacheInfo>::from_pg(pg_sys::RelationGetFKeyList(
                        rel,
                    ))
                    .is_empty()
            };
            if !flags_say_plain || (!made_alone && unenforced_foreign_keys()) {
                return None;
            }
            Some(ObjectDescription {
                action,
                kind: "table".into(),
                identity: match identity {
                    Some(identity) => identity.to_string(),
                    None => relcache::class_qualified_name(class)?,
                },
                owner: role_name(class.relowner),
                definition: None,
                columns: columns(rel, relid),
                labels: Vec::new(),
                table: Some(TableDescription {
                    replica_identity: replica_identity(rel, class.relreplident as u8),
                    inherits: if made_alone {
                        Vec::new()
                    } else {
                        parents(relid)
                    },
                    ..Default::default()
                }),
                renamed_from: None,
            })
        })
        .flatten()
    }
}

/// The constraints of `oid`, the open table `table`, or a domain when `table` is `None`,
/// other than NOT NULL (a column's `not_null` says those; 17 and 18 catalog them, older majors
/// do not), by name.
///
/// # Safety
/// As for [`described`]; `table` is open.
pub(super) unsafe fn constraints_of(
    oid: pg_sys::Oid,
    table: Option<pg_sys::Relation>,
) -> Vec<Part> {
    let (index, column) = match table {
        Some(_) => (
            pg_sys::ConstraintRelidTypidNameIndexId,
            pg_sys::Anum_pg_constraint_conrelid,
        ),
        None => (
            pg_sys::ConstraintTypidIndexId,
            pg_sys::Anum_pg_constraint_contypid,
        ),
    };
    // SAFETY: pg_constraint by conrelid or contypid, each its index's first key column; a
    // table's keys written from its row (see `key`).
    unsafe {
        parts_of(
            pg_sys::ConstraintRelationId,
            index,
            column,
            oid,
            |tuple, desc| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_constraint>(tuple);
                (row.contype as u8 != b'n').then(|| Part {
                    name: utf8_ptr(row.conname.data.as_ptr()),
                    definition: table
                        .and_then(|rel| super::key::written(rel, tuple, desc))
                        .or_else(|| text_of(pg_sys::pg_get_constraintdef, &[row.oid.into()]))
                        .unwrap_or_default(),
                })
            },
        )
    }
}

/// The valid indexes of the open `rel`. An invalid one is what a failed `CREATE INDEX
/// CONCURRENTLY` (or `REINDEX CONCURRENTLY`) left behind on one node: no statement made it,
/// queries ignore it, and the node that has it must drop it.
///
/// # Safety
/// `rel` is open; as for [`described`].
unsafe fn indexes(rel: pg_sys::Relation) -> Vec<Part> {
    // SAFETY: the relcache's list of the relation's index OIDs, a copy of ours.
    let list = unsafe { PgList::<pg_sys::Oid>::from_pg(pg_sys::RelationGetIndexList(rel)) };
    let found = list
        .iter_oid()
        .filter_map(|oid| {
            // SAFETY: catalog lookups and deparsing of an index of the open relation.
            unsafe {
                let name = pg_sys::get_rel_name(oid);
                (!name.is_null() && pg_sys::get_index_isvalid(oid)).then(|| Part {
                    name: utf8_ptr(name),
                    definition: super::index::definition(rel, oid),
                })
            }
        })
        .collect();
    by_name(found)
}

/// The triggers of `relid` that a statement made (not PostgreSQL's own for foreign keys), with
/// how they are enabled when not in the ordinary way.
///
/// # Safety
/// As for [`described`].
pub(super) unsafe fn triggers(relid: pg_sys::Oid) -> Vec<Part> {
    // SAFETY: pg_trigger by tgrelid, its index's first key column.
    unsafe {
        parts_of(
            pg_sys::TriggerRelationId,
            pg_sys::TriggerRelidNameIndexId,
            pg_sys::Anum_pg_trigger_tgrelid,
            relid,
            |tuple, _| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_trigger>(tuple);
                // An internal trigger (a foreign key's) is its constraint's part, described
                // with the constraint: not deparsed (half a table's description for one with
                // foreign keys).
                (!row.tgisinternal).then(|| Part {
                    name: utf8_ptr(row.tgname.data.as_ptr()),
                    definition: format!(
                        "{}{}",
                        text_of(pg_sys::pg_get_triggerdef, &[row.oid.into()]).unwrap_or_default(),
                        enabled(row.tgenabled)
                    ),
                })
            },
        )
    }
}

/// The row-level security policies of `relid`: `AS PERMISSIVE FOR ALL TO public USING (...)
/// WITH CHECK (...)`.
///
/// # Safety
/// As for [`described`].
pub(super) unsafe fn policies(relid: pg_sys::Oid) -> Vec<Part> {
    // SAFETY: pg_policy by polrelid, its index's first key column; the variable columns read
    // with the catalog's descriptor.
    unsafe {
        parts_of(
            pg_sys::PolicyRelationId,
            pg_sys::PolicyPolrelidPolnameIndexId,
            pg_sys::Anum_pg_policy_polrelid,
            relid,
            |tuple, desc| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_policy>(tuple);
                let command = match row.polcmd as u8 {
                    b'r' => "SELECT",
                    b'a' => "INSERT",
                    b'w' => "UPDATE",
                    b'd' => "DELETE",
                    _ => "ALL",
                };
                let column = |at: u32| attribute(tuple, desc, at);
                let roles: Vec<String> = column(pg_sys::Anum_pg_policy_polroles)
                    .and_then(|d| <Vec<pg_sys::Oid> as pgrx::FromDatum>::from_datum(d, false))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|role| {
                        let name = pg_sys::GetUserNameFromId(role, true);
                        if role == pg_sys::InvalidOid {
                            "public".into()
                        } else if name.is_null() {
                            role.to_u32().to_string()
                        } else {
                            utf8_identifier(name)
                        }
                    })
                    .collect();
                let expression = |at: u32| {
                    column(at).and_then(|d| text_of(pg_sys::pg_get_expr, &[d, relid.into()]))
                };
                let mut definition = format!(
                    "AS {} FOR {command} TO {}",
                    if row.polpermissive {
                        "PERMISSIVE"
                    } else {
                        "RESTRICTIVE"
                    },
                    roles.join(", ")
                );
                if let Some(using) = expression(pg_sys::Anum_pg_policy_polqual) {
                    definition.push_str(&format!(" USING ({using})"));
                }
                if let Some(check) = expression(pg_sys::Anum_pg_policy_polwithcheck) {
                    definition.push_str(&format!(" WITH CHECK ({check})"));
                }
                Some(Part {
                    name: utf8_ptr(row.polname.data.as_ptr()),
                    definition,
                })
            },
        )
    }
}

/// The rules of `relid` (not a view's `_RETURN`): `ON INSERT DO INSTEAD <actions>`, each action
/// as `pg_get_querydef` writes it. A rule's WHERE condition is not described: PostgreSQL
/// deparses it only through `pg_get_ruledef`, which runs SPI.
///
/// # Safety
/// As for [`described`].
pub(super) unsafe fn rules(relid: pg_sys::Oid) -> Vec<Part> {
    // SAFETY: the caller's promise.
    unsafe {
        rewrite_rules(relid, |row, name, actions| {
            let event = match row.ev_type as u8 {
                b'1' => "SELECT",
                b'2' => "UPDATE",
                b'3' => "INSERT",
                _ => "DELETE",
            };
            (name != "_RETURN").then(|| {
                format!(
                    "ON {event} DO {}{}{}",
                    if row.is_instead { "INSTEAD " } else { "ALSO " },
                    if actions.is_empty() {
                        "NOTHING".to_string()
                    } else {
                        actions.join("; ")
                    },
                    enabled(row.ev_enabled)
                )
            })
        })
    }
}

/// The query of view (or materialized view) `relid`, from its `_RETURN` rule.
///
/// # Safety
/// As for [`described`].
unsafe fn view_query(relid: pg_sys::Oid) -> Option<String> {
    // SAFETY: the caller's promise.
    unsafe {
        rewrite_rules(relid, |_, name, actions| {
            (name == "_RETURN").then(|| actions.into_iter().next())?
        })
    }
    .into_iter()
    .next()
    .map(|part| part.definition)
}

/// The rules of `relid` that `definition` gives a definition for, given each rule's row, name
/// and actions (deparsed).
///
/// # Safety
/// As for [`described`].
unsafe fn rewrite_rules(
    relid: pg_sys::Oid,
    mut definition: impl FnMut(&pg_sys::FormData_pg_rewrite, &str, Vec<String>) -> Option<String>,
) -> Vec<Part> {
    // SAFETY: pg_rewrite by ev_class, its index's first key column; the actions read with the
    // catalog's descriptor.
    unsafe {
        parts_of(
            pg_sys::RewriteRelationId,
            pg_sys::RewriteRelRulenameIndexId,
            pg_sys::Anum_pg_rewrite_ev_class,
            relid,
            |tuple, desc| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_rewrite>(tuple);
                let name = utf8_ptr(row.rulename.data.as_ptr());
                let actions = attribute(tuple, desc, pg_sys::Anum_pg_rewrite_ev_action)
                    .map(|actions| queries(actions))
                    .unwrap_or_default();
                Some(Part {
                    definition: definition(row, &name, actions)?,
                    name,
                })
            },
        )
    }
}

/// The parts made by `part` of each row of `catalog` whose column `column` is `oid`, read
/// through `index` (None from `part`: left out), by name.
///
/// # Safety
/// `index` is an index of `catalog` whose first key column is `column`; in a transaction.
unsafe fn parts_of(
    catalog: pg_sys::Oid,
    index: u32,
    column: u32,
    oid: pg_sys::Oid,
    mut part: impl FnMut(pg_sys::HeapTuple, pg_sys::TupleDesc) -> Option<Part>,
) -> Vec<Part> {
    let mut found = Vec::new();
    // SAFETY: the caller's promise.
    unsafe {
        crate::catalog_scan::scan(
            catalog,
            pg_sys::Oid::from(index),
            &[(column as pg_sys::AttrNumber, oid)],
            |tuple, desc| found.extend(part(tuple, desc)),
        )
    };
    by_name(found)
}

/// Column `at` of catalog row `tuple` (of descriptor `desc`), or `None` for NULL.
///
/// # Safety
/// `tuple` is a row of the catalog `desc` describes, with a column `at`.
pub(super) unsafe fn attribute(
    tuple: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
    at: u32,
) -> Option<pg_sys::Datum> {
    let mut isnull = true;
    // SAFETY: the caller's promise.
    let datum = unsafe { pg_sys::heap_getattr(tuple, at as i32, desc, &mut isnull) };
    (!isnull).then_some(datum)
}

/// How a trigger or rule is enabled, when not in the ordinary way (`pg_trigger.tgenabled`,
/// `pg_rewrite.ev_enabled`).
fn enabled(state: std::ffi::c_char) -> &'static str {
    match state as u8 {
        b'D' => " DISABLE",
        b'R' => " ENABLE REPLICA",
        b'A' => " ENABLE ALWAYS",
        _ => "",
    }
}

/// Each query of a rule's `ev_action` (a `pg_node_tree` of a list of queries), deparsed.
///
/// # Safety
/// `actions` is a `pg_node_tree` datum of a rule; in a transaction.
unsafe fn queries(actions: pg_sys::Datum) -> Vec<String> {
    // SAFETY: the caller's promise: the node tree's text makes a list of Query nodes (a copy
    // of ours, which the deparsing may lock relations for).
    unsafe {
        let text = pg_sys::text_to_cstring(actions.cast_mut_ptr());
        let list = PgList::<pg_sys::Query>::from_pg(pg_sys::stringToNode(text).cast());
        list.iter_ptr()
            .map(|query| utf8_ptr(pg_sys::pg_get_querydef(query, false)))
            .collect()
    }
}

/// The options of sequence `relid`: `AS bigint INCREMENT BY 1 MINVALUE 1 MAXVALUE ...
/// START WITH 1 CACHE 1 NO CYCLE OWNED BY public.t.id`. Not its current value, which is each
/// node's own.
///
/// # Safety
/// As for [`described`].
unsafe fn sequence_options(relid: pg_sys::Oid) -> Option<String> {
    let id = versions::syscache(pg_sys::SysCacheIdentifier::SEQRELID);
    // SAFETY: the caller's promise; a catalog cache row, released below; catalog lookups.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(id, relid.into());
        if tuple.is_null() {
            return None;
        }
        let s = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_sequence>(tuple);
        let mut options = format!(
            "AS {} INCREMENT BY {} MINVALUE {} MAXVALUE {} START WITH {} CACHE {}{}",
            utf8_ptr(pg_sys::format_type_be(s.seqtypid)),
            s.seqincrement,
            s.seqmin,
            s.seqmax,
            s.seqstart,
            s.seqcache,
            if s.seqcycle { " CYCLE" } else { " NO CYCLE" }
        );
        pg_sys::ReleaseSysCache(tuple);
        let (mut table, mut column) = (pg_sys::InvalidOid, 0);
        let owned = [
            pg_sys::DependencyType::DEPENDENCY_AUTO,
            pg_sys::DependencyType::DEPENDENCY_INTERNAL,
        ]
        .into_iter()
        .any(|deptype| {
            pg_sys::sequenceIsOwned(relid, deptype as std::ffi::c_char, &mut table, &mut column)
        });
        if owned {
            let name = relcache::qualified_name(table)?;
            let attname = pg_sys::get_attname(table, column as pg_sys::AttrNumber, true);
            if !attname.is_null() {
                options.push_str(&format!(" OWNED BY {name}.{}", utf8_identifier(attname)));
            }
        }
        Some(options)
    }
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
/// As for [`described`].
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
/// As for [`described`].
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
            |tuple, _| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_inherits>(tuple);
                seqno_parent.push((row.inhseqno, row.inhparent));
            },
        )
    };
    seqno_parent.sort_by_key(|&(seqno, _)| seqno);
    seqno_parent
        .into_iter()
        .filter_map(|(_, parent)| relcache::qualified_name(parent))
        .collect()
}

/// `parts`, by name.
fn by_name(mut parts: Vec<Part>) -> Vec<Part> {
    parts.sort_by(|a, b| a.name.cmp(&b.name));
    parts
}
