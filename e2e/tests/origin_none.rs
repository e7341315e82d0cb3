//! Bidirectional replication on PostgreSQL 16 and later: two nodes subscribe to each other
//! with `origin = none`, rows and DDL both ways. What a node replays is captured again (a
//! cascade needs that), but its walsender never sends it back to where it came from, so each
//! statement runs once on each node and nothing loops. A table one node creates is registered
//! in its subscription to the other, so the rows the other node writes to it come back
//! (PostgreSQL alone would drop them until a REFRESH PUBLICATION). On 15 there is no `origin`
//! option; the DDL-only cycle of cascade.rs covers it there.

use ddl_e2e::{ddl_subscriber, query, wait_caught_up, wait_synchronised};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A node that publishes and subscribes: both libraries preloaded, table `t`, and publication
/// `p` of all tables with DDL.
fn node(name: &str) -> Cluster {
    let node = ddl_subscriber(name, &["ddl_pgoutput", "ddl_sync"]);
    query(
        &node,
        "CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         CREATE TABLE t (id int PRIMARY KEY, v text);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    node
}

/// `node` subscribes to `from` as `name`, with DDL and without what `from` itself replayed.
fn subscribe(node: &Cluster, from: &Cluster, name: &str) {
    query(
        node,
        &format!(
            "CREATE SUBSCRIPTION {name} CONNECTION '{}' PUBLICATION p
                 WITH (ddl = 'all', origin = none, copy_data = false)",
            from.connstr("postgres")
        ),
    );
    wait_synchronised(node, "postgres");
}

/// `node`'s apply log, oldest first.
fn applied(node: &Cluster) -> String {
    query(
        node,
        "SELECT coalesce(string_agg(apply_status || ' ' || command_tag, ', ' ORDER BY applied_at), '')
           FROM ddl_sync.events",
    )
}

#[test]
fn two_nodes_with_origin_none_exchange_rows_and_ddl_once() {
    let a = node("origin-a");
    let version: u32 = query(&a, "SHOW server_version_num").parse().unwrap();
    if version < 160000 {
        println!("origin_none: PostgreSQL {version} has no origin option");
        return;
    }
    let b = node("origin-b");
    subscribe(&a, &b, "from_b");
    subscribe(&b, &a, "from_a");

    // One table made by a superuser, one by a role that can read neither pg_subscription nor
    // ddl_sync's catalog.
    query(
        &a,
        "CREATE TABLE a_made (id int PRIMARY KEY);
         INSERT INTO a_made VALUES (1);
         INSERT INTO t VALUES (1, 'from a');
         SET ROLE app;
         CREATE TABLE app_made (id int PRIMARY KEY);",
    );
    wait_caught_up(&a, &b, "from_a", TIMEOUT);
    query(
        &b,
        "ALTER TABLE t ADD COLUMN w int;
         INSERT INTO t VALUES (2, 'from b', 2);
         INSERT INTO a_made VALUES (2);
         INSERT INTO app_made VALUES (2);",
    );
    wait_caught_up(&b, &a, "from_b", TIMEOUT);
    // One more round each way, so that anything sent back would have arrived by now.
    query(&a, "INSERT INTO t VALUES (3, 'from a', 3)");
    wait_caught_up(&a, &b, "from_a", TIMEOUT);
    wait_caught_up(&b, &a, "from_b", TIMEOUT);

    let rows = "SELECT string_agg(concat_ws(' ', id, v, w), ', ' ORDER BY id) FROM t";
    assert_eq!(query(&a, rows), "1 from a, 2 from b 2, 3 from a 3");
    assert_eq!(query(&b, rows), query(&a, rows));
    let made = "SELECT string_agg(id::text, ',' ORDER BY id) FROM a_made";
    assert_eq!(query(&a, made), "1,2");
    assert_eq!(query(&b, made), "1,2");
    assert_eq!(
        query(&a, "SELECT string_agg(id::text, ',') FROM app_made"),
        "2"
    );

    // Each node replayed the other's statement once, and nothing of its own came back.
    assert_eq!(applied(&a), "applied ALTER TABLE");
    assert_eq!(applied(&b), "applied CREATE TABLE, applied CREATE TABLE");
    // Both statements were captured on both nodes; each walsender sent only its node's own.
    let stats = "SELECT captured || ' captured, ' || emitted || ' emitted'
                   FROM ddl_sync.publication_stats WHERE publication = 'p'";
    assert_eq!(query(&a, stats), "3 captured, 2 emitted");
    assert_eq!(query(&b, stats), "3 captured, 1 emitted");
    for (name, node) in [("A", &a), ("B", &b)] {
        let log = node.log_tail(400);
        assert!(!log.contains("ERROR"), "{name}:\n{log}");
    }
}
