//! The statement of an event, parsed again with this server's parser, and run from its parse
//! tree.

use ddl_filter::{classify_object, Classification, DdlKind};
use pgrx::list::PgList;
use pgrx::pg_sys;
use std::ffi::{CStr, CString};

/// A statement that passed the checks: exactly one, of a replicated kind, the kind the row
/// claimed.
pub struct Checked {
    /// Its real command tag.
    pub tag: String,
    /// Its real kind.
    pub kind: DdlKind,
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

/// One parsed statement: its tree and command tag.
pub struct Parsed {
    pub stmt: *mut pg_sys::RawStmt,
    pub tag: String,
}

/// Parses `sql`; it must hold exactly one statement.
pub fn parse_one(sql: &str) -> Result<Parsed, String> {
    let text = CString::new(sql).map_err(|_| "the statement contains a NUL byte".to_string())?;
    // SAFETY: raw_parser reports syntax errors with ereport (turned into a Rust panic, i.e. an
    // ERROR for the caller); the tree lives in the current memory context, which outlives the
    // replay of this event.
    let list =
        unsafe { pg_sys::raw_parser(text.as_ptr(), pg_sys::RawParseMode::RAW_PARSE_DEFAULT) };
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
    // SAFETY: a RawStmt from the parser; CreateCommandTag reads raw trees (as exec_simple_query).
    let tag = unsafe {
        let node = (*stmt).stmt;
        if is_select_into(node) {
            // A raw tree's tag is SELECT; parse analysis makes it the CREATE TABLE AS it is,
            // and that is the tag the publisher's capture recorded.
            "SELECT INTO".to_string()
        } else {
            CStr::from_ptr(pg_sys::GetCommandTagName(pg_sys::CreateCommandTag(node)))
                .to_string_lossy()
                .into_owned()
        }
    };
    Ok(Parsed { stmt, tag })
}

/// Whether a raw tree is `SELECT ... INTO table`.
///
/// # Safety
/// `node` is a raw parse tree.
unsafe fn is_select_into(node: *mut pg_sys::Node) -> bool {
    (*node).type_ == pg_sys::NodeTag::T_SelectStmt
        && !(*(node as *mut pg_sys::SelectStmt)).intoClause.is_null()
}

/// Checks the statement of an event whose row claims `claimed_tag` and `claimed_kind`. Runs
/// with the event's search_path set: the kind of `ALTER TABLE x` depends on what `x` is.
pub fn check(sql: &str, claimed_tag: &str, claimed_kind: &str) -> Result<Checked, String> {
    check_parsed(&parse_one(sql)?, claimed_tag, claimed_kind)
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
    // SAFETY: a tree just parsed; the lookups only read catalogs.
    let object_type = unsafe { object_type((*parsed.stmt).stmt) };
    let kind = match classify_object(&parsed.tag, object_type.unwrap_or("")) {
        Classification::Replicated(kind) => kind,
        Classification::NotReplicated(why) => {
            return Err(format!("{} is never replicated: {why}", parsed.tag));
        }
    };
    if kind.token() != claimed_kind {
        return Err(format!(
            "the row claims kind {claimed_kind}, but the statement ({}) is of kind {}",
            parsed.tag,
            kind.token()
        ));
    }
    Ok(Checked {
        tag: parsed.tag.clone(),
        kind,
    })
}

/// The type of the object a statement is about, spelled as ddl-filter's classification knows it,
/// where the command tag alone does not tell: ALTER TABLE (PostgreSQL accepts it on any
/// relation, so the relation decides), COMMENT, SECURITY LABEL, GRANT and REVOKE.
///
/// # Safety
/// `node` is a raw parse tree.
unsafe fn object_type(node: *mut pg_sys::Node) -> Option<&'static str> {
    match (*node).type_ {
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = node as *mut pg_sys::AlterTableStmt;
            let relid = pg_sys::RangeVarGetRelidExtended(
                (*stmt).relation,
                pg_sys::NoLock as pg_sys::LOCKMODE,
                pg_sys::RVROption::RVR_MISSING_OK,
                None,
                std::ptr::null_mut(),
            );
            if relid == pg_sys::InvalidOid {
                return object_type_name((*stmt).objtype);
            }
            match pg_sys::get_rel_relkind(relid) as u8 {
                b'r' | b'p' => Some("table"),
                b'i' | b'I' => Some("index"),
                b'S' => Some("sequence"),
                b'v' => Some("view"),
                b'm' => Some("materialized view"),
                b'f' => Some("foreign table"),
                b'c' => Some("composite type"),
                _ => None,
            }
        }
        pg_sys::NodeTag::T_CommentStmt => {
            object_type_name((*(node as *mut pg_sys::CommentStmt)).objtype)
        }
        pg_sys::NodeTag::T_SecLabelStmt => {
            object_type_name((*(node as *mut pg_sys::SecLabelStmt)).objtype)
        }
        pg_sys::NodeTag::T_GrantStmt => {
            object_type_name((*(node as *mut pg_sys::GrantStmt)).objtype)
        }
        _ => None,
    }
}

/// pg_identify_object()'s name for each object type a statement can name.
fn object_type_name(t: pg_sys::ObjectType::Type) -> Option<&'static str> {
    use pg_sys::ObjectType as O;
    Some(match t {
        O::OBJECT_ACCESS_METHOD => "access method",
        O::OBJECT_AGGREGATE => "aggregate",
        O::OBJECT_CAST => "cast",
        O::OBJECT_COLUMN => "column",
        O::OBJECT_COLLATION => "collation",
        O::OBJECT_CONVERSION => "conversion",
        O::OBJECT_DATABASE => "database",
        O::OBJECT_DOMAIN => "domain",
        O::OBJECT_DOMCONSTRAINT => "domain constraint",
        O::OBJECT_EVENT_TRIGGER => "event trigger",
        O::OBJECT_EXTENSION => "extension",
        O::OBJECT_FDW => "foreign-data wrapper",
        O::OBJECT_FOREIGN_SERVER => "server",
        O::OBJECT_FOREIGN_TABLE => "foreign table",
        O::OBJECT_FUNCTION => "function",
        O::OBJECT_INDEX => "index",
        O::OBJECT_LANGUAGE => "language",
        O::OBJECT_LARGEOBJECT => "large object",
        O::OBJECT_MATVIEW => "materialized view",
        O::OBJECT_OPCLASS => "operator class",
        O::OBJECT_OPERATOR => "operator",
        O::OBJECT_OPFAMILY => "operator family",
        O::OBJECT_PARAMETER_ACL => "parameter ACL",
        O::OBJECT_POLICY => "policy",
        O::OBJECT_PROCEDURE => "procedure",
        O::OBJECT_PUBLICATION => "publication",
        O::OBJECT_ROLE => "role",
        O::OBJECT_ROUTINE => "routine",
        O::OBJECT_RULE => "rule",
        O::OBJECT_SCHEMA => "schema",
        O::OBJECT_SEQUENCE => "sequence",
        O::OBJECT_SUBSCRIPTION => "subscription",
        O::OBJECT_STATISTIC_EXT => "statistics object",
        O::OBJECT_TABCONSTRAINT => "table constraint",
        O::OBJECT_TABLE => "table",
        O::OBJECT_TABLESPACE => "tablespace",
        O::OBJECT_TRANSFORM => "transform",
        O::OBJECT_TRIGGER => "trigger",
        O::OBJECT_TSCONFIGURATION => "text search configuration",
        O::OBJECT_TSDICTIONARY => "text search dictionary",
        O::OBJECT_TSPARSER => "text search parser",
        O::OBJECT_TSTEMPLATE => "text search template",
        O::OBJECT_TYPE => "type",
        O::OBJECT_VIEW => "view",
        _ => return None,
    })
}

/// Turns `CONCURRENTLY` off in the tree: a concurrent build, drop, reindex or detach cannot run
/// inside the apply worker's transaction, and the same statement without it does the same thing
/// to the schema (holding stronger locks meanwhile). Returns whether anything changed.
///
/// # Safety
/// `node` is a parse tree this backend owns.
pub unsafe fn make_transactional(node: *mut pg_sys::Node) -> bool {
    match (*node).type_ {
        pg_sys::NodeTag::T_IndexStmt => {
            let stmt = node as *mut pg_sys::IndexStmt;
            std::mem::replace(&mut (*stmt).concurrent, false)
        }
        pg_sys::NodeTag::T_DropStmt => {
            let stmt = node as *mut pg_sys::DropStmt;
            std::mem::replace(&mut (*stmt).concurrent, false)
        }
        pg_sys::NodeTag::T_ReindexStmt => {
            let stmt = node as *mut pg_sys::ReindexStmt;
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
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = node as *mut pg_sys::AlterTableStmt;
            let mut changed = false;
            for cmd in PgList::<pg_sys::AlterTableCmd>::from_pg((*stmt).cmds).iter_ptr() {
                let def = (*cmd).def;
                if !def.is_null() && (*def).type_ == pg_sys::NodeTag::T_PartitionCmd {
                    changed |= std::mem::replace(
                        &mut (*(def as *mut pg_sys::PartitionCmd)).concurrent,
                        false,
                    );
                }
            }
            changed
        }
        _ => false,
    }
}

/// Makes CREATE TABLE AS and SELECT INTO create their table WITH NO DATA. The rows are the
/// publisher's: they follow through replication like those of any new table the publication
/// takes (running the query here would add the subscriber's own rows to them, or fail on a
/// key), and a table the publication does not take stays empty, as it would with no DDL
/// replication. A materialized view keeps its query: its rows are never replicated, and a
/// `REFRESH MATERIALIZED VIEW` replays as it ran. Returns whether anything changed.
///
/// # Safety
/// `node` is a parse tree this backend owns.
pub unsafe fn without_table_data(node: *mut pg_sys::Node) -> bool {
    let into = match (*node).type_ {
        pg_sys::NodeTag::T_CreateTableAsStmt => {
            let stmt = node as *mut pg_sys::CreateTableAsStmt;
            if (*stmt).objtype != pg_sys::ObjectType::OBJECT_TABLE {
                return false;
            }
            (*stmt).into
        }
        pg_sys::NodeTag::T_SelectStmt if is_select_into(node) => {
            (*(node as *mut pg_sys::SelectStmt)).intoClause
        }
        _ => return false,
    };
    !into.is_null() && !std::mem::replace(&mut (*into).skipData, true)
}

/// Runs a parsed utility statement as a statement of the current transaction, the way
/// PostgreSQL runs any statement: parse analysis, rewrite and planning first (most utility
/// statements pass through them unchanged, but CREATE TABLE AS, CREATE MATERIALIZED VIEW and
/// SELECT INTO analyse and plan their query there), then ProcessUtility.
///
/// # Safety
/// `parsed` came from [`parse_one`] of `sql` in this call; runs inside a transaction.
pub unsafe fn execute(parsed: &Parsed, sql: &CStr) {
    let queries = pg_sys::pg_analyze_and_rewrite_fixedparams(
        parsed.stmt,
        sql.as_ptr(),
        std::ptr::null_mut(),
        0,
        std::ptr::null_mut(),
    );
    let planned = pg_sys::pg_plan_queries(queries, sql.as_ptr(), 0, std::ptr::null_mut());
    for pstmt in PgList::<pg_sys::PlannedStmt>::from_pg(planned).iter_ptr() {
        if (*pstmt).commandType != pg_sys::CmdType::CMD_UTILITY {
            // The checks let only DDL through; a rewrite rule cannot make one of a utility.
            pgrx::error!(
                "ddl_sync: \"{}\" planned as a query, not run",
                sql.to_string_lossy()
            );
        }
        let mut qc: pg_sys::QueryCompletion = std::mem::zeroed();
        // PROCESS_UTILITY_QUERY: a complete statement run from inside another one, as a
        // function would run it, so event triggers (the capture, for cascades) see it.
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
