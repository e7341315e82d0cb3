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
    let into = (*stmt).into;
    let columns = result_columns((*stmt).query)?;
    let names = PgList::<pg_sys::Node>::from_pg((*into).colNames);
    if names.len() > (*columns).natts as usize {
        return None;
    }
    let mut sql = String::from("CREATE ");
    if (*(*into).rel).relpersistence == pg_sys::RELPERSISTENCE_UNLOGGED as c_char {
        sql.push_str("UNLOGGED ");
    }
    sql.push_str("TABLE ");
    if (*stmt).if_not_exists {
        sql.push_str("IF NOT EXISTS ");
    }
    let table = text(pg_sys::quote_qualified_identifier(
        schema.as_ptr(),
        (*(*into).rel).relname,
    ));
    sql.push_str(&table);
    let mut defs = Vec::new();
    for i in 0..(*columns).natts as usize {
        let att = (*columns).attrs.as_ptr().add(i);
        let name = match names.get_ptr(i) {
            Some(node) => (*(node as *mut pg_sys::String)).sval,
            None => (*att).attname.data.as_ptr() as *mut c_char,
        };
        defs.push(column(
            name,
            (*att).atttypid,
            (*att).atttypmod,
            (*att).attcollation,
        ));
    }
    let columns = format!("({})", defs.join(", "));
    sql.push_str(&format!(" {columns}"));
    if !(*into).accessMethod.is_null() {
        sql.push_str(&format!(" USING {}", identifier((*into).accessMethod)));
    }
    let options: Vec<String> = PgList::<pg_sys::DefElem>::from_pg((*into).options)
        .iter_ptr()
        .map(|def| option(def))
        .collect();
    if !options.is_empty() {
        sql.push_str(&format!(" WITH ({})", options.join(", ")));
    }
    if !(*into).tableSpaceName.is_null() {
        sql.push_str(&format!(
            " TABLESPACE {}",
            identifier((*into).tableSpaceName)
        ));
    }
    Some(CreateTableAs {
        sql,
        shape: format!("CREATE TABLE {table} {columns};"),
    })
}

/// The columns the statement's query returns: a SELECT's target list (resjunk columns are not
/// the table's), or the result of the prepared statement an EXECUTE names.
unsafe fn result_columns(query: *mut pg_sys::Node) -> Option<pg_sys::TupleDesc> {
    if query.is_null() || (*query).type_ != pg_sys::NodeTag::T_Query {
        return None;
    }
    let query = query as *mut pg_sys::Query;
    let utility = (*query).utilityStmt;
    let columns = if (*query).commandType == pg_sys::CmdType::CMD_UTILITY {
        if utility.is_null() || (*utility).type_ != pg_sys::NodeTag::T_ExecuteStmt {
            return None;
        }
        let name = (*(utility as *mut pg_sys::ExecuteStmt)).name;
        let prepared = pg_sys::FetchPreparedStatement(name, false);
        if prepared.is_null() {
            return None;
        }
        pg_sys::FetchPreparedStatementResultDesc(prepared)
    } else {
        pg_sys::ExecCleanTypeFromTL((*query).targetList)
    };
    (!columns.is_null()).then_some(columns)
}

/// `"name" type[(typmod)] [COLLATE c]`, the type schema-qualified (the search_path that finds
/// it here may find another on the subscriber). A collation is written only where it is not the
/// type's own, as CREATE TABLE would infer it.
pub(crate) unsafe fn column(
    name: *const c_char,
    type_id: pg_sys::Oid,
    typmod: i32,
    collation: pg_sys::Oid,
) -> String {
    let flags = (pg_sys::FORMAT_TYPE_TYPEMOD_GIVEN | pg_sys::FORMAT_TYPE_FORCE_QUALIFY) as u16;
    let mut def = format!(
        "{} {}",
        identifier(name),
        text(pg_sys::format_type_extended(type_id, typmod, flags))
    );
    if collation != pg_sys::InvalidOid && collation != pg_sys::get_typcollation(type_id) {
        def.push_str(&format!(
            " COLLATE {}",
            text(pg_sys::generate_collation_name(collation))
        ));
    }
    def
}

/// A storage parameter as `[namespace.]name = 'value'` (a quoted value is accepted for every
/// kind of parameter, and needs no knowledge of which kind it is).
unsafe fn option(def: *mut pg_sys::DefElem) -> String {
    let mut name = identifier((*def).defname);
    if !(*def).defnamespace.is_null() {
        name = format!("{}.{name}", identifier((*def).defnamespace));
    }
    if (*def).arg.is_null() {
        return name;
    }
    let value = CStr::from_ptr(pg_sys::defGetString(def)).to_string_lossy();
    format!("{name} = '{}'", value.replace('\'', "''"))
}

pub(crate) unsafe fn identifier(name: *const c_char) -> String {
    text(pg_sys::quote_identifier(name))
}

pub(crate) unsafe fn text(s: *const c_char) -> String {
    ddl_server::text::utf8(CStr::from_ptr(s))
}
