//! A subscription stuck on a DDL event under `ddl_conflict = 'error'`: `ddl_sync.failing_events`
//! shows the event (statement, error, origin LSN) and `ddl_sync.resolve_event` settles it in one
//! step (retry, skip, or replace it), after which the stream goes on.

use ddl_e2e::{query, subscribed_pair, wait_caught_up, wait_for};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until the subscription is stuck on an event nobody decided about yet; returns
/// `sql|error|origin_lsn|attempts`.
fn stuck(subscriber: &Cluster) -> String {
    wait_for("a failing event", TIMEOUT, || {
        let row = query(
            subscriber,
            "SELECT sql || '|' || error || '|' || origin_lsn || '|' || attempts
               FROM ddl_sync.failing_events WHERE subscription = 'sub' AND NOT decided",
        );
        if row.is_empty() {
            Err(subscriber.log_tail(10))
        } else {
            Ok(row)
        }
    })
}

/// `status|detail` of the apply log row of the statement `sql`.
fn outcome(subscriber: &Cluster, sql: &str) -> String {
    query(
        subscriber,
        &format!(
            "SELECT status || '|' || coalesce(detail, '') FROM ddl_sync.apply_log WHERE sql = '{sql}'"
        ),
    )
}

#[test]
fn a_stuck_event_is_shown_and_can_be_skipped_replaced_or_retried() {
    let (publisher, subscriber) = subscribed_pair("resolve", "error");

    // Skip: the subscriber already has the table the publisher creates.
    query(&subscriber, "CREATE TABLE clash (id int)");
    query(
        &publisher,
        "CREATE TABLE clash (id int PRIMARY KEY); INSERT INTO t VALUES (1);",
    );
    let event = stuck(&subscriber);
    let fields: Vec<&str> = event.split('|').collect();
    assert_eq!(
        fields[0], "CREATE TABLE clash (id int PRIMARY KEY)",
        "{event}"
    );
    assert!(
        fields[1].contains("relation \"clash\" already exists"),
        "{event}"
    );
    assert!(fields[2].contains('/'), "{event}");
    // The guard: another event's LSN is an error, and nothing is decided.
    let wrong = subscriber.psql(
        "postgres",
        "SELECT ddl_sync.resolve_event('sub', 'skip', origin_lsn => '0/1')",
    );
    assert!(
        wrong.as_ref().is_err_and(|e| e
            .to_string()
            .contains("is stuck on the event at origin LSN")),
        "{wrong:?}"
    );
    // Only superusers decide.
    query(&subscriber, "CREATE ROLE clerk LOGIN");
    let denied = subscriber.psql(
        "postgres",
        "SET ROLE clerk; SELECT ddl_sync.resolve_event('sub', 'skip')",
    );
    assert!(
        denied
            .as_ref()
            .is_err_and(|e| e.to_string().contains("permission denied")),
        "{denied:?}"
    );
    // Nor may they see the stuck statement, or plant a decision behind resolve_event's back
    // (a 'replace' row would have the apply worker run their statement).
    for sql in [
        "SELECT sql FROM ddl_sync.failing_events",
        "INSERT INTO ddl_sync.event_resolution (subid, origin_sysid, origin_lsn, action, sql)
         VALUES (1, 1, '0/1', 'replace', 'DROP TABLE t')",
    ] {
        let denied = subscriber.psql("postgres", &format!("SET ROLE clerk; {sql}"));
        assert!(
            denied
                .as_ref()
                .is_err_and(|e| e.to_string().contains("permission denied")),
            "{sql}: {denied:?}"
        );
    }
    let said = query(&subscriber, "SELECT ddl_sync.resolve_event('sub', 'skip')");
    assert!(said.contains("will be skipped on the next retry"), "{said}");
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(query(&subscriber, "SELECT count(*) FROM t"), "1");
    let skipped = outcome(&subscriber, "CREATE TABLE clash (id int PRIMARY KEY)");
    assert!(
        skipped.starts_with("skipped|skipped by postgres at "),
        "{skipped}"
    );

    // Replace: the index name is taken here; the operator runs another statement instead.
    query(&subscriber, "CREATE INDEX taken ON t (id)");
    query(
        &publisher,
        "CREATE INDEX taken ON t (id); INSERT INTO t VALUES (2);",
    );
    stuck(&subscriber);
    // A replacement that is not one statement is refused at once.
    let bad = subscriber.psql(
        "postgres",
        "SELECT ddl_sync.resolve_event('sub', 'replace', 'CREATE INDEX a ON t (id); DROP TABLE t')",
    );
    assert!(
        bad.as_ref()
            .is_err_and(|e| e.to_string().contains("holds 2 statements")),
        "{bad:?}"
    );
    query(
        &subscriber,
        "SELECT ddl_sync.resolve_event('sub', 'replace', 'CREATE INDEX taken_too ON t (id)')",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(query(&subscriber, "SELECT count(*) FROM t"), "2");
    assert_eq!(
        query(&subscriber, "SELECT to_regclass('taken_too') IS NOT NULL"),
        "t"
    );
    // The replacement made another index than the publisher's statement: verification says
    // so (the subscriber has its own `taken` and now `taken_too`).
    let replaced = outcome(&subscriber, "CREATE INDEX taken ON t (id)");
    assert!(
        replaced.starts_with("diverged|replaced by postgres at ")
            && replaced.contains("by \"CREATE INDEX taken_too ON t (id)\"")
            && replaced.contains(
                "table public.t index taken_too: publisher none, subscriber \
                 \"CREATE INDEX taken_too ON public.t USING btree (id)\""
            ),
        "{replaced}"
    );

    // Retry: the operator removes the cause; the event is replayed as it was.
    query(&subscriber, "CREATE TABLE later (id int)");
    query(
        &publisher,
        "CREATE TABLE later (id int); INSERT INTO t VALUES (3);",
    );
    stuck(&subscriber);
    // In one transaction: the worker's next retry sees the fix and the decision together.
    query(
        &subscriber,
        "BEGIN; DROP TABLE later; SELECT ddl_sync.resolve_event('sub', 'retry'); COMMIT;",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(query(&subscriber, "SELECT count(*) FROM t"), "3");
    assert_eq!(
        outcome(&subscriber, "CREATE TABLE later (id int)"),
        "applied|"
    );
    // Two failing events in one transaction: each is decided while the other is the one
    // shown, and the decisions hold across the retries that roll back.
    query(
        &subscriber,
        "CREATE TABLE twin1 (id int); CREATE TABLE twin2 (id int);",
    );
    query(
        &publisher,
        "BEGIN; CREATE TABLE twin1 (id int); CREATE TABLE twin2 (id int);
         INSERT INTO t VALUES (4); COMMIT;",
    );
    for twin in ["twin1", "twin2"] {
        let event = stuck(&subscriber);
        assert!(
            event.starts_with(&format!("CREATE TABLE {twin} ")),
            "{event}"
        );
        query(&subscriber, "SELECT ddl_sync.resolve_event('sub', 'skip')");
    }
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(query(&subscriber, "SELECT count(*) FROM t"), "4");
    assert_eq!(
        query(&subscriber, "SELECT count(*) FROM ddl_sync.failing_events"),
        "0"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.event_resolution"
        ),
        "0"
    );
}
