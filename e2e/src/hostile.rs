//! Hostile and unusual inputs on both sides of a replication pair, each with what must happen:
//! a clear error or a refusal with its reason, nothing applied that should not be, and nothing
//! lost (every case is followed by a marker row, and a statement or row of the stream after a
//! bad input must still arrive).
//!
//! - `ddl_sync` logical messages written by hand with `pg_logical_emit_message` (garbage,
//!   truncated, unknown version, invalid UTF-8, and well-formed records that lie), transactional
//!   and not;
//! - rows inserted into `ddl_sync.events` on the publisher, which ddl_pgoutput never sends, and
//!   the same events delivered on the subscriber under its subscription's origin, where the
//!   replay checks them (several statements in one, a claim that is not the statement, global
//!   objects, kinds the subscription does not take, an unknown dialect, an empty statement);
//! - a 10 MB statement;
//! - identifiers that need quoting;
//! - encodings: a LATIN1 publisher database to a UTF-8 subscriber and the reverse, and a
//!   SQL_ASCII database with an identifier that is not valid UTF-8;
//! - on the subscriber: a row inserted into its `ddl_sync.events` by a local session.
//!
//! [`run`] runs them all on one pair of fresh clusters; the e2e tests assert every case passes,
//! `cargo xtask reliability` writes the table into RELIABILITY.md.

use crate::compare::{rows_difference, schema_difference};
use crate::replication::{ddl_subscriber, deliver_events, query, subscribe, subscribe_in};
use crate::{ddl_publisher, psql_verbose, wait_for};
use ddl_testkit::Cluster;
use ddl_wire::{DdlRecord, RecordFlags, RecordOrigin};
use std::collections::BTreeSet;
use std::time::Duration;

/// One case and what came of it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Which side the input comes from, and what it is.
    pub name: String,
    /// What must happen.
    pub expected: &'static str,
    /// What happened: the apply log rows it made, warnings, errors.
    pub observed: String,
    /// Whether that is what must happen.
    pub passed: bool,
}

pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);
/// The size of the oversized statement's literal.
const OVERSIZED: usize = 10 * 1024 * 1024;

/// Panics, listing each case that did not end as it must, unless every one did and there are
/// more than `at_least` (a campaign that silently ran fewer cases proves less).
pub fn assert_all_passed(outcomes: &[Outcome], at_least: usize) {
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed)
        .map(|o| {
            format!(
                "{}\n  expected: {}\n  observed: {}",
                o.name, o.expected, o.observed
            )
        })
        .collect();
    assert!(outcomes.len() > at_least, "{outcomes:#?}");
    assert!(
        failed.is_empty(),
        "{} of {} cases did not end as they must:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}

/// Runs every case; the last outcome is the comparison of both sides after all of them.
pub fn run() -> Vec<Outcome> {
    let mut h = Harness::new();
    let mut out = Vec::new();
    messages(&mut h, &mut out);
    event_rows(&mut h, &mut out);
    oversized(&mut h, &mut out);
    quoted_identifiers(&mut h, &mut out);
    subscriber_side(&mut h, &mut out);
    encodings(&h, &mut out);
    let difference = schema_difference(&h.publisher, &h.subscriber)
        .or_else(|| rows_difference(&h.publisher, &h.subscriber));
    out.push(Outcome {
        name: "after all cases: both sides".into(),
        expected: "pg_dump --schema-only and every table's rows are the same on both sides",
        observed: difference.clone().unwrap_or_else(|| "the same".into()),
        passed: difference.is_none(),
    });
    out
}

/// A publisher and a subscriber (here ddl = 'table, index, schema, view', conflict policy
/// error; `crate::attacks` takes all kinds), with a table `marks` whose rows tell that
/// everything before them has been applied.
pub(crate) struct Harness {
    pub(crate) publisher: Cluster,
    pub(crate) subscriber: Cluster,
    marks: u32,
    /// Apply log rows seen so far, by origin.
    seen: BTreeSet<String>,
    /// Bytes of the publisher's log read so far.
    log_read: usize,
}

/// What one input did, once the next marker arrived.
pub(crate) struct Effect {
    /// New apply log rows: `status|command_tag|detail`.
    pub(crate) log: Vec<String>,
    /// New lines of the publisher's server log with WARNING or ERROR.
    pub(crate) warnings: Vec<String>,
}

impl Effect {
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.log.is_empty() {
            parts.push("no apply log row".to_string());
        } else {
            parts.push(format!("apply log: {}", self.log.join("; ")));
        }
        if !self.warnings.is_empty() {
            parts.push(format!("publisher log: {}", self.warnings.join("; ")));
        }
        parts.join("; ")
    }
}

impl Harness {
    fn new() -> Harness {
        Harness::with("hostile", "table, index, schema, view")
    }

    /// Clusters `<name>-pub` and `<name>-sub`, the subscription `sub` replaying the DDL kinds
    /// `ddl`, and the first marker through.
    pub(crate) fn with(name: &str, ddl: &str) -> Harness {
        let publisher = ddl_publisher(&format!("{name}-pub"));
        let subscriber = ddl_subscriber(&format!("{name}-sub"), &[]);
        query(
            &publisher,
            "CREATE TABLE t (id int PRIMARY KEY);
             CREATE TABLE marks (id int PRIMARY KEY);
             CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
             SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');
             -- Each round expects the events of its statements; the follow-up a table without
             -- a key gets is a statement of its own (tests/keyless.rs).
             ALTER DATABASE postgres SET ddl_sync.keyless_tables = native;",
        );
        query(
            &subscriber,
            "CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE marks (id int PRIMARY KEY);",
        );
        subscribe(&subscriber, &publisher, "sub", "s", ddl, "error");
        // From 16 on, rows are applied as each table's owner unless run_as_owner = true; the
        // attacks meet the subscription owner's rights only then (as always on 15), so that is
        // the case they test (e2e/tests/run_as_owner.rs covers the default).
        let version: u32 = query(&subscriber, "SHOW server_version_num")
            .parse()
            .unwrap();
        if version >= 160000 {
            query(
                &subscriber,
                "ALTER SUBSCRIPTION sub SET (run_as_owner = true)",
            );
        }
        let mut h = Harness {
            publisher,
            subscriber,
            marks: 0,
            seen: BTreeSet::new(),
            log_read: 0,
        };
        h.settle();
        h
    }

    /// Inserts the next marker on the publisher, waits for it on the subscriber, and returns
    /// what arrived in between.
    pub(crate) fn settle(&mut self) -> Effect {
        self.marks += 1;
        query(
            &self.publisher,
            &format!("INSERT INTO marks VALUES ({})", self.marks),
        );
        let check = format!("SELECT count(*) FROM marks WHERE id = {}", self.marks);
        wait_for(
            &format!("marker {} on the subscriber", self.marks),
            TIMEOUT,
            || match self.subscriber.psql("postgres", &check) {
                Ok(n) if n == "1" => Ok(()),
                other => Err(format!(
                    "{other:?}\n--- subscriber ---\n{}\n--- publisher ---\n{}",
                    self.subscriber.log_tail(20),
                    self.publisher.log_tail(10)
                )),
            },
        );
        let rows = query(
            &self.subscriber,
            "SELECT origin_sysid || ' ' || origin_lsn, apply_status || '|' || command_tag || '|'
                    || coalesce(apply_detail, '')
               FROM ddl_sync.events ORDER BY applied_at, origin_lsn",
        );
        let mut log = Vec::new();
        for line in rows.lines() {
            let (key, row) = line.split_once('|').expect("key|row");
            if self.seen.insert(key.to_string()) {
                log.push(row.to_string());
            }
        }
        let text = std::fs::read(self.publisher.log_path()).unwrap_or_default();
        let new = String::from_utf8_lossy(&text[self.log_read.min(text.len())..]).into_owned();
        self.log_read = text.len();
        let warnings = new
            .lines()
            .filter(|l| l.contains("WARNING:") || l.contains("ERROR:"))
            .map(|l| l.split_once(": ").map_or(l, |(_, m)| m).to_string())
            .collect();
        Effect { log, warnings }
    }

    pub(crate) fn exists(&self, pg: &Cluster, relation: &str) -> bool {
        query(
            pg,
            &format!(
                "SELECT to_regclass('{}') IS NOT NULL",
                relation.replace('\'', "''")
            ),
        ) == "t"
    }
}

/// A well-formed record for `sql`, claiming `tag` and `kind`, by role postgres, that no capture
/// wrote: capturing system 1, xid 0, an authentication tag of zeros. Change fields with
/// `DdlRecord { field: ..., ..forged(...) }`.
pub(crate) fn forged<'a>(
    tag: &'a str,
    kind: &'a str,
    identity: &'a str,
    sql: &'a str,
) -> DdlRecord<'a> {
    DdlRecord {
        flags: RecordFlags::TOP_LEVEL | RecordFlags::TRANSACTIONAL,
        xid: 0,
        class_id: 1259,
        object_id: 0,
        namespace_id: 2200,
        origin: RecordOrigin {
            capturing_sysid: 1,
            original_sysid: 0,
            original_lsn: 0,
        },
        dialect: "postgres",
        command_tag: tag,
        kind,
        schema: "public",
        object_identity: identity,
        sql,
        search_path: "public",
        role: "postgres",
        session_user: "postgres",
        database: "postgres",
        tables: "",
        settings: "",
        role_rights: "",
        bindings: Some(""),
        renamed_from: "",
        description: "",
        // Not the capture's seal: the output plugin refuses the record.
        tag: [0; ddl_wire::RECORD_TAG_LEN],
    }
}

/// The bytes of `record`.
pub(crate) fn encode(record: &DdlRecord<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    record.encode(&mut out);
    out
}

/// The bytes of a [`forged`] record.
fn record(tag: &str, kind: &str, identity: &str, sql: &str) -> Vec<u8> {
    encode(&forged(tag, kind, identity, sql))
}

/// `bytes` as a `bytea` literal.
pub(crate) fn bytea(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("'\\x{hex}'::bytea")
}

/// The statement that writes `payload` as a `ddl_sync` logical message (no `;`).
pub(crate) fn emit_sql(transactional: bool, payload: &[u8]) -> String {
    format!(
        "SELECT pg_logical_emit_message({transactional}, 'ddl_sync', {})",
        bytea(payload)
    )
}

fn emit(h: &Harness, transactional: bool, payload: &[u8]) {
    query(&h.publisher, &emit_sql(transactional, payload));
}

fn messages(h: &mut Harness, out: &mut Vec<Outcome>) {
    let warned = |e: &Effect, what: &str| {
        e.log.is_empty()
            && e.warnings
                .iter()
                .any(|w| w.contains("ignoring ddl_sync message at") && w.contains(what))
    };
    let create = record(
        "CREATE TABLE",
        "table",
        "public.forged",
        "CREATE TABLE forged (a int)",
    );

    emit(h, true, b"garbage");
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: pg_logical_emit_message(true, 'ddl_sync', 'garbage')".into(),
        expected: "a WARNING in the publisher's log naming the message and why; nothing applied",
        passed: warned(&e, ""),
        observed: e.describe(),
    });

    emit(h, false, b"garbage");
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: the same, non-transactional".into(),
        expected: "ignored (only transactional messages are DDL records); nothing applied",
        passed: e.log.is_empty(),
        observed: e.describe(),
    });

    emit(h, true, &create[..create.len() / 2]);
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: a valid record cut in half".into(),
        expected: "a WARNING naming the field it ends in; nothing applied",
        passed: warned(&e, "ends inside field") && !h.exists(&h.subscriber, "forged"),
        observed: e.describe(),
    });

    let mut future = create.clone();
    future[0] = 99;
    emit(h, true, &future);
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: a record of an unknown format version (99)".into(),
        expected: "a WARNING naming the version; nothing applied",
        passed: warned(&e, "format version 99") && !h.exists(&h.subscriber, "forged"),
        observed: e.describe(),
    });

    let mut bad_utf8 = create.clone();
    let at = bad_utf8
        .windows(6)
        .position(|w| w == b"forged")
        .expect("the name in the record");
    bad_utf8[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
    emit(h, true, &bad_utf8);
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: a record whose identity is not valid UTF-8 (bytes ff fe)".into(),
        expected: "a WARNING (invalid UTF-8); nothing applied",
        passed: warned(&e, "is not valid UTF-8") && !h.exists(&h.subscriber, "forged"),
        observed: e.describe(),
    });

    let lie = record("CREATE TABLE", "table", "public.t", "DROP TABLE t");
    emit(h, true, &lie);
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: a well-formed record claiming CREATE TABLE for `DROP TABLE t`, not \
               sealed by the capture"
            .into(),
        expected: "a WARNING (its authentication tag is wrong); nothing applied; t still there",
        passed: warned(&e, "authentication tag is wrong") && h.exists(&h.subscriber, "t"),
        observed: e.describe(),
    });

    emit(h, false, &create);
    let e = h.settle();
    out.push(Outcome {
        name: "publisher: a well-formed record, non-transactional".into(),
        expected:
            "ignored (a DDL record is only taken from a transactional message); nothing applied",
        passed: e.log.is_empty() && !h.exists(&h.subscriber, "forged"),
        observed: e.describe(),
    });
}

/// Inserts a hand-made row into `publisher`'s `ddl_sync.events`: it travels like any row.
/// `n` makes its origin LSN unique.
pub fn send_event(publisher: &Cluster, n: u32, dialect: &str, kind: &str, tag: &str, sql: &str) {
    query(publisher, &event_insert_sql(n, dialect, kind, tag, sql));
}

/// The INSERT of [`send_event`]: origin system 42, origin LSN `0/<n>`.
pub(crate) fn event_insert_sql(n: u32, dialect: &str, kind: &str, tag: &str, sql: &str) -> String {
    format!(
        "INSERT INTO ddl_sync.events (lsn, origin_sysid, origin_lsn, xid, top_level, forwarded,
             kind, dialect, command_tag, schema_name, object_identity, sql, search_path,
             role_name, session_user_name, database_name)
         VALUES ('0/{n}', 42, '0/{n}', 1, true, false, '{kind}', '{dialect}', '{tag}', 'public',
             'public.t', $sql${sql}$sql$, 'public', 'postgres', 'postgres', 'postgres')"
    )
}

fn event_rows(h: &mut Harness, out: &mut Vec<Outcome>) {
    let cases: [(&str, &str, &str, &str, &str); 8] = [
        (
            "postgres",
            "table",
            "DROP TABLE",
            "DROP TABLE t; CREATE TABLE pwned (a int)",
            "holds 2 statements",
        ),
        (
            "postgres",
            "table",
            "CREATE TABLE",
            "CREATE FUNCTION pwned() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "the row claims CREATE TABLE, but the statement is CREATE FUNCTION",
        ),
        (
            "postgres",
            "table",
            "ALTER SYSTEM",
            "ALTER SYSTEM SET work_mem = '1GB'",
            "never replicated",
        ),
        (
            "postgres",
            "table",
            "CREATE ROLE",
            "CREATE ROLE pwned SUPERUSER",
            "never replicated",
        ),
        (
            "postgres",
            "function",
            "CREATE FUNCTION",
            "CREATE FUNCTION pwned() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "kind function is not replayed by subscription \"sub\"",
        ),
        (
            "klingon",
            "table",
            "CREATE TABLE",
            "CREATE TABLE pwned (a int)",
            "no adapter for SQL dialect \"klingon\"",
        ),
        ("postgres", "table", "CREATE TABLE", "", "statement"),
        (
            "postgres",
            "bogus",
            "CREATE TABLE",
            "CREATE TABLE pwned (a int)",
            "bogus",
        ),
    ];
    // On the publisher: ddl_pgoutput sends only the events it makes from sealed records, never
    // a real row of ddl_sync.events.
    for (i, (dialect, kind, tag, sql, _)) in cases.iter().enumerate() {
        send_event(&h.publisher, i as u32 + 1, dialect, kind, tag, sql);
    }
    let e = h.settle();
    out.push(Outcome {
        name: format!(
            "publisher: {} rows inserted into ddl_sync.events by a superuser (the cases below)",
            cases.len()
        ),
        expected: "not sent: the rows of ddl_sync.events are node-local; nothing applied",
        passed: e.log.is_empty(),
        observed: e.describe(),
    });
    // On the subscriber, as if its apply worker had received them: the replay's own checks.
    let events: Vec<(&str, &str, &str, &str)> =
        cases.iter().map(|c| (c.0, c.1, c.2, c.3)).collect();
    deliver_events(&h.subscriber, "sub", &events);
    let e = h.settle();
    for (i, (dialect, kind, tag, sql, reason)) in cases.into_iter().enumerate() {
        let shown: String = if sql.is_empty() {
            "''".into()
        } else {
            format!("`{sql}`")
        };
        let row = e.log.get(i).map(String::as_str).unwrap_or("");
        out.push(Outcome {
            name: format!(
                "subscriber: an event delivered under the subscription's origin: dialect \
                 {dialect}, kind {kind}, tag {tag}, statement {shown}"
            ),
            expected: "refused with the reason; nothing run",
            passed: e.log.len() == cases.len()
                && row.starts_with(&format!("refused|{tag}|"))
                && row.contains(reason),
            observed: e.describe(),
        });
    }
    let damage = query(
        &h.subscriber,
        "SELECT (SELECT count(*) FROM pg_class WHERE relname IN ('t', 'pwned')) || ' '
             || (SELECT count(*) FROM pg_proc WHERE proname = 'pwned') || ' '
             || (SELECT count(*) FROM pg_roles WHERE rolname = 'pwned') || ' '
             || current_setting('work_mem')",
    );
    out.push(Outcome {
        name: "both sides: the events above, taken together".into(),
        expected:
            "the subscriber still has t, and no pwned table, function or role; work_mem unchanged",
        passed: damage == "1 0 0 4MB",
        observed: format!("relations t/pwned, functions, roles, work_mem: {damage}"),
    });
}

fn oversized(h: &mut Harness, out: &mut Vec<Outcome>) {
    let text = "x".repeat(OVERSIZED);
    query(
        &h.publisher,
        &format!("COMMENT ON TABLE t IS '{text}'; INSERT INTO t VALUES (100);"),
    );
    let e = h.settle();
    let sum = "SELECT md5(obj_description('t'::regclass, 'pg_class')) || ' '
                      || length(obj_description('t'::regclass, 'pg_class'))";
    let (a, b) = (query(&h.publisher, sum), query(&h.subscriber, sum));
    let row = query(&h.subscriber, "SELECT count(*) FROM t WHERE id = 100");
    out.push(Outcome {
        name: format!(
            "publisher: a {} MB statement (COMMENT ON TABLE with a {OVERSIZED}-byte literal), \
             then a row",
            OVERSIZED / (1024 * 1024)
        ),
        expected: "applied; the comment is the same on both sides; the row after it arrives",
        passed: e.log.len() == 1
            && e.log[0].starts_with("applied|COMMENT|")
            && a == b
            && row == "1",
        observed: format!(
            "{}; comment md5/length publisher {a}, subscriber {b}; row after: {row}",
            e.describe()
        ),
    });
}

fn quoted_identifiers(h: &mut Harness, out: &mut Vec<Outcome>) {
    let script = r#"
        CREATE SCHEMA "My ""Schema""";
        CREATE TABLE "My ""Schema"""."Select" ("from" int PRIMARY KEY, "a b" text, "ÜñÎ" int);
        CREATE INDEX "idx; DROP TABLE t" ON "My ""Schema"""."Select" ("a b");
        ALTER TABLE "My ""Schema"""."Select" RENAME COLUMN "ÜñÎ" TO "Ünï ""2""";
        CREATE VIEW "My ""Schema"""."v$1" AS SELECT "from" AS "to" FROM "My ""Schema"""."Select";
        INSERT INTO "My ""Schema"""."Select" VALUES (1, 'one', 1), (2, E'two\nlines', 2);
    "#;
    query(&h.publisher, script);
    let e = h.settle();
    let rows = query(
        &h.subscriber,
        r#"SELECT count(*) FROM "My ""Schema"""."v$1""#,
    );
    out.push(Outcome {
        name: "publisher: schema, table, columns, index and view names that need quoting \
               (quotes, spaces, `;`, `$`, non-ASCII), then rows"
            .into(),
        expected: "all applied with the same names (the final pg_dump comparison); rows arrive",
        passed: e.log.len() == 5 && e.log.iter().all(|l| l.starts_with("applied|")) && rows == "2",
        observed: format!("{}; rows through the view: {rows}", e.describe()),
    });
}

fn subscriber_side(h: &mut Harness, out: &mut Vec<Outcome>) {
    query(
        &h.subscriber,
        "INSERT INTO ddl_sync.events (lsn, origin_sysid, origin_lsn, xid, top_level, forwarded,
             kind, dialect, command_tag, schema_name, object_identity, sql, search_path,
             role_name, session_user_name, database_name)
         VALUES ('0/1', 1, '0/1', 1, true, false, 'table', 'postgres', 'CREATE TABLE', 'public',
             'public.local_x', 'CREATE TABLE local_x (a int)', 'public', 'postgres', 'postgres',
             'postgres')",
    );
    let e = h.settle();
    let status = query(
        &h.subscriber,
        "SELECT apply_status || '|' || apply_detail FROM ddl_sync.events WHERE origin_sysid = 1",
    );
    out.push(Outcome {
        name: "subscriber: a row inserted into ddl_sync.events by a local session".into(),
        expected: "kept as refused (not inserted by an apply worker); nothing run",
        passed: status.starts_with("refused|not inserted by a subscription's apply worker")
            && !h.exists(&h.subscriber, "local_x"),
        observed: format!("{status}; {}", e.describe()),
    });
}

/// A database `db` on each node, in `pub_encoding` and `sub_encoding`, with ddl_sync, and on the
/// publisher a publication `p` (all DDL) and a slot `s_<db>`.
fn encoded_pair(h: &Harness, db: &str, pub_encoding: &str, sub_encoding: &str) {
    let create = |pg: &Cluster, encoding: &str| {
        query(
            pg,
            &format!(
                "CREATE DATABASE {db} TEMPLATE template0 ENCODING '{encoding}' \
                 LC_COLLATE 'C' LC_CTYPE 'C'"
            ),
        );
        pg.psql(db, "CREATE EXTENSION ddl_sync")
            .expect("CREATE EXTENSION ddl_sync");
    };
    create(&h.publisher, pub_encoding);
    create(&h.subscriber, sub_encoding);
    h.publisher
        .psql(
            db,
            &format!(
                "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
                 SELECT pg_create_logical_replication_slot('s_{db}', 'ddl_pgoutput');"
            ),
        )
        .expect("publication");
}

fn encodings(h: &Harness, out: &mut Vec<Outcome>) {
    let statement = r#"CREATE TABLE "café" ("naïve" int PRIMARY KEY, "ß" text DEFAULT 'Größe');"#;
    // The subscriber's database must be UTF-8: a LATIN1 one is refused where the subscription
    // is configured.
    encoded_pair(h, "tolatin", "UTF8", "LATIN1");
    let (configured, stderr) = psql_verbose(
        &h.subscriber,
        "tolatin",
        &format!(
            "CREATE SUBSCRIPTION sub_tolatin CONNECTION '{}' PUBLICATION p
                 WITH (create_slot = false, slot_name = 's_tolatin', copy_data = false, enabled = false);
             SELECT ddl_sync.set_subscription_ddl('sub_tolatin', 'all');",
            h.publisher.connstr("tolatin")
        ),
    );
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("ERROR:") || l.starts_with("DETAIL:"))
        .collect();
    out.push(Outcome {
        name: "subscriber: ddl_sync.set_subscription_ddl in a LATIN1 database".into(),
        expected: "refused with an error that says why (feature_not_supported), nothing configured",
        passed: !configured
            && error
                .iter()
                .any(|l| l.contains("0A000") && l.contains("only into UTF8 databases"))
            && error.iter().any(|l| l.contains("LATIN1")),
        observed: if configured {
            "configured".to_string()
        } else {
            error.join(" ")
        },
    });

    let (db, from, to) = ("latin", "LATIN1", "UTF8");
    encoded_pair(h, db, from, to);
    subscribe_in(
        &h.subscriber,
        &h.publisher,
        db,
        &format!("sub_{db}"),
        &format!("s_{db}"),
        "all",
        "error",
    );
    // psql's client encoding is UTF-8 for both: the server converts.
    let script = format!(
        "SET client_encoding = 'UTF8'; {statement} INSERT INTO \"café\" VALUES (1, DEFAULT);"
    );
    h.publisher.psql(db, &script).expect("the statement");
    // Not `wait_caught_up`: a subscriber that never catches up is this case's failure,
    // not the end of all cases.
    let caught_up = caught_up(&h.publisher, &format!("sub_{db}"));
    let read = "SET client_encoding = 'UTF8';
                SELECT string_agg(a.attname, ',' ORDER BY a.attnum) || ' '
                       || (SELECT string_agg(\"naïve\" || '=' || \"ß\", ',') FROM \"café\")
                  FROM pg_attribute a
                 WHERE a.attrelid = '\"café\"'::regclass AND a.attnum > 0";
    let on_pub = h.publisher.psql(db, read).unwrap_or_else(|e| e.to_string());
    let on_sub = h
        .subscriber
        .psql(db, read)
        .unwrap_or_else(|e| e.to_string());
    let log = h
        .subscriber
        .psql(
            db,
            "SET client_encoding = 'UTF8';
             SELECT apply_status || '|' || command_tag || '|' || coalesce(apply_detail, '')
               FROM ddl_sync.events",
        )
        .unwrap_or_else(|e| e.to_string());
    out.push(Outcome {
        name: format!(
            "publisher: {from} database to a {to} subscriber database: `{statement}` and a row"
        ),
        expected: "applied; the same names and values on both sides",
        passed: caught_up
            && on_pub == "naïve,ß 1=Größe"
            && on_sub == on_pub
            && log.starts_with("applied|"),
        observed: format!(
            "{}apply log: {log}; publisher: {on_pub}; subscriber: {on_sub}",
            if caught_up {
                String::new()
            } else {
                format!(
                    "the subscriber did not catch up in {TIMEOUT:?}; its log: {}; ",
                    h.subscriber.log_tail(2)
                )
            }
        ),
    });

    // SQL_ASCII stores any bytes: a name that is not valid UTF-8 cannot be carried in a record
    // (records are UTF-8) nor named on a UTF-8 subscriber.
    query(
        &h.publisher,
        "CREATE DATABASE ascii TEMPLATE template0 ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C'",
    );
    let make = "DO $$ BEGIN
                  EXECUTE format('CREATE TABLE %I (a int)', convert_from('\\x74ff'::bytea, 'SQL_ASCII'));
                END $$;";
    let made = "SELECT count(*) FROM pg_class
                 WHERE relname LIKE 't_' AND relnamespace = 'public'::regnamespace";
    h.publisher
        .psql("ascii", "CREATE EXTENSION ddl_sync")
        .expect("ddl_sync in ascii");
    let plain = h.publisher.psql("ascii", &format!("{make} {made}"));
    h.publisher
        .psql(
            "ascii",
            "DO $$ DECLARE r record; BEGIN
               FOR r IN SELECT oid::regclass AS c FROM pg_class
                         WHERE relname LIKE 't_' AND relnamespace = 'public'::regnamespace LOOP
                 EXECUTE 'DROP TABLE ' || r.c;
               END LOOP; END $$;
             CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
        )
        .expect("publication in ascii");
    let (ok, stderr) = psql_verbose(&h.publisher, "ascii", make);
    let created = h
        .publisher
        .psql("ascii", made)
        .unwrap_or_else(|e| e.to_string());
    let error = stderr
        .lines()
        .find(|l| l.starts_with("ERROR:"))
        .unwrap_or("")
        .to_string();
    out.push(Outcome {
        name: "publisher: SQL_ASCII database, a table named with the bytes 74 ff (not UTF-8)"
            .into(),
        expected: "without a DDL publication: created as usual; with one: the statement fails \
                   with an error that says why, and nothing is created or sent",
        passed: plain.as_deref().is_ok_and(|n| n == "1")
            && !ok
            && error.contains("UTF8")
            && created == "0",
        observed: format!(
            "without a DDL publication: {}; with one: {}; tables made: {created}",
            match &plain {
                Ok(n) => format!("{n} table created"),
                Err(e) => format!("failed: {e}"),
            },
            if ok { "succeeded".to_string() } else { error }
        ),
    });
}

/// Whether subscription `name` has confirmed everything the publisher had written, within
/// [`TIMEOUT`].
pub(crate) fn caught_up(publisher: &Cluster, name: &str) -> bool {
    let target = query(publisher, "SELECT pg_current_wal_lsn()");
    let check = format!(
        "SELECT replay_lsn >= '{target}' FROM pg_stat_replication WHERE application_name = '{name}'"
    );
    let deadline = std::time::Instant::now() + TIMEOUT;
    while std::time::Instant::now() < deadline {
        if publisher
            .psql("postgres", &check)
            .is_ok_and(|done| done == "t")
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}
