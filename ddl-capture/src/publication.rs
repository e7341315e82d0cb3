//! The `ddl` option of CREATE/ALTER PUBLICATION.
//!
//! PostgreSQL rejects unknown publication options, so the hook takes `ddl` out of the statement
//! before the server parses the rest, stores it through the `ddl_sync` extension after the
//! statement succeeded, and makes sure the publication can carry the events: it must publish
//! inserts and contain `ddl_sync.events` whole (no row filter, no column list), or pgoutput would
//! silently drop every DDL event.

use crate::plugin_allowed;
use ddl_filter::DdlKinds;
use ddl_server::errors::{self, OrInternal};
use ddl_server::options;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use std::ffi::CStr;

/// A `ddl = '...'` taken from a publication statement.
pub struct Request {
    /// The statement to run: a copy without the option when the original tree was read-only.
    pub pstmt: *mut pg_sys::PlannedStmt,
    /// Whether anything is left to run: `ALTER PUBLICATION p SET (ddl = '...')` alone must
    /// not reach AlterPublication, which reads an empty option list as "SET no tables".
    pub run_statement: bool,
    publication: String,
    kinds: DdlKinds,
}

/// The options list of a publication statement, if `node` is one, and its publication's name.
///
/// # Safety
/// `node` is a node (not null).
unsafe fn options_of(
    node: *mut pg_sys::Node,
) -> Option<(*mut *mut pg_sys::List, *mut std::ffi::c_char)> {
    // SAFETY: the caller's promise; a statement of the type its tag says.
    unsafe {
        match (*node).type_ {
            pg_sys::NodeTag::T_CreatePublicationStmt => {
                let stmt = node as *mut pg_sys::CreatePublicationStmt;
                Some((&mut (*stmt).options, (*stmt).pubname))
            }
            pg_sys::NodeTag::T_AlterPublicationStmt => {
                let stmt = node as *mut pg_sys::AlterPublicationStmt;
                Some((&mut (*stmt).options, (*stmt).pubname))
            }
            _ => None,
        }
    }
}

/// Takes the `ddl` option out of a CREATE/ALTER PUBLICATION, after validating it.
///
/// # Safety
/// `pstmt` is the statement ProcessUtility was given, and `read_only_tree` its flag; in the
/// hook, inside the statement's transaction.
pub unsafe fn take_ddl_option(
    pstmt: *mut pg_sys::PlannedStmt,
    read_only_tree: bool,
) -> Option<Request> {
    // SAFETY: the caller's promise: a utility statement's PlannedStmt, its tree a node.
    let (options, _) = unsafe { options_of((*pstmt).utilityStmt) }?;
    // SAFETY: the statement's options, a List of DefElems with NUL-terminated names.
    let text = unsafe { options::string_value(options::find(*options, "ddl")?) };
    let kinds = match DdlKinds::parse(&text) {
        Ok(kinds) => kinds,
        Err(e) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("invalid value for publication parameter \"ddl\": {e}")
            );
        }
    };
    // SAFETY: a catalog lookup (missing_ok).
    if unsafe { pg_sys::get_extension_oid(c"ddl_sync".as_ptr(), true) } == pg_sys::InvalidOid {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "publication parameter \"ddl\" requires the ddl_sync extension",
            "Run CREATE EXTENSION ddl_sync in this database first."
        );
    }
    // SAFETY: the caller's promise: PostgreSQL's tree and its flag, copied when read-only.
    let pstmt = unsafe { options::writable(pstmt, read_only_tree) };
    // SAFETY: the tree we may change, a publication statement as the original is; its
    // name is NUL-terminated.
    let (options, pubname, is_alter, publication) = unsafe {
        let (options, pubname) = options_of((*pstmt).utilityStmt)?;
        options::remove(options, "ddl");
        let is_alter = (*(*pstmt).utilityStmt).type_ == pg_sys::NodeTag::T_AlterPublicationStmt;
        (
            options,
            pubname,
            is_alter,
            ddl_server::text::utf8_ptr(pubname),
        )
    };
    // SAFETY: the options list of our tree, which nothing else changes.
    let nothing_left = is_alter && unsafe { (*options).is_null() };
    if nothing_left {
        // Nothing left for AlterPublication: check what it would have checked.
        // SAFETY: the statement's NUL-terminated name; a publication that does not exist, or
        // one the user does not own, is PostgreSQL's own ERROR.
        unsafe {
            let oid = pg_sys::get_publication_oid(pubname, false);
            if !ddl_server::versions::owns_publication(oid, pg_sys::GetUserId()) {
                pg_sys::aclcheck_error(
                    pg_sys::AclResult::ACLCHECK_NOT_OWNER,
                    pg_sys::ObjectType::OBJECT_PUBLICATION,
                    pubname,
                );
            }
        }
    }
    Some(Request {
        pstmt,
        run_statement: !nothing_left,
        publication,
        kinds,
    })
}

/// Stores the option through the extension and adds `ddl_sync.events` to the publication
/// (unless it is FOR ALL TABLES and leaves the table out, 19's EXCEPT: then it is refused
/// below). Runs in the hook, after the statement succeeded.
pub fn store(request: &Request) {
    // SAFETY: the statement that ran, in its transaction.
    if !request.kinds.is_empty() && !unsafe { names_no_relations(request.pstmt) } {
        // Before storing: storing lets the extension's exception of the table go (see
        // `ddl_sync.keep_own_tables_out`), and this one is the statement's.
        refuse_excepted_events(&request.publication);
    }
    let kinds = request.kinds.to_string();
    Spi::run_with_args(
        "SELECT ddl_sync.set_publication_ddl($1, $2)",
        &[request.publication.as_str().into(), kinds.as_str().into()],
    )
    .or_internal("cannot store publication parameter \"ddl\"");
    if request.kinds.is_empty() {
        return;
    }
    plugin_allowed::warn_unless_listed();
    let has_events = events_in_publication(&request.publication);
    let all_tables = Spi::get_one_with_args::<bool>(
        "SELECT puballtables FROM pg_catalog.pg_publication WHERE pubname = $1",
        &[request.publication.as_str().into()],
    )
    .unwrap_or_else(|e| {
        errors::internal(format_args!(
            "cannot read publication {}: {e}",
            request.publication
        ))
    });
    if has_events == Some(false) && all_tables != Some(true) {
        let name = std::ffi::CString::new(request.publication.as_str()).unwrap_or_default();
        // SAFETY: a NUL-terminated string of ours; the result is it or a new string. The name
        // is UTF-8 already, and quoting adds only ASCII quotes: the result is UTF-8 too.
        let quoted = unsafe { CStr::from_ptr(pg_sys::quote_identifier(name.as_ptr())) }
            .to_string_lossy()
            .into_owned();
        Spi::run(&format!(
            "ALTER PUBLICATION {quoted} ADD TABLE ddl_sync.events"
        ))
        .unwrap_or_else(|e| {
            errors::internal(format_args!(
                "cannot add ddl_sync.events to publication {quoted}: {e}"
            ))
        });
    }
    check_publication(&request.publication);
}

/// After any other CREATE or ALTER PUBLICATION: the extension's own tables stay out of it, and
/// a publication that replicates DDL must keep carrying it.
///
/// # Safety
/// Runs in the hook, after the statement succeeded; `pstmt` is the PlannedStmt that ran.
pub unsafe fn check_after(pstmt: *mut pg_sys::PlannedStmt) {
    // SAFETY: the caller's promise: a utility statement's PlannedStmt, its tree a node.
    let node = unsafe { (*pstmt).utilityStmt };
    if node.is_null() {
        return;
    }
    // SAFETY: as above.
    let Some((_, name)) = (unsafe { options_of(node) }) else {
        return;
    };
    // SAFETY: a catalog lookup (missing_ok).
    if unsafe { pg_sys::get_extension_oid(c"ddl_sync".as_ptr(), true) } == pg_sys::InvalidOid {
        return;
    }
    // SAFETY: a publication statement's NUL-terminated name.
    let name = unsafe { ddl_server::text::utf8_ptr(name) };
    keep_own_tables_out(&name);
    check_publication(&name);
}

/// Whether `pstmt`, a publication statement, is an ALTER PUBLICATION that names no table or
/// schema (options only): then the publication's EXCEPT list is not the statement's.
///
/// # Safety
/// `pstmt` is a utility statement's PlannedStmt whose tree is a publication statement.
unsafe fn names_no_relations(pstmt: *mut pg_sys::PlannedStmt) -> bool {
    // SAFETY: the caller's promise.
    unsafe {
        let node = (*pstmt).utilityStmt;
        (*node).type_ == pg_sys::NodeTag::T_AlterPublicationStmt
            && (*node.cast::<pg_sys::AlterPublicationStmt>())
                .pubobjects
                .is_null()
    }
}

/// Refuses a statement that gives a publication DDL and excepts `ddl_sync.events` itself (19's
/// `FOR ALL TABLES EXCEPT`), as [`check_publication`] would once it is stored.
fn refuse_excepted_events(publication: &str) {
    let Some(events) = ddl_server::relcache::relation_named("ddl_sync.events") else {
        return;
    };
    let name = std::ffi::CString::new(publication).unwrap_or_default();
    // SAFETY: catalog lookups by a NUL-terminated name (missing_ok) and by OIDs.
    let excepted = unsafe {
        let pubid = pg_sys::get_publication_oid(name.as_ptr(), true);
        pubid != pg_sys::InvalidOid && ddl_server::versions::publication_excepts(pubid, events)
    };
    if excepted {
        refuse(
            publication,
            "its FOR ALL TABLES EXCEPT leaves out ddl_sync.events",
        );
    }
}

/// Keeps ddl_sync's own tables out of a `FOR ALL TABLES` publication where the server can
/// (19's `EXCEPT`; see `ddl_sync.keep_own_tables_out`); never takes an exception away.
fn keep_own_tables_out(publication: &str) {
    Spi::run_with_args(
        "SELECT ddl_sync.keep_own_tables_out($1, false)",
        &[publication.into()],
    )
    .unwrap_or_else(|e| {
        errors::internal(format_args!(
            "cannot keep ddl_sync's tables out of publication {publication}: {e}"
        ))
    });
}

/// Whether publication `p` publishes `ddl_sync.events`, as an SQL condition: the server's own
/// answer (`pg_publication_tables`), which knows every way a table joins a publication (FOR
/// ALL TABLES, FOR TABLES IN SCHEMA, the table itself) and 19's `FOR ALL TABLES EXCEPT`.
const PUBLISHES_EVENTS: &str = "EXISTS (SELECT FROM pg_catalog.pg_publication_tables t
     WHERE t.pubname OPERATOR(pg_catalog.=) p.pubname AND t.schemaname OPERATOR(pg_catalog.=) 'ddl_sync'
       AND t.tablename OPERATOR(pg_catalog.=) 'events')";

/// Whether the publication contains `ddl_sync.events` (FOR ALL TABLES does); `None` when the
/// publication does not exist. (Each query is wrapped in a scalar subquery so that it always
/// returns one row.)
fn events_in_publication(publication: &str) -> Option<bool> {
    Spi::get_one_with_args::<bool>(
        &format!(
            "SELECT (SELECT {PUBLISHES_EVENTS}
               FROM pg_catalog.pg_publication p WHERE p.pubname = $1)"
        ),
        &[publication.into()],
    )
    .unwrap_or_else(|e| {
        errors::internal(format_args!("cannot read publication {publication}: {e}"))
    })
}

/// Refuses a configuration in which pgoutput would drop the events of a publication that
/// replicates DDL.
fn check_publication(publication: &str) {
    let problem = Spi::get_one_with_args::<String>(
        &format!("SELECT (SELECT CASE
             WHEN NOT p.pubinsert THEN 'it does not publish inserts (publish = ''insert'' is needed)'
             WHEN NOT {PUBLISHES_EVENTS} AND p.puballtables
                 THEN 'its FOR ALL TABLES EXCEPT leaves out ddl_sync.events'
             WHEN NOT {PUBLISHES_EVENTS}
                 THEN 'it does not contain ddl_sync.events'
             WHEN EXISTS (SELECT FROM pg_catalog.pg_publication_rel r
                          WHERE r.prpubid = p.oid AND r.prrelid = 'ddl_sync.events'::pg_catalog.regclass
                            AND (r.prqual IS NOT NULL OR r.prattrs IS NOT NULL))
                 THEN 'it has a row filter or column list on ddl_sync.events'
           END
           FROM pg_catalog.pg_publication p
           JOIN ddl_sync.publication_sync s ON s.pfsyncpubid = p.oid AND s.pfsynckind = 'p'
          WHERE p.pubname = $1 AND s.pfsyncenabled AND s.pfsyncddl <> 0)"),
        &[publication.into()],
    )
    .unwrap_or_else(|e| {
        errors::internal(format_args!("cannot check publication {publication}: {e}"))
    });
    if let Some(problem) = problem {
        refuse(publication, &problem);
    }
}

/// The ERROR of a publication that replicates DDL but whose `problem` would drop its events.
fn refuse(publication: &str, problem: &str) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_OBJECT_DEFINITION,
        format!("publication \"{publication}\" replicates DDL, but {problem}"),
        "DDL events travel as inserts on ddl_sync.events; set ddl = 'none' to stop replicating DDL."
    );
}
