//! The statistics views after a known sequence of DDL: per publication on the publisher
//! (captured, filtered and by which rule, emitted), per subscription on the subscriber
//! (applied, skipped, refused, failed, replay errors, the last applied and the last error),
//! the log lines of the replay, and the resets.

use ddl_e2e::{ddl_publisher, ddl_subscriber, query, subscribe, wait_caught_up, wait_for, Session};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

const PUBLICATION_STATS: &str = "SELECT publication, captured, filtered, emitted,
        last_captured_at IS NOT NULL, stats_reset IS NOT NULL
   FROM ddl_sync.publication_stats ORDER BY publication";

const RULE_STATS: &str =
    "SELECT publication, level, coalesce(rule_number::text, '-'), rule, filtered
   FROM ddl_sync.publication_rule_stats ORDER BY publication, rule_number NULLS FIRST";

const SUBSCRIPTION_STATS: &str = "SELECT subscription, applied, skipped, refused, failed,
        duplicates, errors, last_applied_lsn = (SELECT lsn FROM ddl_sync.events
                                                 WHERE object_identity = 'public.kept'),
        last_error
   FROM ddl_sync.subscription_stats";

/// Publication `p` (tables and indexes, not schema `audit`) and `q` (views) on the publisher;
/// `sub` replays tables only, skips `skipme` by its rules, has its own `clash` (so replaying
/// its creation fails) and the `skip` policy.
fn pair() -> (Cluster, Cluster) {
    let publisher = ddl_publisher("stats-pub");
    query(
        &publisher,
        "CREATE SCHEMA audit;
         CREATE TABLE t (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR TABLE t WITH (ddl = 'table, index');
         SELECT ddl_sync.set_publication_ddl('p', 'table, index', $$exclude schema = 'audit'$$);
         CREATE PUBLICATION q FOR TABLE t WITH (ddl = 'view');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    let subscriber = ddl_subscriber("stats-sub", &["ddl_sync"]);
    query(
        &subscriber,
        "CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE clash (id int);",
    );
    subscribe(&subscriber, &publisher, "sub", "s", "table", "skip");
    query(
        &subscriber,
        "SELECT ddl_sync.set_subscription_ddl('sub', 'table', 'skip', $$exclude identity ~ 'skipme'$$)",
    );
    (publisher, subscriber)
}

#[test]
fn statistics_count_what_happened_to_each_statement() {
    let (publisher, subscriber) = pair();
    query(
        &publisher,
        "CREATE TABLE a (id int);                   -- p: captured, applied; q: its kinds
         CREATE INDEX a_id ON a (id);               -- p: captured, refused (sub: tables only)
         CREATE TABLE audit.x (id int);             -- p: its rule 0; q: its kinds
         CREATE VIEW v AS SELECT 1 AS one;          -- p: its kinds; q: captured, not emitted
         CREATE TABLE skipme (id int);              -- p: captured; skipped by the sub's rules
         CREATE TABLE clash (id int);               -- p: captured; failed on the subscriber
         BEGIN;
         CREATE TABLE rolled_back (id int);         -- nowhere: never committed
         ROLLBACK;
         BEGIN;
         SAVEPOINT one;
         CREATE TABLE in_rolled_back_savepoint (id int);
         ROLLBACK TO SAVEPOINT one;
         CREATE TABLE kept (id int);                -- p: captured, applied
         COMMIT;",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);

    assert_eq!(
        query(&publisher, PUBLICATION_STATS),
        "p|5|2|5|t|f\n\
         q|1|6|0|t|f"
    );
    assert_eq!(
        query(&publisher, RULE_STATS),
        "p|publication|-|ddl = 'table, index'|1\n\
         p|publication|0|exclude schema = 'audit'|1\n\
         q|publication|-|ddl = 'view'|6"
    );
    assert_eq!(
        query(
            &publisher,
            "SELECT last_emitted_lsn IS NOT NULL FROM ddl_sync.publication_stats
              WHERE publication = 'p'"
        ),
        "t"
    );

    let subscriber_stats = query(&subscriber, SUBSCRIPTION_STATS);
    assert!(
        subscriber_stats.starts_with("sub|2|1|1|1|0|0|t|failed: relation \"clash\" already exists"),
        "{subscriber_stats}"
    );
    // The apply log can be purged: the counters stay.
    query(&subscriber, "DELETE FROM ddl_sync.events");
    assert_eq!(
        query(
            &subscriber,
            "SELECT applied, skipped, refused, failed FROM ddl_sync.subscription_stats"
        ),
        "2|1|1|1"
    );

    // The subscriber's log: LOG for each skipped statement, WARNING for the others; an
    // applied one only where `log_statement` would log it run here (not by default).
    let log = subscriber.log_tail(400);
    assert!(
        !log.contains("CREATE TABLE public.a (origin "),
        "a LOG line for an applied statement with log_statement = none:\n{log}"
    );
    for (level, what) in [
        ("LOG", "CREATE TABLE public.skipme (origin "),
        ("WARNING", "CREATE INDEX public.a_id (origin "),
        ("WARNING", "CREATE TABLE public.clash (origin "),
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("{level}:  ddl_sync: subscription \"sub\": {what}"))),
            "no {level} line for {what} in:\n{log}"
        );
    }

    replay_errors_are_counted_although_rolled_back(&publisher, &subscriber);
    let log = subscriber.log_tail(400);
    assert!(
        log.lines().any(|l| l
            .contains("LOG:  ddl_sync: subscription \"sub\": CREATE TABLE public.clash2 (origin ")
            && l.ends_with(") applied")),
        "no LOG line for an applied statement with log_statement = ddl:\n{log}"
    );
    resets(&publisher, &subscriber);

    // The statistics row goes with its subscription.
    query(&subscriber, "DROP SUBSCRIPTION sub");
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.subscription_counters"
        ),
        "0"
    );
}

/// Under `ddl_conflict = 'error'` the failure rolls back (with the apply log row and the
/// counters) and the worker retries: the errors and the last one are still shown. (The worker
/// that retries reads `log_statement = 'ddl'`, set for the database meanwhile.)
fn replay_errors_are_counted_although_rolled_back(publisher: &Cluster, subscriber: &Cluster) {
    query(
        subscriber,
        "SELECT ddl_sync.set_subscription_ddl('sub', 'table', 'error', $$exclude identity ~ 'skipme'$$);
         CREATE TABLE clash2 (id int);
         ALTER DATABASE postgres SET log_statement = 'ddl';",
    );
    query(publisher, "CREATE TABLE clash2 (id int)");
    wait_for("a replay error in the statistics", TIMEOUT, || {
        let seen = query(
            subscriber,
            "SELECT errors, last_error, last_error_at > now() - interval '1 hour'
               FROM ddl_sync.subscription_stats",
        );
        if seen.starts_with("0|") || !seen.contains("relation \"clash2\" already exists") {
            return Err(seen);
        }
        Ok(())
    });
    query(subscriber, "DROP TABLE clash2");
    wait_caught_up(publisher, subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(
            subscriber,
            "SELECT applied, failed, errors > 0, last_error LIKE '%clash2%'
               FROM ddl_sync.subscription_stats"
        ),
        "3|1|t|t"
    );
}

fn resets(publisher: &Cluster, subscriber: &Cluster) {
    query(
        subscriber,
        "SELECT ddl_sync.reset_subscription_stats('sub')",
    );
    assert_eq!(
        query(
            subscriber,
            "SELECT applied, skipped, refused, failed, duplicates, errors, last_error,
                    stats_reset IS NOT NULL
               FROM ddl_sync.subscription_stats"
        ),
        "0|0|0|0|0|0||t"
    );

    query(publisher, "SELECT ddl_sync.reset_publication_stats('p')");
    // q also kept clash2 out since.
    assert_eq!(
        query(publisher, PUBLICATION_STATS),
        "p|0|0|0|f|t\n\
         q|1|7|0|t|f"
    );
    assert_eq!(
        query(publisher, RULE_STATS),
        "q|publication|-|ddl = 'view'|7"
    );
    query(publisher, "SELECT ddl_sync.reset_publication_stats()");
    assert_eq!(
        query(publisher, PUBLICATION_STATS),
        "p|0|0|0|f|t\n\
         q|0|0|0|f|t"
    );
    assert_eq!(query(publisher, RULE_STATS), "");
    let error = publisher
        .psql(
            "postgres",
            "SELECT ddl_sync.reset_publication_stats('nope')",
        )
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("publication \"nope\" does not exist"),
        "{error}"
    );
    reset_while_the_worker_counts(publisher, subscriber);
}

/// A reset in a transaction still open when the apply worker writes its counts: the worker
/// waits for the reset (both take the row's lock), then adds to what the reset left, without
/// an ERROR of its own (it writes the row without an UPDATE's re-reading of a changed row).
fn reset_while_the_worker_counts(publisher: &Cluster, subscriber: &Cluster) {
    let apply_errors = "SELECT apply_error_count FROM pg_stat_subscription_stats
                         WHERE subname = 'sub'";
    let errors_before = query(subscriber, apply_errors);
    let mut reset = Session::open(subscriber, "reset");
    reset.run("BEGIN; SELECT ddl_sync.reset_subscription_stats('sub');");
    query(publisher, "CREATE TABLE after_reset (id int)");
    wait_for("the apply worker waiting for the reset", TIMEOUT, || {
        let waiting = query(
            subscriber,
            "SELECT l.locktype FROM pg_locks l JOIN pg_stat_activity a USING (pid)
              WHERE NOT l.granted AND a.backend_type LIKE 'logical replication%worker'",
        );
        (waiting == "object").then_some(()).ok_or(waiting)
    });
    reset.run("COMMIT;");
    reset.finish();
    wait_caught_up(publisher, subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(
            subscriber,
            "SELECT applied, stats_reset IS NOT NULL FROM ddl_sync.subscription_stats"
        ),
        "1|t"
    );
    assert_eq!(query(subscriber, apply_errors), errors_before);
}
