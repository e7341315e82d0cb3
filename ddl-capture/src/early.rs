//! Statements captured before they run: CREATE TABLE AS and SELECT INTO.
//!
//! They create a table and fill it in one statement, so the new table's rows are in WAL before
//! the statement ends. Captured at `ddl_command_end` like the others, the record would reach a
//! subscriber after rows of a table it does not have yet, and its apply worker would stop on
//! "logical replication target relation ... does not exist". So the hook writes their record
//! before the statement runs, naming the table from the parse tree, and the event trigger
//! leaves them alone. A statement that then fails takes the record with it: the message is
//! transactional, written in the (sub)transaction the failure rolls back. Subscribers create
//! the table empty (ddl-apply); its rows follow as rows.
//!
//! Materialized views are captured as usual: their rows are never replicated.

use crate::trigger::{self, Target};
use pgrx::pg_sys;
use std::ffi::CStr;

/// Writes the record of `stmt` (a utility statement about to run) when it is a CREATE TABLE AS
/// or SELECT INTO of a permanent table; returns whether it did.
///
/// # Safety
/// `stmt` is the utility statement of the PlannedStmt being run; runs inside a transaction.
pub unsafe fn capture_before(stmt: *mut pg_sys::Node) -> bool {
    if stmt.is_null()
        || (*stmt).type_ != pg_sys::NodeTag::T_CreateTableAsStmt
        // Statements of an extension script are the CREATE/ALTER EXTENSION's business.
        || pg_sys::creating_extension
    {
        return false;
    }
    let ctas = stmt as *mut pg_sys::CreateTableAsStmt;
    let into = (*ctas).into;
    if (*ctas).objtype != pg_sys::ObjectType::OBJECT_TABLE || into.is_null() {
        return false;
    }
    let rel = (*into).rel;
    if rel.is_null() || (*rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_TEMP {
        return false;
    }
    // The schema the table will be created in (an error here is the statement's own error).
    let nspid = pg_sys::RangeVarGetCreationNamespace(rel);
    let schema_ptr = pg_sys::get_namespace_name(nspid);
    if schema_ptr.is_null() {
        return false;
    }
    let schema = CStr::from_ptr(schema_ptr).to_string_lossy().into_owned();
    let identity = CStr::from_ptr(pg_sys::quote_qualified_identifier(
        schema_ptr,
        (*rel).relname,
    ))
    .to_string_lossy()
    .into_owned();
    let tag = CStr::from_ptr(pg_sys::GetCommandTagName(pg_sys::CreateCommandTag(stmt)))
        .to_string_lossy()
        .into_owned();
    let target = Target {
        class_id: u32::from(pg_sys::RelationRelationId),
        // Not created yet; only relation and object rules use it, and none can name it.
        object_id: 0,
        schema,
        identity,
        object_type: "table".into(),
        temporary: false,
        sql: None,
    };
    trigger::record(&tag, &target);
    true
}
