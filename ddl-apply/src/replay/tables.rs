//! Tables a replayed statement should have left here and did not, made from the publisher's
//! definition so that their rows cannot stop the subscription.
//!
//! A statement may fail or be refused here (its role lacks a privilege here, it names a
//! temporary table of the publisher's session, it would leave code the apply worker runs), and
//! whatever the policy says about the statement, the rows of the tables it made or changed on
//! the publisher follow it: the first one for a table the subscriber lacks, or a column it
//! lacks, stops the apply worker on every retry. So each event carries `tables` (see ddl-wire's
//! record format): for every table the statement created or changed, a `CREATE TABLE` of the
//! columns a row has and of its replica identity key. After the replay, whatever its outcome,
//! a table missing here is made from that, with nothing more (no defaults, constraints,
//! triggers or privileges: they are the statement's, which did not run), owned by the role the
//! statement runs as here (the event's role, or the fallback role for a role missing here), as
//! if the statement had made it, so that the same role's later ALTER or DROP of it replays;
//! by the subscription owner when the statement's role is refused. It is registered in the
//! subscription; a column missing from a table is added. The event's row says so.
//!
//! The text is checked like any statement of an event: it must parse into exactly such plain
//! definitions, of permanent tables outside the system schemas, or nothing is made. A type
//! missing here becomes `text` (rows travel as text, which it takes whatever they hold).

use crate::subscriber::applying::Subscription;
use ddl_server::errors;
use ddl_server::guc;
use ddl_server::relcache;
use ddl_server::text::quote_identifier as quote;
use ddl_server::text::utf8_ptr;
use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use std::ffi::{c_char, CString};

/// One table of an event's `tables`, checked.
struct Definition {
    schema: String,
    name: String,
    columns: Vec<Column>,
    key: Vec<String>,
}

/// A column of a definition, checked plain. Its type is looked up only when the column is
/// made ([`Column::as_made`]): a table the statement left here with its columns, nearly every
/// one, costs no type lookup.
struct Column {
    name: String,
    /// The definition's ColumnDef, in the parse tree [`make_missing`] read, which outlives
    /// every use.
    def: *mut pg_sys::ColumnDef,
}

/// A column as this node makes it: the publisher's type where this node has it.
struct MadeColumn<'a> {
    name: &'a str,
    /// The type as SQL, schema-qualified.
    sql_type: String,
    /// Why the column is `text` here, when it is.
    substituted: Option<String>,
}

impl Column {
    fn as_made(&self) -> MadeColumn<'_> {
        // SAFETY: the ColumnDef `column` checked, in the parse tree `make_missing` read, which
        // calls this in a transaction (catalog lookups).
        let (sql_type, substituted) = unsafe { column_type(self.def, &self.name) };
        MadeColumn {
            name: &self.name,
            sql_type,
            substituted,
        }
    }
}

/// Makes what `tables` describes and this node lacks; returns what it did or why it could not,
/// for the event's row. Runs in the apply worker after the replay, as the subscription owner.
pub fn make_missing(tables: &str, owner: Option<&str>, subscription: &Subscription) -> Vec<String> {
    if tables.is_empty() {
        return Vec::new();
    }
    let not_checked = |why: String| {
        format!("the tables the statement left on the publisher were not checked here: {why}")
    };
    // Reading the definitions and looking the tables up raise no ERROR (the parser's is caught
    // without a subtransaction): nearly every event finds its tables here as its rows need
    // them, and costs no more.
    let notes = match parse(tables) {
        Err(why) => vec![not_checked(why)],
        Ok(definitions) => {
            let lacking: Vec<&Definition> = definitions.iter().filter(|d| lacks(d)).collect();
            if lacking.is_empty() {
                return Vec::new();
            }
            // Making runs in a subtransaction: a definition that cannot be made here must not
            // take the event (or, under 'skip', the rows around it) with it. Types and
            // collations resolve the same whoever runs the apply worker.
            let attempt = || {
                guc::with_search_path("pg_catalog", || {
                    lacking
                        .iter()
                        .filter_map(|d| make(d, owner, subscription))
                        .collect::<Vec<String>>()
                })
            };
            ddl_server::xact::in_subtransaction(attempt, |_| true)
                .unwrap_or_else(|caught| vec![not_checked(caught.message)])
        }
    };
    for note in &notes {
        warning!("ddl_sync: subscription \"{}\": {note}", subscription.name);
    }
    notes
}

/// The relation named as the definition's table here, and whether it is a table.
fn found(definition: &Definition) -> Option<(pg_sys::Oid, bool)> {
    relcache::namespace_named(&definition.schema)
        .and_then(|nsp| relcache::relation_in(nsp, &definition.name))
        .map(|relid| {
            // SAFETY: a syscache lookup of the relation just found.
            let relkind = unsafe { pg_sys::get_rel_relkind(relid) } as u8;
            let is_table =
                relkind == pg_sys::RELKIND_RELATION || relkind == pg_sys::RELKIND_PARTITIONED_TABLE;
            (relid, is_table)
        })
}

/// Whether this node lacks what a row of the definition's table needs: the table, one of its
/// columns, or a key when the definition has one ([`make`] then makes it, or says why not).
fn lacks(definition: &Definition) -> bool {
    match found(definition) {
        Some((relid, true)) => {
            let existing = column_names(relid);
            definition
                .columns
                .iter()
                .any(|c| !existing.contains(&c.name))
                || (!definition.key.is_empty() && !has_key(relid))
        }
        _ => true,
    }
}

/// Makes the table or its missing columns; `None` when it is there as a row needs it.
fn make(
    definition: &Definition,
    owner: Option<&str>,
    subscription: &Subscription,
) -> Option<String> {
    let table = format!("{}.{}", quote(&definition.schema), quote(&definition.name));
    let existing = found(definition);
    let mut note = match existing {
        None => {
            let note = create(definition, &table, owner);
            // Made for a role refused here: no replayed statement can drop it (see `made`).
            if owner.is_none() {
                if let Some(relid) = relcache::relation_named(&table) {
                    super::made::remember(relid, subscription);
                }
            }
            note
        }
        Some((relid, true)) => {
            let notes: Vec<String> = [
                add_columns(definition, &table, relid, owner, subscription),
                add_key(definition, &table, relid, owner, subscription),
            ]
            .into_iter()
            .flatten()
            .collect();
            if notes.is_empty() {
                return None;
            }
            notes.join("; ")
        }
        Some((_, false)) => {
            return Some(format!(
                "{table} is not a table here: its rows cannot be applied"
            ))
        }
    };
    if existing.is_none() {
        if let Some(refused) = subscription.register_ready(&table) {
            note.push_str(&format!("; {refused}"));
        }
    }
    Some(note)
}

/// `CREATE TABLE` of the definition (and its schema, when this node lacks it), both owned by
/// `owner` (else by the subscription owner).
fn create(definition: &Definition, table: &str, owner: Option<&str>) -> String {
    let schema_missing = relcache::namespace_named(&definition.schema).is_none();
    let columns: Vec<MadeColumn> = definition.columns.iter().map(Column::as_made).collect();
    let mut items: Vec<String> = columns
        .iter()
        .map(|c| format!("{} {}", quote(c.name), c.sql_type))
        .collect();
    if !definition.key.is_empty() {
        let key: Vec<String> = definition.key.iter().map(|k| quote(k)).collect();
        items.push(format!("PRIMARY KEY ({})", key.join(", ")));
    }
    let mut sql = String::new();
    if schema_missing {
        sql.push_str(&format!("CREATE SCHEMA {};\n", quote(&definition.schema)));
    }
    sql.push_str(&format!("CREATE TABLE {table} ({})", items.join(", ")));
    if let Some(owner) = owner {
        if schema_missing {
            let schema = quote(&definition.schema);
            sql.push_str(&format!(
                ";\nALTER SCHEMA {schema} OWNER TO {}",
                quote(owner)
            ));
        }
        sql.push_str(&format!(";\nALTER TABLE {table} OWNER TO {}", quote(owner)));
    }
    run(&sql);
    let owner = owner.map_or_else(crate::replay::host::current_user_name, str::to_string);
    let schema = if schema_missing {
        format!(" in schema {} made for it", quote(&definition.schema))
    } else {
        String::new()
    };
    format!(
        "{table} was made from the publisher's definition{schema}, its columns and key only, \
         owned by {owner}: the statement did not make it here{}",
        substitutions(&columns)
    )
}

/// ` (column c is text: ...; ...)` for the columns among `columns` made as `text`; empty when
/// none is.
fn substitutions(columns: &[MadeColumn]) -> String {
    let why: Vec<&str> = columns
        .iter()
        .filter_map(|c| c.substituted.as_deref())
        .collect();
    if why.is_empty() {
        String::new()
    } else {
        format!(" ({})", why.join(", "))
    }
}

/// `ALTER TABLE ... ADD COLUMN` of each column of the definition that table `relid` lacks;
/// `None` when it lacks none.
fn add_columns(
    definition: &Definition,
    table: &str,
    relid: pg_sys::Oid,
    owner: Option<&str>,
    subscription: &Subscription,
) -> Option<String> {
    let existing = column_names(relid);
    let missing: Vec<&Column> = definition
        .columns
        .iter()
        .filter(|c| !existing.contains(&c.name))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let names: Vec<String> = missing.iter().map(|c| quote(&c.name)).collect();
    if let Err(why) = may_alter(relid, owner, subscription) {
        return Some(format!(
            "column(s) {} of {table} not added: {why}",
            names.join(", ")
        ));
    }
    let missing: Vec<MadeColumn> = missing.iter().map(|c| c.as_made()).collect();
    let adds: Vec<String> = missing
        .iter()
        .map(|c| format!("ADD COLUMN {} {}", quote(c.name), c.sql_type))
        .collect();
    run(&format!("ALTER TABLE {table} {}", adds.join(", ")));
    Some(format!(
        "column(s) {} of {table} added from the publisher's definition{}: the statement did \
         not add them here",
        names.join(", "),
        substitutions(&missing)
    ))
}

/// `ALTER TABLE ... ADD PRIMARY KEY` of the definition's key when table `relid` has nothing an
/// UPDATE or DELETE could find its row by (no primary key, no replica identity index: the apply
/// worker refuses those rows then); `None` when it has, or the definition has no key.
fn add_key(
    definition: &Definition,
    table: &str,
    relid: pg_sys::Oid,
    owner: Option<&str>,
    subscription: &Subscription,
) -> Option<String> {
    if definition.key.is_empty() {
        return None;
    }
    if has_key(relid) {
        return None;
    }
    let key: Vec<String> = definition.key.iter().map(|k| quote(k)).collect();
    let key = key.join(", ");
    if let Err(why) = may_alter(relid, owner, subscription) {
        return Some(format!("primary key ({key}) of {table} not added: {why}"));
    }
    // Rows already here may not fit a key: then the table stays as it is, and says why.
    let added = ddl_server::xact::in_subtransaction(
        || run(&format!("ALTER TABLE {table} ADD PRIMARY KEY ({key})")),
        |_| true,
    );
    Some(match added {
        Ok(()) => format!(
            "primary key ({key}) of {table} added from the publisher's definition, as the \
             replica identity its updates and deletes need"
        ),
        Err(why) => format!(
            "{table} has no replica identity for the publisher's updates and deletes, and key \
             ({key}) could not be added: {why}"
        ),
    })
}

/// The names of table `relid`'s columns (none when it is gone).
fn column_names(relid: pg_sys::Oid) -> Vec<String> {
    ddl_server::relcache::with_relation(relid, |rel| {
        // SAFETY: the open relation's descriptor.
        unsafe { ddl_server::versions::attributes((*rel).rd_att) }
            .iter()
            .filter(|a| !a.attisdropped)
            // SAFETY: a NameData is NUL-terminated.
            .map(|a| unsafe { ddl_server::text::utf8_ptr(a.attname.data.as_ptr()) })
            .collect()
    })
    .unwrap_or_default()
}

/// Whether table `relid` has what an UPDATE or DELETE finds its row by: a primary key, or an
/// index marked as the replica identity (which REPLICA IDENTITY USING INDEX makes the relcache's
/// replica identity index); yes when it is gone.
fn has_key(relid: pg_sys::Oid) -> bool {
    ddl_server::relcache::with_relation(relid, |rel| {
        // SAFETY: the open relation; RelationGetIndexList fills rd_pkindex and rd_replidindex.
        unsafe {
            pg_sys::list_free(pg_sys::RelationGetIndexList(rel));
            (*rel).rd_pkindex != pg_sys::InvalidOid || (*rel).rd_replidindex != pg_sys::InvalidOid
        }
    })
    .unwrap_or(true)
}

/// Whether table `relid` is the statement's to complete here: it is in the subscription (its
/// rows come from the publisher, whose definition it follows), or the role the statement ran as
/// (`owner`; `None` when it was refused) has the rights of its owner, as its own ALTER TABLE
/// would need. A table of the same name that is the subscriber's own and belongs to someone
/// else is left alone; the error says whose it is.
fn may_alter(
    relid: pg_sys::Oid,
    owner: Option<&str>,
    subscription: &Subscription,
) -> Result<(), String> {
    let (allowed, relowner) = Spi::get_two_with_args::<bool, String>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_subscription_rel r
                         WHERE r.srsubid = $3 AND r.srrelid = c.oid)
                OR ($2::pg_catalog.name IS NOT NULL
                    AND pg_catalog.pg_has_role($2::pg_catalog.name, c.relowner, 'USAGE')),
                c.relowner::pg_catalog.regrole::pg_catalog.text
           FROM pg_catalog.pg_class c WHERE c.oid = $1",
        &[relid.into(), owner.into(), subscription.oid.into()],
    )
    .ok()
    .map_or((None, None), |row| row);
    match (allowed, owner) {
        (Some(true), _) => Ok(()),
        (_, Some(owner)) => Err(format!(
            "it belongs to {} here and is not in the subscription, and the statement's role {} \
             may not act for that role",
            relowner.unwrap_or_default(),
            quote(owner)
        )),
        (_, None) => Err(format!(
            "it belongs to {} here and is not in the subscription, and the statement's role was \
             refused here",
            relowner.unwrap_or_default()
        )),
    }
}

/// Runs statements built here from checked names and resolved types: nothing in them depends on
/// a search_path.
fn run(sql: &str) {
    guc::with_search_path("pg_catalog", || Spi::run(sql)).unwrap_or_else(|e| errors::internal(e));
}

/// The definitions in `tables`: only plain `CREATE TABLE schema.name (column type [COLLATE c],
/// ..., [PRIMARY KEY (...)])` of permanent tables outside the system schemas.
fn parse(tables: &str) -> Result<Vec<Definition>, String> {
    let text = CString::new(tables).map_err(|_| "the text contains a NUL byte".to_string())?;
    let list = ddl_server::xact::raw_parse(&text).map_err(|caught| caught.message)?;
    // SAFETY: the parser's list of RawStmts (or NIL), in the current memory context, which
    // outlives every use of the definitions.
    let stmts = unsafe { PgList::<pg_sys::RawStmt>::from_pg(list) };
    stmts
        .iter_ptr()
        // SAFETY: RawStmts from the parser, in the caller's transaction.
        .map(|raw| unsafe { definition((*raw).stmt) })
        .collect()
}

/// One checked definition.
///
/// # Safety
/// `node` is NULL or a raw parse tree; runs in a transaction (catalog lookups).
unsafe fn definition(node: *mut pg_sys::Node) -> Result<Definition, String> {
    let not_plain = || "not a plain definition of a table's columns".to_string();
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is.
    if node.is_null() || unsafe { (*node).type_ } != pg_sys::NodeTag::T_CreateStmt {
        return Err(not_plain());
    }
    let stmt = node.cast::<pg_sys::CreateStmt>();
    // SAFETY: the tag says CreateStmt; `relation` is the parser's RangeVar (NULL checked).
    let (rel, plain) = unsafe {
        let rel = (*stmt).relation;
        let plain = !rel.is_null()
            && !(*rel).schemaname.is_null()
            && (*rel).catalogname.is_null()
            && (*rel).relpersistence == pg_sys::RELPERSISTENCE_PERMANENT as c_char
            && (*stmt).inhRelations.is_null()
            && (*stmt).partbound.is_null()
            && (*stmt).partspec.is_null()
            && (*stmt).ofTypename.is_null()
            && (*stmt).constraints.is_null()
            && (*stmt).options.is_null()
            && (*stmt).oncommit == pg_sys::OnCommitAction::ONCOMMIT_NOOP
            && (*stmt).tablespacename.is_null()
            && (*stmt).accessMethod.is_null()
            && !(*stmt).if_not_exists;
        (rel, plain)
    };
    if !plain {
        return Err(not_plain());
    }
    // SAFETY: a plain definition's RangeVar, its schema name checked above.
    let schema = unsafe { utf8_ptr((*rel).schemaname) };
    if matches!(
        schema.as_str(),
        "pg_catalog" | "information_schema" | "pg_toast"
    ) || schema.starts_with("pg_temp")
        || schema.starts_with("pg_toast_temp")
    {
        return Err(format!("schema {schema} is the server's own"));
    }
    let mut columns = Vec::new();
    let mut key = Vec::new();
    // SAFETY: a CreateStmt's `tableElts` is a List of nodes.
    let elements = unsafe { PgList::<pg_sys::Node>::from_pg((*stmt).tableElts) };
    for element in elements.iter_ptr() {
        // SAFETY: a node of that list, whose tag says which; each is read as what it says, in
        // the caller's transaction.
        match unsafe { (*element).type_ } {
            pg_sys::NodeTag::T_ColumnDef => {
                // SAFETY: as above.
                let def = unsafe { column(element.cast()) };
                columns.push(def.ok_or_else(not_plain)?)
            }
            pg_sys::NodeTag::T_Constraint if key.is_empty() => {
                // SAFETY: as above.
                key = unsafe { primary_key(element.cast()) }.ok_or_else(not_plain)?
            }
            _ => return Err(not_plain()),
        }
    }
    if columns.is_empty() {
        return Err(not_plain());
    }
    Ok(Definition {
        schema,
        // SAFETY: as for `schemaname`; the parser always sets `relname`.
        name: unsafe { utf8_ptr((*rel).relname) },
        columns,
        key,
    })
}

/// A column with a name, a type and at most a collation.
///
/// # Safety
/// `def` is a ColumnDef of a raw parse tree.
unsafe fn column(def: *mut pg_sys::ColumnDef) -> Option<Column> {
    // SAFETY: the caller's promise; `typeName` is NULL or the parser's TypeName.
    let plain = unsafe {
        let type_name = (*def).typeName;
        !(*def).colname.is_null()
            && !type_name.is_null()
            && !(*type_name).setof
            && !(*type_name).pct_type
            && (*def).constraints.is_null()
            && (*def).raw_default.is_null()
            && (*def).cooked_default.is_null()
            && (*def).identity == 0
            && (*def).generated == 0
            && (*def).fdwoptions.is_null()
            && (*def).compression.is_null()
            && (*def).storage == 0
    };
    if !plain {
        return None;
    }
    Some(Column {
        // SAFETY: the parser's column name, checked above.
        name: unsafe { utf8_ptr((*def).colname) },
        def,
    })
}

/// The type of column `name` as this node has it, as SQL, schema-qualified (with its
/// collation); `text` when this node lacks it, and why.
///
/// # Safety
/// `def` is a ColumnDef that [`column`] took; runs in a transaction (catalog lookups).
unsafe fn column_type(def: *mut pg_sys::ColumnDef, name: &str) -> (String, Option<String>) {
    // SAFETY: the caller's promise; a plain column's `typeName` is the parser's TypeName.
    let type_name = unsafe { (*def).typeName };
    let mut typmod = -1;
    // SAFETY: a plain TypeName of the tree, looked up in the caller's transaction (missing_ok:
    // NULL for a type missing here); TypeNameToString gives a palloc'd string.
    let (found, written) = unsafe {
        let found = pg_sys::LookupTypeName(std::ptr::null_mut(), type_name, &mut typmod, true);
        (found, utf8_ptr(pg_sys::TypeNameToString(type_name)))
    };
    let (sql_type, substituted) = if found.is_null() {
        let why = format!(
            "column {} is text: type {written} does not exist here",
            quote(name)
        );
        ("pg_catalog.text".to_string(), Some(why))
    } else {
        let flags = (pg_sys::FORMAT_TYPE_TYPEMOD_GIVEN | pg_sys::FORMAT_TYPE_FORCE_QUALIFY) as u16;
        // SAFETY: `found` is the syscache tuple LookupTypeName pinned for us, released once its
        // OID is read; format_type_extended gives a palloc'd string.
        let mut sql = unsafe {
            let type_id = pg_sys::typeTypeId(found);
            pg_sys::ReleaseSysCache(found);
            utf8_ptr(pg_sys::format_type_extended(type_id, typmod, flags))
        };
        // SAFETY: the caller's promise; `collClause` is NULL or the parser's CollateClause.
        let collation = unsafe { (*def).collClause };
        if !collation.is_null() {
            // SAFETY: the collation's name list from the tree (missing_ok: InvalidOid for one
            // missing here); generate_collation_name gives a palloc'd string.
            unsafe {
                let oid = pg_sys::get_collation_oid((*collation).collname, true);
                if oid != pg_sys::InvalidOid {
                    sql.push_str(&format!(
                        " COLLATE {}",
                        utf8_ptr(pg_sys::generate_collation_name(oid))
                    ));
                }
            }
        }
        (sql, None)
    };
    (sql_type, substituted)
}

/// `PRIMARY KEY (columns)` and nothing else.
///
/// # Safety
/// `constraint` is a Constraint of a raw parse tree.
unsafe fn primary_key(constraint: *mut pg_sys::Constraint) -> Option<Vec<String>> {
    // SAFETY: the caller's promise; the tree is not changed while `c` is borrowed.
    let c = unsafe { &*constraint };
    let plain = c.contype == pg_sys::ConstrType::CONSTR_PRIMARY
        && c.conname.is_null()
        && c.including.is_null()
        && c.options.is_null()
        && c.indexname.is_null()
        && c.indexspace.is_null()
        && c.exclusions.is_null()
        && c.where_clause.is_null();
    if !plain {
        return None;
    }
    // SAFETY: a PRIMARY KEY's `keys` is the parser's List of String nodes (each checked by its
    // tag all the same), their values NUL-terminated.
    let keys: Option<Vec<String>> = unsafe {
        PgList::<pg_sys::Node>::from_pg(c.keys)
            .iter_ptr()
            .map(|k| {
                ((*k).type_ == pg_sys::NodeTag::T_String)
                    .then(|| utf8_ptr((*k.cast::<pg_sys::String>()).sval))
            })
            .collect()
    };
    keys.filter(|k| !k.is_empty())
}

#[cfg(any(test, feature = "pg_test"))]
#[path = "tables_tests.rs"]
mod tables_tests;
