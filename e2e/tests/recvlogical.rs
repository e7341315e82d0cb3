//! A real `pg_recvlogical -P ddl_pgoutput` client: its output file reads back with ddl-wire's
//! `RecvlogicalReader`, and the `ddl-dump` tool shows the DDL it carries and re-encodes every
//! message byte for byte (`--verify`).

use ddl_e2e::{ddl_dump, ddl_publisher, wait_for, Ddl};
use ddl_testkit::{Cluster, RecvLogical, TempDir};
use ddl_wire::{EventsRelation, Message, ProtocolContext, RecvlogicalReader, Streaming};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// DDL between and inside transactions, and a transaction large enough to stream.
const WORKLOAD: &str = "
CREATE TABLE t (id int PRIMARY KEY, note text);
INSERT INTO t VALUES (1, 'one');
BEGIN;
INSERT INTO t VALUES (2, 'two');
ALTER TABLE t ADD COLUMN extra int;
INSERT INTO t VALUES (3, 'three', 3);
COMMIT;
CREATE INDEX t_note ON t (note);
BEGIN;
INSERT INTO t SELECT g, repeat('x', 200), g FROM generate_series(100, 3000) g;
COMMIT;
CREATE VIEW v AS SELECT id FROM t;
DROP VIEW v;
";

/// (kind, command tag, identity, statement) of each DDL in WORKLOAD.
const EXPECTED: &[(&str, &str, &str, &str)] = &[
    (
        "table",
        "CREATE TABLE",
        "public.t",
        "CREATE TABLE t (id int PRIMARY KEY, note text)",
    ),
    (
        "table",
        "ALTER TABLE",
        "public.t",
        "ALTER TABLE t ADD COLUMN extra int",
    ),
    (
        "index",
        "CREATE INDEX",
        "public.t_note",
        "CREATE INDEX t_note ON t (note)",
    ),
    (
        "view",
        "CREATE VIEW",
        "public.v",
        "CREATE VIEW v AS SELECT id FROM t",
    ),
    ("view", "DROP VIEW", "public.v", "DROP VIEW v"),
];

fn recv(pg: &Cluster, slot: &str, options: &[(&str, &str)]) -> RecvLogical {
    let mut r = pg.recvlogical("postgres", slot);
    r.plugin("ddl_pgoutput").timeout(Duration::from_secs(120));
    for (k, v) in options {
        r.option(k, v);
    }
    r
}

/// What a file holds, decoded with ddl-wire.
struct Read {
    events: Vec<Ddl>,
    /// Inserts on `public.t` inside streamed blocks (they carry the transaction's xid).
    streamed_rows: usize,
    rows: usize,
    ddl_sync_messages: usize,
}

fn read_file(path: &Path, ctx: ProtocolContext) -> Read {
    let bytes = std::fs::read(path).expect("pg_recvlogical wrote its file");
    let mut events: HashMap<u32, EventsRelation> = HashMap::new();
    let mut read = Read {
        events: Vec::new(),
        streamed_rows: 0,
        rows: 0,
        ddl_sync_messages: 0,
    };
    for item in RecvlogicalReader::new(&bytes, ctx) {
        let (offset, message) =
            item.unwrap_or_else(|e| panic!("{}: unreadable: {e}", path.display()));
        match message {
            Message::Relation(rel) => {
                if let Some(ev) = EventsRelation::from_relation(&rel).expect("events relation") {
                    events.insert(ev.rel_id(), ev);
                }
            }
            Message::Insert(ins) => match events.get(&ins.rel_id()) {
                Some(ev) => {
                    let e = ev
                        .event(&ins)
                        .unwrap_or_else(|e| panic!("event at byte {offset}: {e}"));
                    read.events.push(Ddl::from_event(&e));
                }
                None => {
                    read.rows += 1;
                    if ins.xid().is_some() {
                        read.streamed_rows += 1;
                    }
                }
            },
            Message::LogicalMessage(m) if m.prefix().as_bytes() == b"ddl_sync" => {
                read.ddl_sync_messages += 1;
            }
            _ => {}
        }
    }
    read
}

fn assert_events(what: &str, events: &[Ddl]) {
    let got: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e.kind.as_str(),
                e.tag.as_str(),
                e.identity.as_str(),
                e.sql.as_str(),
            )
        })
        .collect();
    assert_eq!(got, EXPECTED, "{what}");
    assert!(
        events.iter().all(|e| e.top_level && e.role == "postgres"),
        "{what}: {events:#?}"
    );
}

/// Runs ddl-dump with `args`; returns (success, stdout, stderr).
fn dump(args: &[&str], file: &Path) -> (bool, String, String) {
    let out = Command::new(ddl_dump())
        .args(args)
        .arg(file)
        .output()
        .expect("ddl-dump runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn pg_recvlogical_files_carry_the_ddl_and_ddl_dump_shows_it() {
    let pg = ddl_publisher("recvlogical");
    pg.psql(
        "postgres",
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    )
    .expect("publication");
    let streamed = recv(
        &pg,
        "streamed",
        &[
            ("proto_version", "2"),
            ("publication_names", "p"),
            ("streaming", "on"),
        ],
    );
    let messages = recv(
        &pg,
        "messages",
        &[
            ("proto_version", "1"),
            ("publication_names", "p"),
            ("messages", "true"),
        ],
    );
    streamed.create_slot().expect("slot streamed");
    messages.create_slot().expect("slot messages");
    assert_eq!(
        pg.psql(
            "postgres",
            "SELECT string_agg(plugin, ',' ORDER BY slot_name) FROM pg_replication_slots"
        )
        .unwrap(),
        "ddl_pgoutput,ddl_pgoutput"
    );

    pg.psql("postgres", WORKLOAD).expect("workload");
    let end = pg
        .psql("postgres", "SELECT pg_current_wal_insert_lsn()")
        .unwrap();
    // WAL past `end`, so that pg_recvlogical sees it and stops.
    pg.psql(
        "postgres",
        "INSERT INTO t VALUES (9999, 'after the end', 0)",
    )
    .unwrap();

    let dir = TempDir::new("recvlogical-out").unwrap();
    let streamed_file = dir.path().join("streamed.bin");
    let messages_file = dir.path().join("messages.bin");
    streamed
        .stream_to_file(&streamed_file, &end)
        .expect("pg_recvlogical (streaming)");
    messages
        .stream_to_file(&messages_file, &end)
        .expect("pg_recvlogical (messages)");

    // ddl-wire reads both files whole, with the DDL where it ran.
    let s = read_file(
        &streamed_file,
        ProtocolContext::new(2, Streaming::On).unwrap(),
    );
    assert_events("streamed file", &s.events);
    assert_eq!(s.rows, 3 + 2901, "streamed file: rows of t");
    assert_eq!(s.streamed_rows, 2901, "the large transaction streamed");
    assert_eq!(s.ddl_sync_messages, 0, "no messages asked for");

    let m = read_file(
        &messages_file,
        ProtocolContext::new(1, Streaming::Off).unwrap(),
    );
    assert_events("messages file", &m.events);
    assert_eq!(
        (m.rows, m.streamed_rows),
        (3 + 2901, 0),
        "messages file: rows"
    );
    // Each DDL's record (all at the top level: no padding after them).
    assert_eq!(m.ddl_sync_messages, EXPECTED.len(), "ddl_sync messages");

    // ddl-dump shows each event as a DDL line.
    for (file, proto, lines_per_ddl) in [(&streamed_file, "2", 1), (&messages_file, "1", 2)] {
        let (ok, out, err) = dump(&["--proto-version", proto], file);
        assert!(ok, "ddl-dump {}: {err}", file.display());
        let ddl_lines: Vec<&str> = out
            .lines()
            .filter(|l| l.contains(" I DDL ") || l.contains(" M DDL "))
            .collect();
        assert_eq!(
            ddl_lines.len(),
            lines_per_ddl * EXPECTED.len(),
            "DDL lines of {}:\n{out}",
            file.display()
        );
        for (kind, tag, identity, sql) in EXPECTED {
            let shown = format!("I DDL {kind} {tag} {identity} ");
            let line = ddl_lines
                .iter()
                .find(|l| l.contains(&shown))
                .unwrap_or_else(|| panic!("no line with {shown:?} in:\n{out}"));
            assert!(line.ends_with(&format!(": {sql}")), "{line}");
            if lines_per_ddl == 2 {
                let record = format!("M DDL {kind} {tag} {identity} ");
                assert!(
                    ddl_lines
                        .iter()
                        .any(|l| l.contains(&record) && l.ends_with(sql)),
                    "no record line {record:?} in:\n{out}"
                );
            }
        }
        assert!(
            out.lines()
                .any(|l| l
                    .contains(" DDL table CREATE TABLE public.t (schema public, role postgres")),
            "{out}"
        );
        // Every message re-encodes to its own bytes.
        let (ok, _, err) = dump(&["--proto-version", proto, "--verify"], file);
        assert!(ok, "ddl-dump --verify {}: {err}", file.display());
    }
    // Streamed changes show their xid.
    let (_, out, _) = dump(&["--proto-version", "2"], &streamed_file);
    assert!(
        out.lines().any(|l| l.contains(" S Stream Start xid=")),
        "{out}"
    );
}

/// `ddl-dump --follow`: started before the DDL, it shows each statement as the slot sends it,
/// ends with pg_recvlogical when interrupted (the slot is released), stops by itself at
/// `--endpos`, and reports pg_recvlogical's failure as its own.
#[test]
fn ddl_dump_follows_a_live_slot() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    let pg = ddl_publisher("follow");
    pg.psql(
        "postgres",
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('live', 'ddl_pgoutput');",
    )
    .expect("publication and slot");
    let recvlogical = pg.bin("pg_recvlogical");
    let follow = |extra: &[&str]| {
        let mut cmd = Command::new(ddl_dump());
        cmd.args(["--follow", &pg.connstr("postgres"), "--slot", "live"])
            .args(["--publication", "p", "--recvlogical"])
            .arg(&recvlogical)
            .args(extra)
            .stdin(Stdio::null());
        cmd
    };
    let slot_active = || {
        pg.psql(
            "postgres",
            "SELECT active FROM pg_replication_slots WHERE slot_name = 'live'",
        )
        .expect("slot state")
    };

    // Its own process group, so that the interrupt reaches ddl-dump and its pg_recvlogical
    // both, as Ctrl-C in a terminal does.
    let mut child = follow(&[])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("ddl-dump --follow starts");
    let stdout = child.stdout.take().expect("piped");
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if lines_tx.send(line.expect("utf-8 line")).is_err() {
                break;
            }
        }
    });
    wait_for(
        "pg_recvlogical to stream slot live",
        Duration::from_secs(30),
        || match slot_active() {
            active if active == "t" => Ok(()),
            other => Err(other),
        },
    );
    pg.psql("postgres", "CREATE TABLE followed (id int)")
        .expect("DDL while following");
    let mut seen = Vec::new();
    let shown = wait_for("ddl-dump to show the DDL", Duration::from_secs(30), || {
        while let Ok(line) = lines.try_recv() {
            seen.push(line);
        }
        seen.iter()
            .find(|l| l.contains(" DDL table CREATE TABLE public.followed "))
            .cloned()
            .ok_or_else(|| format!("{seen:?}"))
    });
    assert!(
        shown.ends_with(": CREATE TABLE followed (id int)"),
        "{shown}"
    );

    let interrupt = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .expect("kill runs");
    assert!(interrupt.success());
    child.wait().expect("ddl-dump ends when interrupted");
    wait_for(
        "the slot to be released",
        Duration::from_secs(30),
        || match slot_active() {
            active if active == "f" => Ok(()),
            other => Err(other),
        },
    );

    // With --endpos it ends by itself, successfully, once the stream passes that point.
    pg.psql("postgres", "CREATE TABLE second (id int)")
        .expect("second DDL");
    let endpos = pg
        .psql("postgres", "SELECT pg_current_wal_lsn()")
        .expect("LSN");
    pg.psql("postgres", "CREATE TABLE after_endpos (id int)")
        .expect("WAL past endpos");
    let out = follow(&["--endpos", &endpos])
        .output()
        .expect("ddl-dump --follow --endpos runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(": CREATE TABLE second (id int)"),
        "{stdout}"
    );
    assert!(!stdout.contains("after_endpos"), "{stdout}");

    // A slot that does not exist: pg_recvlogical's error, and ddl-dump's exit status 2.
    let out = Command::new(ddl_dump())
        .args(["--follow", &pg.connstr("postgres"), "--slot", "missing"])
        .args(["--publication", "p", "--recvlogical"])
        .arg(&recvlogical)
        .output()
        .expect("ddl-dump runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("\"missing\" does not exist"), "{stderr}");
    assert!(
        stderr.contains("ddl-dump: pg_recvlogical failed"),
        "{stderr}"
    );
}
