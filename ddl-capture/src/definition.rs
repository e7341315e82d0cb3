//! The table a `CREATE TABLE AS` or `SELECT INTO` is about to make, written as the plain
//! `CREATE TABLE` that makes the same table empty.
//!
//! Why not replicate the client's text: its query runs on the publisher, against the
//! publisher's objects (`CREATE TABLE t AS EXECUTE q`, where `q` is prepared in this session
//! only; a query over tables, functions or catalogs another node lacks or fills differently).
//! A subscriber that could not run it would lack the table, and the table's first row would
//! stop the subscription for good. The rows come by replication anyway; what a subscriber needs
//! is the table: its columns, with the types, type modifiers and collations the query gave
//! here, and its storage clauses. Those are known before the statement runs (the record must
//! precede the rows in the WAL), from the analysed query's target list or the prepared
//! statement's result.

use ddl_server::text::utf8_identifier as identifier;
use pgrx::list::PgList;
use pgrx::pg_sys;
use std::ffi::{c_char, CStr};

/// The table a CREATE TABLE AS makes, two ways.
pub struct CreateTableAs {
    /// `CREATE [UNLOGGED] TABLE [IF NOT EXISTS] <schema>.<name> (<columns>) [USING am]
    /// [WITH (...)] [TABLESPACE ts]`: the statement to record.
    pub sql: String,
    /// `CREATE TABLE <schema>.<name> (<columns>);`: the record's `tables` (see `shape`).
    pub shape: String,
    /// The types and collations of its columns that are not built in: what `sql` names, for
    /// the record's `bindings` (`ddl_server::bindings`).
    pub uses: Vec<pg_sys::ObjectAddress>,
}

/// The table `stmt` will create in `schema`; `None` when the statement is about to fail on its
/// own (no such prepared statement, more column names than columns), so that it fails exactly
/// as it would without us.
///
/// # Safety
/// `stmt` is the analysed statement the ProcessUtility hook was given; in a transaction.
pub unsafe fn create_table_as(
    stmt: *mut pg_sys::CreateTableAsStmt,
    schema: &CStr,
) -> Option<CreateTableAs> {
    // SAFETY: the caller's promise; the parser always fills `into` and its `rel`, and nothing
    // changes the tree while the hook reads it.
    let (stmt, into, rel) = unsafe { (&*stmt, &*(*stmt).into, &*(*(*stmt).into).rel) };
    // SAFETY: the statement's own query, analysed, in the caller's transaction.
    let columns = unsafe { result_columns(stmt.query) }?;
    // SAFETY: a descriptor made for us (see `result_columns`), of `natts` attributes.
    let attrs = unsafe { ddl_server::versions::attributes(columns) };
    // SAFETY: the parser's column name list: NIL or String nodes.
    let names = unsafe { PgList::<pg_sys::Node>::from_pg(into.colNames) };
    if names.len() > attrs.len() {
        return None;
    }
    let mut sql = String::from("CREATE ");
    if rel.relpersistence == pg_sys::RELPERSISTENCE_UNLOGGED as c_char {
        sql.push_str("UNLOGGED ");
    }
    sql.push_str("TABLE ");
    if stmt.if_not_exists {
        sql.push_str("IF NOT EXISTS ");
    }
    // SAFETY: two NUL-terminated names, the resolved schema's and the parser's.
    let table = unsafe {
        text(pg_sys::quote_qualified_identifier(
            schema.as_ptr(),
            rel.relname,
        ))
    };
    sql.push_str(&table);
    let mut defs = Vec::new();
    let mut uses = Vec::new();
    for (i, att) in attrs.iter().enumerate() {
        for (class_id, object_id) in [
            (pg_sys::TypeRelationId, att.atttypid),
            (pg_sys::CollationRelationId, att.attcollation),
        ] {
            if object_id != pg_sys::InvalidOid && !ddl_server::bindings::is_builtin(object_id) {
                uses.push(pg_sys::ObjectAddress {
                    classId: class_id,
                    objectId: object_id,
                    objectSubId: 0,
                });
            }
        }
        let name = match names.get_ptr(i) {
            // SAFETY: a String node of the list, whose `sval` is NUL-terminated.
            Some(node) => unsafe { (*(node as *mut pg_sys::String)).sval },
            None => att.attname.data.as_ptr() as *mut c_char,
        };
        // SAFETY: `name` is NUL-terminated (the parser's, or a NameData); the type, typmod and
        // collation are the query's.
        defs.push(unsafe { column(name, att.atttypid, att.atttypmod, att.attcollation) });
    }
    let columns = format!("({})", defs.join(", "));
    sql.push_str(&format!(" {columns}"));
    if !into.accessMethod.is_null() {
        // SAFETY: the parser's NUL-terminated name.
        let access_method = unsafe { identifier(into.accessMethod) };
        sql.push_str(&format!(" USING {access_method}"));
    }
    // SAFETY: the parser's option list: NIL or DefElems.
    let options: Vec<String> = unsafe { PgList::<pg_sys::DefElem>::from_pg(into.options) }
        .iter_ptr()
        // SAFETY: a DefElem of that list.
        .map(|def| unsafe { option(def) })
        .collect();
    if !options.is_empty() {
        sql.push_str(&format!(" WITH ({})", options.join(", ")));
    }
    if !into.tableSpaceName.is_null() {
        // SAFETY: the parser's NUL-terminated name.
        let tablespace = unsafe { identifier(into.tableSpaceName) };
        sql.push_str(&format!(" TABLESPACE {tablespace}"));
    }
    Some(CreateTableAs {
        sql,
        shape: format!("CREATE TABLE {table} {columns};"),
        uses,
    })
}

/// The columns the statement's query returns: a SELECT's target list (resjunk columns are not
/// the table's), or the result of the prepared statement an EXECUTE names. The descriptor is
/// made in the current memory context.
///
/// # Safety
/// `query` is null or the analysed query of a CREATE TABLE AS; in a transaction.
unsafe fn result_columns(query: *mut pg_sys::Node) -> Option<pg_sys::TupleDesc> {
    // SAFETY: the caller's promise: null or a node.
    if query.is_null() || unsafe { (*query).type_ } != pg_sys::NodeTag::T_Query {
        return None;
    }
    // SAFETY: a Query, by its tag.
    let query = unsafe { &*(query as *mut pg_sys::Query) };
    let utility = query.utilityStmt;
    let columns = if query.commandType == pg_sys::CmdType::CMD_UTILITY {
        // SAFETY: the Query's utility statement, null or a node; an ExecuteStmt by its tag,
        // with a NUL-terminated name. A prepared statement that does not exist is NULL
        // (throwError false); the result descriptor is a copy.
        unsafe {
            if utility.is_null() || (*utility).type_ != pg_sys::NodeTag::T_ExecuteStmt {
                return None;
            }
            let name = (*(utility as *mut pg_sys::ExecuteStmt)).name;
            let prepared = pg_sys::FetchPreparedStatement(name, false);
            if prepared.is_null() {
                return None;
            }
            pg_sys::FetchPreparedStatementResultDesc(prepared)
        }
    } else {
        // SAFETY: the analysed query's target list; the descriptor is a new one.
        unsafe { pg_sys::ExecCleanTypeFromTL(query.targetList) }
    };
    (!columns.is_null()).then_some(columns)
}

/// `"name" type[(typmod)] [COLLATE c]`, the type schema-qualified (the search_path that finds
/// it here may find another on the subscriber). A collation is written only where it is not the
/// type's own, as CREATE TABLE would infer it.
///
/// # Safety
/// `name` is a NUL-terminated string in the database encoding, valid for the call; in a
/// transaction (a type or collation that does not exist is an ERROR).
unsafe fn column(
    name: *const c_char,
    type_id: pg_sys::Oid,
    typmod: i32,
    collation: pg_sys::Oid,
) -> String {
    let flags = (pg_sys::FORMAT_TYPE_TYPEMOD_GIVEN | pg_sys::FORMAT_TYPE_FORCE_QUALIFY) as u16;
    // SAFETY: the caller's promise for `name`; format_type_extended returns a new string.
    let mut def = unsafe {
        format!(
            "{} {}",
            identifier(name),
            text(pg_sys::format_type_extended(type_id, typmod, flags))
        )
    };
    // SAFETY: a syscache lookup (InvalidOid for no such type).
    if collation != pg_sys::InvalidOid && collation != unsafe { pg_sys::get_typcollation(type_id) }
    {
        // SAFETY: generate_collation_name returns a new string.
        let collation = unsafe { text(pg_sys::generate_collation_name(collation)) };
        def.push_str(&format!(" COLLATE {collation}"));
    }
    def
}

/// A storage parameter as `[namespace.]name = 'value'` (a quoted value is accepted for every
/// kind of parameter, and needs no knowledge of which kind it is).
///
/// # Safety
/// `def` is a DefElem of a `WITH (...)` list the parser made.
unsafe fn option(def: *mut pg_sys::DefElem) -> String {
    // SAFETY: the caller's promise: its names are NUL-terminated, `defnamespace` null when
    // there is none.
    let (name, has_value) = unsafe {
        let name = identifier((*def).defname);
        let name = if (*def).defnamespace.is_null() {
            name
        } else {
            format!("{}.{name}", identifier((*def).defnamespace))
        };
        (name, !(*def).arg.is_null())
    };
    if !has_value {
        return name;
    }
    // SAFETY: a DefElem with a value, which defGetString gives as a NUL-terminated string
    // (or raises PostgreSQL's ERROR for a value of no string form); quote_literal_cstr returns
    // a new string. PostgreSQL's own quoting: an E'' literal where the value has a backslash,
    // so it reads back the same whatever standard_conforming_strings is where it is read.
    let value = unsafe { text(pg_sys::quote_literal_cstr(pg_sys::defGetString(def))) };
    format!("{name} = {value}")
}

/// A server string in UTF-8 (see `ddl_server::text`).
///
/// # Safety
/// `s` is a NUL-terminated string in the database encoding, valid for the call.
pub(crate) unsafe fn text(s: *const c_char) -> String {
    // SAFETY: the caller's promise.
    unsafe { ddl_server::text::utf8_ptr(s) }
}
