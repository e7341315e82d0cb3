//! PostgreSQL 16 and later can apply a streamed transaction in a parallel apply worker
//! (`streaming = parallel`): the DDL inside it is then replayed by that worker, in order with
//! its rows, and a table it creates gets its rows. On 15 there is no such worker, and the test
//! says so.

use ddl_e2e::{
    create_subscription, ddl_publisher, ddl_subscriber, query, wait_caught_up, wait_for,
    wait_synchronised, Session,
};
use ddl_testkit::Cluster;
use std::time::Duration;

#[test]
fn ddl_in_a_streamed_transaction_is_replayed_by_a_parallel_apply_worker() {
    let publisher = ddl_publisher("parallel-pub");
    let version: u32 = query(&publisher, "SHOW server_version_num")
        .parse()
        .unwrap();
    if version < 160000 {
        println!("parallel_apply: PostgreSQL {version} has no parallel apply workers");
        return;
    }
    // Stream every change at once, so that the transaction reaches the subscriber while it is
    // still open on the publisher. Only the publisher's walsender: on the subscriber the same
    // setting would make the leader spill to files instead of handing over.
    query(
        &publisher,
        "ALTER SYSTEM SET debug_logical_replication_streaming = immediate;
         SELECT pg_reload_conf();
         CREATE TABLE t (id int PRIMARY KEY, payload text);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    let subscriber = ddl_subscriber("parallel-sub", &["ddl_sync"]);
    query(
        &subscriber,
        "CREATE TABLE t (id int PRIMARY KEY, payload text);",
    );
    let (ok, said) = create_subscription(
        &subscriber,
        "postgres",
        &publisher,
        "ddl = 'all', streaming = parallel",
    );
    assert!(ok, "{said}");
    wait_synchronised(&subscriber, "postgres");
    // The leader decides at a transaction's first streamed block whether a parallel worker may
    // take it, from its own cached table states; one committed round trip refreshes them after
    // the initial sync (else the whole transaction is spilled to a file and applied at commit).
    query(&publisher, "INSERT INTO t VALUES (0, 'warm')");
    wait_caught_up(&publisher, &subscriber, "sub", Duration::from_secs(60));

    let mut migration = Session::open(&publisher, "migration");
    migration.run(
        "BEGIN;
         INSERT INTO t SELECT g, 'before' FROM generate_series(1, 1000) g;
         ALTER TABLE t ADD COLUMN extra int DEFAULT 7;
         INSERT INTO t SELECT g, 'after', g FROM generate_series(1001, 2000) g;
         CREATE TABLE side (a int PRIMARY KEY, b text);
         INSERT INTO side SELECT g, 'side' FROM generate_series(1, 300) g;",
    );
    // While the publisher's transaction is still open, the ALTER TABLE's lock on the
    // subscriber is held by a parallel apply worker of this subscription: the replay ran there.
    assert_eq!(lock_holder(&subscriber, "public.t"), "parallel apply");
    migration.run("COMMIT;");
    migration.finish();
    wait_caught_up(&publisher, &subscriber, "sub", Duration::from_secs(120));

    let rows =
        "SELECT count(*) || ' ' || sum(extra) || ' ' || count(*) FILTER (WHERE payload = 'after')
                  FROM t";
    assert_eq!(query(&subscriber, rows), query(&publisher, rows));
    assert_eq!(query(&subscriber, "SELECT count(*) FROM side"), "300");
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(apply_status || ' ' || command_tag, ', ' ORDER BY origin_lsn)
               FROM ddl_sync.events"
        ),
        "applied ALTER TABLE, applied CREATE TABLE"
    );
    // Described by the capture while the transaction ran, verified by the parallel worker.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(coalesce(verified::text, '-'), ', ' ORDER BY origin_lsn)
               FROM ddl_sync.apply_log"
        ),
        "true, true"
    );

    // A streamed transaction that rolls back takes its replayed DDL and its apply log with it.
    let mut abandoned = Session::open(&publisher, "abandoned");
    abandoned.run(
        "BEGIN;
         ALTER TABLE side ADD COLUMN c int;
         INSERT INTO side SELECT g, 'gone', g FROM generate_series(301, 600) g;",
    );
    assert_eq!(lock_holder(&subscriber, "public.side"), "parallel apply");
    abandoned.run("ROLLBACK;");
    abandoned.finish();
    query(
        &publisher,
        "INSERT INTO side VALUES (0, 'after the rollback')",
    );
    wait_caught_up(&publisher, &subscriber, "sub", Duration::from_secs(60));
    let columns = "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
                    WHERE attrelid = 'side'::regclass AND attnum > 0 AND NOT attisdropped";
    assert_eq!(query(&subscriber, columns), "a,b");
    assert_eq!(query(&subscriber, "SELECT count(*) FROM side"), "301");
    assert_eq!(
        query(&subscriber, "SELECT count(*) FROM ddl_sync.events"),
        "2"
    );
}

/// The type of a subscription worker, as 17's `pg_stat_subscription.worker_type` says it (16
/// has no such column: a parallel apply worker has a leader, a table synchronization worker a
/// table).
const WORKER_TYPE: &str = "CASE WHEN s.leader_pid IS NOT NULL THEN 'parallel apply' \
    WHEN s.relid IS NOT NULL THEN 'table synchronization' ELSE 'apply' END";

/// The type of the subscription worker that holds an AccessExclusiveLock on `relation`, once
/// one does.
fn lock_holder(subscriber: &Cluster, relation: &str) -> String {
    let holder = format!(
        "SELECT {WORKER_TYPE}
           FROM pg_locks l JOIN pg_stat_subscription s ON s.pid = l.pid
          WHERE l.relation = '{relation}'::regclass AND l.mode = 'AccessExclusiveLock'
            AND l.granted AND s.subname = 'sub'"
    );
    wait_for(
        &format!("a replayed ALTER TABLE to lock {relation}"),
        Duration::from_secs(60),
        || {
            let found = query(subscriber, &holder);
            if found.is_empty() {
                Err(query(
                    subscriber,
                    &format!(
                        "SELECT string_agg(s.pid || ' ' || {WORKER_TYPE}, ', ') \
                         FROM pg_stat_subscription s"
                    ),
                ))
            } else {
                Ok(found)
            }
        },
    )
}
