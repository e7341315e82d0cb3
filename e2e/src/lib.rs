//! Shared pieces of the end-to-end tests: they run against real PostgreSQL 15 clusters made by
//! `ddl-testkit`, with `ddl_pgoutput` and `ddl_sync` installed in the server's directories
//! (`cargo xtask install --debug`, which `cargo xtask test` runs first).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod attacks;
pub mod compare;
pub mod contention;
pub mod debian_root;
pub mod faults;
pub mod hostile;
pub mod pgtree;
pub mod quickstart;
pub mod readme;
pub mod realworld;
pub mod regress;
mod replication;
pub mod subscription_suite;

pub use replication::{
    assert_no_subscription_made, create_subscription, ddl_subscriber, deliver_events, query,
    subscribe, subscribe_in, subscribed_pair, wait_caught_up, wait_synchronised,
};

use ddl_testkit::{Cluster, ClusterBuilder};

/// A `pg_stat_activity` condition for the apply workers (not the launcher, not table sync): 15
/// and 16 call them `logical replication worker`, 17 and later `logical replication apply
/// worker`, and `logical replication parallel worker` for parallel apply.
pub const APPLY_WORKER: &str = "backend_type IN ('logical replication worker', \
    'logical replication apply worker', 'logical replication parallel worker')";

/// A publisher-ready cluster: logical WAL, prepared transactions, and a small
/// `logical_decoding_work_mem` so that modest transactions already stream.
pub fn publisher(name: &str) -> Cluster {
    ClusterBuilder::new()
        .name(name)
        .conf("logical_decoding_work_mem", "64kB")
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"))
}

/// The `data` of every change of `slot` as hex, one message per line, without consuming them.
pub fn peek_hex(pg: &Cluster, slot: &str, options: &[(&str, &str)]) -> Result<String, String> {
    let opts: String = options
        .iter()
        .map(|(k, v)| format!(", '{k}', '{v}'"))
        .collect();
    pg.psql(
        "postgres",
        &format!(
            "SELECT encode(data, 'hex') FROM pg_logical_slot_peek_binary_changes('{slot}', NULL, NULL{opts})"
        ),
    )
    .map_err(|e| e.to_string())
}

/// A publisher with `ddl_pgoutput` preloaded (the capture hook) and the `ddl_sync` extension.
pub fn ddl_publisher(name: &str) -> Cluster {
    let pg = ClusterBuilder::new()
        .name(name)
        .conf("logical_decoding_work_mem", "64kB")
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"));
    pg.psql("postgres", "CREATE EXTENSION ddl_sync")
        .expect("CREATE EXTENSION ddl_sync");
    pg
}

/// Runs `sql` with psql in database `db` with verbose errors (`ERROR:  SQLSTATE: message`);
/// returns whether it succeeded and what psql wrote to stderr (notices, warnings, errors).
pub fn psql_verbose(pg: &Cluster, db: &str, sql: &str) -> (bool, String) {
    let out = psql_script(pg, db, &[], &format!("\\set VERBOSITY verbose\n{sql}\n"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Feeds `script` to psql (`psql_command` plus `args`) in database `db`; returns what psql
/// printed and how it exited.
pub fn psql_script(pg: &Cluster, db: &str, args: &[&str], script: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = pg
        .psql_command(db)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start psql");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(script.as_bytes())
        .expect("write to psql");
    child.wait_with_output().expect("wait for psql")
}

/// A decoded change, reduced to what the tests look at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// BEGIN (or Stream Start).
    Begin,
    /// COMMIT (or Stream Commit).
    Commit,
    /// A row inserted into `table` (schema-qualified), with its text values.
    Insert {
        /// `schema.table`.
        table: String,
        /// Column values in text form, `None` for NULL.
        values: Vec<Option<String>>,
    },
    /// A DDL event.
    Ddl(Ddl),
    /// A logical decoding message with this prefix.
    Message(String),
}

/// The fields of a DDL event the tests check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ddl {
    /// The command tag.
    pub tag: String,
    /// The kind token.
    pub kind: String,
    /// The statement.
    pub sql: String,
    /// The object identity.
    pub identity: String,
    /// Sent by the client.
    pub top_level: bool,
    /// The search_path.
    pub search_path: String,
    /// The role.
    pub role: String,
    /// The session user.
    pub session_user: String,
    /// The settings that change what the statement means, one `name=value` per line.
    pub settings: String,
    /// The (sub)transaction that ran the statement.
    pub xid: u64,
    /// The LSN of the statement's message.
    pub lsn: u64,
}

impl Ddl {
    /// The fields of a decoded event.
    pub fn from_event(e: &ddl_wire::DdlEvent<'_>) -> Ddl {
        Ddl {
            tag: e.command_tag.into(),
            kind: e.kind.into(),
            sql: e.sql.into(),
            identity: e.object_identity.into(),
            top_level: e.top_level,
            search_path: e.search_path.into(),
            role: e.role.into(),
            session_user: e.session_user.into(),
            settings: e.settings.unwrap_or("").into(),
            xid: e.xid,
            lsn: e.lsn.0,
        }
    }
}

/// Decodes the changes of `slot` (peeked, not consumed) with protocol version 1, turning
/// inserts on `ddl_sync.events` into [`Change::Ddl`].
pub fn changes(
    pg: &Cluster,
    slot: &str,
    publications: &str,
    extra: &[(&str, &str)],
) -> Vec<Change> {
    let mut options = vec![("proto_version", "1"), ("publication_names", publications)];
    options.extend_from_slice(extra);
    let hex = peek_hex(pg, slot, &options).unwrap_or_else(|e| panic!("peek {slot}: {e}"));
    changes_of_hex(&hex)
}

/// The changes in `hex`, the output of a peek with `proto_version` 1 (one message a line).
pub fn changes_of_hex(hex: &str) -> Vec<Change> {
    use ddl_wire::{
        EventsRelation, Message, ProtocolContext, StreamDecoder, Streaming, TupleValue,
    };
    use std::collections::HashMap;

    let mut decoder = StreamDecoder::new(ProtocolContext::new(1, Streaming::Off).expect("v1"));
    let mut tables: HashMap<u32, String> = HashMap::new();
    let mut events: HashMap<u32, EventsRelation> = HashMap::new();
    let mut out = Vec::new();
    for line in hex.lines().filter(|l| !l.is_empty()) {
        let bytes = from_hex(line);
        let message = decoder
            .decode(&bytes)
            .unwrap_or_else(|e| panic!("undecodable message {line}: {e}"));
        match message {
            Message::Begin(_) => out.push(Change::Begin),
            Message::Commit(_) => out.push(Change::Commit),
            Message::Relation(rel) => {
                tables.insert(rel.rel_id(), format!("{}.{}", rel.namespace(), rel.name()));
                if let Some(ev) = EventsRelation::from_relation(&rel).expect("events relation") {
                    events.insert(rel.rel_id(), ev);
                }
            }
            Message::Insert(ins) => match events.get(&ins.rel_id()) {
                Some(ev) => {
                    let e = ev.event(&ins).expect("a valid event");
                    out.push(Change::Ddl(Ddl::from_event(&e)));
                }
                None => out.push(Change::Insert {
                    table: tables.get(&ins.rel_id()).cloned().unwrap_or_default(),
                    values: ins
                        .tuple()
                        .map(|v| match v.expect("value") {
                            TupleValue::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                            _ => None,
                        })
                        .collect(),
                }),
            },
            Message::LogicalMessage(m) => out.push(Change::Message(m.prefix().to_string())),
            _ => {}
        }
    }
    out
}

/// The DDL statements among `changes`, in order.
pub fn ddl_sql(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Ddl(d) => Some(d.sql.clone()),
            _ => None,
        })
        .collect()
}

/// The messages of `peek_hex` output as bytes, one per line.
pub fn hex_messages(hex: &str) -> Vec<Vec<u8>> {
    hex.lines()
        .filter(|l| !l.is_empty())
        .map(from_hex)
        .collect()
}

fn from_hex(line: &str) -> Vec<u8> {
    (0..line.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A `ddl_pgoutput` stream with its DDL events taken out: what must be left is pgoutput's own
/// output for the same slot position and options (see [`strip_ddl_events`]).
#[derive(Debug, Default)]
pub struct Stripped {
    /// The remaining messages, bytes unchanged.
    pub kept: Vec<Vec<u8>>,
    /// The DDL events taken out, in order.
    pub events: Vec<Ddl>,
    /// How many Relation messages of `ddl_sync.events` were taken out.
    pub event_relations: usize,
    /// How many BEGIN/COMMIT pairs were left empty and taken out (DDL-only transactions, which
    /// pgoutput does not send).
    pub empty_transactions: usize,
}

/// Decodes `messages` (one pgoutput message each, as a slot peek returns them) with a
/// [`StreamDecoder`](ddl_wire::StreamDecoder) in context `ctx` (so changes inside streamed
/// blocks are read with their xid prefix), takes out the Relation and Insert messages of
/// `ddl_sync.events`, then every BEGIN immediately followed by COMMIT. Panics on a message that
/// does not decode, or on an events row that is not a valid event.
pub fn strip_ddl_events(messages: &[Vec<u8>], ctx: ddl_wire::ProtocolContext) -> Stripped {
    use ddl_wire::{EventsRelation, Message, StreamDecoder, BEGIN_TAG, COMMIT_TAG};
    use std::collections::HashMap;

    let mut decoder = StreamDecoder::new(ctx);
    let mut events: HashMap<u32, EventsRelation> = HashMap::new();
    let mut out = Stripped::default();
    let mut kept: Vec<&[u8]> = Vec::new();
    for (i, bytes) in messages.iter().enumerate() {
        let message = decoder
            .decode(bytes)
            .unwrap_or_else(|e| panic!("message {i} does not decode: {e}"));
        match &message {
            Message::Relation(rel) => {
                if let Some(ev) = EventsRelation::from_relation(rel)
                    .unwrap_or_else(|e| panic!("message {i}: bad ddl_sync.events relation: {e}"))
                {
                    events.insert(ev.rel_id(), ev);
                    out.event_relations += 1;
                    continue;
                }
            }
            Message::Insert(ins) => {
                if let Some(ev) = events.get(&ins.rel_id()) {
                    let e = ev
                        .event(ins)
                        .unwrap_or_else(|e| panic!("message {i}: bad DDL event: {e}"));
                    out.events.push(Ddl::from_event(&e));
                    continue;
                }
            }
            _ => {}
        }
        kept.push(bytes);
    }
    let mut i = 0;
    while i < kept.len() {
        if kept[i].first() == Some(&BEGIN_TAG)
            && kept.get(i + 1).and_then(|m| m.first()) == Some(&COMMIT_TAG)
        {
            out.empty_transactions += 1;
            i += 2;
            continue;
        }
        out.kept.push(kept[i].to_vec());
        i += 1;
    }
    out
}

/// Runs the cluster's `pgbench` with `args` against database `postgres`; panics with its
/// output when it fails.
pub fn pgbench(pg: &Cluster, args: &[&str]) {
    let out = pgbench_command(pg, args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run pgbench: {e}"));
    assert!(
        out.status.success(),
        "pgbench {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `pgbench <args> -h 127.0.0.1 -p PORT -U postgres postgres`, output captured, to run your own way.
pub fn pgbench_command(pg: &Cluster, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(pg.bin("pgbench"));
    cmd.args(args)
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &pg.port().to_string(),
            "-U",
            "postgres",
            "postgres",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// Polls `check` every 100 ms until it returns `Ok`, for at most `timeout`; when time runs out,
/// panics naming `what` and the last `Err` (what was seen instead).
pub fn wait_for<T>(
    what: &str,
    timeout: std::time::Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) if start.elapsed() >= timeout => {
                panic!("timed out after {timeout:?} waiting for {what}; last seen: {last}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

/// The path of the `ddl-dump` binary (crate ddl-dump), built once per test process with the
/// cargo that runs the tests (`cargo build -p ddl-dump`), found from cargo's own
/// artifact report so that `CARGO_TARGET_DIR` and profiles need no guessing.
pub fn ddl_dump() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let out = std::process::Command::new(&cargo)
            .args(["build", "--quiet", "-p", "ddl-dump"])
            .args([
                "--message-format",
                "json-render-diagnostics",
                "--manifest-path",
            ])
            .arg(&manifest)
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", cargo.to_string_lossy()));
        assert!(
            out.status.success(),
            "cargo build of ddl-dump failed ({})",
            out.status
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let key = "\"executable\":\"";
        stdout
            .lines()
            .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
            .filter_map(|l| {
                let start = l.find(key)? + key.len();
                let end = start + l[start..].find('"')?;
                Some(std::path::PathBuf::from(&l[start..end]))
            })
            .find(|p| p.file_name().is_some_and(|n| n == "ddl-dump"))
            .unwrap_or_else(|| panic!("cargo reported no ddl-dump executable:\n{stdout}"))
    })
    .clone()
}

/// A psql session kept open across steps, to act while a transaction is in progress (e.g.
/// wait until a walsender has streamed part of it). psql stops at the first error; the child
/// is killed when the value is dropped.
pub struct Session<'a> {
    pg: &'a Cluster,
    name: String,
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    step: u32,
}

impl<'a> Session<'a> {
    /// Opens a session on database `postgres` whose `application_name` is `name`.
    pub fn open(pg: &'a Cluster, name: &str) -> Session<'a> {
        use std::process::Stdio;
        let mut child = pg
            .psql_command("postgres")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start psql");
        let stdin = child.stdin.take();
        let mut session = Session {
            pg,
            name: name.to_string(),
            child,
            stdin,
            step: 0,
        };
        session.run(&format!("SET application_name = '{name}';"));
        session
    }

    /// Sends `sql` and waits (at most 60 s) until the session has run all of it and waits for
    /// more (idle, or idle in a transaction).
    pub fn run(&mut self, sql: &str) {
        if let Err(e) = self.try_run(sql) {
            panic!("{e}");
        }
    }

    /// [`run`](Session::run), but psql exiting (at an ERROR) is returned, with its stderr,
    /// instead of a panic; the session is closed then.
    pub fn try_run(&mut self, sql: &str) -> Result<(), String> {
        use std::io::Write;
        self.step += 1;
        let marker = format!("SELECT 'step {}'", self.step);
        let stdin = self.stdin.as_mut().expect("session is open");
        stdin
            .write_all(format!("{sql}\n{marker};\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("write to psql");
        let query = format!(
            "SELECT state FROM pg_stat_activity WHERE application_name = '{}' \
             AND rtrim(query, ';') = '{}'",
            self.name,
            marker.replace('\'', "''")
        );
        let what = format!("session {} to run step {}: {sql}", self.name, self.step);
        wait_for(&what, std::time::Duration::from_secs(60), || {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stdin = None;
                return Ok(Err(format!(
                    "{what}: psql exited ({status}):\n{}",
                    self.stderr()
                )));
            }
            match self.pg.psql("postgres", &query) {
                Ok(state) if state.starts_with("idle") => Ok(Ok(())),
                Ok(state) => Err(format!(
                    "state {state:?}; sessions: {:?}",
                    self.pg.psql(
                        "postgres",
                        "SELECT application_name, state, query FROM pg_stat_activity \
                         WHERE backend_type = 'client backend'"
                    )
                )),
                Err(e) => Err(e.to_string()),
            }
        })
    }

    /// Closes psql's input and waits for it to exit successfully.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for psql");
        if !status.success() {
            let err = self.stderr();
            panic!("session {} failed ({status}): {err}", self.name);
        }
    }

    fn stderr(&mut self) -> String {
        use std::io::Read;
        let mut text = String::new();
        if let Some(err) = self.child.stderr.as_mut() {
            let _ = err.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
