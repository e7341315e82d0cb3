//! The identity an object had before a rename (`ALTER ... RENAME TO`, `RENAME COLUMN`,
//! `ALTER TRIGGER ... RENAME`, ...) or a move (`ALTER ... SET SCHEMA`): the record's
//! `renamed_from`. Read by the hook before the statement runs: once it has, the catalogs know
//! only the new name, and a consumer that tracks objects by name must be told both.
//!
//! For the objects a statement names by a table (relations, columns, a table's triggers,
//! policies, rules and constraints) and for schemas. Found without a lock, as PostgreSQL's
//! own `RangeVarGetRelid` with `NoLock` finds it: the statement takes its own lock an instant
//! later, and taking a weaker one first could deadlock with a session between the two.

use ddl_server::relcache;
use ddl_server::text::utf8_identifier;
use pgrx::pg_sys;
use pgrx::pg_sys::ObjectType as O;

/// The identity before the statement of the object that statement `pstmt` renames or moves,
/// in the form of an event's `object_identity`; `None` for another statement, an object it
/// does not cover, or a relation that does not exist (the statement then fails, or with `IF
/// EXISTS` does nothing).
///
/// # Safety
/// `pstmt` is the PlannedStmt of a utility statement about to run, in its transaction.
pub unsafe fn old_identity(pstmt: *mut pg_sys::PlannedStmt) -> Option<String> {
    // SAFETY: the caller's promise: the statement's tree, a node of the tag it says.
    unsafe {
        let node = (*pstmt).utilityStmt;
        match (*node).type_ {
            pg_sys::NodeTag::T_RenameStmt => {
                let stmt = &*node.cast::<pg_sys::RenameStmt>();
                match stmt.renameType {
                    O::OBJECT_SCHEMA => Some(utf8_identifier(stmt.subname)),
                    O::OBJECT_TABLE
                    | O::OBJECT_VIEW
                    | O::OBJECT_MATVIEW
                    | O::OBJECT_INDEX
                    | O::OBJECT_SEQUENCE
                    | O::OBJECT_FOREIGN_TABLE => relation(stmt.relation),
                    O::OBJECT_COLUMN | O::OBJECT_ATTRIBUTE => Some(format!(
                        "{}.{}",
                        relation(stmt.relation)?,
                        utf8_identifier(stmt.subname)
                    )),
                    O::OBJECT_TRIGGER
                    | O::OBJECT_POLICY
                    | O::OBJECT_RULE
                    | O::OBJECT_TABCONSTRAINT => Some(format!(
                        "{} on {}",
                        utf8_identifier(stmt.subname),
                        relation(stmt.relation)?
                    )),
                    _ => None,
                }
            }
            pg_sys::NodeTag::T_AlterObjectSchemaStmt => {
                let stmt = &*node.cast::<pg_sys::AlterObjectSchemaStmt>();
                relation(stmt.relation)
            }
            _ => None,
        }
    }
}

/// `schema.name` of the relation `range_var` names now; `None` when it names none (or is
/// NULL: the statement names no relation).
///
/// # Safety
/// `range_var` is NULL or a RangeVar of the statement; in its transaction.
unsafe fn relation(range_var: *mut pg_sys::RangeVar) -> Option<String> {
    if range_var.is_null() {
        return None;
    }
    // SAFETY: the caller's promise; a lookup without a lock that answers InvalidOid for a
    // relation that does not exist (what else it raises, the statement raises the same).
    let relid = unsafe {
        pg_sys::RangeVarGetRelidExtended(
            range_var,
            pg_sys::NoLock as i32,
            pg_sys::RVROption::RVR_MISSING_OK,
            None,
            std::ptr::null_mut(),
        )
    };
    (relid != pg_sys::InvalidOid)
        .then(|| relcache::qualified_name(relid))
        .flatten()
}
