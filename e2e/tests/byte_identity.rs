//! ddl_pgoutput is pgoutput byte for byte: two slots created at the same point, one per plugin,
//! decode the same WAL into the same bytes for every option combination, and fail with the
//! same errors.

use ddl_e2e::{peek_hex, publisher};

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

#[test]
fn ddl_pgoutput_output_equals_pgoutput_output() {
    let pg = publisher("byte-identity");
    pg.psql(
        "postgres",
        "SELECT pg_create_logical_replication_slot('plain_pgoutput', 'pgoutput');
         SELECT pg_create_logical_replication_slot('plain_ddl', 'ddl_pgoutput');
         SELECT pg_create_logical_replication_slot('twophase_pgoutput', 'pgoutput', false, true);
         SELECT pg_create_logical_replication_slot('twophase_ddl', 'ddl_pgoutput', false, true);",
    )
    .expect("slots");
    pg.psql("postgres", WORKLOAD).expect("workload");

    let pub_ = ("publication_names", "p");
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("plain", &[("proto_version", "1"), pub_]),
        ("plain", &[("proto_version", "1"), pub_, ("binary", "true")]),
        (
            "plain",
            &[("proto_version", "1"), pub_, ("messages", "true")],
        ),
        (
            "plain",
            &[("proto_version", "2"), pub_, ("streaming", "on")],
        ),
        (
            "plain",
            &[
                ("proto_version", "2"),
                pub_,
                ("streaming", "on"),
                ("messages", "true"),
            ],
        ),
        (
            "twophase",
            &[("proto_version", "3"), pub_, ("two_phase", "on")],
        ),
        (
            "twophase",
            &[
                ("proto_version", "3"),
                pub_,
                ("two_phase", "on"),
                ("streaming", "on"),
                ("binary", "true"),
            ],
        ),
    ];
    for (pair, options) in cases {
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
         SELECT pg_create_logical_replication_slot('a', 'pgoutput');
         SELECT pg_create_logical_replication_slot('b', 'ddl_pgoutput');
         CREATE TABLE t (a int); INSERT INTO t VALUES (1);",
    )
    .expect("setup");
    for options in [
        &[("proto_version", "99"), ("publication_names", "p")][..],
        &[("proto_version", "1")][..],
        &[
            ("proto_version", "1"),
            ("publication_names", "p"),
            ("bogus", "1"),
        ][..],
        &[("proto_version", "1"), ("publication_names", "nope")][..],
    ] {
        let expected = peek_hex(&pg, "a", options).expect_err("pgoutput refuses");
        let actual = peek_hex(&pg, "b", options).expect_err("ddl_pgoutput refuses");
        let first = |e: &str| {
            e.lines()
                .find(|l| l.contains("ERROR"))
                .unwrap_or(e)
                .to_string()
        };
        assert_eq!(first(&expected), first(&actual), "{options:?}");
    }
}
