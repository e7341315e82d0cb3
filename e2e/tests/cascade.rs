//! Cascades and cycles: DDL from A reaches C through B keyed by where it first ran, and DDL that
//! comes back to the node it started on is not applied again.

use ddl_e2e::{ddl_publisher, query, subscribe, wait_for};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// `node` publishes everything with DDL on slot `slot`.
fn publish(node: &Cluster, slot: &str) {
    query(
        node,
        &format!(
            "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
             SELECT pg_create_logical_replication_slot('{slot}', 'ddl_pgoutput');"
        ),
    );
}

fn sysid(node: &Cluster) -> String {
    query(node, "SELECT system_identifier FROM pg_control_system()")
}

#[test]
fn ddl_from_a_reaches_c_through_b_with_its_original_key() {
    let a = ddl_publisher("cascade-a");
    let b = ddl_publisher("cascade-b");
    let c = ddl_publisher("cascade-c");
    publish(&a, "a_to_b");
    publish(&b, "b_to_c");
    subscribe(&b, &a, "from_a", "a_to_b", "all", "error");
    subscribe(&c, &b, "from_b", "b_to_c", "all", "error");
    query(
        &a,
        "CREATE TABLE hop (id int PRIMARY KEY, v text); INSERT INTO hop VALUES (1, 'one');",
    );
    let got = wait_for("the table and its row on C", TIMEOUT, || {
        c.psql("postgres", "SELECT v FROM hop")
            .map_err(|e| format!("{e}\n{}\n{}", b.log_tail(10), c.log_tail(10)))
            .and_then(|v| if v == "one" { Ok(v) } else { Err(v) })
    });
    assert_eq!(got, "one");
    // On B and C the event is keyed by A's system identifier and LSN.
    let key = |node: &Cluster| {
        query(
            node,
            "SELECT origin_sysid || ' ' || origin_lsn || ' ' || apply_status FROM ddl_sync.events",
        )
    };
    let on_b = key(&b);
    assert!(on_b.starts_with(&sysid(&a)), "B: {on_b}");
    assert!(on_b.ends_with(" applied"), "B: {on_b}");
    assert_eq!(key(&c), on_b, "C keys the event as B does");
    assert_eq!(query(&c, "SELECT forwarded FROM ddl_sync.events"), "t");
    // Each hop's row names the node whose capture sealed the statement: A's own on B, and on
    // C the node that replayed it and passed it on, B.
    let captured_by = |node: &Cluster| query(node, "SELECT capturing_sysid FROM ddl_sync.events");
    assert_eq!(captured_by(&b), sysid(&a));
    assert_eq!(captured_by(&c), sysid(&b));
}

#[test]
fn ddl_that_comes_back_to_its_origin_is_not_applied_again() {
    let a = ddl_publisher("cycle-a");
    let b = ddl_publisher("cycle-b");
    // Only DDL travels in this cycle (each side's own tables are not published back): rows
    // would loop on PostgreSQL 15, which has no origin filter.
    query(
        &a,
        "CREATE PUBLICATION p FOR TABLE ddl_sync.events WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('a_to_b', 'ddl_pgoutput');",
    );
    query(
        &b,
        "CREATE PUBLICATION p FOR TABLE ddl_sync.events WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('b_to_a', 'ddl_pgoutput');",
    );
    subscribe(&b, &a, "from_a", "a_to_b", "all", "error");
    subscribe(&a, &b, "from_b", "b_to_a", "all", "error");
    query(&a, "CREATE TABLE round_trip (id int)");
    wait_for("the table on B", TIMEOUT, || {
        let n = query(
            &b,
            "SELECT count(*) FROM pg_class WHERE relname = 'round_trip'",
        );
        if n == "1" {
            Ok(())
        } else {
            Err(n)
        }
    });
    // B forwards it back to A; A recognises its own DDL. A later statement from A still flows,
    // proving A's apply worker did not stop on the returning one.
    query(&a, "CREATE TABLE after_round_trip (id int)");
    wait_for("the second table on B", TIMEOUT, || {
        let n = query(
            &b,
            "SELECT count(*) FROM pg_class WHERE relname = 'after_round_trip'",
        );
        if n == "1" {
            Ok(())
        } else {
            Err(format!("{n}\n{}", a.log_tail(10)))
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        query(&a, "SELECT count(*) FROM ddl_sync.events"),
        "0",
        "A applied nothing of its own"
    );
    assert!(
        !a.log_tail(50).contains("already exists"),
        "{}",
        a.log_tail(50)
    );
}
