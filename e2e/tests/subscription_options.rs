//! `CREATE/ALTER SUBSCRIPTION ... WITH (ddl = ..., ddl_conflict = ...)` with `ddl_sync` in the
//! subscriber's `shared_preload_libraries`: the slot is made with `ddl_pgoutput`, the
//! configuration is stored, the kinds are checked against the publisher, and DDL replicates
//! with no other step.

use ddl_e2e::{create_subscription, ddl_publisher, ddl_subscriber, psql_verbose, wait_for};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

fn query(pg: &Cluster, sql: &str) -> String {
    pg.psql("postgres", sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A publisher with table `t` and publication `p` (FOR ALL TABLES) replicating `ddl`.
fn publisher(name: &str, ddl: &str) -> Cluster {
    let publisher = ddl_publisher(name);
    query(
        &publisher,
        &format!(
            "CREATE TABLE t (id int PRIMARY KEY);
             CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = '{ddl}');"
        ),
    );
    publisher
}

/// The publisher's slots and their plugins, without the table sync workers' own.
fn slots(publisher: &Cluster) -> String {
    query(
        publisher,
        "SELECT coalesce(string_agg(slot_name || ' ' || plugin, ', ' ORDER BY slot_name), '')
           FROM pg_replication_slots WHERE slot_name !~ '^pg_[0-9]+_sync_'",
    )
}

fn stored(subscriber: &Cluster) -> String {
    query(
        subscriber,
        "SELECT coalesce(string_agg(s.subname || ' ' || ddl_sync.format_ddl_kinds(d.ddl) || ' ' || d.conflict, ', '), '')
           FROM ddl_sync.subscription_ddl d LEFT JOIN pg_subscription s ON s.oid = d.subid",
    )
}

#[test]
fn create_subscription_with_ddl_makes_a_ddl_pgoutput_slot_and_ddl_replicates() {
    let publisher = publisher("subopt-create-pub", "all");
    // Both hooks in one server: ddl_pgoutput's (publications) and ddl_sync's (subscriptions).
    let subscriber = ddl_subscriber("subopt-create-sub", &["ddl_pgoutput", "ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");

    let (ok, messages) = create_subscription(
        &subscriber,
        "postgres",
        &publisher,
        "ddl = 'all', ddl_conflict = 'skip'",
    );
    assert!(ok, "{messages}");
    assert!(
        messages.contains("NOTICE:  00000: created replication slot \"sub\" on publisher"),
        "{messages}"
    );
    assert_eq!(slots(&publisher), "sub ddl_pgoutput");
    assert_eq!(stored(&subscriber), "sub all skip");
    // The events table is ready at once: its table sync would lose the DDL sent meanwhile.
    assert_eq!(
        query(
            &subscriber,
            "SELECT srsubstate FROM pg_subscription_rel WHERE srrelid = 'ddl_sync.events'::regclass"
        ),
        "r"
    );
    // Statements that are not theirs pass through both hooks, also ROLLBACK of a failed
    // transaction (a state in which no catalog may be read).
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        "\\set ON_ERROR_STOP 0\nBEGIN; SELECT 1/0; ROLLBACK; SELECT 1;",
    );
    assert!(
        ok && messages.contains("division by zero") && !messages.contains("server closed"),
        "{messages}"
    );
    // The other hook still takes its own option on this server.
    query(
        &subscriber,
        "CREATE PUBLICATION local_p FOR TABLE t WITH (ddl = 'table')",
    );

    // The table sync of t (copy_data) uses a pgoutput slot of its own: let it finish first.
    wait_for("every table ready", TIMEOUT, || {
        match query(
            &subscriber,
            "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'",
        )
        .as_str()
        {
            "0" => Ok(()),
            n => Err(format!("{n} not ready")),
        }
    });
    query(
        &publisher,
        "INSERT INTO t VALUES (1);
         ALTER TABLE t ADD COLUMN note text;
         INSERT INTO t VALUES (2, 'two');
         CREATE TABLE fresh (id int PRIMARY KEY);
         INSERT INTO fresh VALUES (7);",
    );
    wait_for("the DDL and rows on the subscriber", TIMEOUT, || {
        let got = subscriber
            .psql(
                "postgres",
                "SELECT (SELECT string_agg(id || ':' || coalesce(note, '-'), ',' ORDER BY id) FROM t)
                        || ' ' || (SELECT string_agg(id::text, ',') FROM fresh)",
            )
            .map_err(|e| e.to_string())?;
        if got == "1:-,2:two 7" {
            Ok(())
        } else {
            Err(format!("{got}\n{}", subscriber.log_tail(10)))
        }
    });

    // DROP SUBSCRIPTION drops the slot as usual, and the configuration row goes too.
    query(&subscriber, "DROP SUBSCRIPTION sub");
    assert_eq!(slots(&publisher), "");
    assert_eq!(stored(&subscriber), "");
}

#[test]
fn bad_options_and_mismatched_kinds_are_errors_that_leave_nothing_behind() {
    let publisher = publisher("subopt-errors-pub", "table, index");
    // A database of the publisher without ddl_sync, and a pgoutput slot made by hand.
    query(&publisher, "CREATE DATABASE plain");
    publisher
        .psql("plain", "CREATE PUBLICATION p FOR ALL TABLES")
        .expect("plain publication");
    query(
        &publisher,
        "SELECT pg_create_logical_replication_slot('by_hand', 'pgoutput')",
    );
    let subscriber = ddl_subscriber("subopt-errors-sub", &["ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");
    query(&subscriber, "CREATE DATABASE no_extension");

    let cases: Vec<(&str, String, String)> = vec![
        (
            "postgres",
            "ddl = 'table, tabel'".into(),
            "ERROR:  22023: invalid value for subscription parameter \"ddl\": unknown ddl kind \"tabel\" (valid: table, index".into(),
        ),
        (
            "postgres",
            "ddl = 'all', ddl_conflict = 'ignore'".into(),
            "ERROR:  22023: invalid value for subscription parameter \"ddl_conflict\": unknown conflict policy \"ignore\" (valid: error, skip)".into(),
        ),
        (
            "postgres",
            "ddl_conflict = 'skip'".into(),
            "ERROR:  22023: subscription parameter \"ddl_conflict\" requires \"ddl\"".into(),
        ),
        (
            "postgres",
            "ddl = 'all', ddl = 'table'".into(),
            "ERROR:  42601: conflicting or redundant options".into(),
        ),
        (
            "no_extension",
            "ddl = 'all'".into(),
            "ERROR:  55000: subscription parameter \"ddl\" requires the ddl_sync extension".into(),
        ),
        (
            "postgres",
            "ddl = 'table, view, function'".into(),
            "ERROR:  55000: subscription \"sub\" asks for DDL of kinds that none of its publications replicates: view, function".into(),
        ),
        (
            "postgres",
            "ddl = 'table', create_slot = false, slot_name = 'by_hand'".into(),
            "ERROR:  55000: replication slot \"by_hand\" on the publisher uses plugin \"pgoutput\", not ddl_pgoutput".into(),
        ),
    ];
    for (db, with, expected) in &cases {
        let (ok, messages) = create_subscription(&subscriber, db, &publisher, with);
        assert!(
            !ok && messages.contains(expected.as_str()),
            "WITH ({with}): {messages}"
        );
    }
    // The kinds mismatch says what the publications do send.
    let (_, messages) = create_subscription(&subscriber, "postgres", &publisher, "ddl = 'view'");
    assert!(
        messages.contains("DETAIL:  Publications p replicate DDL of kinds: table, index."),
        "{messages}"
    );
    // A publisher database without ddl_sync.
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH (ddl = 'all');",
            publisher.connstr("plain")
        ),
    );
    assert!(
        !ok && messages.contains(
            "ERROR:  55000: subscription \"sub\" asks for DDL (ddl = 'all'), but the publisher has no ddl_sync extension"
        ),
        "{messages}"
    );
    // 'all' asks for whatever the publications send: an error only when they send no DDL.
    query(&publisher, "CREATE PUBLICATION rows_only FOR TABLE t");
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION rows_only WITH (ddl = 'all');",
            publisher.connstr("postgres")
        ),
    );
    assert!(
        !ok && messages.contains(
            "ERROR:  55000: subscription \"sub\" asks for DDL, but none of its publications replicates DDL"
        ),
        "{messages}"
    );
    // Creating the slot is refused inside a transaction block, as PostgreSQL's own.
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "BEGIN; CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH (ddl = 'table');",
            publisher.connstr("postgres")
        ),
    );
    assert!(
        !ok && messages.contains(
            "ERROR:  25001: CREATE SUBSCRIPTION ... WITH (create_slot = true) cannot run inside a transaction block"
        ),
        "{messages}"
    );
    // Nothing was left: no subscription, no configuration, no new slot.
    assert_eq!(
        query(&subscriber, "SELECT count(*) FROM pg_subscription"),
        "0"
    );
    assert_eq!(stored(&subscriber), "");
    assert_eq!(slots(&publisher), "by_hand pgoutput");
    // 'all' asks for whatever the publications send: accepted.
    let (ok, messages) = create_subscription(
        &subscriber,
        "postgres",
        &publisher,
        "ddl = 'all', enabled = false",
    );
    assert!(ok, "{messages}");
    assert_eq!(slots(&publisher), "by_hand pgoutput, sub ddl_pgoutput");
}

#[test]
fn alter_subscription_set_changes_the_stored_configuration() {
    let publisher = publisher("subopt-alter-pub", "table, index");
    let subscriber = ddl_subscriber("subopt-alter-sub", &["ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");
    let (ok, messages) = create_subscription(
        &subscriber,
        "postgres",
        &publisher,
        "ddl = 'table', enabled = false",
    );
    assert!(ok, "{messages}");
    assert_eq!(stored(&subscriber), "sub table error");

    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (ddl = 'table, index')",
    );
    assert_eq!(stored(&subscriber), "sub table, index error");
    // ddl_conflict alone keeps the kinds.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (ddl_conflict = 'skip')",
    );
    assert_eq!(stored(&subscriber), "sub table, index skip");
    // With PostgreSQL's own options in the same statement: both are applied.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (ddl = 'index', disable_on_error = true)",
    );
    assert_eq!(stored(&subscriber), "sub index skip");
    assert_eq!(
        query(&subscriber, "SELECT subdisableonerr FROM pg_subscription"),
        "t"
    );
    // Refused like CREATE: a bad token, kinds the publications do not send.
    for (with, expected) in [
        (
            "ddl = 'tabel'",
            "ERROR:  22023: invalid value for subscription parameter \"ddl\": unknown ddl kind \"tabel\"",
        ),
        (
            "ddl = 'table, view'",
            "ERROR:  55000: subscription \"sub\" asks for DDL of kinds that none of its publications replicates: view",
        ),
    ] {
        let (ok, messages) = psql_verbose(
            &subscriber,
            "postgres",
            &format!("ALTER SUBSCRIPTION sub SET ({with});"),
        );
        assert!(!ok && messages.contains(expected), "{with}: {messages}");
    }
    assert_eq!(stored(&subscriber), "sub index skip");
    // Only the owner may change it, like any ALTER SUBSCRIPTION.
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        "CREATE ROLE stranger; SET ROLE stranger; ALTER SUBSCRIPTION sub SET (ddl = 'table');",
    );
    assert!(
        !ok && messages.contains("ERROR:  42501: must be owner of subscription sub"),
        "{messages}"
    );
}

/// A publisher (`{name}-pub`, see [`publisher`]) and a subscriber (`{name}-sub`) with table `t`
/// and subscription `tp` to it: `ddl = 'table'`, `two_phase`, no copy, and `options`.
fn two_phase_pair(name: &str, options: &str) -> (Cluster, Cluster) {
    let publisher = publisher(&format!("{name}-pub"), "all");
    let subscriber = ddl_subscriber(&format!("{name}-sub"), &["ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "CREATE SUBSCRIPTION tp CONNECTION '{}' PUBLICATION p
                 WITH (ddl = 'table', two_phase = true, copy_data = false, {options});",
            publisher.connstr("postgres")
        ),
    );
    assert!(ok, "{messages}");
    (publisher, subscriber)
}

#[test]
fn two_phase_connect_false_and_refresh_follow_postgresql() {
    // two_phase with nothing to copy: the slot is two-phase from the start, as PostgreSQL makes it.
    let (publisher, subscriber) = two_phase_pair("subopt-slots", "enabled = false");
    let connstr = publisher.connstr("postgres");
    assert_eq!(
        query(
            &publisher,
            "SELECT plugin || ' ' || two_phase FROM pg_replication_slots WHERE slot_name = 'tp'"
        ),
        "ddl_pgoutput true"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT subtwophasestate FROM pg_subscription WHERE subname = 'tp'"
        ),
        "e"
    );

    // connect = false: no slot, no relations; the configuration is stored all the same, and
    // the events table is ready as soon as a REFRESH brings it in (copy_data is on there).
    let (ok, messages) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "CREATE SUBSCRIPTION later CONNECTION '{connstr}' PUBLICATION p
                 WITH (ddl = 'all', connect = false);"
        ),
    );
    assert!(ok, "{messages}");
    assert_eq!(slots(&publisher), "tp ddl_pgoutput");
    assert_eq!(stored(&subscriber), "tp table error, later all error");
    query(
        &publisher,
        "SELECT pg_create_logical_replication_slot('later', 'ddl_pgoutput')",
    );
    query(&subscriber, "ALTER SUBSCRIPTION later ENABLE");
    query(&subscriber, "ALTER SUBSCRIPTION later REFRESH PUBLICATION");
    assert_eq!(
        query(
            &subscriber,
            "SELECT srsubstate FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
              WHERE s.subname = 'later' AND srrelid = 'ddl_sync.events'::regclass"
        ),
        "r"
    );
}

/// PostgreSQL 17 and later: `failover = true` makes the slot a failover slot, as PostgreSQL's
/// own slot creation would, and ALTER SUBSCRIPTION changes it on our slot too.
#[test]
fn failover_makes_a_failover_slot() {
    let publisher = publisher("subopt-failover-pub", "all");
    let version: u32 = query(&publisher, "SHOW server_version_num")
        .parse()
        .unwrap();
    if version < 170000 {
        println!("failover: PostgreSQL {version} has no failover slots");
        return;
    }
    let subscriber = ddl_subscriber("subopt-failover-sub", &["ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");
    let (ok, said) = create_subscription(
        &subscriber,
        "postgres",
        &publisher,
        "ddl = 'all', failover = true",
    );
    assert!(ok, "{said}");
    let failover =
        "SELECT plugin || ' ' || failover FROM pg_replication_slots WHERE slot_name = 'sub'";
    assert_eq!(query(&publisher, failover), "ddl_pgoutput true");
    // Each its own transaction: changing failover alters the slot on the publisher.
    query(&subscriber, "ALTER SUBSCRIPTION sub DISABLE");
    query(&subscriber, "ALTER SUBSCRIPTION sub SET (failover = false)");
    assert_eq!(query(&publisher, failover), "ddl_pgoutput false");
}

/// DDL in transactions prepared on the publisher, on a `two_phase` subscription: the worker
/// prepares each here too, and applies what commits meanwhile (DDL included, whose counts it
/// writes while a prepared transaction holds its own), then commits or rolls back each as the
/// publisher did. A committed one counts at once, and its counts join its subscription's row
/// at the next DDL; a rolled-back one takes its statement, apply log row and counts with it.
#[test]
fn ddl_in_prepared_transactions_replicates_as_they_end() {
    let (publisher, subscriber) = two_phase_pair("subopt-2pc", "enabled = true");
    let prepared_here = |count: &'static str| {
        wait_for(&format!("{count} prepared here"), TIMEOUT, || {
            let prepared = query(&subscriber, "SELECT count(*) FROM pg_prepared_xacts");
            (prepared == count).then_some(()).ok_or(prepared)
        })
    };
    let counted = || {
        query(
            &subscriber,
            "SELECT s.applied, s.failed, s.errors, (SELECT count(*) FROM ddl_sync.prepared_counts)
               FROM ddl_sync.subscription_stats s",
        )
    };
    query(
        &publisher,
        "BEGIN; CREATE TABLE prepared_1 (id int PRIMARY KEY); PREPARE TRANSACTION 'p1';
         CREATE TABLE meanwhile (id int PRIMARY KEY);
         BEGIN; CREATE TABLE prepared_2 (id int PRIMARY KEY); PREPARE TRANSACTION 'p2';",
    );
    prepared_here("2");
    // Only what committed counts; each prepared transaction's counts are a row it holds.
    assert_eq!(counted(), "1|0|0|0");
    query(&publisher, "COMMIT PREPARED 'p1'; ROLLBACK PREPARED 'p2';");
    prepared_here("0");
    assert_eq!(counted(), "2|0|0|1");
    query(&publisher, "CREATE TABLE after (id int PRIMARY KEY);");
    wait_for("the last statement applied", TIMEOUT, || {
        let tables = query(
            &subscriber,
            "SELECT string_agg(relname, ' ' ORDER BY relname) FROM pg_class
              WHERE relname IN ('prepared_1', 'meanwhile', 'prepared_2', 'after')",
        );
        (tables == "after meanwhile prepared_1")
            .then_some(())
            .ok_or(tables)
    });
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(object_identity || ' ' || apply_status, ', ' ORDER BY applied_at)
               FROM ddl_sync.events"
        ),
        "public.prepared_1 applied, public.meanwhile applied, public.after applied"
    );
    assert_eq!(counted(), "3|0|0|0");
}
