//! The statement of an event, parsed again with this server's parser, and run from its parse
//! tree.

use crate::replay::object;
use ddl_filter::{classify_object, Classification, DdlKind};
use pgrx::list::PgList;
use pgrx::pg_sys;
use std::cell::Cell;
use std::ffi::{CStr, CString};

/// A statement that passed the checks: exactly one, of a replicated kind, the kind the row
/// claimed.
pub struct Checked {
    /// Its real command tag.
    pub tag: String,
    /// Its real kind.
    pub kind: DdlKind,
    /// The schema, here, of the relation it creates or works on (see
    /// [`object::relation_schema`]); `None` when it names no relation.
    pub schema: Option<String>,
    /// The relation an ALTER TABLE (the statement that may change a column's type) works on,
    /// when it exists here.
    pub altered: Option<pg_sys::Oid>,
    /// The parse the check read, for the replay to run without parsing the text again (see
    /// `host::execute_claimed`): taken once; `None` for another dialect's statement.
    pub parsed: Cell<Option<Parsed>>,
}

impl Checked {
    /// Whether replaying it creates a table that rows may follow.
    pub fn creates_table(&self) -> bool {
        matches!(
            self.tag.as_str(),
            "CREATE TABLE" | "CREATE TABLE AS" | "SELECT INTO"
        )
    }
}

/// One parsed statement: its tree and command tag. Only [`parse_one`] makes one, so the tree is
/// always the parser's, in the memory context of the replay.
pub struct Parsed {
    stmt: *mut pg_sys::RawStmt,
    pub tag: String,
    /// The text it was parsed from.
    text: String,
}

impl Parsed {
    /// Whether it is the parse of `sql`.
    pub fn is_of(&self, sql: &str) -> bool {
        self.text == sql
    }

    /// The raw parse tree of the statement.
    pub fn tree(&self) -> *mut pg_sys::Node {
        // SAFETY: a RawStmt from the parser (see above).
        unsafe { (*self.stmt).stmt }
    }
}

/// Parses `sql`; it must hold exactly one statement.
pub fn parse_one(sql: &str) -> Result<Parsed, String> {
    let text = CString::new(sql).map_err(|_| "the statement contains a NUL byte".to_string())?;
    // A statement this server cannot parse (one of a newer PostgreSQL's syntax, from a
    // publisher of that version) is an answer, not an ERROR that would stop the apply worker
    // for good. The tree lives in the current memory context, which outlives the replay of
    // this event.
    let list = ddl_server::xact::raw_parse(&text)
        .map_err(|caught| format!("this server cannot parse it: {}", caught.message))?;
    // SAFETY: raw_parser's result is NIL or a List of RawStmts.
    let stmts = unsafe { PgList::<pg_sys::RawStmt>::from_pg(list) };
    if stmts.len() != 1 {
        return Err(format!(
            "the statement text holds {} statements, not one",
            stmts.len()
        ));
    }
    let stmt = stmts
        .get_ptr(0)
        .ok_or("the statement text holds no statement")?;
    // SAFETY: a RawStmt from the parser; CreateCommandTag reads raw trees (as exec_simple_query),
    // and GetCommandTagName returns a static NUL-terminated name. Not converted: command tags
    // are PostgreSQL's own ASCII words, never translated.
    let tag = unsafe {
        // A raw SELECT ... INTO is still a SELECT; analysis makes it the CREATE TABLE AS that
        // PostgreSQL, and so the capture, reports as SELECT INTO.
        if !select_into((*stmt).stmt).is_null() {
            "SELECT INTO".to_string()
        } else {
            CStr::from_ptr(pg_sys::GetCommandTagName(pg_sys::CreateCommandTag(
                (*stmt).stmt,
            )))
            .to_string_lossy()
            .into_owned()
        }
    };
    Ok(Parsed {
        stmt,
        tag,
        text: sql.to_string(),
    })
}

/// The command tag and kind of `sql`, one statement that no row claims anything about (an
/// operator's replacement for an event); an error for a statement that is never replicated.
pub fn claims(sql: &str) -> Result<(String, &'static str), String> {
    let parsed = parse_one(sql)?;
    let kind = kind_of(&parsed)?;
    Ok((parsed.tag, kind.token()))
}

/// The real kind of a parsed statement; an error for one that is never replicated.
fn kind_of(parsed: &Parsed) -> Result<DdlKind, String> {
    // SAFETY: a tree from the parser; the lookups only read catalogs, in the replay's
    // transaction.
    let object_type = unsafe { object::object_type(parsed.tree()) };
    match classify_object(&parsed.tag, object_type.as_deref().unwrap_or("")) {
        Classification::Replicated(kind) => Ok(kind),
        Classification::NotReplicated(why) => {
            Err(format!("{} is never replicated: {why}", parsed.tag))
        }
    }
}

/// Checks the statement of an event whose row claims `claimed_tag` and `claimed_kind`. Runs
/// with the event's search_path set: the kind of `ALTER TABLE x` depends on what `x` is.
#[inline(never)] // a phase of `cargo xtask bench apply-instructions`
pub fn check(sql: &str, claimed_tag: &str, claimed_kind: &str) -> Result<Checked, String> {
    let parsed = parse_one(sql)?;
    let checked = check_parsed(&parsed, claimed_tag, claimed_kind)?;
    checked.parsed.set(Some(parsed));
    Ok(checked)
}

/// [`check`] of a statement already parsed.
pub fn check_parsed(
    parsed: &Parsed,
    claimed_tag: &str,
    claimed_kind: &str,
) -> Result<Checked, String> {
    if parsed.tag != claimed_tag {
        return Err(format!(
            "the row claims {claimed_tag}, but the statement is {}",
            parsed.tag
        ));
    }
    let kind = kind_of(parsed)?;
    if kind.token() != claimed_kind {
        return Err(format!(
            "the row claims kind {claimed_kind}, but the statement ({}) is of kind {}",
            parsed.tag,
            kind.token()
        ));
    }
    // SAFETY: a tree from the parser; the lookups only read catalogs, in the replay's
    // transaction with the event's search_path set.
    let schema = unsafe { object::relation_schema(parsed.tree()) };
    // SAFETY: as above; the tag says which statement the tree is, and an AlterTableStmt's
    // `relation` is the parser's RangeVar.
    let altered = unsafe {
        let node = parsed.tree();
        if (*node).type_ == pg_sys::NodeTag::T_AlterTableStmt {
            ddl_server::relation_oid((*node.cast::<pg_sys::AlterTableStmt>()).relation)
        } else {
            None
        }
    };
    Ok(Checked {
        tag: parsed.tag.clone(),
        kind,
        schema,
        altered,
        parsed: Cell::new(None),
    })
}

/// Turns `CONCURRENTLY` off in the tree: a concurrent build, drop, reindex or detach cannot run
/// inside the apply worker's transaction, and the same statement without it does the same thing
/// to the schema (holding stronger locks meanwhile). Returns whether anything changed.
///
/// # Safety
/// `node` is a parse tree this backend owns.
pub unsafe fn make_transactional(node: *mut pg_sys::Node) -> bool {
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is.
    let tag = unsafe { (*node).type_ };
    match tag {
        pg_sys::NodeTag::T_IndexStmt => {
            // SAFETY: the tag says IndexStmt; the tree is ours to change.
            unsafe { std::mem::replace(&mut (*node.cast::<pg_sys::IndexStmt>()).concurrent, false) }
        }
        pg_sys::NodeTag::T_DropStmt => {
            // SAFETY: as above, a DropStmt.
            unsafe { std::mem::replace(&mut (*node.cast::<pg_sys::DropStmt>()).concurrent, false) }
        }
        pg_sys::NodeTag::T_ReindexStmt => {
            // SAFETY: the tag says ReindexStmt, whose `params` are DefElems with names; the list
            // is ours to change, and is not read again once an element is deleted.
            unsafe {
                let stmt = node.cast::<pg_sys::ReindexStmt>();
                let params = PgList::<pg_sys::DefElem>::from_pg((*stmt).params);
                let concurrently = params
                    .iter_ptr()
                    .find(|d| CStr::from_ptr((**d).defname).to_bytes() == b"concurrently");
                match concurrently {
                    Some(def) => {
                        (*stmt).params = pg_sys::list_delete_ptr((*stmt).params, def.cast());
                        true
                    }
                    None => false,
                }
            }
        }
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = node.cast::<pg_sys::AlterTableStmt>();
            let mut changed = false;
            // SAFETY: the tag says AlterTableStmt, whose `cmds` are AlterTableCmds; each `def`
            // is NULL or a node whose tag says which, and the tree is ours to change.
            unsafe {
                for cmd in PgList::<pg_sys::AlterTableCmd>::from_pg((*stmt).cmds).iter_ptr() {
                    let def = (*cmd).def;
                    if !def.is_null() && (*def).type_ == pg_sys::NodeTag::T_PartitionCmd {
                        changed |= std::mem::replace(
                            &mut (*def.cast::<pg_sys::PartitionCmd>()).concurrent,
                            false,
                        );
                    }
                }
            }
            changed
        }
        _ => false,
    }
}

/// Makes `CREATE TABLE AS` and `SELECT INTO` create their table empty (`WITH NO DATA`): the
/// rows the query gave on the publisher are rows of a published table, so they arrive through
/// replication like any other, and running the query here would add them a second time. A
/// materialized view keeps its query's data: its rows are never replicated.
///
/// # Safety
/// `node` is a raw parse tree this backend owns.
pub unsafe fn create_empty(node: *mut pg_sys::Node) {
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is; `into`
    // is NULL or its IntoClause, which is ours to change.
    unsafe {
        let into = match (*node).type_ {
            pg_sys::NodeTag::T_CreateTableAsStmt => {
                let stmt = node.cast::<pg_sys::CreateTableAsStmt>();
                if (*stmt).objtype != pg_sys::ObjectType::OBJECT_TABLE {
                    return;
                }
                (*stmt).into
            }
            pg_sys::NodeTag::T_SelectStmt => select_into(node),
            _ => return,
        };
        if !into.is_null() {
            (*into).skipData = true;
        }
    }
}

/// The INTO clause of a raw `SELECT ... INTO` (held by the leftmost SELECT of a set operation,
/// as parse analysis finds it); null for anything else.
///
/// # Safety
/// `node` is a raw parse tree.
pub unsafe fn select_into(node: *mut pg_sys::Node) -> *mut pg_sys::IntoClause {
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is; the
    // `larg` of a set operation's SelectStmt is another SelectStmt (NULL checked all the same).
    unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_SelectStmt {
            return std::ptr::null_mut();
        }
        let mut select = node.cast::<pg_sys::SelectStmt>();
        while !select.is_null() && (*select).op != pg_sys::SetOperation::SETOP_NONE {
            select = (*select).larg;
        }
        if select.is_null() {
            std::ptr::null_mut()
        } else {
            (*select).intoClause
        }
    }
}

/// Runs a parsed utility statement as a statement of the current transaction.
///
/// The raw tree goes through parse analysis first, as `exec_simple_query` does: most utility
/// statements carry their raw tree through it unchanged, but those holding a query (`CREATE
/// TABLE AS`, `SELECT INTO`, `CREATE MATERIALIZED VIEW`) need it analysed, and
/// ProcessUtility would crash on a raw one.
///
/// # Safety
/// `parsed` came from [`parse_one`] of `sql` in this call; runs inside a transaction with an
/// active snapshot (the apply worker's).
pub unsafe fn execute(parsed: &Parsed, sql: &CStr) {
    // SAFETY: the caller's promise: a RawStmt parsed from `sql` (analysis reads the text for
    // error positions), in a transaction with an active snapshot, as exec_simple_query runs it.
    let plans = unsafe {
        let queries = pg_sys::pg_analyze_and_rewrite_fixedparams(
            parsed.stmt,
            sql.as_ptr(),
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
        );
        pg_sys::pg_plan_queries(
            queries,
            sql.as_ptr(),
            pg_sys::CURSOR_OPT_PARALLEL_OK as i32,
            std::ptr::null_mut(),
        )
    };
    // SAFETY: pg_plan_queries's List of PlannedStmts.
    let plans = unsafe { PgList::<pg_sys::PlannedStmt>::from_pg(plans) };
    for pstmt in plans.iter_ptr() {
        // Analysis of a utility statement gives back one utility statement; rules never
        // rewrite utility statements into row changes.
        // SAFETY: a PlannedStmt of that list.
        if unsafe { (*pstmt).commandType } != pg_sys::CmdType::CMD_UTILITY {
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                "ddl_sync: the replayed statement was analysed into a statement that is not DDL"
            );
        }
        // SAFETY: QueryCompletion is plain data, for which all zeroes is "nothing yet"
        // (InitializeQueryCompletion's values).
        let mut qc: pg_sys::QueryCompletion = unsafe { std::mem::zeroed() };
        // PROCESS_UTILITY_QUERY: a complete statement run from inside another one, as a
        // function would run it, so event triggers (the capture, for cascades) see it.
        // SAFETY: a utility PlannedStmt planned just now from `sql`, in the caller's
        // transaction; no parameters, no query environment, results discarded.
        unsafe {
            pg_sys::ProcessUtility(
                pstmt,
                sql.as_ptr(),
                false,
                pg_sys::ProcessUtilityContext::PROCESS_UTILITY_QUERY,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                pg_sys::None_Receiver,
                &mut qc,
            );
            pg_sys::CommandCounterIncrement();
        }
    }
}
