//! Tablespaces are node-local: a tablespace is a directory of one server, created with
//! `CREATE TABLESPACE` (a global object, never replicated), and a subscriber's disks are laid
//! out for that subscriber. A replayed statement that names a tablespace this node does not have
//! would fail, and the table it creates would then be missing when its rows arrive, which stops
//! the subscription for good. So the replay drops such a clause from the parse tree: the object
//! goes where this node puts objects by default (`default_tablespace`, else the database's), a
//! `SET TABLESPACE` to it does nothing, and the apply log row says which clause was dropped. A
//! tablespace that exists here too is used as named.

use crate::replay::statement::select_into;
use ddl_server::text::utf8_ptr;
use pgrx::list::PgList;
use pgrx::pg_sys;
use std::ffi::{c_char, CStr};

/// What [`drop_missing`] did to a statement.
pub struct Dropped {
    /// One per dropped clause, for the row.
    pub notes: Vec<String>,
    /// Nothing is left to run: the statement only moved objects from or to a tablespace this
    /// node does not have.
    pub nothing_left: bool,
}

/// Drops from the raw tree `node` every clause naming a tablespace that does not exist here.
///
/// # Safety
/// `node` is a raw parse tree this backend owns; runs in a transaction (catalog lookups).
pub unsafe fn drop_missing(node: *mut pg_sys::Node) -> Dropped {
    let mut notes = Vec::new();
    let mut nothing_left = false;
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is, that
    // is ours to change ("as above" below); the names in it are the parser's, NUL-terminated,
    // and looked up in the caller's transaction.
    let tag = unsafe { (*node).type_ };
    match tag {
        pg_sys::NodeTag::T_CreateStmt => {
            // SAFETY: as above, a CreateStmt: its columns and constraints are node Lists.
            unsafe {
                let stmt = node.cast::<pg_sys::CreateStmt>();
                clear_if_missing(&mut (*stmt).tablespacename, &mut notes);
                constraints_in((*stmt).tableElts, &mut notes);
                constraints_in((*stmt).constraints, &mut notes);
            }
        }
        pg_sys::NodeTag::T_IndexStmt => {
            // SAFETY: as above, an IndexStmt.
            unsafe {
                let stmt = node.cast::<pg_sys::IndexStmt>();
                clear_if_missing(&mut (*stmt).tableSpace, &mut notes);
            }
        }
        pg_sys::NodeTag::T_CreateTableAsStmt => {
            // SAFETY: as above, a CreateTableAsStmt; `into` is NULL or its IntoClause.
            unsafe {
                let into = (*node.cast::<pg_sys::CreateTableAsStmt>()).into;
                if !into.is_null() {
                    clear_if_missing(&mut (*into).tableSpaceName, &mut notes);
                }
            }
        }
        pg_sys::NodeTag::T_SelectStmt => {
            // SAFETY: as above; `into` is NULL or the IntoClause of the tree.
            unsafe {
                let into = select_into(node);
                if !into.is_null() {
                    clear_if_missing(&mut (*into).tableSpaceName, &mut notes);
                }
            }
        }
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = node.cast::<pg_sys::AlterTableStmt>();
            let mut kept = PgList::<pg_sys::AlterTableCmd>::new();
            // SAFETY: as above, an AlterTableStmt: `cmds` are AlterTableCmds, whose `name` is
            // the tablespace of a SET TABLESPACE and whose `def` is NULL or a node; the list
            // is read whole before the one kept replaces it.
            unsafe {
                for cmd in PgList::<pg_sys::AlterTableCmd>::from_pg((*stmt).cmds).iter_ptr() {
                    let is_move = (*cmd).subtype == pg_sys::AlterTableType::AT_SetTableSpace;
                    if is_move && missing((*cmd).name) {
                        notes.push(dropped_note((*cmd).name, "SET TABLESPACE"));
                        continue;
                    }
                    constraint((*cmd).def, &mut notes);
                    kept.push(cmd);
                }
                nothing_left = kept.is_empty();
                (*stmt).cmds = kept.into_pg();
            }
        }
        pg_sys::NodeTag::T_AlterTableMoveAllStmt => {
            // ALTER ... ALL IN TABLESPACE a SET TABLESPACE b: nothing here is in a missing
            // `a`, and nothing can go to a missing `b`.
            // SAFETY: as above, an AlterTableMoveAllStmt; both names are set by the parser.
            unsafe {
                let stmt = node.cast::<pg_sys::AlterTableMoveAllStmt>();
                for name in [(*stmt).orig_tablespacename, (*stmt).new_tablespacename] {
                    if missing(name) {
                        notes.push(dropped_note(name, "ALL IN TABLESPACE ... SET TABLESPACE"));
                        nothing_left = true;
                    }
                }
            }
        }
        pg_sys::NodeTag::T_ReindexStmt => {
            // SAFETY: as above, a ReindexStmt: `params` are DefElems with names. They are read
            // from a copy of the list's pointers, because list_delete_ptr changes the list in
            // place (and frees it when it empties it).
            unsafe {
                let stmt = node.cast::<pg_sys::ReindexStmt>();
                let params: Vec<*mut pg_sys::DefElem> =
                    PgList::<pg_sys::DefElem>::from_pg((*stmt).params)
                        .iter_ptr()
                        .collect();
                for def in params {
                    let is_tablespace = CStr::from_ptr((*def).defname).to_bytes() == b"tablespace";
                    if is_tablespace && !(*def).arg.is_null() {
                        let name = pg_sys::defGetString(def);
                        if missing(name) {
                            notes.push(dropped_note(name, "TABLESPACE"));
                            (*stmt).params = pg_sys::list_delete_ptr((*stmt).params, def.cast());
                        }
                    }
                }
            }
        }
        _ => {}
    }
    Dropped {
        notes,
        nothing_left,
    }
}

/// `USING INDEX TABLESPACE` of the constraints among `elements` (a CREATE TABLE's columns and
/// table constraints).
///
/// # Safety
/// `elements` is a List of a raw parse tree this backend owns; runs in a transaction.
unsafe fn constraints_in(elements: *mut pg_sys::List, notes: &mut Vec<String>) {
    // SAFETY: the caller's promise: a List of nodes, whose tags say which; a ColumnDef's
    // `constraints` is another such List.
    unsafe {
        for element in PgList::<pg_sys::Node>::from_pg(elements).iter_ptr() {
            if (*element).type_ == pg_sys::NodeTag::T_ColumnDef {
                constraints_in((*element.cast::<pg_sys::ColumnDef>()).constraints, notes);
            } else {
                constraint(element, notes);
            }
        }
    }
}

/// `USING INDEX TABLESPACE` of `node` when it is a constraint.
///
/// # Safety
/// `node` is NULL or a node of a raw parse tree this backend owns; runs in a transaction.
unsafe fn constraint(node: *mut pg_sys::Node, notes: &mut Vec<String>) {
    // SAFETY: the caller's promise; the tag says Constraint, whose `indexspace` is NULL or the
    // parser's name.
    unsafe {
        if !node.is_null() && (*node).type_ == pg_sys::NodeTag::T_Constraint {
            clear_if_missing(&mut (*node.cast::<pg_sys::Constraint>()).indexspace, notes);
        }
    }
}

/// Clears `name` (a tablespace clause) when it names a tablespace missing here.
///
/// # Safety
/// `*name` is NULL or a NUL-terminated string; runs in a transaction.
unsafe fn clear_if_missing(name: &mut *mut c_char, notes: &mut Vec<String>) {
    // SAFETY: the caller's promise.
    if !name.is_null() && unsafe { missing(*name) } {
        // SAFETY: as above.
        notes.push(unsafe { dropped_note(*name, "TABLESPACE") });
        *name = std::ptr::null_mut();
    }
}

/// Whether `name` names a tablespace missing here (never for NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; runs in a transaction.
unsafe fn missing(name: *const c_char) -> bool {
    // SAFETY: the caller's promise; missing_ok: InvalidOid rather than an ERROR.
    !name.is_null() && unsafe { pg_sys::get_tablespace_oid(name, true) } == pg_sys::InvalidOid
}

/// The row's note for a dropped clause.
///
/// # Safety
/// `name` is a NUL-terminated string from the statement's parse tree; in a backend.
unsafe fn dropped_note(name: *const c_char, clause: &str) -> String {
    format!(
        "{clause} {} not replayed: tablespace \"{}\" does not exist on this subscriber (tablespaces \
         are node-local)",
        // SAFETY: the caller's promise.
        unsafe { quote(name) },
        // SAFETY: as above.
        unsafe { utf8_ptr(name) }
    )
}

/// `name` as an identifier (quoted when it must be), in UTF-8.
///
/// # Safety
/// As [`dropped_note`].
unsafe fn quote(name: *const c_char) -> String {
    // SAFETY: the caller's promise; quote_identifier returns `name` itself or a palloc'd copy,
    // both in the database encoding.
    unsafe { utf8_ptr(pg_sys::quote_identifier(name)) }
}
