//! ddl_pgoutput is pgoutput byte for byte: two slots created at the same point, one per plugin,
//! decode the same WAL into the same bytes for every option combination, and fail with the
//! same errors.

use ddl_e2e::{
    ddl_publisher, hex_messages, peek_hex, pgbench, pgbench_command, psql_script, publisher,
    strip_ddl_events,
};
use ddl_testkit::Cluster;
use ddl_wire::{ProtocolContext, Streaming};

/// Touches every pgoutput message type PostgreSQL 15 sends: a sample, not the full golden
/// workload (see `cargo xtask golden`).
const WORKLOAD: &str = r#"
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE item (id int PRIMARY KEY, name text, m mood, payload bytea, at timestamptz);
CREATE TABLE wide (id int PRIMARY KEY, body text);
ALTER TABLE wide ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE full_ident (a int, b text);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
CREATE PUBLICATION p FOR ALL TABLES;
INSERT INTO item SELECT g, 'n' || g, 'ok', '\x00ff', '2024-01-01' FROM generate_series(1, 50) g;
UPDATE item SET id = id + 1000 WHERE id <= 5;
UPDATE item SET name = NULL WHERE id = 10;
DELETE FROM item WHERE id = 11;
INSERT INTO wide VALUES (1, repeat(md5('x'), 200));
UPDATE wide SET id = 2;
INSERT INTO full_ident VALUES (1, 'a');
UPDATE full_ident SET b = 'b';
DELETE FROM full_ident;
SELECT pg_logical_emit_message(true, 'app', 'transactional');
SELECT pg_logical_emit_message(false, 'app', 'not transactional');
BEGIN;
INSERT INTO item SELECT g, repeat('z', 100) FROM generate_series(2000, 4000) g;
COMMIT;
BEGIN;
INSERT INTO item SELECT g, repeat('y', 100) FROM generate_series(5000, 7000) g;
ROLLBACK;
BEGIN;
INSERT INTO item VALUES (9000, 'prepared');
PREPARE TRANSACTION 'gx';
COMMIT PREPARED 'gx';
BEGIN;
INSERT INTO item VALUES (9001, 'rolled back');
PREPARE TRANSACTION 'gy';
ROLLBACK PREPARED 'gy';
TRUNCATE full_ident, wide RESTART IDENTITY;
"#;

/// The option sets both tests decode with, and the pair of slots ("plain" or "twophase") each
/// needs: protocols 1 to 3 everywhere, and 4 (`streaming = parallel`) on a server that has it.
fn option_cases(pg: &Cluster) -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let pub_ = ("publication_names", "p");
    let mut cases = vec![
        ("plain", vec![("proto_version", "1"), pub_]),
        (
            "plain",
            vec![("proto_version", "1"), pub_, ("binary", "true")],
        ),
        (
            "plain",
            vec![("proto_version", "1"), pub_, ("messages", "true")],
        ),
        (
            "plain",
            vec![("proto_version", "2"), pub_, ("streaming", "on")],
        ),
        (
            "plain",
            vec![
                ("proto_version", "2"),
                pub_,
                ("streaming", "on"),
                ("messages", "true"),
            ],
        ),
        (
            "twophase",
            vec![("proto_version", "3"), pub_, ("two_phase", "on")],
        ),
        (
            "twophase",
            vec![
                ("proto_version", "3"),
                pub_,
                ("two_phase", "on"),
                ("streaming", "on"),
                ("binary", "true"),
            ],
        ),
    ];
    let version: u32 = pg
        .psql("postgres", "SHOW server_version_num")
        .expect("server version")
        .parse()
        .expect("a number");
    if version >= 160000 {
        cases.push((
            "plain",
            vec![("proto_version", "4"), pub_, ("streaming", "parallel")],
        ));
        cases.push((
            "twophase",
            vec![
                ("proto_version", "4"),
                pub_,
                ("two_phase", "on"),
                ("streaming", "parallel"),
                ("messages", "true"),
            ],
        ));
    }
    cases
}

const SLOTS: &str = "
SELECT pg_create_logical_replication_slot('plain_pgoutput', 'pgoutput');
SELECT pg_create_logical_replication_slot('plain_ddl', 'ddl_pgoutput');
SELECT pg_create_logical_replication_slot('twophase_pgoutput', 'pgoutput', false, true);
SELECT pg_create_logical_replication_slot('twophase_ddl', 'ddl_pgoutput', false, true);";

#[test]
fn ddl_pgoutput_output_equals_pgoutput_output() {
    let pg = publisher("byte-identity");
    pg.psql("postgres", SLOTS).expect("slots");
    pg.psql("postgres", WORKLOAD).expect("workload");

    let cases = option_cases(&pg);
    for (pair, options) in &cases {
        let options = options.as_slice();
        let expected =
            peek_hex(&pg, &format!("{pair}_pgoutput"), options).expect("pgoutput decodes");
        let actual = peek_hex(&pg, &format!("{pair}_ddl"), options).expect("ddl_pgoutput decodes");
        assert!(
            expected.lines().count() > 50,
            "{options:?}: workload decoded to too little"
        );
        // The options must have taken effect, or the comparison proves less than it claims:
        // Stream Start is 'S' (0x53), Begin Prepare 'b' (0x62), Message 'M' (0x4d).
        for (option, tag) in [("streaming", "53"), ("two_phase", "62"), ("messages", "4d")] {
            if options.iter().any(|(k, _)| *k == option) {
                assert!(
                    expected.lines().any(|l| l.starts_with(tag)),
                    "{options:?}: no message with tag 0x{tag}"
                );
            }
        }
        assert!(
            expected == actual,
            "{options:?}: ddl_pgoutput differs from pgoutput"
        );
    }
}

#[test]
fn pgoutput_errors_pass_through_unchanged() {
    let pg = publisher("errors");
    pg.psql(
        "postgres",
        "CREATE PUBLICATION p FOR ALL TABLES;
         CREATE TABLE f (a int);
         -- A row filter that fails on a = 0: an ERROR inside pgoutput's change callback.
         CREATE PUBLICATION filtered FOR TABLE f WHERE (10 / a > 0);
         SELECT pg_create_logical_replication_slot('a', 'pgoutput');
         SELECT pg_create_logical_replication_slot('b', 'ddl_pgoutput');
         CREATE TABLE t (a int); INSERT INTO t VALUES (1);
         INSERT INTO f VALUES (1), (0);",
    )
    .expect("setup");
    let mut refused = 0;
    for options in [
        &[("proto_version", "99"), ("publication_names", "p")][..],
        &[("proto_version", "1")][..],
        &[
            ("proto_version", "1"),
            ("publication_names", "p"),
            ("bogus", "1"),
        ][..],
        &[("proto_version", "1"), ("publication_names", "nope")][..],
        &[("proto_version", "1"), ("publication_names", "filtered")][..],
    ] {
        // Whatever pgoutput answers (18 only warns about a missing publication, 15 refuses
        // it), ddl_pgoutput answers the same: the same bytes, or the same error with all its
        // fields (SQLSTATE, CONTEXT, the LOCATION in pgoutput's source) but for the names of
        // the slot and the plugin in the CONTEXT line.
        let (expected, actual) = (
            peek_verbose(&pg, "a", options),
            peek_verbose(&pg, "b", options),
        );
        let same_place = |text: &str| {
            text.replace("slot \"a\"", "slot \"?\"")
                .replace("slot \"b\"", "slot \"?\"")
                .replace("output plugin \"ddl_pgoutput\"", "output plugin \"?\"")
                .replace("output plugin \"pgoutput\"", "output plugin \"?\"")
        };
        assert_eq!(
            expected.0, actual.0,
            "{options:?}: {expected:?} against {actual:?}"
        );
        assert_eq!(
            same_place(&expected.1),
            same_place(&actual.1),
            "{options:?}: pgoutput printed the first, ddl_pgoutput the second"
        );
        if !expected.0 {
            assert!(
                expected.1.contains("ERROR:") && expected.1.contains("LOCATION:"),
                "{options:?}: {}",
                expected.1
            );
            refused += 1;
        }
    }
    // The options above that every version refuses: a protocol it does not know, no
    // publication_names, an unknown option, a row filter that divides by zero.
    assert!(
        refused >= 4,
        "pgoutput refused only {refused} of the bad option sets"
    );
}

/// Peeks at `slot` with `options`, verbose errors: whether it succeeded, and the rows (hex) or
/// what psql printed to stderr.
fn peek_verbose(pg: &Cluster, slot: &str, options: &[(&str, &str)]) -> (bool, String) {
    let opts: String = options
        .iter()
        .map(|(k, v)| format!(", '{k}', '{v}'"))
        .collect();
    let out = psql_script(
        pg,
        "postgres",
        &[],
        &format!(
            "\\set VERBOSITY verbose\nSELECT encode(data, 'hex') FROM \
             pg_logical_slot_peek_binary_changes('{slot}', NULL, NULL{opts});\n"
        ),
    );
    let text = if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    };
    (
        out.status.success(),
        String::from_utf8_lossy(text).into_owned(),
    )
}

/// DDL between, inside and around transactions of every shape, run after [`WORKLOAD`] and
/// `pgbench -i`: each statement's expected event is listed in [`EXPECTED_EVENTS`].
const DDL_WORKLOAD: &str = r#"
-- A column added, then used, in the same transaction.
BEGIN;
INSERT INTO item VALUES (9100, 'before the column');
ALTER TABLE item ADD COLUMN extra int;
INSERT INTO item (id, name, extra) VALUES (9101, 'after the column', 1);
COMMIT;
-- A transaction of DDL only: pgoutput sends nothing for it.
BEGIN;
CREATE TABLE ddl_only (a int PRIMARY KEY);
CREATE INDEX item_name ON item (name);
COMMIT;
-- DDL in a savepoint rolled back: never sent.
BEGIN;
INSERT INTO item VALUES (9102, 'around a savepoint');
SAVEPOINT a;
CREATE TABLE gone_small (a int);
ROLLBACK TO a;
INSERT INTO item VALUES (9103, 'after the savepoint');
COMMIT;
-- A transaction large enough to stream, with DDL among the rows, and a savepoint whose DDL is
-- rolled back: decoded after the fact, that subtransaction is known to have aborted, and
-- ddl_pgoutput sends no event for it (pgoutput's output, which has no catalog access for a
-- message, must not change: see ddl-decode).
BEGIN;
INSERT INTO item SELECT g, repeat('s', 100) FROM generate_series(10000, 12000) g;
CREATE TABLE in_stream (a int PRIMARY KEY, b text);
INSERT INTO in_stream SELECT g, 'x' FROM generate_series(1, 100) g;
SAVEPOINT big;
CREATE TABLE gone_streamed (a int);
INSERT INTO item SELECT g, repeat('t', 100) FROM generate_series(13000, 15000) g;
ROLLBACK TO big;
ALTER TABLE in_stream ADD COLUMN c int;
INSERT INTO in_stream (a, b, c) SELECT g, 'y', g FROM generate_series(101, 2000) g;
COMMIT;
-- DDL in prepared transactions, one committed, one rolled back (no event for the latter: it has
-- aborted by the time the slots decode it).
BEGIN;
CREATE TABLE prepared_t (a int);
INSERT INTO prepared_t VALUES (1);
PREPARE TRANSACTION 'ddl_commit';
COMMIT PREPARED 'ddl_commit';
BEGIN;
CREATE TABLE prepared_gone (a int);
INSERT INTO item VALUES (9104, 'prepared, rolled back');
PREPARE TRANSACTION 'ddl_rollback';
ROLLBACK PREPARED 'ddl_rollback';
"#;

/// Run while `pgbench` runs, in its own session.
const DDL_DURING_PGBENCH: &str = "
CREATE TABLE during_bench (a int);
CREATE INDEX pgbench_history_tid ON pgbench_history (tid);
ALTER TABLE pgbench_history ADD COLUMN note text;
COMMENT ON TABLE during_bench IS 'made while pgbench ran';
";

/// Run between two pgbench runs.
const DDL_BETWEEN_PGBENCH: &str = "
DROP TABLE during_bench;
ALTER TABLE ddl_only RENAME TO ddl_only_renamed;
";

/// (command tag, object identity, statement): a statement ending in `*` is a
/// prefix (pgbench's own text).
const EXPECTED_EVENTS: &[(&str, &str, &str)] = &[
    (
        "CREATE TYPE",
        "public.mood",
        "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    ),
    (
        "CREATE TABLE",
        "public.item",
        "CREATE TABLE item (id int PRIMARY KEY, name text, m mood, payload bytea, at timestamptz)",
    ),
    (
        "CREATE TABLE",
        "public.wide",
        "CREATE TABLE wide (id int PRIMARY KEY, body text)",
    ),
    (
        "ALTER TABLE",
        "public.wide",
        "ALTER TABLE wide ALTER COLUMN body SET STORAGE EXTERNAL",
    ),
    (
        "CREATE TABLE",
        "public.full_ident",
        "CREATE TABLE full_ident (a int, b text)",
    ),
    (
        "ALTER TABLE",
        "public.full_ident",
        "ALTER TABLE full_ident REPLICA IDENTITY FULL",
    ),
    (
        "CREATE TABLE",
        "public.pgbench_history",
        "create table pgbench_history(*",
    ),
    (
        "CREATE TABLE",
        "public.pgbench_tellers",
        "create table pgbench_tellers(*",
    ),
    (
        "CREATE TABLE",
        "public.pgbench_accounts",
        "create table pgbench_accounts(*",
    ),
    (
        "CREATE TABLE",
        "public.pgbench_branches",
        "create table pgbench_branches(*",
    ),
    (
        "ALTER TABLE",
        "public.pgbench_branches",
        "alter table pgbench_branches add primary key (bid)",
    ),
    (
        "ALTER TABLE",
        "public.pgbench_tellers",
        "alter table pgbench_tellers add primary key (tid)",
    ),
    (
        "ALTER TABLE",
        "public.pgbench_accounts",
        "alter table pgbench_accounts add primary key (aid)",
    ),
    (
        "ALTER TABLE",
        "public.item",
        "ALTER TABLE item ADD COLUMN extra int",
    ),
    (
        "CREATE TABLE",
        "public.ddl_only",
        "CREATE TABLE ddl_only (a int PRIMARY KEY)",
    ),
    (
        "CREATE INDEX",
        "public.item_name",
        "CREATE INDEX item_name ON item (name)",
    ),
    (
        "CREATE TABLE",
        "public.in_stream",
        "CREATE TABLE in_stream (a int PRIMARY KEY, b text)",
    ),
    (
        "ALTER TABLE",
        "public.in_stream",
        "ALTER TABLE in_stream ADD COLUMN c int",
    ),
    (
        "CREATE TABLE",
        "public.prepared_t",
        "CREATE TABLE prepared_t (a int)",
    ),
    (
        "CREATE TABLE",
        "public.during_bench",
        "CREATE TABLE during_bench (a int)",
    ),
    (
        "CREATE INDEX",
        "public.pgbench_history_tid",
        "CREATE INDEX pgbench_history_tid ON pgbench_history (tid)",
    ),
    (
        "ALTER TABLE",
        "public.pgbench_history",
        "ALTER TABLE pgbench_history ADD COLUMN note text",
    ),
    (
        "COMMENT",
        "public.during_bench",
        "COMMENT ON TABLE during_bench IS 'made while pgbench ran'",
    ),
    (
        "DROP TABLE",
        "public.during_bench",
        "DROP TABLE during_bench",
    ),
    (
        "ALTER TABLE",
        "public.ddl_only_renamed",
        "ALTER TABLE ddl_only RENAME TO ddl_only_renamed",
    ),
];

/// Transactions of DDL only (each autocommitted DDL statement, the explicit DDL-only one), which
/// ddl_pgoutput sends and pgoutput skips unless messages are on: 6 in WORKLOAD, 7 of
/// `pgbench -i` (4 CREATE TABLE, 3 ADD PRIMARY KEY), 1 in DDL_WORKLOAD, 4 during and 2 between
/// the pgbench runs.
const DDL_ONLY_TRANSACTIONS: usize = 20;

#[test]
fn with_ddl_on_ddl_pgoutput_is_pgoutput_plus_ddl_events() {
    let pg = ddl_publisher("byte-identity-ddl");
    // DDL_ONLY_TRANSACTIONS counts the workload's statements; pgbench's tables get their keys
    // after their rows, and the follow-ups a table without a key gets (tests/keyless.rs) would
    // be transactions of their own.
    pg.psql(
        "postgres",
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         ALTER DATABASE postgres SET ddl_sync.keyless_tables = native;",
    )
    .expect("publication");
    pg.psql("postgres", SLOTS).expect("slots");

    let workload = WORKLOAD.replace("CREATE PUBLICATION p FOR ALL TABLES;\n", "");
    assert_ne!(
        workload, WORKLOAD,
        "WORKLOAD no longer creates the publication"
    );
    pg.psql("postgres", &workload).expect("workload");
    pgbench(&pg, &["-i", "-s", "1", "-q"]);
    pg.psql("postgres", DDL_WORKLOAD).expect("DDL workload");
    let bench = pgbench_command(&pg, &["-t", "200", "-c", "2"])
        .spawn()
        .expect("start pgbench");
    let during = pg.psql("postgres", DDL_DURING_PGBENCH);
    let bench = bench.wait_with_output().expect("pgbench runs");
    during.expect("DDL during pgbench");
    assert!(
        bench.status.success(),
        "pgbench failed: {}",
        String::from_utf8_lossy(&bench.stderr)
    );
    pg.psql("postgres", DDL_BETWEEN_PGBENCH)
        .expect("DDL between pgbench runs");
    pgbench(&pg, &["-t", "50", "-c", "2", "-n"]);

    for (pair, options) in &option_cases(&pg) {
        let options = options.as_slice();
        let has = |name: &str| options.iter().any(|(k, v)| *k == name && *v != "false");
        let proto: u32 = options
            .iter()
            .find(|(k, _)| *k == "proto_version")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap();
        let streaming = match options.iter().find(|(k, _)| *k == "streaming") {
            Some((_, "parallel")) => Streaming::Parallel,
            Some(_) => Streaming::On,
            None => Streaming::Off,
        };
        let ctx = ProtocolContext::new(proto, streaming).unwrap();

        let expected = hex_messages(
            &peek_hex(&pg, &format!("{pair}_pgoutput"), options).expect("pgoutput decodes"),
        );
        let actual = hex_messages(
            &peek_hex(&pg, &format!("{pair}_ddl"), options).expect("ddl_pgoutput decodes"),
        );
        // The options took effect: Stream Start, Begin Prepare, Message.
        for (option, tag) in [("streaming", b'S'), ("two_phase", b'b'), ("messages", b'M')] {
            if has(option) {
                assert!(
                    expected.iter().any(|m| m[0] == tag),
                    "{options:?}: no message with tag {:?}",
                    tag as char
                );
            }
        }
        // pgoutput itself never sends ddl_sync.events.
        let plain = strip_ddl_events(&expected, ctx);
        assert!(
            plain.events.is_empty() && plain.event_relations == 0 && plain.empty_transactions == 0,
            "{options:?}: pgoutput's own output has DDL events or empty transactions"
        );

        let stripped = strip_ddl_events(&actual, ctx);
        assert!(
            expected.len() > 1000,
            "{options:?}: the workload decoded to too little ({} messages)",
            expected.len()
        );
        if let Some(i) = (0..expected.len().max(stripped.kept.len()))
            .find(|&i| expected.get(i) != stripped.kept.get(i))
        {
            panic!(
                "{options:?}: without its DDL events, ddl_pgoutput differs from pgoutput at \
                 message {i} of {} (ddl_pgoutput: {} after stripping):\n  pgoutput:     {:?}\n  \
                 ddl_pgoutput: {:?}",
                expected.len(),
                stripped.kept.len(),
                expected.get(i).map(|m| hex(m)),
                stripped.kept.get(i).map(|m| hex(m)),
            );
        }

        // What was taken out is exactly the workload's DDL, once each, in order.
        let wanted = EXPECTED_EVENTS;
        let got: Vec<_> = stripped
            .events
            .iter()
            .map(|e| (e.tag.as_str(), e.identity.as_str(), e.sql.as_str()))
            .collect();
        assert_eq!(
            got.len(),
            wanted.len(),
            "{options:?}: {} DDL events taken out, {} expected:\n{got:#?}",
            got.len(),
            wanted.len()
        );
        for (i, ((tag, identity, sql), (etag, eidentity, esql))) in
            got.iter().zip(wanted).enumerate()
        {
            let sql_ok = match esql.strip_suffix('*') {
                Some(prefix) => sql.starts_with(prefix),
                None => sql == esql,
            };
            assert!(
                (tag, identity) == (etag, eidentity) && sql_ok,
                "{options:?}: event {i} is ({tag}, {identity}, {sql}), expected ({etag}, \
                 {eidentity}, {esql})"
            );
        }
        assert!(
            stripped.event_relations >= 1,
            "{options:?}: no events Relation"
        );
        let empty = if has("messages") {
            0
        } else {
            DDL_ONLY_TRANSACTIONS
        };
        assert_eq!(
            stripped.empty_transactions, empty,
            "{options:?}: DDL-only transactions taken out"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
