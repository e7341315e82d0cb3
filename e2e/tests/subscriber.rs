//! A native PostgreSQL subscriber on a `ddl_pgoutput` slot: the DDL events arrive as rows of
//! its `ddl_sync.events`, in commit order, and only for DDL that really committed. (The
//! subscription replays them too, under `skip`: the replay is replay.rs's subject. Without
//! DDL replication it would take no row of ddl_sync's tables: own_tables.rs.)

use ddl_e2e::{ddl_publisher, wait_for, Session};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::time::Duration;

/// How long replication may take to deliver what a test waits for.
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(30);

/// A publisher with table `t` in publication `p` (DDL: all) and slot `s` made by
/// `ddl_pgoutput`, and a subscriber with the `ddl_sync` extension, its own `t`, and a native
/// streaming subscription on that slot.
fn pair(name: &str) -> (Cluster, Cluster) {
    let publisher = ddl_publisher(&format!("{name}-pub"));
    publisher
        .psql(
            "postgres",
            "CREATE TABLE t (id int PRIMARY KEY, note text);
             CREATE PUBLICATION p FOR TABLE t WITH (ddl = 'all');
             SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
        )
        .expect("publisher setup");
    let subscriber = ClusterBuilder::new()
        .name(&format!("{name}-sub"))
        .build()
        .expect("subscriber starts");
    subscriber
        .psql(
            "postgres",
            &format!(
                "CREATE EXTENSION ddl_sync;
                 CREATE TABLE t (id int PRIMARY KEY, note text);
                 CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p
                     WITH (create_slot = false, slot_name = 's', copy_data = false, streaming = on);
                 SELECT ddl_sync.set_subscription_ddl('sub', 'all', 'skip');",
                publisher.connstr("postgres")
            ),
        )
        .expect("subscriber setup");
    // Both tables of the publication are ready at once: copy_data = false.
    assert_eq!(
        subscriber
            .psql(
                "postgres",
                "SELECT string_agg(srrelid::regclass || ' ' || srsubstate::text, ', ' ORDER BY srrelid::regclass::text)
                   FROM pg_subscription_rel"
            )
            .unwrap(),
        "ddl_sync.events r, t r"
    );
    (publisher, subscriber)
}

/// Polls `check` for at most [`REPLICATION_TIMEOUT`]; when time runs out, panics naming
/// `what`, with the subscriber's events and the tails of both server logs.
fn wait_replicated<T>(
    publisher: &Cluster,
    subscriber: &Cluster,
    what: &str,
    check: impl FnMut() -> Result<T, String>,
) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(what, REPLICATION_TIMEOUT, check)
    })) {
        Ok(v) => v,
        Err(panic) => {
            let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
            panic!(
                "{message}\nsubscriber's events: {:?}\n--- publisher log ---\n{}\n--- subscriber log ---\n{}",
                subscriber.psql("postgres", "SELECT sql FROM ddl_sync.events ORDER BY lsn"),
                publisher.log_tail(40),
                subscriber.log_tail(40)
            )
        }
    }
}

/// Waits until the subscriber has the event of statement `sql`.
fn wait_for_event(publisher: &Cluster, subscriber: &Cluster, sql: &str) {
    let query = format!(
        "SELECT count(*) FROM ddl_sync.events WHERE sql = '{}'",
        sql.replace('\'', "''")
    );
    wait_replicated(
        publisher,
        subscriber,
        &format!("the event of {sql:?} in the subscriber's ddl_sync.events"),
        || match subscriber.psql("postgres", &query) {
            Ok(n) if n == "1" => Ok(()),
            Ok(n) => Err(format!("{n} rows")),
            Err(e) => Err(e.to_string()),
        },
    )
}

/// Waits until the walsender of subscription `sub` has decoded and sent the publisher's WAL up
/// to its current insert position: called while a transaction larger than
/// logical_decoding_work_mem is open, its changes so far have then been streamed to the
/// subscriber (see [`assert_streamed`]).
fn wait_streamed_so_far(publisher: &Cluster, subscriber: &Cluster) {
    let lsn = publisher
        .psql("postgres", "SELECT pg_current_wal_insert_lsn()")
        .unwrap();
    // A commit flushes the WAL up to here, so the walsender may read the open transaction.
    publisher
        .psql("postgres", "SELECT pg_current_xact_id()")
        .unwrap();
    let query = format!(
        "SELECT sent_lsn >= '{lsn}' FROM pg_stat_replication WHERE application_name = 'sub'"
    );
    wait_replicated(
        publisher,
        subscriber,
        &format!("the walsender to stream the open transaction up to {lsn}"),
        || match publisher.psql("postgres", &query) {
            Ok(ok) if ok == "t" => Ok(()),
            Ok(other) => Err(format!("{other:?}")),
            Err(e) => Err(e.to_string()),
        },
    )
}

/// Checks that slot `s` streamed a transaction (the statistics may lag a little).
fn assert_streamed(publisher: &Cluster, subscriber: &Cluster) {
    wait_replicated(
        publisher,
        subscriber,
        "pg_stat_replication_slots to count a streamed transaction",
        || match publisher.psql(
            "postgres",
            "SELECT stream_txns FROM pg_stat_replication_slots WHERE slot_name = 's'",
        ) {
            Ok(n) if n != "0" && !n.is_empty() => Ok(()),
            Ok(n) => Err(format!("stream_txns {n:?}")),
            Err(e) => Err(e.to_string()),
        },
    )
}

/// (command tag, kind, identity, top level, statement) of every event on the subscriber, in
/// the publisher's order (their LSNs there).
fn events(subscriber: &Cluster) -> Vec<String> {
    subscriber
        .psql(
            "postgres",
            "SELECT concat_ws(' | ', command_tag, kind, object_identity, top_level, sql)
               FROM ddl_sync.events ORDER BY lsn",
        )
        .expect("read events")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn committed_ddl_arrives_as_event_rows_in_commit_order() {
    let (publisher, subscriber) = pair("sub-order");
    publisher
        .psql(
            "postgres",
            "INSERT INTO t VALUES (1, 'one');
             CREATE TABLE a1 (x int);
             BEGIN;
             INSERT INTO t VALUES (2, 'two');
             ALTER TABLE a1 ADD COLUMN y int;
             INSERT INTO t VALUES (3, 'three');
             COMMIT;
             BEGIN;
             CREATE TABLE rolled_back (a int);
             ROLLBACK;
             BEGIN;
             SAVEPOINT a;
             CREATE TABLE in_savepoint (a int);
             ROLLBACK TO a;
             CREATE INDEX a1_x ON a1 (x);
             COMMIT;
             CREATE SCHEMA s2;
             CREATE TABLE s2.b (a int);
             DROP TABLE s2.b;
             CREATE TABLE marker (a int);",
        )
        .expect("workload");
    wait_for_event(&publisher, &subscriber, "CREATE TABLE marker (a int)");
    assert_eq!(
        events(&subscriber),
        [
            "CREATE TABLE | table | public.a1 | t | CREATE TABLE a1 (x int)",
            "ALTER TABLE | table | public.a1 | t | ALTER TABLE a1 ADD COLUMN y int",
            "CREATE INDEX | index | public.a1_x | t | CREATE INDEX a1_x ON a1 (x)",
            "CREATE SCHEMA | schema | s2 | t | CREATE SCHEMA s2",
            "CREATE TABLE | table | s2.b | t | CREATE TABLE s2.b (a int)",
            "DROP TABLE | table | s2.b | t | DROP TABLE s2.b",
            "CREATE TABLE | table | public.marker | t | CREATE TABLE marker (a int)",
        ]
    );
    // The rows came with them, and each event names the publisher and its own LSN there.
    assert_eq!(
        subscriber
            .psql(
                "postgres",
                "SELECT string_agg(id::text, ',' ORDER BY id) FROM t"
            )
            .unwrap(),
        "1,2,3"
    );
    let sysid = publisher
        .psql(
            "postgres",
            "SELECT system_identifier FROM pg_control_system()",
        )
        .unwrap();
    assert_eq!(
        subscriber
            .psql(
                "postgres",
                &format!(
                    "SELECT count(*) FROM ddl_sync.events
                      WHERE origin_sysid = {sysid} AND origin_lsn = lsn AND NOT forwarded
                        AND role_name = 'postgres' AND database_name = 'postgres'
                        AND dialect = 'postgres'"
                )
            )
            .unwrap(),
        "7"
    );
    // And were replayed: a1 with its later column and index.
    assert_eq!(
        subscriber
            .psql(
                "postgres",
                "SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.a1'::regclass AND attname = 'y'"
            )
            .unwrap(),
        "1"
    );
}

#[test]
fn ddl_rolled_back_after_its_transaction_streamed_never_arrives() {
    let (publisher, subscriber) = pair("sub-stream-abort");
    let mut session = Session::open(&publisher, "stream-abort");
    // The subtransaction's DDL, and rows enough to pass logical_decoding_work_mem after it, are
    // streamed to the subscriber while the transaction is open; then ROLLBACK TO undoes them.
    session.run(
        "BEGIN;
         INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1000, 2000) g;
         SAVEPOINT a;
         CREATE TABLE gone (a int);
         INSERT INTO t SELECT g, repeat('y', 200) FROM generate_series(3000, 4000) g;",
    );
    wait_streamed_so_far(&publisher, &subscriber);
    session.run(
        "ROLLBACK TO a;
         CREATE TABLE kept (a int);
         INSERT INTO t VALUES (5000, 'after the rollback');
         COMMIT;
         CREATE TABLE marker (a int);",
    );
    session.finish();
    wait_for_event(&publisher, &subscriber, "CREATE TABLE marker (a int)");
    assert_streamed(&publisher, &subscriber);
    assert_eq!(
        events(&subscriber),
        [
            "CREATE TABLE | table | public.kept | t | CREATE TABLE kept (a int)",
            "CREATE TABLE | table | public.marker | t | CREATE TABLE marker (a int)",
        ]
    );
    assert_eq!(
        subscriber
            .psql(
                "postgres",
                "SELECT count(*), min(id), max(id), count(*) FILTER (WHERE id BETWEEN 3000 AND 4000) FROM t"
            )
            .unwrap(),
        "1002|1000|5000|0"
    );
}

#[test]
fn ddl_in_a_transaction_streamed_while_open_arrives_with_its_commit() {
    let (publisher, subscriber) = pair("sub-stream-commit");
    let mut session = Session::open(&publisher, "stream-commit");
    session.run(
        "BEGIN;
         INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1000, 2000) g;
         CREATE TABLE in_stream (a int);
         SAVEPOINT a;
         ALTER TABLE in_stream ADD COLUMN b text;
         RELEASE a;
         INSERT INTO t SELECT g, repeat('y', 200) FROM generate_series(3000, 4000) g;",
    );
    wait_streamed_so_far(&publisher, &subscriber);
    // Streamed, not applied: nothing is visible before the commit.
    assert_eq!(
        subscriber
            .psql("postgres", "SELECT count(*) FROM ddl_sync.events")
            .unwrap(),
        "0"
    );
    session.run("COMMIT; CREATE TABLE marker (a int);");
    session.finish();
    wait_for_event(&publisher, &subscriber, "CREATE TABLE marker (a int)");
    assert_streamed(&publisher, &subscriber);
    assert_eq!(
        events(&subscriber),
        [
            "CREATE TABLE | table | public.in_stream | t | CREATE TABLE in_stream (a int)",
            "ALTER TABLE | table | public.in_stream | t | ALTER TABLE in_stream ADD COLUMN b text",
            "CREATE TABLE | table | public.marker | t | CREATE TABLE marker (a int)",
        ]
    );
    assert_eq!(
        subscriber
            .psql("postgres", "SELECT count(*) FROM t")
            .unwrap(),
        "2002"
    );
}
