//! Tablespaces are node-local: a tablespace is a directory of one server, created with
//! `CREATE TABLESPACE` (a global object, never replicated), and a subscriber's disks are laid
//! out for that subscriber. A replayed statement that names a tablespace this node does not have
//! would fail, and the table it creates would then be missing when its rows arrive, which stops
//! the subscription for good. So the replay drops such a clause from the parse tree: the object
//! goes where this node puts objects by default (`default_tablespace`, else the database's), a
//! `SET TABLESPACE` to it does nothing, and the apply log row says which clause was dropped. A
//! tablespace that exists here too is used as named.

use crate::replay::statement::select_into;
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
    match (*node).type_ {
        pg_sys::NodeTag::T_CreateStmt => {
            let stmt = node as *mut pg_sys::CreateStmt;
            clear_if_missing(&mut (*stmt).tablespacename, &mut notes);
            constraints_in((*stmt).tableElts, &mut notes);
            constraints_in((*stmt).constraints, &mut notes);
        }
        pg_sys::NodeTag::T_IndexStmt => {
            clear_if_missing(
                &mut (*(node as *mut pg_sys::IndexStmt)).tableSpace,
                &mut notes,
            );
        }
        pg_sys::NodeTag::T_CreateTableAsStmt => {
            let into = (*(node as *mut pg_sys::CreateTableAsStmt)).into;
            if !into.is_null() {
                clear_if_missing(&mut (*into).tableSpaceName, &mut notes);
            }
        }
        pg_sys::NodeTag::T_SelectStmt => {
            let into = select_into(node);
            if !into.is_null() {
                clear_if_missing(&mut (*into).tableSpaceName, &mut notes);
            }
        }
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = node as *mut pg_sys::AlterTableStmt;
            let mut kept = PgList::<pg_sys::AlterTableCmd>::new();
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
        pg_sys::NodeTag::T_AlterTableMoveAllStmt => {
            // ALTER ... ALL IN TABLESPACE a SET TABLESPACE b: nothing here is in a missing
            // `a`, and nothing can go to a missing `b`.
            let stmt = node as *mut pg_sys::AlterTableMoveAllStmt;
            for name in [(*stmt).orig_tablespacename, (*stmt).new_tablespacename] {
                if missing(name) {
                    notes.push(dropped_note(name, "ALL IN TABLESPACE ... SET TABLESPACE"));
                    nothing_left = true;
                }
            }
        }
        pg_sys::NodeTag::T_ReindexStmt => {
            let stmt = node as *mut pg_sys::ReindexStmt;
            let params = PgList::<pg_sys::DefElem>::from_pg((*stmt).params);
            for def in params.iter_ptr() {
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
        _ => {}
    }
    Dropped {
        notes,
        nothing_left,
    }
}

/// `USING INDEX TABLESPACE` of the constraints among `elements` (a CREATE TABLE's columns and
/// table constraints).
unsafe fn constraints_in(elements: *mut pg_sys::List, notes: &mut Vec<String>) {
    for element in PgList::<pg_sys::Node>::from_pg(elements).iter_ptr() {
        if (*element).type_ == pg_sys::NodeTag::T_ColumnDef {
            constraints_in((*(element as *mut pg_sys::ColumnDef)).constraints, notes);
        } else {
            constraint(element, notes);
        }
    }
}

/// `USING INDEX TABLESPACE` of `node` when it is a constraint.
unsafe fn constraint(node: *mut pg_sys::Node, notes: &mut Vec<String>) {
    if !node.is_null() && (*node).type_ == pg_sys::NodeTag::T_Constraint {
        clear_if_missing(&mut (*(node as *mut pg_sys::Constraint)).indexspace, notes);
    }
}

unsafe fn clear_if_missing(name: &mut *mut c_char, notes: &mut Vec<String>) {
    if !name.is_null() && missing(*name) {
        notes.push(dropped_note(*name, "TABLESPACE"));
        *name = std::ptr::null_mut();
    }
}

unsafe fn missing(name: *const c_char) -> bool {
    !name.is_null() && pg_sys::get_tablespace_oid(name, true) == pg_sys::InvalidOid
}

unsafe fn dropped_note(name: *const c_char, clause: &str) -> String {
    format!(
        "{clause} {} not replayed: tablespace \"{}\" does not exist on this subscriber (tablespaces \
         are node-local)",
        quote(name),
        CStr::from_ptr(name).to_string_lossy()
    )
}

unsafe fn quote(name: *const c_char) -> String {
    CStr::from_ptr(pg_sys::quote_identifier(name))
        .to_string_lossy()
        .into_owned()
}
