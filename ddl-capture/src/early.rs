//! Statements captured before they run: CREATE TABLE AS and SELECT INTO, also under EXPLAIN
//! ANALYZE.
//!
//! They create a table and fill it in one statement, so their rows are in WAL before the end of
//! the statement, where every other statement is captured: a subscriber would receive rows for
//! a table it does not have yet. Their record is written first instead. It is as transactional
//! as any other: if the statement then fails, its (sub)transaction aborts and takes the record
//! with it. The record holds the plain CREATE TABLE of the table the statement makes
//! ([`definition`]): the rows follow by replication, and the query is never run elsewhere.
//!
//! `EXPLAIN ANALYZE CREATE TABLE AS` creates and fills its table too, and no event trigger
//! fires for it (EXPLAIN is not DDL): without this, only its rows would reach a subscriber.
//!
//! Before the statement runs the table has no OID yet: the record names it by schema and
//! identity only (object id 0), which is all the rules and the subscriber need.

use crate::definition;
use crate::rules::PublicationRules;
use crate::trigger::{self, Recorded, Target};
use pgrx::list::PgList;
use pgrx::pg_sys;
use std::ffi::CStr;

/// Captures `pstmt` now if it is a CREATE TABLE AS or SELECT INTO of a permanent table; returns
/// whether it did (then `ddl_command_end` must not capture it again).
///
/// # Safety
/// Runs in the ProcessUtility hook, inside a transaction, with the statement on the stack;
/// `pstmt` is the statement the hook runs.
pub unsafe fn capture(pstmt: *mut pg_sys::PlannedStmt) -> bool {
    // SAFETY: a backend global, true while an extension script runs.
    if unsafe { pg_sys::creating_extension } {
        return false;
    }
    // SAFETY: the caller's promise: a utility statement's PlannedStmt, its tree a node.
    let Some(stmt) = (unsafe { table_creating((*pstmt).utilityStmt) }) else {
        return false;
    };
    // SAFETY: a CreateTableAsStmt of that tree.
    let (objtype, into, is_select_into) =
        unsafe { ((*stmt).objtype, (*stmt).into, (*stmt).is_select_into) };
    if objtype != pg_sys::ObjectType::OBJECT_TABLE || into.is_null() {
        return false;
    }
    // SAFETY: in the statement's transaction.
    let rules = unsafe { PublicationRules::current() };
    if rules.none_enabled() {
        return false;
    }
    // SAFETY: the parser fills `into.rel`, whose `relname` is NUL-terminated.
    // RangeVarGetCreationNamespace resolves the table's schema as the statement will (this
    // also resolves `pg_temp.name`), or raises the ERROR the statement would: the namespace
    // exists, so it has a name.
    let (temporary, schema, name) = unsafe {
        let rel = (*into).rel;
        let namespace = pg_sys::RangeVarGetCreationNamespace(rel);
        let temporary = (*rel).relpersistence == pg_sys::RELPERSISTENCE_TEMP as std::ffi::c_char
            || pg_sys::isAnyTempNamespace(namespace);
        let schema = CStr::from_ptr(pg_sys::get_namespace_name(namespace));
        (temporary, schema, CStr::from_ptr((*rel).relname))
    };
    // SAFETY: two NUL-terminated names; the result is a new string.
    let identity = unsafe { pg_sys::quote_qualified_identifier(schema.as_ptr(), name.as_ptr()) };
    // The statement is about to fail on its own: nothing to capture, and its ERROR is the
    // client's, as without us.
    // SAFETY: the hook's analysed statement, and the schema its table goes to.
    let Some(table) = (unsafe { definition::create_table_as(stmt, schema) }) else {
        return false;
    };
    // SAFETY: a catalog name and its quoted form, both server strings.
    let (schema, identity) = unsafe {
        (
            ddl_server::text::utf8(schema),
            ddl_server::text::utf8_ptr(identity),
        )
    };
    let target = Target {
        class_id: u32::from(pg_sys::RelationRelationId),
        object_id: 0,
        schema,
        identity,
        object_type: "table".into(),
        temporary,
        recorded: Some(Recorded {
            tag: Some("CREATE TABLE"),
            sql: table.sql,
            tables: Some(table.shape),
            uses: table.uses,
        }),
        relations: Vec::new(),
        made_alone: false,
        namespace_id: 0,
        command: std::ptr::null_mut(),
        subcommands: Vec::new(),
    };
    // Rules that name a command tag see the client's; the record says what it holds.
    let tag = if is_select_into {
        "SELECT INTO"
    } else {
        "CREATE TABLE AS"
    };
    // SAFETY: the caller's promise: in the hook, with the statement on the stack.
    unsafe { trigger::capture_target(&rules, tag, &target) };
    true
}

/// The CREATE TABLE AS of `node`, itself or under an EXPLAIN that runs it (ANALYZE).
///
/// # Safety
/// `node` is null or a node of a utility statement's tree.
unsafe fn table_creating(node: *mut pg_sys::Node) -> Option<*mut pg_sys::CreateTableAsStmt> {
    if node.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    match unsafe { (*node).type_ } {
        pg_sys::NodeTag::T_CreateTableAsStmt => Some(node.cast()),
        pg_sys::NodeTag::T_ExplainStmt => {
            // SAFETY: an ExplainStmt, by its tag: `options` is NIL or DefElems, `query` a node.
            let (options, query) = unsafe {
                let explain = node as *mut pg_sys::ExplainStmt;
                (
                    PgList::<pg_sys::DefElem>::from_pg((*explain).options),
                    (*explain).query,
                )
            };
            let analyze = options
                .iter_ptr()
                // SAFETY: a DefElem of the list, with a NUL-terminated name.
                .filter(|def| unsafe { CStr::from_ptr((**def).defname) }.to_bytes() == b"analyze")
                .last()
                // An invalid value: EXPLAIN reports it, as without us.
                // SAFETY: as above.
                .is_some_and(|def| unsafe { boolean_option(def) }.unwrap_or(false));
            if !analyze || query.is_null() {
                return None;
            }
            // SAFETY: EXPLAIN's statement, a node; a Query by its tag, whose utility statement
            // is null or a node.
            unsafe {
                if (*query).type_ != pg_sys::NodeTag::T_Query {
                    return None;
                }
                let utility = (*(query as *mut pg_sys::Query)).utilityStmt;
                (!utility.is_null() && (*utility).type_ == pg_sys::NodeTag::T_CreateTableAsStmt)
                    .then(|| utility.cast())
            }
        }
        _ => None,
    }
}

/// An EXPLAIN option's boolean value as `defGetBoolean` reads it (no value is true), without
/// its ERROR for anything else.
///
/// # Safety
/// `def` is a DefElem the parser made.
unsafe fn boolean_option(def: *mut pg_sys::DefElem) -> Option<bool> {
    // SAFETY: the caller's promise.
    let arg = unsafe { (*def).arg };
    if arg.is_null() {
        return Some(true);
    }
    // SAFETY: a value node of the parser, of the type its tag says; a String's `sval` is
    // NUL-terminated.
    let value = unsafe {
        match (*arg).type_ {
            pg_sys::NodeTag::T_Integer => return Some((*(arg as *mut pg_sys::Integer)).ival != 0),
            pg_sys::NodeTag::T_Boolean => return Some((*(arg as *mut pg_sys::Boolean)).boolval),
            pg_sys::NodeTag::T_String => CStr::from_ptr((*(arg as *mut pg_sys::String)).sval),
            _ => return None,
        }
    };
    match value.to_bytes().to_ascii_lowercase().as_slice() {
        b"true" | b"on" => Some(true),
        b"false" | b"off" => Some(false),
        _ => None,
    }
}
