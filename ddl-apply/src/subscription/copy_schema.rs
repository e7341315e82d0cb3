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
//! 3. the dump: this server's `pg_dump --schema-only --snapshot=...` of the publisher's database
//!    (without publications, subscriptions and the `ddl_sync` schema, which is node-local), in
//!    this database's encoding. `pg_dump` refuses a server newer than itself, so a publisher of
//!    a newer major version than this server is an ERROR before step 1;
//! 4. the script runs here through SPI, its settings undone afterwards; where rows will be
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
//! database, cut into the same blocks as the publisher's ([`pg_dump_script`]); an object that is
//! here with the same text is kept, one that differs is an ERROR listing them all, and only the
//! missing ones run. The comparison connects to this server over its Unix socket as the current
//! user, which pg_hba.conf must allow.

use super::publisher::Publisher;
use crate::privilege::AsCatalogOwner;
use crate::replay::activity::Activity;
use crate::replay::apply_code::{self, Author};
use ddl_server::xact::in_subtransaction;
use pg_dump_script::{Block, Script};
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::PgLogLevel;
use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::process::Command;

/// What the copy needs from the statement.
pub(super) struct Plan<'a> {
    pub subscription: &'a str,
    pub conninfo: &'a str,
    pub slot: &'a str,
    pub failover: bool,
    /// Whether the subscription will apply rows as its owner (see `apply_code`).
    pub runs_as_owner: bool,
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
    .unwrap_or_else(|e| error!("ddl_sync: cannot record the schema copy: {e}"));
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
    let published = dump(
        plan.conninfo,
        &[format!("--snapshot={snapshot}")],
        "the publisher",
    );
    // The snapshot is no longer needed: the connection may run queries again.
    let sequences = super::sequences::publisher_values(publisher);
    let published = Script::parse(&published);
    let local = has_objects_of_its_own().then(|| local_dump(step));
    let missing = missing_here(&published, local.as_ref(), |_| Take::Strict);
    let moved = make(&missing, plan.runs_as_owner, &sequences, step)?;
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
/// (the caller undoes the script). Then moves `sequences` (schema, name, the publisher's
/// value) up to the publisher's values; how many it moved.
pub(super) fn make(
    missing: &Missing,
    runs_as_owner: bool,
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
        if let Some(code) = apply_code::code_left_behind(since, Author::TableOwners) {
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
    .unwrap_or_else(|e| error!("cannot look up the publisher's roles here: {e}"))
    .unwrap_or_default();
    if missing.is_empty() {
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

/// This server's `pg_dump --schema-only` of the database `conninfo` names (`whose`, for
/// messages), with `args` (`--snapshot=...`, `--table=...`), as SQL in this database's encoding.
pub(super) fn dump(conninfo: &str, args: &[String], whose: &str) -> String {
    let file = TempFile::new("dump.sql");
    let errors = TempFile::new("dump.err");
    let (conninfo, password) = split_password(conninfo);
    let mut command = Command::new(pg_dump_path());
    command
        .args([
            "--schema-only",
            "--no-publications",
            "--no-subscriptions",
            "--no-password",
            // ddl_sync is here already (the subscription's options need it): its schema holds
            // the node's own configuration and apply log, never the publisher's.
            "--exclude-schema=ddl_sync",
        ])
        .args(args)
        .arg(format!("--encoding={}", database_encoding()))
        .arg(format!("--file={}", file.0.display()))
        .arg(format!("--dbname={conninfo}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(errors.writer());
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    let status = wait(command);
    if !status.success() {
        let said = std::fs::read_to_string(&errors.0).unwrap_or_default();
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
            format!("pg_dump of {whose} failed ({status}): {}", said.trim())
        );
    }
    let bytes = std::fs::read(&file.0)
        .unwrap_or_else(|e| error!("cannot read pg_dump's output {}: {e}", file.0.display()));
    String::from_utf8(bytes).unwrap_or_else(|_| error!("pg_dump's output is not valid UTF-8"))
}

/// How an object (a block) of the publisher's dump is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Take {
    No,
    /// Made when it is missing here, kept when it is here with the same text; here with
    /// another text, it is one of the ERROR's list.
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

/// What of the publisher's `published` dump to run here: the blocks `take` wants that this
/// database lacks, after comparing with `local`, its own dump made by the same pg_dump (`None`
/// for a database without objects of its own: nothing to compare). A block that is here with
/// the same text is kept; one that is here with another, when `take` says `Strict`, is an ERROR
/// that lists them all, before anything is changed.
pub(super) fn missing_here(
    published: &Script,
    local: Option<&Script>,
    take: impl Fn(&Block) -> Take,
) -> Missing {
    let here: HashMap<_, _> = local
        .iter()
        .flat_map(|l| l.blocks.iter())
        .map(|b| (b.key(), b))
        .collect();
    let mut differing = Vec::new();
    let mut sequences = Vec::new();
    let (mut made, mut kept) = (0, 0);
    let script = published.select(|block| {
        let how = take(block);
        if how == Take::No {
            return false;
        }
        match here.get(&block.key()) {
            None => {
                made += 1;
                if block.kind == "SEQUENCE" {
                    sequences.push((block.schema.clone().unwrap_or_default(), block.name.clone()));
                }
                true
            }
            Some(mine) if mine.text == block.text => {
                kept += 1;
                false
            }
            Some(_) => {
                if how == Take::Strict {
                    differing.push(block.describe());
                }
                false
            }
        }
    });
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
    if kept > 0 {
        notice!("copy_schema: {kept} of the publisher's objects are here already, identical: kept");
    }
    Missing {
        script,
        made,
        kept,
        sequences,
    }
}

/// This database's own dump, for [`missing_here`].
pub(super) fn local_dump(step: &dyn Fn(&str)) -> Script {
    step("comparing with the objects this database has already");
    Script::parse(&dump(&own_conninfo(), &[], "this database"))
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

/// A connection string to this database, as the current user, over this server's first Unix
/// socket directory (or localhost).
fn own_conninfo() -> String {
    let (sockets, port, database, user) = Spi::connect(|client| {
        let row = client
            .select(
                "SELECT pg_catalog.current_setting('unix_socket_directories'),
                        pg_catalog.current_setting('port'), pg_catalog.current_database()::pg_catalog.text,
                        CURRENT_USER::pg_catalog.text",
                None,
                &[],
            )?
            .first();
        Ok::<_, pgrx::spi::Error>((
            row.get::<String>(1)?.unwrap_or_default(),
            row.get::<String>(2)?.unwrap_or_default(),
            row.get::<String>(3)?.unwrap_or_default(),
            row.get::<String>(4)?.unwrap_or_default(),
        ))
    })
    .unwrap_or_else(|e| error!("cannot read this server's connection settings: {e}"));
    let host = sockets
        .split(',')
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or("localhost")
        .to_string();
    [
        ("host", host),
        ("port", port),
        ("dbname", database),
        ("user", user),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", quote_value(v)))
    .collect::<Vec<_>>()
    .join(" ")
}

/// Runs `command`, answering cancel requests meanwhile (the child is killed then).
fn wait(mut command: Command) -> std::process::ExitStatus {
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| error!("cannot run {}: {e}", pg_dump_path().display()));
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) => {}
            Err(e) => error!("cannot wait for pg_dump: {e}"),
        }
        // SAFETY: reads the backend's interrupt flags (a cancel or shutdown raises its ERROR
        // here, after the child is gone).
        if unsafe { pg_sys::InterruptPending != 0 } {
            let _ = child.kill();
            let _ = child.wait();
            check_for_interrupts!();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Step 4: the script, here, in a GUC nest level popped as on abort so that its `SET`s and
/// `set_config(..., false)` end with it.
fn run_script(script: &str) {
    ddl_server::guc::with_settings(&[], || {
        Spi::run(script).unwrap_or_else(|e| error!("the schema's script failed here: {e}"))
    });
}

/// `pg_dump` next to this server's `postgres`.
fn pg_dump_path() -> PathBuf {
    // SAFETY: my_exec_path is the NUL-terminated path of the running postgres binary, set at
    // startup and never changed.
    let postgres = unsafe { std::ffi::CStr::from_ptr((&raw const pg_sys::my_exec_path).cast()) };
    let postgres = PathBuf::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(postgres.to_bytes()),
    );
    postgres.with_file_name("pg_dump")
}

fn database_encoding() -> String {
    // SAFETY: the database encoding's static name.
    unsafe { std::ffi::CStr::from_ptr(pg_sys::GetDatabaseEncodingName()) }
        .to_string_lossy()
        .into_owned()
}

/// A keyword/value connection string without its `password`, and the password: it goes to
/// pg_dump through the environment, which other users cannot read, not the command line. A
/// URI is passed on as it is.
fn split_password(conninfo: &str) -> (String, Option<String>) {
    if conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://") {
        return (conninfo.to_string(), None);
    }
    let mut kept = Vec::new();
    let mut password = None;
    for (key, value) in conninfo_pairs(conninfo) {
        if key == "password" {
            password = Some(value);
        } else {
            kept.push(format!("{key}={}", quote_value(&value)));
        }
    }
    (kept.join(" "), password)
}

/// The `keyword = value` pairs of a libpq connection string (values bare, or single-quoted
/// with `\'` and `\\`).
fn conninfo_pairs(conninfo: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut chars = conninfo.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        if key.is_empty() {
            return pairs;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == '=') {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

fn quote_value(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A new file in the data directory's `base/pgsql_tmp` (the server's own temporary files,
/// 0700, which no other OS user can plant a link in; the `pgsql_tmp` name prefix makes a
/// restart remove a file a crash left), removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    /// Creates the file, empty; an existing one of the name is an ERROR, not overwritten.
    fn new(what: &str) -> TempFile {
        // A backend's working directory is the data directory.
        let dir = PathBuf::from("base/pgsql_tmp");
        if let Err(e) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            error!("cannot create directory {}: {e}", dir.display());
        }
        // SAFETY: the backend's pid, a global set at startup.
        let pid = unsafe { pg_sys::MyProcPid };
        let path = std::env::current_dir()
            .unwrap_or_default()
            .join(dir)
            .join(format!("pgsql_tmp{pid}.ddl_sync_copy_schema.{what}"));
        if let Err(e) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            error!("cannot create {}: {e}", path.display());
        }
        TempFile(path)
    }

    /// The file, open for writing (for a child's stderr).
    fn writer(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.0)
            .unwrap_or_else(|e| error!("cannot open {}: {e}", self.0.display()))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
