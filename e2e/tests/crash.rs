//! The subscriber crashes (immediate stop) again and again while DDL and rows stream in: once
//! it has caught up, nothing is lost and nothing was applied twice. DDL is replayed in the apply
//! worker's transaction, so the replication origin covers it like the rows.

use ddl_e2e::compare::{assert_all_applied, assert_same_rows, assert_same_schema};
use ddl_e2e::{ddl_publisher, ddl_subscriber, query, subscribe, wait_caught_up, wait_for};
use ddl_testkit::StopMode;
use std::time::Duration;

/// Transactions in the stream.
const ROUNDS: usize = 40;
/// Every this many rounds, one more statement: an index.
const INDEX_EVERY: usize = 5;
/// Crash when the subscriber's apply log has reached these many statements (all fewer than the
/// stream has, so each crash comes while there is more to apply).
const CRASH_AT: [usize; 4] = [10, 40, 75, 105];

/// The stream: `ledger` first, then per round one transaction that creates a table, fills it,
/// adds a column to it and fills that, and adds a column to `ledger` with a row using it.
/// Returns the script and how many DDL statements it runs.
fn stream() -> (String, usize) {
    let mut sql = String::from("CREATE TABLE ledger (round int PRIMARY KEY);\n");
    let mut ddl = 1;
    for i in 1..=ROUNDS {
        sql.push_str(&format!(
            "BEGIN;
             CREATE TABLE t_{i} (id int PRIMARY KEY, v text NOT NULL);
             INSERT INTO t_{i} SELECT g, 'row ' || g FROM generate_series(1, 1000) AS g;
             ALTER TABLE t_{i} ADD COLUMN w int;
             UPDATE t_{i} SET w = id * {i};
             ALTER TABLE ledger ADD COLUMN c_{i} int;
             INSERT INTO ledger (round, c_{i}) VALUES ({i}, {i});
             COMMIT;\n"
        ));
        ddl += 3;
        if i % INDEX_EVERY == 0 {
            sql.push_str(&format!("CREATE INDEX t_{i}_w ON t_{i} (w);\n"));
            ddl += 1;
        }
        // Spread the stream over a few seconds, so that the crashes fall inside it.
        sql.push_str("SELECT pg_sleep(0.1);\n");
    }
    (sql, ddl)
}

fn applied(subscriber: &ddl_testkit::Cluster) -> Result<usize, String> {
    subscriber
        .psql("postgres", "SELECT count(*) FROM ddl_sync.events")
        .map_err(|e| e.to_string())?
        .parse()
        .map_err(|e| format!("{e}"))
}

#[test]
fn immediate_stops_of_the_subscriber_lose_nothing_and_apply_nothing_twice() {
    let publisher = ddl_publisher("crash-pub");
    let mut subscriber = ddl_subscriber("crash-sub", &[]);
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    subscribe(&subscriber, &publisher, "sub", "s", "all", "error");
    let (script, ddl) = stream();
    assert!(CRASH_AT.iter().all(|n| *n < ddl));

    std::thread::scope(|scope| {
        let writer = scope.spawn(|| query(&publisher, &script));
        for at in CRASH_AT {
            wait_for(
                &format!("{at} statements applied before a crash"),
                Duration::from_secs(60),
                || match applied(&subscriber) {
                    Ok(n) if n >= at => Ok(()),
                    other => Err(format!("{other:?}\n{}", subscriber.log_tail(20))),
                },
            );
            subscriber
                .stop(StopMode::Immediate)
                .expect("immediate stop of the subscriber");
            // For the record of a run: where in the stream each crash fell.
            eprintln!(
                "crash after {at}+ of {ddl} statements; publisher still writing: {}",
                !writer.is_finished()
            );
            subscriber.start().expect("subscriber restarts");
        }
        writer.join().expect("the stream ran");
    });

    wait_caught_up(&publisher, &subscriber, "sub", Duration::from_secs(60));
    assert_all_applied(&subscriber);
    // Each statement exactly once: as many rows as statements, each its own origin LSN.
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) || ' ' || count(DISTINCT (origin_sysid, origin_lsn)) FROM ddl_sync.events"
        ),
        format!("{ddl} {ddl}")
    );
    // A statement applied twice would have failed ("already exists") and been retried.
    let log = std::fs::read_to_string(subscriber.log_path()).expect("subscriber log");
    assert!(
        !log.contains("already exists"),
        "a statement was replayed twice:\n{}",
        subscriber.log_tail(40)
    );
    assert!(
        log.matches("database system was not properly shut down")
            .count()
            >= CRASH_AT.len(),
        "the subscriber did not go through crash recovery each time"
    );
    assert_same_schema(&publisher, &subscriber);
    let rows = assert_same_rows(&publisher, &subscriber);
    // ledger has no key: a row applied twice would show in its checksum, a lost one too.
    assert_eq!(
        rows.get("public.ledger").map(|s| s.split(' ').next()),
        Some(Some(ROUNDS.to_string().as_str()))
    );
    assert_eq!(rows.len(), ROUNDS + 1, "{rows:#?}");
}
