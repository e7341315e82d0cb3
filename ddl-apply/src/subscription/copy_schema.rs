//! `CREATE SUBSCRIPTION ... WITH (ddl = '...', copy_schema = true)`: this database receives
//! the publisher's schema before PostgreSQL creates the subscription, taken from the snapshot
//! at which the subscription's slot starts. Every DDL statement is then applied exactly once:
//! the ones that committed before the slot are in the copy, the later ones arrive through it.
//! Rows follow as usual (the table sync workers of `copy_data`).
//!
//! The steps, in CREATE SUBSCRIPTION's own transaction and before PostgreSQL reads the
//! publications' tables (which must exist here by then), each announced by a NOTICE:
//! 1. roles: every role that owns, or holds a privilege or policy on, an object of the
//!    publisher's database must exist here (roles are global objects that nothing replicates);
//!    otherwise one ERROR names them all, before anything is changed;
//! 2. the slot, made with plugin `ddl_pgoutput` and an exported snapshot (`CREATE_REPLICATION_SLOT
//!    ... (SNAPSHOT 'export')`), which stays valid while the replication connection is idle;
//! 3. the dump: this server's `pg_dump --schema-only --snapshot=...` of the publisher's database
//!    (without publications, subscriptions and the `ddl_sync` schema, which is node-local), in
//!    this database's encoding. `pg_dump` refuses
//!    a server newer than itself, so the subscriber must not be older than the publisher;
//! 4. the script runs here through SPI, its settings undone afterwards; then the sequences are
//!    set to the publisher's values.
//!
//! From step 2 on, an ERROR drops the slot again; the transaction takes the schema with it, so
//! a failure leaves neither a subscription nor a slot nor half a schema behind.
//!
//! Objects the subscriber already has are PostgreSQL's errors for now ("relation ... already
//! exists"): the copy is meant for an empty database.

use super::publisher::Publisher;
use ddl_server::xact::in_subtransaction;
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::PgLogLevel;
use std::path::PathBuf;
use std::process::Command;

/// What the copy needs from the statement.
pub(super) struct Plan<'a> {
    pub subscription: &'a str,
    pub conninfo: &'a str,
    pub slot: &'a str,
    pub failover: bool,
}

/// Copies the publisher's schema here and makes the slot the subscription starts from.
pub(super) fn copy(plan: &Plan<'_>) {
    let publisher = super::connect(plan.conninfo, plan.subscription);
    notice!("copy_schema: checking that the roles of the publisher's objects exist here");
    check_roles(&publisher);
    let snapshot = publisher.create_slot_exporting_snapshot(plan.slot, plan.failover);
    notice!("created replication slot \"{}\" on publisher", plan.slot);
    let copied = in_subtransaction(|| copy_in_snapshot(plan, &publisher, &snapshot), |_| true);
    if let Err(caught) = copied {
        publisher.drop_slot(plan.slot);
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "could not copy the schema of subscription \"{}\": {}",
                plan.subscription, caught.message
            ),
            format!(
                "Replication slot \"{}\" was dropped again; nothing was created.",
                plan.slot
            )
        );
    }
}

/// Steps 3 and 4: dump in the slot's snapshot, run the dump, set the sequences.
fn copy_in_snapshot(plan: &Plan<'_>, publisher: &Publisher, snapshot: &str) {
    notice!("copy_schema: dumping the publisher's schema as of the slot's snapshot");
    let script = dump(plan.conninfo, snapshot);
    // The snapshot is no longer needed: the connection may run queries again.
    let sequences = super::sequences::publisher_values(publisher);
    notice!(
        "copy_schema: creating the schema here ({} kB of SQL)",
        script.len().div_ceil(1024)
    );
    run_script(&script);
    notice!(
        "copy_schema: setting {} sequences to the publisher's values",
        sequences.len()
    );
    for (schema, name, value) in &sequences {
        super::sequences::move_up(schema, name, *value);
    }
}

/// Step 1: the roles the publisher's objects need, missing here: one ERROR that names them.
fn check_roles(publisher: &Publisher) {
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
    let missing: Vec<&String> = needed
        .iter()
        .filter(|role| {
            !ddl_server::spi::read_one::<bool>(
                "SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) $1)",
                &[role.as_str().into()],
            )
            .ok()
            .flatten()
            .unwrap_or(false)
        })
        .collect();
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

/// This server's `pg_dump` of the publisher's schema in `snapshot`, as SQL in this database's
/// encoding, without psql's `\restrict` lines.
fn dump(conninfo: &str, snapshot: &str) -> String {
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
        .arg(format!("--snapshot={snapshot}"))
        .arg(format!("--encoding={}", database_encoding()))
        .arg(format!("--file={}", file.0.display()))
        .arg(format!("--dbname={conninfo}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(errors.create());
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    let status = wait(command);
    if !status.success() {
        let said = std::fs::read_to_string(&errors.0).unwrap_or_default();
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
            format!(
                "pg_dump of the publisher failed ({status}): {}",
                said.trim()
            )
        );
    }
    let bytes = std::fs::read(&file.0)
        .unwrap_or_else(|e| error!("cannot read pg_dump's output {}: {e}", file.0.display()));
    let text =
        String::from_utf8(bytes).unwrap_or_else(|_| error!("pg_dump's output is not valid UTF-8"));
    without_restrict(&text)
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

/// pg_dump 15.14 and later frame a plain dump with `\restrict KEY` ... `\unrestrict KEY`, psql
/// meta-commands that guard psql, not SQL: they go.
fn without_restrict(text: &str) -> String {
    text.lines()
        .filter(|line| !(line.starts_with("\\restrict ") || line.starts_with("\\unrestrict ")))
        .collect::<Vec<_>>()
        .join("\n")
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

/// A file in the server's temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(what: &str) -> TempFile {
        // SAFETY: the backend's pid, a global set at startup.
        let pid = unsafe { pg_sys::MyProcPid };
        TempFile(std::env::temp_dir().join(format!("ddl_sync_copy_schema.{pid}.{what}")))
    }

    fn create(&self) -> std::fs::File {
        std::fs::File::create(&self.0)
            .unwrap_or_else(|e| error!("cannot create {}: {e}", self.0.display()))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
