//! What each statement creates and drops, as PostgreSQL's object access hook reports it.
//!
//! Created: the relations and columns a statement makes itself (not those the server makes for
//! them, such as TOAST tables), which is how the capture knows the table a CREATE TABLE made,
//! and the columns an ALTER TABLE added, without asking the command collection (`direct.rs`).
//!
//! Dropped: a DROP is captured in its `ddl_command_end` trigger, when its objects are gone: the
//! record names the objects the statement itself named (not those that went with them), by their
//! identity, which can only be read while they exist. `pg_event_trigger_dropped_objects()` gives
//! all that in the `sql_drop` trigger, but it is the most expensive part of capturing a DROP (its
//! rows, and the row type it rebuilds at every call). The hook sees each object before its catalog
//! row goes, for the cost of a comparison: the statement's own objects are resolved from its
//! `DropStmt` at its first drop, as PostgreSQL itself resolved them an instant before (same names,
//! same search_path, the objects already locked by the statement), and only those are described.
//!
//! The `sql_drop` trigger still fires: it forgets the extension's rows about every dropped
//! object (`forget.rs`), from this list. A statement the hook did not see (the library loaded
//! by the trigger itself, mid-statement, where it is not preloaded) is read from
//! `pg_event_trigger_dropped_objects()` as before.
//!
//! Reported like PostgreSQL's own list: not the objects of internal deletions (a table
//! rewrite's transient heap), nor those in other sessions' temporary schemas.

use crate::rules::PublicationRules;
use crate::statement::{self, Dropped};
use ddl_server::bindings;
use ddl_server::object_access::Access;
use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::prelude::*;

/// An object by class, OID and sub-object (column) number.
pub type Address = (u32, u32, i32);

fn address(object: &pg_sys::ObjectAddress) -> Address {
    (
        u32::from(object.classId),
        u32::from(object.objectId),
        object.objectSubId,
    )
}

/// Installs the handler of the object access hook.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn install() {
    // SAFETY: the caller's promise; `seen` only compares before it calls guarded functions.
    unsafe { ddl_server::object_access::install(seen) };
}

/// The object access hook's handler. Called for every object made, changed or dropped and
/// every function an expression calls, so it filters before the guarded part, whose guard
/// costs more than the rest of the handler.
unsafe extern "C-unwind" fn seen(object: pg_sys::ObjectAddress, access: Access) {
    match access {
        Access::Drop { flags } if flags & pg_sys::PERFORM_DELETION_INTERNAL as i32 == 0 => {
            // SAFETY: the hook's report of a drop about to happen.
            unsafe { dropping(object) }
        }
        Access::PostCreate { internal } => {
            if !internal && object.classId == pg_sys::RelationRelationId {
                created(object);
            }
            if bindings::holds_names(&object, internal) {
                holder(object);
            }
        }
        Access::PostAlter if bindings::changes_what_it_uses(&object) => holder(object),
        Access::FunctionExecute if !bindings::is_builtin(object.objectId) => ran(object.objectId),
        _ => {}
    }
}

/// A relation (column 0) or a column was made.
#[pg_guard]
extern "C-unwind" fn created(object: pg_sys::ObjectAddress) {
    let made = (object.objectId, object.objectSubId);
    statement::with_innermost(|s| s.created_relations.push(made));
}

/// An object that may keep what a name found was made or changed (the record's `bindings`).
#[pg_guard]
extern "C-unwind" fn holder(object: pg_sys::ObjectAddress) {
    statement::with_innermost(|s| s.holders.push(object));
}

/// A function that is not built in is about to run (the record's `bindings`).
#[pg_guard]
extern "C-unwind" fn ran(function: pg_sys::Oid) {
    statement::with_innermost(|s| {
        if !s.ran.contains(&function) {
            s.ran.push(function);
        }
    });
}

/// Whether a statement's drops are kept, decided at its first.
pub enum Watch {
    /// No event trigger is enabled: nothing would read them.
    Off,
    /// Kept, and these are the objects the statement names (see [`originals`]).
    On(Vec<Address>),
}

/// `object` is about to be dropped, not by an internal deletion.
///
/// # Safety
/// In the deleting transaction, before the object's catalog row goes.
#[pg_guard]
unsafe extern "C-unwind" fn dropping(object: pg_sys::ObjectAddress) {
    let decided = statement::with_innermost(|s| {
        s.watch
            .as_ref()
            .map(|w| matches!(w, Watch::On(_)))
            .ok_or_else(|| {
                s.drop_stmt()
                    .map_or(std::ptr::null(), |d| d as *const pg_sys::DropStmt)
            })
    });
    let on = match decided {
        None => return, // a drop outside any utility statement
        Some(Ok(on)) => on,
        Some(Err(drop_stmt)) => {
            // SAFETY: the event trigger cache, in the deleting transaction; the statement's own
            // tree (alive while it runs), at its first drop: nothing is gone yet and its objects
            // are locked.
            let watch = unsafe {
                if pg_sys::trackDroppedObjectsNeeded() {
                    Watch::On(originals(drop_stmt))
                } else {
                    Watch::Off
                }
            };
            let on = matches!(watch, Watch::On(_));
            statement::with_innermost(|s| s.watch = Some(watch));
            on
        }
    };
    if !on {
        return;
    }
    let address = address(&object);
    let original = statement::with_innermost(
        |s| matches!(&s.watch, Some(Watch::On(originals)) if originals.contains(&address)),
    )
    .unwrap_or(false);
    // SAFETY: the object still exists (its catalog row goes after this hook).
    let kept_elsewhere = !original && unsafe { is_kept_elsewhere(&object) };
    let dropped = if original || kept_elsewhere {
        // SAFETY: as above.
        unsafe { described(&object) }.map(|d| Dropped { original, ..d })
    } else {
        Some(Dropped::unnamed(address))
    };
    if let Some(dropped) = dropped {
        statement::with_innermost(|s| s.dropped.push(dropped));
    }
}

/// Whether `object`, dropped because it depended on what the statement dropped, is a relation
/// that another node may keep: a table, view or foreign table whose dependency there may not
/// exist (an inheritance or a view made differently, a refused statement). The record's
/// description names it, so that subscribers drop it too. (An index, a TOAST table or a
/// sequence goes with its table everywhere.)
///
/// # Safety
/// `object` exists, in the current transaction.
unsafe fn is_kept_elsewhere(object: &pg_sys::ObjectAddress) -> bool {
    if object.classId != pg_sys::RelationRelationId || object.objectSubId != 0 {
        return false;
    }
    // SAFETY: the caller's promise; a syscache lookup.
    let relkind = unsafe { pg_sys::get_rel_relkind(object.objectId) } as u8;
    matches!(relkind, b'r' | b'p' | b'f' | b'v' | b'm')
}

/// The objects `drop_stmt` names, resolved as PostgreSQL resolved them for it (relations by
/// name, without a lock, as RemoveRelations did; anything else with `get_object_address` and
/// the lock the statement already holds, as RemoveObjects did), when the capture may record
/// the statement; none otherwise (a DROP in an extension script, or no publication takes DDL).
///
/// # Safety
/// `drop_stmt` is `DropStmt` of the running statement (null for another statement), in the
/// statement's transaction, before it dropped anything.
unsafe fn originals(drop_stmt: *const pg_sys::DropStmt) -> Vec<Address> {
    // SAFETY: a backend global, true while an extension script runs.
    if drop_stmt.is_null() || unsafe { pg_sys::creating_extension } {
        return Vec::new();
    }
    // SAFETY: in the statement's transaction.
    if unsafe { PublicationRules::current() }.none_enabled() {
        return Vec::new();
    }
    // SAFETY: the caller's promise.
    let stmt = unsafe { &*drop_stmt };
    let relations = [
        pg_sys::ObjectType::OBJECT_TABLE,
        pg_sys::ObjectType::OBJECT_INDEX,
        pg_sys::ObjectType::OBJECT_SEQUENCE,
        pg_sys::ObjectType::OBJECT_VIEW,
        pg_sys::ObjectType::OBJECT_MATVIEW,
        pg_sys::ObjectType::OBJECT_FOREIGN_TABLE,
    ];
    let is_relation = relations.contains(&stmt.removeType);
    // SAFETY: the statement's list of object names (nodes).
    let names = unsafe { PgList::<pg_sys::Node>::from_pg(stmt.objects) };
    names
        .iter_ptr()
        .filter_map(|name| {
            // SAFETY: a name of the statement's kind, looked up as the statement did: a
            // relation by its name alone (RemoveRelations; get_object_address would open it,
            // building a relation cache entry that nothing else needs), anything else as
            // RemoveObjects did (missing_ok: an IF EXISTS that found nothing is no address),
            // with the lock the statement holds.
            let object = unsafe {
                if is_relation {
                    let rv = pg_sys::makeRangeVarFromNameList(name.cast());
                    let relid = ddl_server::relation_oid(rv).unwrap_or(pg_sys::InvalidOid);
                    pg_sys::ObjectAddress {
                        classId: pg_sys::RelationRelationId,
                        objectId: relid,
                        objectSubId: 0,
                    }
                } else {
                    let mut relation: pg_sys::Relation = std::ptr::null_mut();
                    let object = pg_sys::get_object_address(
                        stmt.removeType,
                        name,
                        &mut relation,
                        pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE,
                        true,
                    );
                    if !relation.is_null() {
                        pg_sys::relation_close(relation, pg_sys::NoLock as pg_sys::LOCKMODE);
                    }
                    object
                }
            };
            (object.objectId != pg_sys::InvalidOid).then(|| address(&object))
        })
        .collect()
}

/// `object` with its schema, identity and type, as `pg_event_trigger_dropped_objects()`
/// reports them; `None` for an object of another session's temporary schema (not reported).
///
/// # Safety
/// `object` exists, in the current transaction.
unsafe fn described(object: &pg_sys::ObjectAddress) -> Option<Dropped> {
    // SAFETY: the caller's promise: catalog lookups of an existing object, strings palloc'd
    // in the current context and copied.
    unsafe {
        if object.classId == pg_sys::NamespaceRelationId
            && pg_sys::isAnyTempNamespace(object.objectId)
            && !pg_sys::isTempNamespace(object.objectId)
        {
            return None;
        }
        let namespace = pg_sys::get_object_namespace(object);
        let (schema, temporary) = if namespace == pg_sys::InvalidOid {
            (String::new(), false)
        } else if pg_sys::isTempNamespace(namespace) {
            ("pg_temp".to_string(), true)
        } else if pg_sys::isAnyTempNamespace(namespace) {
            return None;
        } else {
            (
                ddl_server::text::utf8_ptr(pg_sys::get_namespace_name(namespace)),
                false,
            )
        };
        Some(Dropped {
            original: true,
            schema,
            namespace_id: u32::from(namespace),
            identity: ddl_server::text::utf8_ptr(pg_sys::getObjectIdentity(object, false)),
            object_type: ddl_server::text::utf8_ptr(pg_sys::getObjectTypeDescription(
                object, false,
            )),
            temporary,
            ..Dropped::unnamed(address(object))
        })
    }
}
