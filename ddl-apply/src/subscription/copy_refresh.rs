//! `ALTER SUBSCRIPTION ... REFRESH PUBLICATION WITH (copy_schema = true)`, and the same option
//! on `ADD PUBLICATION` and `SET PUBLICATION` (which refresh by default): the tables that the
//! subscription's publications now hold and this database lacks are made here before
//! PostgreSQL's refresh looks them up, with what they need that is missing. Their rows follow
//! through the table sync of `copy_data`, as for any table a refresh adds.
//!
//! What is made, from this server's `pg_dump --schema-only` of the publisher now:
//! - every entry of the missing tables (`pg_dump --table` of them: the table, its indexes,
//!   constraints, triggers, defaults, sequences, comments and privileges), ERROR when one of
//!   them is here with another definition, as for `CREATE SUBSCRIPTION`;
//! - the objects that are not relations (schemas, types, domains, functions, extensions, ...)
//!   that are missing here; those that are here are left as they are, identical or not.
//!
//! The copy is of the publisher's schema as it is now, while the subscription may not have
//! applied all DDL up to now: a statement on one of these tables that the subscription applies
//! after the refresh would find it made already. So refresh once the subscription has applied
//! the statements that made those tables (`pg_stat_subscription`), as the guide says.

use super::copy_schema::{self, Copied, Steps, Take};
use super::dump::Dump;
use ddl_server::errors;
use ddl_server::options::{bool_value, find};
use pg_dump_archive::Entry;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use std::collections::HashSet;

/// The copy a statement asks for.
pub(super) struct Refresh {
    /// The statement to run, without `copy_schema`.
    pub pstmt: *mut pg_sys::PlannedStmt,
    subscription: String,
    /// Which publications the refresh reads.
    publications: Publications,
    /// Whether the copy is asked for (`copy_schema = false` asks for none).
    wanted: bool,
}

/// The publications a refreshing statement reads, by its kind.
enum Publications {
    /// `REFRESH PUBLICATION`: the subscription's own.
    Subscribed,
    /// `ADD PUBLICATION`: the subscription's and these.
    Adding(Vec<String>),
    /// `SET PUBLICATION`: these instead.
    Setting(Vec<String>),
}

impl Publications {
    /// The statement's command, for `ddl_sync.schema_copies`.
    fn command(&self) -> &'static str {
        match self {
            Publications::Subscribed => "REFRESH PUBLICATION",
            Publications::Adding(_) => "ADD PUBLICATION",
            Publications::Setting(_) => "SET PUBLICATION",
        }
    }

    /// The publications read, given the subscription's `own`.
    fn names(&self, own: &[String]) -> Vec<String> {
        match self {
            Publications::Subscribed => own.to_vec(),
            Publications::Adding(added) => own.iter().chain(added).cloned().collect(),
            Publications::Setting(set) => set.clone(),
        }
    }
}

/// Takes `copy_schema` out of an ALTER SUBSCRIPTION that refreshes the publications; `None`
/// for any other statement, or one without the option.
///
/// # Safety
/// `pstmt` is the statement ProcessUtility was given, `read_only_tree` its flag.
pub(super) unsafe fn take(
    pstmt: *mut pg_sys::PlannedStmt,
    read_only_tree: bool,
) -> Option<Refresh> {
    use ddl_server::versions::ALTER_SUBSCRIPTION_REFRESH_PUBLICATION as REFRESH_PUBLICATION;
    use pg_sys::AlterSubscriptionType as K;
    // SAFETY: the caller's promise: a utility PlannedStmt.
    let node = unsafe { (*pstmt).utilityStmt };
    // SAFETY: as above; the tag says what the node is.
    if node.is_null() || unsafe { (*node).type_ } != pg_sys::NodeTag::T_AlterSubscriptionStmt {
        return None;
    }
    let stmt = node.cast::<pg_sys::AlterSubscriptionStmt>();
    // SAFETY: the tag says AlterSubscriptionStmt.
    let (kind, options) = unsafe { ((*stmt).kind, (*stmt).options) };
    if !matches!(
        kind,
        REFRESH_PUBLICATION
            | K::ALTER_SUBSCRIPTION_ADD_PUBLICATION
            | K::ALTER_SUBSCRIPTION_SET_PUBLICATION
    ) {
        return None;
    }
    // SAFETY: the statement's DefElem list.
    let def = unsafe { find(options, "copy_schema") }?;
    // SAFETY: a DefElem of the statement.
    let wanted = unsafe { bool_value(def) };
    // SAFETY: as above; `refresh` (default true) is an option of ADD/SET PUBLICATION only.
    let refreshes = kind == REFRESH_PUBLICATION
        || unsafe { find(options, "refresh") }.is_none_or(|def| unsafe { bool_value(def) });
    if wanted && !refreshes {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "copy_schema = true needs refresh = true",
            "The copy makes the tables that the refresh adds to the subscription."
        );
    }
    // SAFETY: the caller's promise; the tree is ours to change from here on, of the same type.
    let pstmt = unsafe { ddl_server::options::writable(pstmt, read_only_tree) };
    // SAFETY: as above.
    let (subscription, publication_list) = unsafe {
        let stmt = (*pstmt).utilityStmt.cast::<pg_sys::AlterSubscriptionStmt>();
        ddl_server::options::remove(&raw mut (*stmt).options, "copy_schema");
        (
            ddl_server::text::utf8_ptr((*stmt).subname),
            pgrx::list::PgList::<pg_sys::String>::from_pg((*stmt).publication)
                .iter_ptr()
                .map(|name| ddl_server::text::utf8_ptr((*name).sval))
                .collect::<Vec<_>>(),
        )
    };
    let publications = match kind {
        K::ALTER_SUBSCRIPTION_ADD_PUBLICATION => Publications::Adding(publication_list),
        K::ALTER_SUBSCRIPTION_SET_PUBLICATION => Publications::Setting(publication_list),
        _ => Publications::Subscribed,
    };
    Some(Refresh {
        pstmt,
        subscription,
        publications,
        wanted,
    })
}

/// Makes here the tables the refresh will add that this database lacks, before PostgreSQL's
/// refresh runs (in its transaction).
pub(super) fn copy(refresh: &Refresh) {
    if !refresh.wanted {
        return;
    }
    copy_schema::require_superuser("refresh");
    super::options::require_extension("copy_schema");
    let name = &refresh.subscription;
    let subid = crate::subscriber::config::subscription_oid(name);
    let Some(catalog) = super::read_catalog(subid) else {
        errors::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format_args!("cannot read subscription \"{name}\""),
        );
    };
    let publications = refresh.publications.names(&catalog.publications);
    let statement = format!("ALTER SUBSCRIPTION {name}");
    let copied = ddl_server::guc::with_search_path("pg_catalog", || {
        copy_missing_tables(&catalog.conninfo, name, subid, &publications, &statement)
    });
    if let Some(copied) = copied {
        copy_schema::record(subid, name, refresh.publications.command(), None, &copied);
    }
}

/// The copy itself; `None` when every table is here already.
fn copy_missing_tables(
    conninfo: &str,
    name: &str,
    subid: pg_sys::Oid,
    publications: &[String],
    statement: &str,
) -> Option<Copied> {
    let steps = Steps::new(statement.to_string());
    let step = |what: &str| steps.step(what);
    let publisher = super::connect(conninfo, name);
    copy_schema::check_version(&publisher);
    let missing = missing_tables(&publisher, publications);
    if missing.is_empty() {
        notice!("copy_schema: every table of the publications is here already");
        return None;
    }
    step(&format!(
        "{} tables of the publications are missing here",
        missing.len()
    ));
    step("checking that the roles of the publisher's objects exist here");
    copy_schema::check_roles(&publisher);
    step("dumping the publisher's schema");
    let published = Dump::of(conninfo, &[], "the publisher");
    let tables: Vec<String> = missing
        .iter()
        .map(|(schema, table)| format!("--table={}.{}", pattern(schema), pattern(table)))
        .collect();
    let theirs = Dump::of(conninfo, &tables, "the publisher's tables");
    let theirs = theirs.toc();
    let of_tables: HashSet<_> = theirs.entries.iter().map(Entry::key).collect();
    // A sequence no column owns goes with no table: made when missing, like a type.
    let toc = published.toc();
    let owned: HashSet<_> = toc
        .entries
        .iter()
        .filter(|e| e.desc == "SEQUENCE OWNED BY")
        .map(|e| (e.namespace, e.tag))
        .collect();
    let local = copy_schema::local_dump(&step);
    let made = copy_schema::missing_here(&published, Some(&local), |entry| {
        let target = target_type(entry);
        if of_tables.contains(&entry.key()) {
            Take::Strict
        } else if target == "SEQUENCE" {
            let name = entry.tag.strip_prefix("SEQUENCE ").unwrap_or(entry.tag);
            if owned.contains(&(entry.namespace, name)) {
                Take::No
            } else {
                Take::WhenMissing
            }
        } else if RELATION.contains(&target) {
            Take::No
        } else {
            Take::WhenMissing
        }
    });
    let sequences: Vec<_> = super::sequences::publisher_values(&publisher)
        .into_iter()
        .filter(|(schema, name, _)| made.sequences.iter().any(|(s, n)| s == schema && n == name))
        .collect();
    let runs_as_owner = crate::subscriber::apply_code::subscription_runs_as_owner(subid);
    let received = copy_schema::received_columns(&publisher, publications);
    let moved = copy_schema::make(&made, runs_as_owner, &received, &sequences, &step)
        .unwrap_or_else(|code| copy_schema::refuse_code(name, None, &code));
    Some(Copied {
        start_lsn: None,
        made: made.made,
        kept: made.kept,
        script_bytes: made.script.len(),
        sequences: moved,
    })
}

/// The tables of `publications` on the publisher that this database lacks: schema, name.
fn missing_tables(
    publisher: &crate::subscription::connection::Publisher,
    publications: &[String],
) -> Vec<(String, String)> {
    let names: Vec<String> = publications
        .iter()
        .map(|p| crate::subscription::connection::literal(p))
        .collect();
    let rows = publisher
        .rows(
            &format!(
                "SELECT DISTINCT schemaname::pg_catalog.text, tablename::pg_catalog.text
                   FROM pg_catalog.pg_publication_tables
                  WHERE pubname OPERATOR(pg_catalog.=) ANY (ARRAY[{}]::pg_catalog.name[])
                    AND schemaname OPERATOR(pg_catalog.<>) 'ddl_sync'
                  ORDER BY 1, 2",
                if names.is_empty() {
                    "NULL".to_string()
                } else {
                    names.join(", ")
                }
            ),
            2,
        )
        .unwrap_or_else(|e| {
            errors::raise(
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format_args!("could not read the tables of the publications: {e}"),
            )
        });
    rows.into_iter()
        .filter_map(|row| {
            let mut row = row.into_iter();
            Some((row.next()??, row.next()??))
        })
        .filter(|(schema, table)| !exists_here(schema, table))
        .collect()
}

fn exists_here(schema: &str, table: &str) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_class c
                          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                         WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2)",
        &[schema.into(), table.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// pg_dump's entry types that belong to a relation: made only with one of the missing tables.
const RELATION: [&str; 19] = [
    "TABLE",
    "VIEW",
    "MATERIALIZED VIEW",
    "FOREIGN TABLE",
    "SEQUENCE",
    "SEQUENCE OWNED BY",
    "COLUMN",
    "INDEX",
    "INDEX ATTACH",
    "CONSTRAINT",
    "FK CONSTRAINT",
    "CHECK CONSTRAINT",
    "DEFAULT",
    "TRIGGER",
    "RULE",
    "POLICY",
    "ROW SECURITY",
    "TABLE ATTACH",
    "STATISTICS",
];

/// The type of the object an entry is about: its own, or for a comment, privileges or a
/// security label, the type its name starts with (`TABLE t`, `COLUMN t.c`, `SEQUENCE s`).
fn target_type<'a>(entry: &Entry<'a>) -> &'a str {
    match entry.desc {
        "COMMENT" | "ACL" | "SECURITY LABEL" => RELATION
            .iter()
            .filter(|r| {
                entry
                    .tag
                    .strip_prefix(**r)
                    .is_some_and(|rest| rest.starts_with(' '))
            })
            .max_by_key(|r| r.len())
            .copied()
            .unwrap_or(""),
        kind => kind,
    }
}

/// `name` as a pg_dump pattern that matches it alone: double-quoted, which makes `*`, `?` and
/// `.` literal, with `"` doubled.
fn pattern(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
