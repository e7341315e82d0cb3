//! DDL capture on a real publisher: which statements become DDL events, with what text, and
//! where in the transaction stream they arrive.

use ddl_e2e::{
    changes, changes_of_hex, ddl_publisher, ddl_sql, hex_messages, peek_hex, Change, Ddl, Session,
};
use ddl_wire::{DdlRecord, Message, ProtocolContext, Streaming};

/// A publisher whose tables without a key stay as PostgreSQL leaves them: what these tests
/// count is the capture's one record per statement, and the follow-up such a table gets is a
/// statement of its own (tests/keyless.rs).
fn capture_publisher(name: &str) -> ddl_testkit::Cluster {
    let pg = ddl_publisher(name);
    pg.psql(
        "postgres",
        "ALTER DATABASE postgres SET ddl_sync.keyless_tables = native",
    )
    .expect("setting");
    pg
}

fn setup(name: &str, ddl: &str) -> ddl_testkit::Cluster {
    let pg = capture_publisher(name);
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
    each_column_arrives_before_its_row(&pg, |i| {
        format!(
            "BEGIN; SAVEPOINT s; ALTER TABLE t ADD COLUMN c{i} int; RELEASE s; \
             INSERT INTO t (id, c{i}) VALUES ({i}, {i}); COMMIT;"
        )
    });
}

#[test]
fn ddl_at_the_top_level_arrives_before_the_next_subtransactions_first_row() {
    // The record is not padded at the top level; a subtransaction that starts right after it
    // (a SAVEPOINT, a PL/pgSQL exception block) gets the padding, or its first row would tie.
    // (PostgreSQL's reorder buffer breaks that tie in favour of the top level today, so this
    // holds without the padding too; the padding does not rely on it, and
    // `no_wal_at_all_for_ddl_no_publication_asks_for` checks that it is written.)
    let pg = setup("capture-tie-top", "all");
    each_column_arrives_before_its_row(&pg, |i| {
        let subtransaction = if i % 2 == 0 {
            format!("SAVEPOINT s; INSERT INTO t (id, c{i}) VALUES ({i}, {i}); RELEASE s;")
        } else {
            format!(
                "DO $$ BEGIN INSERT INTO t (id, c{i}) VALUES ({i}, {i}); \
                 EXCEPTION WHEN unique_violation THEN NULL; END $$;"
            )
        };
        format!("BEGIN; ALTER TABLE t ADD COLUMN c{i} int; {subtransaction} COMMIT;")
    });
}

/// Runs 40 transactions, `transaction(i)` each adding column `c{i}` to `t` and writing a row
/// with it, and checks that slot `s` of publication `p` gives each ALTER before its row.
fn each_column_arrives_before_its_row(
    pg: &ddl_testkit::Cluster,
    transaction: impl Fn(u32) -> String,
) {
    let script: String = (0..40).map(|i| transaction(i) + "\n").collect();
    pg.psql("postgres", &script).unwrap();
    let got = changes(pg, "s", "p", &[]);
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
    let pg = capture_publisher("capture-errors");
    let err = pg
        .psql(
            "postgres",
            "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'table, tabel')",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown ddl kind \"tabel\""), "{err}");
    assert!(err.contains("valid: table, index"), "{err}");
    // A repeated option is PostgreSQL's own error, as for its options.
    let err = pg
        .psql(
            "postgres",
            "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'table', ddl = 'all')",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("conflicting or redundant options"), "{err}");
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
    let log = pg.log_tail(200);
    assert!(
        log.contains("ignoring ddl_sync message at") && log.contains(": malformed: "),
        "{log}"
    );
}

#[test]
fn ddl_option_adds_the_events_table_and_refuses_configurations_that_would_drop_events() {
    let pg = capture_publisher("capture-pubconfig");
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

/// The DDL events of `slot` for `publications`, in order.
fn events(pg: &ddl_testkit::Cluster, slot: &str, publications: &str) -> Vec<Ddl> {
    changes(pg, slot, publications, &[])
        .into_iter()
        .filter_map(|c| match c {
            Change::Ddl(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// (command tag, identity, statement) of each event.
fn summary(events: &[Ddl]) -> Vec<(&str, &str, &str)> {
    events
        .iter()
        .map(|e| (e.tag.as_str(), e.identity.as_str(), e.sql.as_str()))
        .collect()
}

/// The contents of the `ddl_sync` logical messages a plain pgoutput slot sees (records, and the
/// empty padding after those written in a subtransaction).
fn ddl_sync_messages(pg: &ddl_testkit::Cluster, slot: &str, publications: &str) -> Vec<Vec<u8>> {
    let hex = peek_hex(
        pg,
        slot,
        &[
            ("proto_version", "1"),
            ("publication_names", publications),
            ("messages", "true"),
        ],
    )
    .expect("peek");
    let ctx = ProtocolContext::new(1, Streaming::Off).unwrap();
    hex_messages(&hex)
        .iter()
        .filter_map(
            |bytes| match Message::parse(bytes, &ctx).expect("a message") {
                Message::LogicalMessage(m) if m.prefix().as_bytes() == b"ddl_sync" => {
                    Some(m.content().to_vec())
                }
                _ => None,
            },
        )
        .collect()
}

#[test]
fn schema_and_regex_rules_give_each_publication_its_own_ddl() {
    let pg = capture_publisher("capture-rules");
    pg.psql(
        "postgres",
        "CREATE SCHEMA app;
         CREATE SCHEMA audit;
         -- p1: no DDL, except everything in schema app.
         CREATE PUBLICATION p1 FOR ALL TABLES WITH (ddl = 'none');
         SELECT ddl_sync.add_schema_rule('p1', 'app');
         -- p2: tables and indexes, but nothing whose identity mentions secret, nothing in audit.
         CREATE PUBLICATION p2 FOR ALL TABLES WITH (ddl = 'table');
         SELECT ddl_sync.set_publication_ddl('p2', 'table, index', 'exclude identity ~ ''secret''');
         SELECT ddl_sync.add_schema_rule('p2', 'audit', 'none');
         SELECT pg_create_logical_replication_slot('s1', 'ddl_pgoutput');
         SELECT pg_create_logical_replication_slot('s2', 'ddl_pgoutput');
         SELECT pg_create_logical_replication_slot('raw', 'pgoutput');",
    )
    .expect("setup");
    assert_eq!(
        pg.psql(
            "postgres",
            "SELECT string_agg(publication || ' ' || level || ' ' || coalesce(target, '-') || ' ' \
                    || ddl || ' ' || coalesce(rules, '-'), '; ' ORDER BY publication, rule)
               FROM ddl_sync.publication_ddl_config"
        )
        .unwrap(),
        "p1 publication - none -; p1 schema app all -; \
         p2 publication - table, index exclude identity ~ 'secret'; p2 schema audit none -"
    );
    pg.psql(
        "postgres",
        "CREATE TABLE app.orders (id int);
         CREATE TABLE app.secret_keys (k text);
         CREATE INDEX orders_id ON app.orders (id);
         CREATE VIEW app.order_ids AS SELECT id FROM app.orders;
         CREATE TABLE public.plain (a int);
         CREATE TABLE public.secret_plain (a int);
         CREATE TABLE audit.log (a int);
         CREATE INDEX log_a ON audit.log (a);
         ALTER TABLE app.orders ADD COLUMN note text;",
    )
    .expect("workload");

    let create_orders = (
        "CREATE TABLE",
        "app.orders",
        "CREATE TABLE app.orders (id int)",
    );
    let secret_keys = (
        "CREATE TABLE",
        "app.secret_keys",
        "CREATE TABLE app.secret_keys (k text)",
    );
    let index = (
        "CREATE INDEX",
        "app.orders_id",
        "CREATE INDEX orders_id ON app.orders (id)",
    );
    let view = (
        "CREATE VIEW",
        "app.order_ids",
        "CREATE VIEW app.order_ids AS SELECT id FROM app.orders",
    );
    let plain = (
        "CREATE TABLE",
        "public.plain",
        "CREATE TABLE public.plain (a int)",
    );
    let alter = (
        "ALTER TABLE",
        "app.orders",
        "ALTER TABLE app.orders ADD COLUMN note text",
    );

    let p1 = events(&pg, "s1", "p1");
    assert_eq!(
        summary(&p1),
        [create_orders, secret_keys, index, view, alter],
        "p1 takes schema app, every kind"
    );
    let p2 = events(&pg, "s2", "p2");
    assert_eq!(
        summary(&p2),
        [create_orders, index, plain, alter],
        "p2 takes tables and indexes, no secret, nothing in audit"
    );
    // A client of both publications gets the union, once each, in order.
    let both = events(&pg, "s2", "p1,p2");
    assert_eq!(
        summary(&both),
        [create_orders, secret_keys, index, view, plain, alter]
    );
    // Statements no publication takes (public.secret_plain, audit.log, log_a) wrote no record.
    let records: Vec<String> = ddl_sync_messages(&pg, "raw", "p1")
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| DdlRecord::parse(m).expect("a valid record").sql.to_string())
        .collect();
    assert_eq!(
        records,
        [
            create_orders.2,
            secret_keys.2,
            index.2,
            view.2,
            plain.2,
            alter.2
        ]
    );
}

#[test]
fn ddl_run_by_plpgsql_functions_is_nested() {
    let pg = setup("capture-plpgsql", "all");
    pg.psql(
        "postgres",
        "CREATE FUNCTION make_index() RETURNS void LANGUAGE plpgsql AS $$
         BEGIN
             CREATE INDEX fn_static_a ON fn_static (a);
         END $$;
         CREATE FUNCTION make_things(n int) RETURNS void LANGUAGE plpgsql AS $$
         BEGIN
             CREATE TABLE fn_static (a int);
             EXECUTE format('CREATE TABLE fn_dynamic_%s (a int)', n);
             PERFORM make_index();
         END $$;
         BEGIN;
         INSERT INTO t VALUES (1);
         SELECT make_things(7);
         INSERT INTO t VALUES (2);
         COMMIT;",
    )
    .expect("workload");
    let got = changes(&pg, "s", "p", &[]);
    let ddl: Vec<(&str, &str, bool)> = got
        .iter()
        .filter_map(|c| match c {
            Change::Ddl(d) => Some((d.tag.as_str(), d.identity.as_str(), d.top_level)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ddl,
        [
            ("CREATE FUNCTION", "public.make_index()", true),
            ("CREATE FUNCTION", "public.make_things(integer)", true),
            ("CREATE TABLE", "public.fn_static", false),
            ("CREATE TABLE", "public.fn_dynamic_7", false),
            ("CREATE INDEX", "public.fn_static_a", false),
        ],
        "{got:#?}"
    );
    let sql = ddl_sql(&got);
    assert!(
        sql[0].starts_with("CREATE FUNCTION make_index() RETURNS void"),
        "{sql:?}"
    );
    assert_eq!(
        sql[2..],
        [
            "CREATE TABLE fn_static (a int)",
            "CREATE TABLE fn_dynamic_7 (a int)",
            "CREATE INDEX fn_static_a ON fn_static (a)"
        ]
    );
    // The nested DDL sits between the rows of its transaction.
    let body: Vec<&Change> = got
        .iter()
        .skip_while(|c| !matches!(c, Change::Insert { .. }))
        .collect();
    assert!(
        matches!(
            body.as_slice(),
            [
                Change::Insert { .. },
                Change::Ddl(_),
                Change::Ddl(_),
                Change::Ddl(_),
                Change::Insert { .. },
                Change::Commit
            ]
        ),
        "{got:#?}"
    );
}

#[test]
fn rename_drop_and_comment_are_captured_but_not_temporary_drops() {
    let pg = setup("capture-rename-drop", "all");
    pg.psql(
        "postgres",
        "CREATE TABLE old_name (a int);
         ALTER TABLE old_name RENAME TO new_name;
         ALTER TABLE new_name RENAME COLUMN a TO b;
         COMMENT ON TABLE new_name IS 'renamed';
         DROP TABLE new_name;",
    )
    .unwrap();
    // One session: the temporary table lives until its DROP.
    pg.psql(
        "postgres",
        "CREATE TEMP TABLE tmp (a int);
         INSERT INTO tmp VALUES (1);
         DROP TABLE tmp;",
    )
    .unwrap();
    pg.psql("postgres", "CREATE TABLE marker (a int)").unwrap();
    let got = events(&pg, "s", "p");
    assert_eq!(
        summary(&got),
        [
            (
                "CREATE TABLE",
                "public.old_name",
                "CREATE TABLE old_name (a int)"
            ),
            (
                "ALTER TABLE",
                "public.new_name",
                "ALTER TABLE old_name RENAME TO new_name"
            ),
            (
                "ALTER TABLE",
                "public.new_name.b",
                "ALTER TABLE new_name RENAME COLUMN a TO b"
            ),
            (
                "COMMENT",
                "public.new_name",
                "COMMENT ON TABLE new_name IS 'renamed'"
            ),
            ("DROP TABLE", "public.new_name", "DROP TABLE new_name"),
            (
                "CREATE TABLE",
                "public.marker",
                "CREATE TABLE marker (a int)"
            ),
        ]
    );
    assert!(got.iter().all(|e| e.kind == "table"), "{got:#?}");
}

#[test]
fn a_drop_of_a_permanent_and_a_temporary_table_is_captured_in_either_order() {
    let pg = setup("capture-mixed-drop", "all");
    pg.psql(
        "postgres",
        "CREATE TABLE perm_a (a int); CREATE TABLE perm_b (a int);",
    )
    .unwrap();
    pg.psql(
        "postgres",
        "CREATE TEMP TABLE tmp_a (a int); DROP TABLE tmp_a, perm_a;
         CREATE TEMP TABLE tmp_b (a int); DROP TABLE perm_b, tmp_b;",
    )
    .unwrap();
    pg.psql("postgres", "CREATE TABLE marker (a int)").unwrap();
    let drops: Vec<(String, String)> = events(&pg, "s", "p")
        .into_iter()
        .filter(|e| e.tag == "DROP TABLE")
        .map(|e| (e.identity, e.sql))
        .collect();
    // Each statement dropped a permanent table: the subscriber must hear of both.
    assert_eq!(
        drops.len(),
        2,
        "DROP of a permanent and a temporary table: {drops:?}"
    );
    assert!(
        drops
            .iter()
            .all(|(identity, _)| identity.starts_with("public.perm_")),
        "the identity must be the permanent table: {drops:?}"
    );
}

#[test]
fn role_and_search_path_are_recorded() {
    let pg = capture_publisher("capture-role");
    pg.psql(
        "postgres",
        "CREATE ROLE alice;
         CREATE SCHEMA app;
         GRANT USAGE, CREATE ON SCHEMA app TO alice;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    )
    .unwrap();
    pg.psql(
        "postgres",
        "SET ROLE alice;
         SET search_path = app, public;
         CREATE TABLE owned (a int);
         RESET ROLE;
         CREATE TABLE by_postgres_in_app (a int);
         RESET search_path;
         CREATE TABLE by_postgres (a int);",
    )
    .unwrap();
    let got = events(&pg, "s", "p");
    let seen: Vec<_> = got
        .iter()
        .map(|e| {
            (
                e.identity.as_str(),
                e.role.as_str(),
                e.session_user.as_str(),
                e.search_path.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("app.owned", "alice", "postgres", "app, public"),
            (
                "app.by_postgres_in_app",
                "postgres",
                "postgres",
                "app, public"
            ),
            (
                "public.by_postgres",
                "postgres",
                "postgres",
                "\"$user\", public"
            ),
        ]
    );
    assert_eq!(
        pg.psql(
            "postgres",
            "SELECT tableowner FROM pg_tables WHERE tablename = 'owned'"
        )
        .unwrap(),
        "alice"
    );
}

#[test]
fn no_wal_at_all_for_ddl_no_publication_asks_for() {
    let pg = capture_publisher("capture-no-wal");
    pg.psql(
        "postgres",
        "CREATE EXTENSION pg_walinspect;
         CREATE PUBLICATION q FOR ALL TABLES WITH (ddl = 'index');
         SELECT pg_create_logical_replication_slot('raw', 'pgoutput');",
    )
    .unwrap();
    let lsn = || {
        pg.psql("postgres", "SELECT pg_current_wal_insert_lsn()")
            .unwrap()
    };
    let start = lsn();
    pg.psql("postgres", "CREATE TABLE x (a int)").unwrap();
    let middle = lsn();
    pg.psql("postgres", "CREATE INDEX x_a ON x (a)").unwrap();
    let end = lsn();
    let logical_messages = |from: &str, to: &str| {
        pg.psql(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_get_wal_records_info('{from}', '{to}') \
                 WHERE resource_manager = 'LogicalMessage'"
            ),
        )
        .unwrap()
    };
    // CREATE TABLE: no publication takes tables, so no message reached the WAL.
    assert_eq!(logical_messages(&start, &middle), "0");
    // CREATE INDEX: its record (at the top level: no padding after it).
    assert_eq!(logical_messages(&middle, &end), "1");
    // In a subtransaction: its record and the padding after it.
    pg.psql(
        "postgres",
        "BEGIN; SAVEPOINT s; CREATE INDEX x_a2 ON x (a); RELEASE s; COMMIT;",
    )
    .unwrap();
    assert_eq!(logical_messages(&end, &lsn()), "2");

    // A plain pgoutput client that asks for messages sees the same.
    let messages = ddl_sync_messages(&pg, "raw", "q");
    assert_eq!(messages.len(), 3, "{messages:?}");
    for (message, sql) in messages
        .iter()
        .zip(["CREATE INDEX x_a ON x (a)", "CREATE INDEX x_a2 ON x (a)"])
    {
        let record = DdlRecord::parse(message).expect("a valid record");
        assert_eq!(
            (record.command_tag, record.kind, record.sql),
            ("CREATE INDEX", "index", sql)
        );
    }
    assert!(
        messages[2].is_empty(),
        "padding after the subtransaction's record"
    );
    // A record at the top level that a subtransaction follows at once: the padding is written
    // as the subtransaction starts (not transactional: it has no xid yet).
    let before = lsn();
    pg.psql(
        "postgres",
        "BEGIN; CREATE INDEX x_a3 ON x (a); SAVEPOINT s; INSERT INTO x VALUES (1); RELEASE s; \
         COMMIT;",
    )
    .unwrap();
    assert_eq!(logical_messages(&before, &lsn()), "2");
}

#[test]
fn the_pure_crates_log_through_the_server_log_at_its_levels() {
    let pg = setup("capture-tracing", "table");
    // ddl-filter logs through `tracing` when the capture builds a publication's rule set: a
    // DEBUG1 line, shown only when asked for.
    let (ok, quiet) = ddl_e2e::psql_verbose(&pg, "postgres", "CREATE TABLE quiet (a int);");
    assert!(ok, "{quiet}");
    assert!(!quiet.contains("ddl_filter"), "{quiet}");
    let (ok, debug) = ddl_e2e::psql_verbose(
        &pg,
        "postgres",
        "SET client_min_messages = debug1; CREATE TABLE loud (a int);",
    );
    assert!(ok, "{debug}");
    assert!(
        debug.contains("DEBUG:  00000: ddl_filter::ruleset: DDL rule set built kinds=table"),
        "{debug}"
    );
}

/// The extension's event triggers fire only while a publication takes DDL: PostgreSQL collects
/// no command for a database that replicates none. The first DDL publication enables them for
/// the statements after it, in its own transaction too; dropping the last disables them.
#[test]
fn the_capture_fires_only_while_a_publication_takes_ddl() {
    let pg = capture_publisher("capture-follows");
    let states = || {
        pg.psql(
            "postgres",
            "SELECT string_agg(evtname || ' ' || evtenabled::text, ', ' ORDER BY evtname)
               FROM pg_event_trigger WHERE evtname LIKE 'ddl\\_sync\\_%'",
        )
        .expect("event triggers")
    };
    let off = "ddl_sync_capture_ddl_command_end D, ddl_sync_capture_sql_drop D, \
               ddl_sync_register_peer_tables D";
    let on = "ddl_sync_capture_ddl_command_end A, ddl_sync_capture_sql_drop A, \
              ddl_sync_register_peer_tables D";
    assert_eq!(states(), off, "no publication takes DDL");
    pg.psql(
        "postgres",
        "CREATE TABLE t (id int PRIMARY KEY);
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');
         BEGIN;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         ALTER TABLE t ADD COLUMN note text;
         COMMIT;",
    )
    .expect("publication");
    assert_eq!(states(), on);
    assert_eq!(
        summary(&events(&pg, "s", "p")),
        vec![(
            "ALTER TABLE",
            "public.t",
            "ALTER TABLE t ADD COLUMN note text"
        )],
        "the statement after the publication, in its transaction, is captured"
    );
    pg.psql("postgres", "DROP PUBLICATION p").expect("drop");
    assert_eq!(states(), off, "the last DDL publication dropped");
    pg.psql(
        "postgres",
        "CREATE PUBLICATION q FOR ALL TABLES; CREATE PUBLICATION r FOR ALL TABLES WITH (ddl = 'table');",
    )
    .expect("publications");
    assert_eq!(
        states(),
        on,
        "a publication without DDL changes nothing, one with DDL does"
    );
}

/// The capture keeps the publications' rules and the session's role names and settings between
/// statements (ddl-capture's `invalidation`): what another session, or this one, changes
/// afterwards is what the next statement's record follows.
#[test]
fn the_capture_follows_rules_roles_and_settings_changed_after_it_read_them() {
    let pg = capture_publisher("capture-cached");
    pg.psql(
        "postgres",
        "CREATE ROLE carol;
         CREATE SCHEMA app;
         GRANT USAGE, CREATE ON SCHEMA app TO carol;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'table');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    )
    .unwrap();
    let mut session = Session::open(&pg, "cached");
    session.run("CREATE TABLE one (a int); CREATE VIEW v1 AS SELECT 1 AS x;");
    // Another session widens the rules: the open one's next statement follows.
    pg.psql("postgres", "ALTER PUBLICATION p SET (ddl = 'table, view')")
        .unwrap();
    session.run("CREATE VIEW v2 AS SELECT 2 AS x;");
    session.run("SET ROLE carol; CREATE TABLE app.two (a int); RESET ROLE;");
    // The same role (the same OID) under a new name.
    pg.psql("postgres", "ALTER ROLE carol RENAME TO dave")
        .unwrap();
    session.run("SET ROLE dave; CREATE TABLE app.three (a int); RESET ROLE;");
    session.run("SET DateStyle = 'German, DMY'; CREATE TABLE four (a int);");
    // Settings behind variables of their own, and one read by name, each followed.
    session.run("SET array_nulls = off; CREATE TABLE four_a (a int);");
    session.run("SET timezone_abbreviations = 'India'; CREATE TABLE four_b (a int);");
    // This session narrows them again, in a transaction that goes on with DDL.
    session.run(
        "BEGIN; ALTER PUBLICATION p SET (ddl = 'view'); CREATE TABLE five (a int);
         CREATE VIEW v3 AS SELECT 3 AS x; COMMIT;",
    );
    drop(session);
    let got = events(&pg, "s", "p");
    let seen: Vec<(&str, &str)> = got
        .iter()
        .map(|e| (e.identity.as_str(), e.role.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("public.one", "postgres"),
            ("public.v2", "postgres"),
            ("app.two", "carol"),
            ("app.three", "dave"),
            ("public.four", "postgres"),
            ("public.four_a", "postgres"),
            ("public.four_b", "postgres"),
            ("public.v3", "postgres"),
        ]
    );
    let date_style = |e: &Ddl| {
        e.settings
            .lines()
            .find_map(|l| l.strip_prefix("DateStyle="))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(date_style(&got[3]), "ISO, MDY");
    assert_eq!(date_style(&got[4]), "German, DMY");
    assert_eq!(date_style(&got[7]), "German, DMY");
    let has = |e: &Ddl, setting: &str| e.settings.lines().any(|l| l == setting);
    assert!(has(&got[4], "array_nulls=on") && has(&got[4], "timezone_abbreviations=Default"));
    assert!(has(&got[5], "array_nulls=off") && has(&got[5], "timezone_abbreviations=Default"));
    assert!(has(&got[6], "array_nulls=off") && has(&got[6], "timezone_abbreviations=India"));
}

/// The output plugin keeps a publication's rules between DDL events: what it keeps must be the
/// rules at the point of the history being decoded, whichever way they changed (another
/// transaction, earlier in the same transaction, a savepoint rolled back), within one decoding
/// call and when a later call in the same session decodes the same history again.
#[test]
fn the_plugin_reads_each_publications_rules_as_they_were_where_it_decodes() {
    let pg = capture_publisher("capture-plugin-rules");
    pg.psql(
        "postgres",
        "CREATE SCHEMA app;
         -- Takes everything, so that the capture records every statement below.
         CREATE PUBLICATION everything FOR ALL TABLES WITH (ddl = 'all');
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'table');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    )
    .unwrap();
    pg.psql(
        "postgres",
        "CREATE TABLE a1 (a int);
         ALTER PUBLICATION p SET (ddl = 'view');
         CREATE TABLE a2 (a int);
         CREATE VIEW v1 AS SELECT 1 AS x;
         BEGIN;
         ALTER PUBLICATION p SET (ddl = 'table');
         CREATE TABLE a3 (a int);
         ALTER PUBLICATION p SET (ddl = 'none');
         CREATE TABLE a4 (a int);
         COMMIT;
         BEGIN;
         SAVEPOINT s;
         ALTER PUBLICATION p SET (ddl = 'all');
         ROLLBACK TO s;
         CREATE TABLE a5 (a int);
         COMMIT;
         SELECT ddl_sync.add_schema_rule('p', 'app');
         CREATE TABLE app.a6 (a int);
         CREATE TABLE a7 (a int);
         ALTER PUBLICATION p SET (ddl = 'view');
         CREATE TABLE a8 (a int);
         CREATE VIEW v2 AS SELECT 2 AS x;",
    )
    .unwrap();
    let expected = ["public.a1", "public.v1", "public.a3", "app.a6", "public.v2"];
    // Two decoding calls in one session, separated by a marker row: the second starts where
    // the rules were not those of the end (p took tables, not views).
    let peek = "SELECT encode(data, 'hex') FROM pg_logical_slot_peek_binary_changes('s', NULL, \
                NULL, 'proto_version', '1', 'publication_names', 'p')";
    let out = pg
        .psql("postgres", &format!("{peek}; SELECT 'again'; {peek};"))
        .unwrap();
    let (first, second) = out.split_once("again").expect("the marker");
    for (call, hex) in [("first", first), ("second", second)] {
        let identities: Vec<String> = changes_of_hex(hex)
            .into_iter()
            .filter_map(|c| match c {
                Change::Ddl(d) => Some(d.identity),
                _ => None,
            })
            .collect();
        assert_eq!(identities, expected, "{call} decoding call");
    }
    // Every statement was recorded (the other publication takes them all): the ones p left
    // out were there to be taken.
    let all: Vec<String> = events(&pg, "s", "everything")
        .into_iter()
        .map(|e| e.identity)
        .collect();
    for table in ["a1", "a2", "a3", "a4", "a5", "a7", "a8"] {
        assert!(all.contains(&format!("public.{table}")), "{table}: {all:?}");
    }
    for other in ["public.v1", "app.a6", "public.v2"] {
        assert!(all.contains(&other.to_string()), "{other}: {all:?}");
    }
}

/// The capture takes the object of a CREATE TABLE, an ALTER TABLE ... ADD COLUMN and a DROP
/// from the object access hook and the statement itself instead of PostgreSQL's command
/// collection (ddl-capture's `direct.rs` and `objects.rs`). What it records must be what the
/// collection says: two PL/pgSQL event triggers write down the collection's own rows for each
/// statement, and the records must agree, where names would resolve wrongly if they were
/// looked up (a temporary table of the same name first on the search_path, a name that
/// pg_catalog also has, quoting), with inheritance and partitions (the hook sees the children's
/// columns too), schema-qualified names, IF [NOT] EXISTS that do nothing, and DROPs of every
/// sort, CASCADE included (only the objects the statement named).
#[test]
fn what_the_capture_reads_without_the_command_collection_is_what_the_collection_says() {
    let pg = setup("capture-direct", "all");
    pg.psql(
        "postgres",
        "CREATE TABLE collected (id bigint GENERATED ALWAYS AS IDENTITY, tag text, identity text,
                                 schema text);
         CREATE FUNCTION note_commands() RETURNS event_trigger LANGUAGE plpgsql AS $$
         BEGIN
             INSERT INTO collected (tag, identity, schema)
             SELECT command_tag, object_identity, schema_name FROM pg_event_trigger_ddl_commands()
              WHERE command_tag IN ('CREATE TABLE', 'ALTER TABLE');
         END $$;
         CREATE FUNCTION note_drops() RETURNS event_trigger LANGUAGE plpgsql AS $$
         BEGIN
             INSERT INTO collected (tag, identity, schema)
             SELECT tg_tag, object_identity, schema_name FROM pg_event_trigger_dropped_objects()
              WHERE original ORDER BY object_identity LIMIT 1;
         END $$;
         CREATE EVENT TRIGGER note_commands ON ddl_command_end EXECUTE FUNCTION note_commands();
         CREATE EVENT TRIGGER note_drops ON sql_drop EXECUTE FUNCTION note_drops();",
    )
    .unwrap();
    // One session: the temporary table shadows `shadow` until the session ends.
    pg.psql(
        "postgres",
        r#"CREATE SCHEMA s2;
           CREATE TEMP TABLE shadow (a int);
           CREATE TABLE shadow (a int);
           CREATE TABLE IF NOT EXISTS shadow (a int);
           CREATE TABLE public.pg_class (a int);
           CREATE TABLE "Quoted Name" (a serial);
           ALTER TABLE "Quoted Name" ADD COLUMN "Mixed Case" int;
           CREATE TABLE parent (id int);
           CREATE TABLE child () INHERITS (parent);
           ALTER TABLE parent ADD COLUMN v int, ADD COLUMN w int DEFAULT 1;
           ALTER TABLE child ADD COLUMN x int;
           ALTER TABLE parent ADD COLUMN IF NOT EXISTS v int;
           CREATE TABLE s2.q (a int);
           ALTER TABLE s2.q ADD COLUMN b text;
           CREATE TABLE pt (a int) PARTITION BY RANGE (a);
           CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (1) TO (10);
           ALTER TABLE pt ADD COLUMN c int;
           ALTER TABLE pt1 ALTER COLUMN c SET NOT NULL;
           CREATE VIEW v AS SELECT 1 AS one;
           CREATE FUNCTION f(int) RETURNS int LANGUAGE sql AS 'SELECT $1';
           CREATE TYPE ty AS (a int);
           DROP TABLE IF EXISTS nosuch, shadow;
           DROP TABLE public.shadow;
           DROP VIEW v;
           DROP FUNCTION f(int);
           DROP TYPE ty;
           DROP TABLE parent CASCADE;
           DROP TABLE pt;
           DROP TABLE "Quoted Name", public.pg_class;
           DROP SCHEMA s2 CASCADE;"#,
    )
    .unwrap();
    pg.psql("postgres", "CREATE TABLE marker (a int)").unwrap();
    let collected = pg
        .psql(
            "postgres",
            "SELECT tag || '|' || identity FROM collected
              WHERE coalesce(schema, '') NOT LIKE 'pg_temp%' AND identity <> 'public.marker'
              ORDER BY id",
        )
        .unwrap();
    let collected: Vec<&str> = collected.lines().collect();
    let recorded: Vec<String> = events(&pg, "s", "p")
        .into_iter()
        .filter(|e| {
            (e.tag.starts_with("CREATE TABLE")
                || e.tag == "ALTER TABLE"
                || e.tag.starts_with("DROP"))
                && !e.identity.starts_with("public.collected")
                && e.identity != "public.marker"
        })
        .map(|e| format!("{}|{}", e.tag, e.identity))
        .collect();
    assert_eq!(recorded, collected, "records, then the collection's rows");
    assert!(
        recorded.contains(&r#"ALTER TABLE|public."Quoted Name""#.to_string())
            && recorded.contains(&"DROP TABLE|public.parent".to_string())
            && recorded.contains(&"DROP SCHEMA|s2".to_string()),
        "{recorded:#?}"
    );
}

/// Without `ddl_pgoutput` preloaded, the library is loaded by the first event trigger that
/// fires in a backend: the statement that loads it ran before its object access hook existed,
/// so its drops are read from `pg_event_trigger_dropped_objects()`; from the next statement on,
/// the hook reports them. Either way the rows about a dropped publication go with it.
#[test]
fn rules_of_dropped_publications_go_with_them_whether_the_hook_saw_the_drop_or_not() {
    let pg = ddl_testkit::ClusterBuilder::new()
        .name("capture-not-preloaded")
        .build()
        .expect("cluster");
    pg.psql(
        "postgres",
        "CREATE EXTENSION ddl_sync;
         CREATE PUBLICATION first FOR ALL TABLES;
         CREATE PUBLICATION second FOR ALL TABLES;
         SELECT ddl_sync.set_publication_ddl('first', 'all');
         SELECT ddl_sync.set_publication_ddl('second', 'all');",
    )
    .unwrap();
    let rows = |pg: &ddl_testkit::Cluster| {
        pg.psql(
            "postgres",
            "SELECT p.pubname FROM ddl_sync.publication_sync s
               JOIN pg_publication p ON p.oid = s.pfsyncpubid ORDER BY 1",
        )
        .unwrap()
    };
    assert_eq!(rows(&pg).trim(), "first\nsecond");
    // One new session: the first DROP loads the library from its sql_drop trigger, the second
    // runs with the hook installed.
    let loaded = pg
        .psql(
            "postgres",
            "SELECT count(*) FROM pg_catalog.pg_proc WHERE false;
             DROP PUBLICATION first;
             DROP PUBLICATION second;
             SELECT count(*) FROM ddl_sync.publication_sync;",
        )
        .unwrap();
    assert_eq!(loaded.lines().last().map(str::trim), Some("0"), "{loaded}");
    assert_eq!(rows(&pg).trim(), "");
}
