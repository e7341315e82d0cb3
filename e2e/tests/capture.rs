//! DDL capture on a real publisher: which statements become DDL events, with what text, and
//! where in the transaction stream they arrive.

use ddl_e2e::{changes, ddl_publisher, ddl_sql, Change};

fn setup(name: &str, ddl: &str) -> ddl_testkit::Cluster {
    let pg = ddl_publisher(name);
    pg.psql(
        "postgres",
        &format!(
            "CREATE TABLE t (id int PRIMARY KEY);
             CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = '{ddl}');
             SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');"
        ),
    )
    .expect("setup");
    pg
}

#[test]
fn ddl_arrives_where_it_ran_between_the_rows() {
    let pg = setup("capture-order", "all");
    pg.psql(
        "postgres",
        "BEGIN;
         INSERT INTO t VALUES (1);
         ALTER TABLE t ADD COLUMN note text;
         INSERT INTO t VALUES (2, 'two');
         COMMIT;",
    )
    .expect("workload");
    let got = changes(&pg, "s", "p", &[]);
    let body: Vec<&Change> = got
        .iter()
        .filter(|c| !matches!(c, Change::Begin | Change::Commit))
        .collect();
    assert_eq!(body.len(), 3, "{got:#?}");
    assert!(matches!(body[0], Change::Insert { values, .. } if values == &[Some("1".to_string())]));
    let Change::Ddl(ddl) = body[1] else {
        panic!("expected the DDL second: {got:#?}")
    };
    assert_eq!(ddl.sql, "ALTER TABLE t ADD COLUMN note text");
    assert_eq!(
        (ddl.tag.as_str(), ddl.kind.as_str(), ddl.identity.as_str()),
        ("ALTER TABLE", "table", "public.t")
    );
    assert!(ddl.top_level);
    assert!(matches!(body[2], Change::Insert { values, .. } if values.len() == 2));
}

#[test]
fn nothing_for_failed_rolled_back_temporary_or_dml_statements() {
    let pg = setup("capture-none", "all");
    // Each psql call is one query string; the failing ones are expected to fail.
    assert!(pg
        .psql("postgres", "ALTER TABLE missing ADD COLUMN x int")
        .is_err());
    pg.psql(
        "postgres",
        "BEGIN; CREATE TABLE rolled_back (a int); ROLLBACK;",
    )
    .unwrap();
    pg.psql(
        "postgres",
        "BEGIN; SAVEPOINT a; CREATE TABLE in_savepoint (a int); ROLLBACK TO a; COMMIT;",
    )
    .unwrap();
    pg.psql("postgres", "CREATE TEMP TABLE tmp (a int); DROP TABLE tmp;")
        .unwrap();
    pg.psql(
        "postgres",
        "INSERT INTO t VALUES (1); UPDATE t SET id = 2; DELETE FROM t;",
    )
    .unwrap();
    // The marker proves decoding went past all of the above.
    pg.psql("postgres", "CREATE TABLE marker (a int)").unwrap();
    assert_eq!(
        ddl_sql(&changes(&pg, "s", "p", &[])),
        ["CREATE TABLE marker (a int)"]
    );
}

#[test]
fn one_event_per_statement_of_a_multi_statement_string() {
    let pg = setup("capture-multi", "all");
    pg.psql(
        "postgres",
        "CREATE TABLE m (a int); INSERT INTO m VALUES (1);\nCREATE INDEX m_a ON m (a) ;",
    )
    .unwrap();
    assert_eq!(
        ddl_sql(&changes(&pg, "s", "p", &[])),
        ["CREATE TABLE m (a int)", "CREATE INDEX m_a ON m (a)"]
    );
}

#[test]
fn nested_ddl_is_captured_but_not_the_do_block_or_extension_script() {
    let pg = setup("capture-nested", "all");
    pg.psql(
        "postgres",
        "DO $$ BEGIN EXECUTE 'CREATE TABLE from_do (a int)'; END $$;
         CREATE EXTENSION hstore;",
    )
    .unwrap();
    let got = changes(&pg, "s", "p", &[]);
    let ddl: Vec<_> = got
        .iter()
        .filter_map(|c| match c {
            Change::Ddl(d) => Some((d.sql.as_str(), d.top_level)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ddl,
        [
            ("CREATE TABLE from_do (a int)", false),
            ("CREATE EXTENSION hstore", true)
        ]
    );
}

#[test]
fn only_the_kinds_a_publication_asks_for() {
    let pg = setup("capture-kinds", "index");
    pg.psql(
        "postgres",
        "CREATE PUBLICATION q FOR ALL TABLES WITH (ddl = 'table');
         SELECT pg_create_logical_replication_slot('sq', 'ddl_pgoutput');",
    )
    .unwrap();
    pg.psql(
        "postgres",
        "CREATE TABLE k (a int); CREATE INDEX k_a ON k (a);",
    )
    .unwrap();
    assert_eq!(
        ddl_sql(&changes(&pg, "s", "p", &[])),
        ["CREATE INDEX k_a ON k (a)"]
    );
    assert_eq!(
        ddl_sql(&changes(&pg, "sq", "q", &[])),
        ["CREATE TABLE k (a int)"]
    );
}

#[test]
fn ddl_in_a_released_savepoint_arrives_before_the_parents_next_row() {
    let pg = setup("capture-tie", "all");
    let mut script = String::new();
    for i in 0..40 {
        script.push_str(&format!(
            "BEGIN; SAVEPOINT s; ALTER TABLE t ADD COLUMN c{i} int; RELEASE s; INSERT INTO t (id, c{i}) VALUES ({i}, {i}); COMMIT;\n"
        ));
    }
    pg.psql("postgres", &script).unwrap();
    let got = changes(&pg, "s", "p", &[]);
    let body: Vec<&Change> = got
        .iter()
        .filter(|c| !matches!(c, Change::Begin | Change::Commit))
        .collect();
    assert_eq!(body.len(), 80, "{got:#?}");
    for (i, pair) in body.chunks(2).enumerate() {
        assert!(
            matches!(pair[0], Change::Ddl(d) if d.sql == format!("ALTER TABLE t ADD COLUMN c{i} int")),
            "transaction {i}: {pair:?}"
        );
        assert!(
            matches!(pair[1], Change::Insert { .. }),
            "transaction {i}: {pair:?}"
        );
    }
}

#[test]
fn bad_ddl_option_and_missing_extension_are_clear_errors() {
    let pg = ddl_publisher("capture-errors");
    let err = pg
        .psql(
            "postgres",
            "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'table, tabel')",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown ddl kind \"tabel\""), "{err}");
    assert!(err.contains("valid: table, index"), "{err}");
    pg.psql("postgres", "CREATE DATABASE plain").unwrap();
    let err = pg
        .psql(
            "plain",
            "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'table')",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("requires the ddl_sync extension"), "{err}");
}

#[test]
fn a_corrupt_ddl_sync_message_is_skipped_with_a_warning() {
    let pg = setup("capture-corrupt", "all");
    pg.psql(
        "postgres",
        "SELECT pg_logical_emit_message(true, 'ddl_sync', 'garbage');
         CREATE TABLE after_garbage (a int);",
    )
    .unwrap();
    let got = changes(&pg, "s", "p", &[("messages", "true")]);
    assert_eq!(ddl_sql(&got), ["CREATE TABLE after_garbage (a int)"]);
    // The raw messages still reach clients that asked for messages, like pgoutput's.
    assert!(got.contains(&Change::Message("ddl_sync".into())));
    assert!(pg
        .log_tail(200)
        .contains("ignoring malformed ddl_sync message"));
}

#[test]
fn ddl_option_adds_the_events_table_and_refuses_configurations_that_would_drop_events() {
    let pg = ddl_publisher("capture-pubconfig");
    pg.psql(
        "postgres",
        "CREATE TABLE a (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR TABLE a WITH (ddl = 'table');",
    )
    .unwrap();
    let members = pg
        .psql("postgres", "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'p'")
        .unwrap();
    assert_eq!(members, "a,events");
    let err = pg
        .psql("postgres", "ALTER PUBLICATION p DROP TABLE ddl_sync.events")
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not contain ddl_sync.events"), "{err}");
    let err = pg
        .psql("postgres", "ALTER PUBLICATION p SET (publish = 'update')")
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not publish inserts"), "{err}");
    // ddl alone changes nothing else about the publication.
    pg.psql("postgres", "ALTER PUBLICATION p SET (ddl = 'table, index')")
        .unwrap();
    assert_eq!(
        pg.psql(
            "postgres",
            "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'p'"
        )
        .unwrap(),
        "2"
    );
}
