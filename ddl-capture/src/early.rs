//! Statements captured before they run: CREATE TABLE AS and SELECT INTO.
//!
//! They create a table and fill it in one statement, so their rows are in WAL before the end of
//! the statement, where every other statement is captured: a subscriber would receive rows for
//! a table it does not have yet. Their record is written first instead. It is as transactional
//! as any other: if the statement then fails, its (sub)transaction aborts and takes the record
//! with it. The record holds the plain CREATE TABLE of the table the statement makes
//! ([`definition`]): the rows follow by replication, and the query is never run elsewhere.
//!
//! Before the statement runs the table has no OID yet: the record names it by schema and
//! identity only (object id 0), which is all the rules and the subscriber need.

use crate::definition;
use crate::rules::PublicationRules;
use crate::trigger::{self, Recorded, Target};
use pgrx::pg_sys;
use std::ffi::CStr;

/// Captures `pstmt` now if it is a CREATE TABLE AS or SELECT INTO of a permanent table; returns
/// whether it did (then `ddl_command_end` must not capture it again).
///
/// # Safety
/// Runs in the ProcessUtility hook, inside a transaction, with the statement on the stack.
pub unsafe fn capture(pstmt: *mut pg_sys::PlannedStmt) -> bool {
    let node = (*pstmt).utilityStmt;
    if pg_sys::creating_extension
        || node.is_null()
        || (*node).type_ != pg_sys::NodeTag::T_CreateTableAsStmt
    {
        return false;
    }
    let stmt = node as *mut pg_sys::CreateTableAsStmt;
    if (*stmt).objtype != pg_sys::ObjectType::OBJECT_TABLE || (*stmt).into.is_null() {
        return false;
    }
    let rules = PublicationRules::read(None);
    if rules.none_enabled() {
        return false;
    }
    let rel = (*(*stmt).into).rel;
    // Where the table will be: this also resolves `pg_temp.name`, as the statement will.
    let namespace = pg_sys::RangeVarGetCreationNamespace(rel);
    let temporary = (*rel).relpersistence == pg_sys::RELPERSISTENCE_TEMP as std::ffi::c_char
        || pg_sys::isAnyTempNamespace(namespace);
    let schema = CStr::from_ptr(pg_sys::get_namespace_name(namespace));
    let name = CStr::from_ptr((*rel).relname);
    let identity = pg_sys::quote_qualified_identifier(schema.as_ptr(), name.as_ptr());
    // The statement is about to fail on its own: nothing to capture, and its ERROR is the
    // client's, as without us.
    let Some(definition) = definition::create_table_as(stmt, schema) else {
        return false;
    };
    let target = Target {
        class_id: u32::from(pg_sys::RelationRelationId),
        object_id: 0,
        schema: crate::text::utf8(schema),
        identity: crate::text::utf8(CStr::from_ptr(identity)),
        object_type: "table".into(),
        temporary,
        recorded: Some(Recorded {
            tag: Some("CREATE TABLE"),
            sql: definition,
        }),
        command: std::ptr::null_mut(),
    };
    // Rules that name a command tag see the client's; the record says what it holds.
    let tag = if (*stmt).is_select_into {
        "SELECT INTO"
    } else {
        "CREATE TABLE AS"
    };
    trigger::capture_target(&rules, tag, &target);
    true
}
