//! `CREATE SUBSCRIPTION ... WITH (ddl = '...', copy_schema = true)`: this database receives
//! the publisher's schema before PostgreSQL creates the subscription, taken from the snapshot
//! at which the subscription's slot starts. Every DDL statement is then applied exactly once:
//! the ones that committed before the slot are in the copy, the later ones arrive through it.
//! Rows follow as usual (the table sync workers of `copy_data`).
//!
//! The steps, in CREATE SUBSCRIPTION's own transaction and before PostgreSQL reads the
//! publications' tables (which must exist here by then), each announced by a NOTICE and shown
//! in this backend's `pg_stat_activity.query` while it runs:
//! 1. roles: every role that owns, or holds a privilege or policy on, an object of the
//!    publisher's database must exist here (roles are global objects that nothing replicates);
//!    otherwise one ERROR names them all, before anything is changed;
//! 2. the slot, made with plugin `ddl_pgoutput` and an exported snapshot (`CREATE_REPLICATION_SLOT
//!    ... (SNAPSHOT 'export')`), which stays valid while the replication connection is idle;
//! 3. the dump: this server's `pg_dump --format=custom --schema-only --snapshot=...` of the
//!    publisher's database (without publications, subscriptions and the `ddl_sync` schema, which
//!    is node-local), in this database's encoding. `pg_dump` refuses a server newer than itself,
//!    so a publisher of a newer major version than this server is an ERROR before step 1;
//! 4. pg_restore writes the SQL of the archive's entries to make (chosen by dump ID from its
//!    table of contents, never by reading SQL: see [`super::dump`]), which runs here through SPI,
//!    its settings undone afterwards; where rows will be
//!    applied as the subscription owner (PostgreSQL 15, or `run_as_owner = true`), code that
//!    the copy attached to tables and that would run with the owner's rights (triggers and
//!    rules enabled ALWAYS or REPLICA on tables of roles that are not superusers, expressions
//!    calling their functions: see `apply_code`) is an ERROR listing it, as for replayed DDL;
//!    then the sequences are set to the publisher's values.
//!
//! From step 2 on, an ERROR drops the slot again; the transaction takes the schema with it, so
//! a failure leaves neither a subscription nor a slot nor half a schema behind.
//!
//! A database that has objects of its own is compared first (step 3½): pg_dump of this
//! database, read into the same table of contents as the publisher's ([`pg_dump_archive`]); an
//! entry that is here with the same definition and owner is kept, one that differs is an ERROR
//! listing them all, and only the missing ones run. The comparison connects to this server over its Unix socket as the current
//! user, which pg_hba.conf must allow.

use super::dump::{self, Dump};
use crate::privilege::AsCatalogOwner;
use crate::subscriber::activity::Activity;
use crate::subscriber::apply_code::{self, Author, Received};
use crate::subscription::connection::Publisher;
use ddl_server::errors::OrInternal;
use ddl_server::xact::in_subtransaction;
use pg_dump_archive::Entry;
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::PgLogLevel;
use std::collections::HashMap;

/// What the copy needs from the statement.
pub(super) struct Plan<'a> {
    pub subscription: &'a str,
    pub conninfo: &'a str,
    pub slot: &'a str,
    pub failover: bool,
    /// Whether the subscription will apply rows as its owner (see `apply_code`).
    pub runs_as_owner: bool,
    /// The publications it subscribes to.
    pub publications: &'a [String],
}

/// What a copy did, for `ddl_sync.schema_copies` (which says when: from the start of the
/// statement that made it).
pub(super) struct Copied {
    /// The LSN the slot starts at (its consistent point, as the publisher gave it).
    pub start_lsn: Option<String>,
    /// Objects (pg_dump's blocks) made here, and found here already, identical.
    pub made: usize,
    pub kept: usize,
    /// The size of the script that ran here.
    pub script_bytes: usize,
    /// Sequences moved up to the publisher's values.
    pub sequences: usize,
}

/// The progress of a copy: each step a NOTICE and this backend's `pg_stat_activity.query`
/// (which `ddl_sync.schema_copy_progress` reads) while it runs.
pub(super) struct Steps {
    activity: Activity,
    /// `CREATE SUBSCRIPTION name`, `ALTER SUBSCRIPTION name`.
    statement: String,
}

impl Steps {
    pub(super) fn new(statement: String) -> Steps {
        Steps {
            activity: Activity::show(""),
            statement,
        }
    }

    pub(super) fn step(&self, what: &str) {
        notice!("copy_schema: {what}");
        self.activity.set(&format!(
            "/* ddl_sync: {} ... (copy_schema = true): {what} */",
            self.statement
        ));
    }
}

/// Only a superuser copies a schema: the script runs here with the publisher's owners and
/// privileges. `verb`: what the statement does to the subscription (`create`, `refresh`).
pub(super) fn require_superuser(verb: &str) {
    // SAFETY: reads the current user's catalog row.
    if !unsafe { pg_sys::superuser() } {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("must be superuser to {verb} a subscription with copy_schema = true"),
            "The copy runs pg_dump's script here, with its owners and privileges."
        );
    }
}

/// Copies the publisher's schema here and makes the slot the subscription starts from.
pub(super) fn copy(plan: &Plan<'_>) -> Copied {
    let steps = Steps::new(format!("CREATE SUBSCRIPTION {}", plan.subscription));
    let step = |what: &str| steps.step(what);
    let publisher = super::connect(plan.conninfo, plan.subscription);
    check_version(&publisher);
    step("checking that the roles of the publisher's objects exist here");
    check_roles(&publisher);
    step(&format!(
        "creating replication slot \"{}\" (it waits for the transactions running on the publisher)",
        plan.slot
    ));
    let (snapshot, start_lsn) = publisher.create_slot_exporting_snapshot(plan.slot, plan.failover);
    notice!("created replication slot \"{}\" on publisher", plan.slot);
    let copied = in_subtransaction(
        || copy_in_snapshot(&publisher, plan, &snapshot, &step),
        Result::is_ok,
    );
    let failure = match copied {
        Ok(Ok(mut copied)) => {
            copied.start_lsn = start_lsn;
            return copied;
        }
        Ok(Err(code)) => {
            publisher.drop_slot(plan.slot);
            refuse_code(plan.subscription, Some(plan.slot), &code);
        }
        Err(caught) => caught.message,
    };
    publisher.drop_slot(plan.slot);
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "could not copy the schema of subscription \"{}\": {failure}",
            plan.subscription
        ),
        format!(
            "Replication slot \"{}\" was dropped again; nothing was created.",
            plan.slot
        )
    );
}

/// Writes the row of `ddl_sync.schema_copies` for a copy that `command` (`CREATE SUBSCRIPTION`,
/// `REFRESH PUBLICATION`, ...) made for subscription `subid` (which exists by now), in the
/// statement's transaction; `slot` is the slot the copy made, if it made one.
pub(super) fn record(
    subid: pg_sys::Oid,
    subscription: &str,
    command: &str,
    slot: Option<&str>,
    copied: &Copied,
) {
    let _owner = AsCatalogOwner::enter();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    Spi::run_with_args(
        "INSERT INTO ddl_sync.schema_copies (subid, subscription, command, slot, start_lsn,
             started_at, finished_at, objects_made, objects_kept, script_bytes, sequences)
         VALUES ($1, $2, $3, $4, $5::pg_catalog.pg_lsn, pg_catalog.statement_timestamp(),
                 pg_catalog.clock_timestamp(), $6, $7, $8, $9)",
        &[
            subid.into(),
            subscription.into(),
            command.into(),
            slot.into(),
            copied.start_lsn.as_deref().into(),
            count(copied.made).into(),
            count(copied.kept).into(),
            i64::try_from(copied.script_bytes)
                .unwrap_or(i64::MAX)
                .into(),
            count(copied.sequences).into(),
        ],
    )
    .or_internal("cannot record the schema copy");
}

/// The copy made `code` (see [`apply_code::code_left_behind`]), which table sync and apply
/// would run with the subscription owner's rights: the ERROR that says so (`slot`: the one the
/// copy made, and dropped again).
pub(super) fn refuse_code(subscription: &str, slot: Option<&str>, code: &str) -> ! {
    let undone = match slot {
        Some(slot) => {
            format!("Replication slot \"{slot}\" was dropped again; nothing was created.")
        }
        None => "Nothing was created.".to_string(),
    };
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        format!(
            "copy_schema: the publisher's schema attaches code of roles that are not superusers \
             to tables, which would run as the owner of subscription \"{subscription}\" whenever a row is \
             copied or applied: {code}",
        ),
        "ddl_sync",
    )
    .set_detail(format!(
        "Rows are applied as the subscription owner on PostgreSQL 15 and with run_as_owner = \
         true, so this would give those roles the owner's rights here. {undone}"
    ))
    .set_hint(
        "On PostgreSQL 16 and later, leave run_as_owner = false (rows are then applied as each \
         table's owner). Otherwise review these objects and create them here yourself: \
         copy_schema keeps the objects that are here already, identical.",
    )
    .report(PgLogLevel::ERROR);
    unreachable!("an ERROR does not return")
}

/// Steps 3 and 4: dump in the slot's snapshot, run the dump, set the sequences. `Err`: the
/// code the script attached that rows would run with the subscription owner's rights (the
/// caller then rolls the copy back).
fn copy_in_snapshot(
    publisher: &Publisher,
    plan: &Plan<'_>,
    snapshot: &str,
    step: &dyn Fn(&str),
) -> Result<Copied, String> {
    step("dumping the publisher's schema as of the slot's snapshot");
    let published = Dump::of(
        plan.conninfo,
        &[format!("--snapshot={snapshot}")],
        "the publisher",
    );
    // The snapshot is no longer needed: the connection may run queries again.
    let sequences = super::sequences::publisher_values(publisher);
    let received = received_columns(publisher, plan.publications);
    let local = has_objects_of_its_own().then(|| local_dump(step));
    let missing = missing_here(&published, local.as_ref(), |_| Take::Strict);
    let moved = make(&missing, plan.runs_as_owner, &received, &sequences, step)?;
    Ok(Copied {
        start_lsn: None,
        made: missing.made,
        kept: missing.kept,
        script_bytes: missing.script.len(),
        sequences: moved,
    })
}

/// Runs `missing`'s script here; where rows are applied as the subscription owner
/// (`runs_as_owner`), `Err` with the code it attached that would run with the owner's rights
/// (the caller undoes the script; the defaults of `received` columns never run). Then moves
/// `sequences` (schema, name, the publisher's value) up to the publisher's values; how many it
/// moved.
pub(super) fn make(
    missing: &Missing,
    runs_as_owner: bool,
    received: &Received,
    sequences: &[(String, String, i64)],
    step: &dyn Fn(&str),
) -> Result<usize, String> {
    step(&format!(
        "creating the schema here ({} objects, {} kB of SQL)",
        missing.made,
        missing.script.len().div_ceil(1024)
    ));
    // SAFETY: assigns this (sub)transaction's xid (the script writes catalogs anyway), so that
    // the catalog rows the script writes can be told from older ones.
    let since = unsafe { pg_sys::GetCurrentTransactionId() };
    run_script(&missing.script);
    if runs_as_owner {
        step("checking the code the schema attaches to tables");
        if let Some(code) = apply_code::code_left_behind(since, Author::TableOwners(received)) {
            return Err(code);
        }
    }
    step(&format!(
        "setting {} sequences to the publisher's values",
        sequences.len()
    ));
    Ok(sequences
        .iter()
        .filter_map(|(schema, name, value)| super::sequences::move_up(schema, name, *value))
        .count())
}

/// The columns of `publications`' tables that the publisher sends with every row (all of a
/// table's, or its column list: `pg_publication_tables.attnames`), as [`Received`]. None when
/// that cannot be read: every default is then judged.
pub(super) fn received_columns(publisher: &Publisher, publications: &[String]) -> Received {
    let names: Vec<String> = publications
        .iter()
        .map(|p| super::connection::literal(p))
        .collect();
    if names.is_empty() {
        return Received::default();
    }
    let rows = publisher.rows(
        &format!(
            "SELECT DISTINCT pg_catalog.format('%I.%I', t.schemaname, t.tablename),
                    c.attname::pg_catalog.text
               FROM pg_catalog.pg_publication_tables t,
                    pg_catalog.unnest(t.attnames) AS c (attname)
              WHERE t.pubname OPERATOR(pg_catalog.=) ANY (ARRAY[{}]::pg_catalog.name[])",
            names.join(", ")
        ),
        2,
    );
    let mut received = Received::default();
    for row in rows.unwrap_or_default() {
        if let [Some(table), Some(column)] = row.as_slice() {
            received.tables.push(table.clone());
            received.columns.push(column.clone());
        }
    }
    received
}

/// pg_dump dumps servers of its own major version and older ones only: a newer publisher is an
/// ERROR before anything is made.
pub(super) fn check_version(publisher: &Publisher) {
    let theirs: Option<u32> = publisher
        .rows("SELECT pg_catalog.current_setting('server_version_num')", 1)
        .ok()
        .and_then(|rows| rows.into_iter().next()?.into_iter().next()??.parse().ok());
    let ours = pg_sys::PG_VERSION_NUM;
    let Some(theirs) = theirs.filter(|theirs| theirs / 10000 > ours / 10000) else {
        return;
    };
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        format!(
            "copy_schema: the publisher runs PostgreSQL {}, newer than this server's {}",
            theirs / 10000,
            ours / 10000
        ),
        "ddl_sync",
    )
    .set_detail("The copy runs this server's pg_dump, which dumps servers of its own major version or older ones only. Nothing was changed.")
    .set_hint(format!(
        "Subscribe from a server of PostgreSQL {} or later, or create the schema here by hand and subscribe without copy_schema.",
        theirs / 10000
    ))
    .report(PgLogLevel::ERROR);
}

/// Step 1: the roles the publisher's objects need, missing here: one ERROR that names them.
pub(super) fn check_roles(publisher: &Publisher) {
    // pg_shdepend records every owner, grantee and policy role of the database's objects,
    // except the bootstrap superuser, whose objects pg_dump still assigns by name.
    let needed = publisher
        .rows(
            "SELECT r.rolname::pg_catalog.text FROM pg_catalog.pg_roles r
              WHERE r.oid OPERATOR(pg_catalog.=) 10
                 OR r.oid IN (SELECT d.refobjid FROM pg_catalog.pg_shdepend d
                               WHERE d.dbid OPERATOR(pg_catalog.=)
                                     (SELECT oid FROM pg_catalog.pg_database
                                       WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
                                 AND d.deptype IN ('o', 'a', 'r'))
              ORDER BY 1",
            1,
        )
        .unwrap_or_else(|e| {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!("could not read the roles of the publisher's objects: {e}")
            );
        });
    let needed: Vec<String> = needed
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    // One lookup for all of them, in the publisher's order. NULL (no row) when none is missing.
    let missing = ddl_server::spi::read_one::<Vec<String>>(
        "SELECT pg_catalog.array_agg(r.name ORDER BY r.n)
           FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY AS r (name, n)
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles
                             WHERE rolname OPERATOR(pg_catalog.=) r.name)",
        &[needed.into()],
    )
    .or_internal("cannot look up the publisher's roles here")
    .unwrap_or_default();
    if missing.is_empty() {
        check_owners_rights(publisher);
        return;
    }
    let names: Vec<String> = missing.iter().map(|r| format!("\"{r}\"")).collect();
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
        format!(
            "copy_schema: the publisher's objects need roles that do not exist here: {}",
            names.join(", ")
        ),
        "ddl_sync",
    )
    .set_detail("They own objects of the publisher's database, or hold privileges or policies on them; nothing was changed.")
    .set_hint("Create these roles here (roles are global objects, which logical replication never copies), then run the statement again.")
    .report(PgLogLevel::ERROR);
}

/// The copied objects keep their owners' names, and an object runs code with its owner's
/// rights (a SECURITY DEFINER function, a view's checks): an owner that may do more here than
/// the publisher's role of that name could is an ERROR that lists them all, before anything is
/// made. Both sides are described alike (`ddl_wire::describe_role_rights`).
fn check_owners_rights(publisher: &Publisher) {
    let predefined: Vec<String> = ddl_server::roles::PREDEFINED
        .iter()
        .filter_map(|name| name.to_str().ok())
        .map(crate::subscription::connection::literal)
        .collect();
    let owners = publisher
        .rows(
            &format!(
                "SELECT r.rolname::pg_catalog.text, r.rolsuper::pg_catalog.text,
                        r.rolcreatedb::pg_catalog.text, r.rolcreaterole::pg_catalog.text,
                        r.rolreplication::pg_catalog.text, r.rolbypassrls::pg_catalog.text,
                        pg_catalog.array_to_string(ARRAY(
                            SELECT p.rolname FROM pg_catalog.pg_roles p
                             WHERE p.rolname OPERATOR(pg_catalog.=) ANY (ARRAY[{}]::pg_catalog.name[])
                               AND pg_catalog.pg_has_role(r.oid, p.oid, 'USAGE')), ' ')
                   FROM pg_catalog.pg_roles r
                  WHERE r.oid IN (SELECT d.refobjid FROM pg_catalog.pg_shdepend d
                                   WHERE d.dbid OPERATOR(pg_catalog.=)
                                         (SELECT oid FROM pg_catalog.pg_database
                                           WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
                                     AND d.deptype OPERATOR(pg_catalog.=) 'o')
                  ORDER BY 1",
                predefined.join(", ")
            ),
            7,
        )
        .unwrap_or_else(|e| {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!("could not read the rights of the publisher's object owners: {e}")
            );
        });
    let mut beyond = Vec::new();
    for row in owners {
        let value = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let attributes: [bool; 5] = std::array::from_fn(|i| value(i + 1) == "true");
        let there_predefined = value(6);
        let there = ddl_wire::describe_role_rights(
            attributes,
            &there_predefined.split_whitespace().collect::<Vec<_>>(),
        );
        let name = value(0);
        let Ok(c_name) = std::ffi::CString::new(name.as_str()) else {
            continue;
        };
        // SAFETY: catalog cache lookups by a NUL-terminated name (missing_ok), in the
        // statement's transaction.
        let here = unsafe {
            let roleid = pg_sys::get_role_oid(c_name.as_ptr(), true);
            ddl_server::roles::rights(roleid)
        };
        let more = ddl_wire::rights_beyond(&here, &there);
        if !more.is_empty() {
            beyond.push(format!("\"{name}\" ({})", more.join(", ")));
        }
    }
    if beyond.is_empty() {
        return;
    }
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        format!(
            "copy_schema: roles that own the publisher's objects may do more here than the \
             publisher's roles of those names: {}",
            beyond.join(", ")
        ),
        "ddl_sync",
    )
    .set_detail("The copied objects would keep these owners, and run their code with the rights the owners have here; nothing was changed.")
    .set_hint("A role's name does not make it the same role on every node: give the roles of these names the same rights on both nodes, then run the statement again.")
    .report(PgLogLevel::ERROR);
}

/// How an entry of the publisher's archive is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Take {
    No,
    /// Made when it is missing here, kept when it is here with the same definition; here with
    /// another, it is one of the ERROR's list.
    Strict,
    /// Made when it is missing here, left as it is when it is here already.
    WhenMissing,
}

/// What of the publisher's dump runs here.
pub(super) struct Missing {
    pub script: String,
    /// Objects the script makes, and objects left out because they are here, identical.
    pub made: usize,
    pub kept: usize,
    /// The sequences the script makes: schema, name.
    pub sequences: Vec<(String, String)>,
}

/// What of the publisher's `published` archive to run here: the entries `take` wants that
/// this database lacks, after comparing with `local`, its own archive made by the same pg_dump
/// (`None` for a database without objects of its own: nothing to compare). An entry that is
/// here with the same definition is kept; one that is here with another, when `take` says
/// `Strict`, is an ERROR that lists them all, before anything is changed.
pub(super) fn missing_here(
    published: &Dump,
    local: Option<&Dump>,
    take: impl Fn(&Entry<'_>) -> Take,
) -> Missing {
    let local = local.map(Dump::toc);
    let here: HashMap<_, _> = local
        .iter()
        .flat_map(|l| l.entries.iter())
        .map(|e| (e.key(), e))
        .collect();
    let mut differing = Vec::new();
    let mut sequences = Vec::new();
    let mut ids = Vec::new();
    let mut kept = Vec::new();
    for entry in published
        .toc()
        .entries
        .iter()
        .filter(|e| !e.is_setting() && !e.is_database())
    {
        let how = take(entry);
        if how == Take::No {
            continue;
        }
        match here.get(&entry.key()) {
            None => {
                ids.push(entry.id);
                if entry.desc == "SEQUENCE" {
                    sequences.push((
                        entry.namespace.unwrap_or_default().to_string(),
                        entry.tag.to_string(),
                    ));
                }
            }
            Some(mine) if mine.same_definition(entry) => kept.push(entry.describe()),
            Some(_) => {
                if how == Take::Strict {
                    differing.push(entry.describe());
                }
            }
        }
    }
    if !differing.is_empty() {
        ErrorReport::new(
            PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
            format!(
                "copy_schema: {} of the publisher's objects exist here with another definition: {}",
                differing.len(),
                differing.join(", ")
            ),
            "ddl_sync",
        )
        .set_detail("Nothing was changed. Objects that are identical on both sides are kept as they are.")
        .set_hint("Make them the same as on the publisher, or drop them here, then run the statement again.")
        .report(PgLogLevel::ERROR);
    }
    if !kept.is_empty() {
        notice!(
            "copy_schema: {} of the publisher's objects are here already, identical: kept ({})",
            kept.len(),
            kept.join(", ")
        );
    }
    Missing {
        script: published.script(&ids),
        made: ids.len(),
        kept: kept.len(),
        sequences,
    }
}

/// This database's own archive, for [`missing_here`].
pub(super) fn local_dump(step: &dyn Fn(&str)) -> Dump {
    step("comparing with the objects this database has already");
    Dump::of(&dump::own_conninfo(), &[], "this database")
}

/// Whether this database has objects that are not PostgreSQL's or ddl_sync's (a new
/// database's `public` schema and plpgsql do not count).
fn has_objects_of_its_own() -> bool {
    Spi::get_one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace n
                         WHERE n.nspname OPERATOR(pg_catalog.<>) ALL
                               ('{pg_catalog, information_schema, ddl_sync, public, pg_toast}'::pg_catalog.name[])
                           AND n.nspname::pg_catalog.text NOT LIKE 'pg\\_temp\\_%'
                           AND n.nspname::pg_catalog.text NOT LIKE 'pg\\_toast\\_temp\\_%')
             OR EXISTS (SELECT FROM pg_catalog.pg_class c
                         WHERE c.relnamespace OPERATOR(pg_catalog.=) 'public'::pg_catalog.regnamespace)
             OR EXISTS (SELECT FROM pg_catalog.pg_proc p
                         WHERE p.pronamespace OPERATOR(pg_catalog.=) 'public'::pg_catalog.regnamespace)
             OR EXISTS (SELECT FROM pg_catalog.pg_type t
                         WHERE t.typnamespace OPERATOR(pg_catalog.=) 'public'::pg_catalog.regnamespace)
             OR EXISTS (SELECT FROM pg_catalog.pg_extension e
                         WHERE e.extname OPERATOR(pg_catalog.<>) ALL ('{plpgsql, ddl_sync}'::pg_catalog.name[]))",
    )
    .ok()
    .flatten()
    .unwrap_or(true)
}

/// Step 4: the script, here, in a GUC nest level popped as on abort so that its `SET`s and
/// `set_config(..., false)` end with it.
fn run_script(script: &str) {
    if script.is_empty() {
        return;
    }
    ddl_server::guc::with_settings(&[], || {
        Spi::run(script).or_internal("the schema's script failed here")
    });
}
