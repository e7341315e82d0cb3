//! The object of a CREATE TABLE or ALTER TABLE of a table, read from the statement itself.
//!
//! The capture learns which object a statement changed, with its schema and identity, from
//! `pg_event_trigger_ddl_commands()`. For the commonest DDL that is also the most expensive
//! thing it does: 16 k instructions a call, half of them in its `getObjectIdentity`, whose
//! catalog cache entry the statement has just invalidated. Here the same answer costs a few
//! lookups:
//! - CREATE TABLE: the relation the object access hook saw the statement make (`objects.rs`);
//!   none when `IF NOT EXISTS` found it there (and then nothing was collected either);
//! - ALTER TABLE ... ADD COLUMN (every subcommand): the table the hook saw get its first new
//!   column (its inheritors get theirs after it), and the columns it got, for `volatile.rs`.
//!
//! Names are not looked up: a lookup by name, or of the new column, misses the catalog caches
//! the statement has just invalidated, and a miss costs as much as the collection's row. The
//! names come from the relation cache instead (which the record's table shape reads anyway), in
//! PostgreSQL's own spelling: `getObjectIdentity` quotes a relation with
//! `quote_qualified_identifier`, and names a temporary schema `pg_temp`.
//!
//! Every other statement is read from the collection, which knows more: a partition's bound
//! (evaluated from the collected tree), the subcommands of other ALTER TABLEs (`volatile.rs`
//! needs a changed type's `USING` after analysis), relations of other kinds.

use crate::statement::Statement;
use crate::trigger::Target;
use crate::volatile;
use pgrx::pg_sys;

/// The target of the innermost statement `s`, whose command tag is `tag`, when it can be read
/// without the command collection.
///
/// # Safety
/// In the statement's `ddl_command_end` trigger: `s` is the innermost statement, which has run.
pub unsafe fn target(tag: &str, s: &Statement) -> Option<Target> {
    // SAFETY: the hook's PlannedStmt, alive while the statement runs; its tree a node.
    let node = unsafe { (*s.pstmt).utilityStmt };
    if node.is_null() {
        return None;
    }
    // SAFETY: a node, read as the struct its tag says.
    unsafe {
        match ((*node).type_, tag) {
            (pg_sys::NodeTag::T_CreateStmt, "CREATE TABLE") => {
                let stmt = &*node.cast::<pg_sys::CreateStmt>();
                if !stmt.partbound.is_null() {
                    return None;
                }
                let (relid, _) = s
                    .created_relations
                    .iter()
                    .find(|(_, column)| *column == 0)?;
                let made_alone = stmt.inhRelations.is_null() && !references(stmt);
                table(*relid, stmt.relation, Vec::new(), made_alone)
            }
            (pg_sys::NodeTag::T_AlterTableStmt, "ALTER TABLE") => {
                let stmt = &*node.cast::<pg_sys::AlterTableStmt>();
                if stmt.objtype != pg_sys::ObjectType::OBJECT_TABLE || !only_adds_columns(stmt) {
                    return None;
                }
                // The statement's table gets its columns first, then its inheritors.
                let (relid, _) = s.created_relations.iter().find(|(_, column)| *column > 0)?;
                let added = s
                    .created_relations
                    .iter()
                    .filter(|(rel, column)| rel == relid && *column > 0)
                    .map(|(_, column)| volatile::Subcommand::AddColumn(*column as i16))
                    .collect();
                table(*relid, stmt.relation, added, false)
            }
            _ => None,
        }
    }
}

/// Whether `name` (a statement's RangeVar) names the relation of pg_class row `class` in schema
/// `namespace` (`pg_temp` for the session's temporary schema).
///
/// # Safety
/// `name` is a RangeVar; `class` and `namespace` as said, NUL-terminated names.
unsafe fn names(
    name: *const pg_sys::RangeVar,
    class: &pg_sys::FormData_pg_class,
    namespace: *const std::ffi::c_char,
) -> bool {
    use std::ffi::CStr;
    // SAFETY: the caller's promise; a RangeVar's names are null or NUL-terminated.
    unsafe {
        let name = &*name;
        let same = |a: *const std::ffi::c_char, b: *const std::ffi::c_char| {
            CStr::from_ptr(a) == CStr::from_ptr(b)
        };
        !name.relname.is_null()
            && same(name.relname, class.relname.data.as_ptr())
            && (name.schemaname.is_null()
                || same(name.schemaname, namespace)
                || (class.relpersistence == pg_sys::RELPERSISTENCE_TEMP as std::ffi::c_char
                    && CStr::from_ptr(name.schemaname)
                        .to_bytes()
                        .starts_with(b"pg_temp")))
    }
}

/// Whether every subcommand of `stmt` adds a column (`IF NOT EXISTS` may add none).
///
/// # Safety
/// `stmt` is a statement's tree.
unsafe fn only_adds_columns(stmt: &pg_sys::AlterTableStmt) -> bool {
    // SAFETY: the caller's promise: a List of AlterTableCmds.
    let cmds = unsafe { pgrx::list::PgList::<pg_sys::AlterTableCmd>::from_pg(stmt.cmds) };
    let only = !cmds.is_empty()
        && cmds.iter_ptr().all(|cmd| {
            // SAFETY: an AlterTableCmd of the list.
            let (subtype, missing_ok) = unsafe { ((*cmd).subtype, (*cmd).missing_ok) };
            ddl_server::versions::ADD_COLUMN.contains(&subtype) && !missing_ok
        });
    only
}

/// Whether CREATE TABLE `stmt` declares a foreign key (PostgreSQL adds those after making the
/// table, from the same tree).
///
/// # Safety
/// `stmt` is a statement's tree.
unsafe fn references(stmt: &pg_sys::CreateStmt) -> bool {
    let is_foreign_key = |node: *mut pg_sys::Node| {
        // SAFETY: a node of the tree, read as the struct its tag says.
        unsafe {
            (*node).type_ == pg_sys::NodeTag::T_Constraint
                && (*node.cast::<pg_sys::Constraint>()).contype
                    == pg_sys::ConstrType::CONSTR_FOREIGN
        }
    };
    // SAFETY: the caller's promise: table elements are column definitions (each with a List of
    // constraints), table constraints and LIKE clauses.
    unsafe {
        pgrx::list::PgList::<pg_sys::Node>::from_pg(stmt.tableElts)
            .iter_ptr()
            .any(|element| match (*element).type_ {
                pg_sys::NodeTag::T_ColumnDef => {
                    let column = &*element.cast::<pg_sys::ColumnDef>();
                    pgrx::list::PgList::<pg_sys::Node>::from_pg(column.constraints)
                        .iter_ptr()
                        .any(is_foreign_key)
                }
                _ => is_foreign_key(element),
            })
    }
}

/// Table `relid` as the target (`made_alone`: the statement made it without parents or foreign
/// keys); `None`
/// (for the collection) when it is a relation of another kind, or not the table the statement
/// names by `name` (a check, not a lookup).
///
/// # Safety
/// In a transaction that can see `relid`; `name` is the statement's RangeVar.
unsafe fn table(
    relid: pg_sys::Oid,
    name: *const pg_sys::RangeVar,
    subcommands: Vec<volatile::Subcommand>,
    made_alone: bool,
) -> Option<Target> {
    ddl_server::relcache::with_relation(relid, |rel| {
        // SAFETY: an open relation's pg_class row; catalog lookups of its namespace; the
        // quoted name is a new server string.
        unsafe {
            let class = &*(*rel).rd_rel;
            let is_table = class.relkind == pg_sys::RELKIND_RELATION as std::ffi::c_char
                || class.relkind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char;
            let namespace = pg_sys::get_namespace_name_or_temp(class.relnamespace);
            if !is_table || namespace.is_null() || !names(name, class, namespace) {
                return None;
            }
            let identity =
                pg_sys::quote_qualified_identifier(namespace, class.relname.data.as_ptr());
            let schema = ddl_server::text::utf8_ptr(namespace);
            Some(Target {
                class_id: u32::from(pg_sys::RelationRelationId),
                object_id: u32::from(relid),
                temporary: schema.starts_with("pg_temp"),
                schema,
                identity: ddl_server::text::utf8_ptr(identity),
                object_type: "table".into(),
                recorded: None,
                command: std::ptr::null_mut(),
                subcommands,
                relations: vec![u32::from(relid)],
                made_alone,
                namespace_id: u32::from(class.relnamespace),
            })
        }
    })
    .flatten()
}
