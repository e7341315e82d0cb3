//! The relations a replayed statement creates here, whatever its command tag: a CREATE TABLE's
//! table, and as well the tables of `CREATE SCHEMA ... CREATE TABLE ...`, of a `CREATE TABLE AS`,
//! of an extension's script or of a function body the statement runs. Each must be registered
//! in the subscription (`applying::Subscription::register_created`), or PostgreSQL's apply
//! worker drops its rows without a word.
//!
//! Told by PostgreSQL's object access hook (`OAT_POST_CREATE` of a relation that the server did
//! not make on the side, as it makes TOAST tables), not by reading the statement: no tag or
//! syntax is left to list.

use crate::replay::bound;
use ddl_server::object_access::Access;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;

thread_local! {
    /// The relations made while a statement is watched; `None` when none is.
    static MADE: RefCell<Option<Vec<pg_sys::Oid>>> = const { RefCell::new(None) };
}

/// Installs the hook that watches.
///
/// # Safety
/// Once per process, from `_PG_init`.
pub unsafe fn install() {
    // SAFETY: the caller's promise; `seen` raises nothing outside its guarded parts.
    unsafe { ddl_server::object_access::install(seen) };
}

/// Called for every object made, changed or dropped in this backend and every function an
/// expression calls: cheap, and unguarded, until a replay watches.
unsafe extern "C-unwind" fn seen(object: pg_sys::ObjectAddress, access: Access) {
    if matches!(access, Access::FunctionExecute)
        && ddl_server::bindings::is_builtin(object.objectId)
    {
        return;
    }
    if bound::watching() {
        replay_seen(object, access);
    } else if is_relation_made(&object, access) {
        made(object.objectId);
    }
}

/// Whether the report is of a relation made, not by the server on the side (a TOAST table, a
/// rewrite's new heap), and not of a column: PostgreSQL reports a column added with its
/// table's address and the column's number (`ALTER TABLE ... ADD COLUMN`).
fn is_relation_made(object: &pg_sys::ObjectAddress, access: Access) -> bool {
    object.classId == pg_sys::RelationRelationId
        && object.objectSubId == 0
        && matches!(access, Access::PostCreate { internal: false })
}

/// What a replay watches (see `bound.rs`), and the relations it makes.
#[pg_guard]
extern "C-unwind" fn replay_seen(object: pg_sys::ObjectAddress, access: Access) {
    if is_relation_made(&object, access) {
        made(object.objectId);
    }
    bound::seen(object, access);
}

/// A relation was made.
#[pg_guard]
extern "C-unwind" fn made(relid: pg_sys::Oid) {
    MADE.with_borrow_mut(|made| {
        if let Some(made) = made {
            made.push(relid);
        }
    });
}

/// Runs `f`, and returns with its result the relations made meanwhile (some may be gone again,
/// with a subtransaction that was undone). An ERROR leaving `f` stops the watch too.
pub fn watching<T>(f: impl FnOnce() -> T) -> (T, Vec<pg_sys::Oid>) {
    struct Watch(Option<Vec<pg_sys::Oid>>);
    impl Drop for Watch {
        fn drop(&mut self) {
            MADE.set(self.0.take());
        }
    }
    let outer = Watch(MADE.replace(Some(Vec::new())));
    let result = f();
    let made = MADE.with_borrow_mut(|m| m.take()).unwrap_or_default();
    drop(outer);
    (result, made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relation_made_is_neither_a_column_added_nor_the_servers_own() {
        let relation = |sub_id| pg_sys::ObjectAddress {
            classId: pg_sys::RelationRelationId,
            objectId: pg_sys::Oid::from(16400),
            objectSubId: sub_id,
        };
        let made = |internal| Access::PostCreate { internal };
        assert!(is_relation_made(&relation(0), made(false)));
        // ALTER TABLE ... ADD COLUMN reports the table's address with the column's number.
        assert!(!is_relation_made(&relation(3), made(false)));
        // A TOAST table, a rewrite's new heap.
        assert!(!is_relation_made(&relation(0), made(true)));
        assert!(!is_relation_made(&relation(0), Access::PostAlter));
        let function = pg_sys::ObjectAddress {
            classId: pg_sys::ProcedureRelationId,
            ..relation(0)
        };
        assert!(!is_relation_made(&function, made(false)));
    }
}
