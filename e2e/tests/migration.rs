//! A whole migration through a native subscription: afterwards the subscriber's schema prints
//! the same as the publisher's, every row is there, and every statement was applied.

use ddl_e2e::compare::{assert_all_applied, assert_same_rows, assert_same_schema};
use ddl_e2e::{ddl_publisher, ddl_subscriber, query, subscribe, wait_caught_up};
use std::time::Duration;

/// The migration, one transaction per step (see the file's comments).
const MIGRATION: &str = include_str!("migration/shop.sql");

/// Every kind of `ddl = '...'`.
const KINDS: &str = "domain,extension,function,index,rule,schema,sequence,table,trigger,type,view";

#[test]
fn a_migration_of_every_kind_leaves_both_sides_identical() {
    migrate("migration", false);
}

/// The same with `streaming = on`: the publisher's large transactions (its
/// `logical_decoding_work_mem` is 64kB) reach the subscriber in parts before they commit, and
/// the apply worker replays their DDL when it applies them at commit.
#[test]
fn a_migration_in_streamed_transactions_leaves_both_sides_identical() {
    migrate("migration-streamed", true);
}

fn migrate(name: &str, streaming: bool) {
    let publisher = ddl_publisher(&format!("{name}-pub"));
    let subscriber = ddl_subscriber(&format!("{name}-sub"), &[]);
    for node in [&publisher, &subscriber] {
        query(node, "CREATE ROLE reporting NOLOGIN");
    }
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    subscribe(&subscriber, &publisher, "sub", "s", "all", "error");
    if streaming {
        query(&subscriber, "ALTER SUBSCRIPTION sub SET (streaming = on)");
    }

    query(&publisher, MIGRATION);
    wait_caught_up(&publisher, &subscriber, "sub", Duration::from_secs(90));
    if streaming {
        let streamed = query(
            &publisher,
            "SELECT stream_txns FROM pg_stat_replication_slots WHERE slot_name = 's'",
        );
        let streamed: u64 = streamed.parse().expect("stream_txns of slot s");
        assert!(streamed > 0, "no transaction was streamed");
    }

    assert_all_applied(&subscriber);
    let summary = query(
        &subscriber,
        "SELECT count(*) || ' ' || string_agg(DISTINCT kind, ',' ORDER BY kind) FROM ddl_sync.events",
    );
    let (count, kinds) = summary.split_once(' ').expect("count and kinds");
    let count: usize = count.parse().expect("a count");
    assert!(count >= 100, "only {count} DDL statements replayed");
    assert_eq!(kinds, KINDS, "kinds replayed");

    assert_same_schema(&publisher, &subscriber);
    let tables = assert_same_rows(&publisher, &subscriber);
    // The comparison covered the migration's tables, with their rows.
    for table in [
        "shop.customers",
        "shop.orders_2025",
        "shop.orders_2026",
        "archive.orders_2024_archive",
        "archive.top_customers",
        "archive.cheap_products",
        "shop.orders_2027",
        "archive.report_runs",
    ] {
        let sum = tables.get(table).unwrap_or_else(|| panic!("no {table}"));
        assert!(!sum.starts_with("0 "), "{table} is empty: {sum}");
    }
}
