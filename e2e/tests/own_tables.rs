//! The extension's own tables (each node's configuration, apply log and adapters) and native
//! subscriptions: a subscription that does not replicate DDL gets the tables and rows it would
//! get from a publisher without the extension, while the publisher writes to its own tables
//! (a DDL publication's configuration, a keyless table's follow-up). On PostgreSQL 19 the
//! publisher also keeps them out of its `FOR ALL TABLES` publications (`EXCEPT`), so that a
//! subscriber without the extension can subscribe at all; before 19 nothing can leave a
//! permanent table out of `FOR ALL TABLES`, and the subscriber's side leaves them out.

use ddl_e2e::{ddl_publisher, ddl_subscriber, query, wait_caught_up};
use ddl_e2e::{psql_verbose, wait_synchronised};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The tables of publication `publication` in schema ddl_sync, by name.
fn own_tables_published(pg: &Cluster, db: &str, publication: &str) -> String {
    pg.psql(
        db,
        &format!(
            "SELECT coalesce(string_agg(tablename, ', ' ORDER BY tablename), '')
               FROM pg_publication_tables
              WHERE pubname = '{publication}' AND schemaname = 'ddl_sync'"
        ),
    )
    .unwrap_or_else(|e| panic!("pg_publication_tables: {e}"))
}

/// The relations of `subscriber`'s subscriptions, by name.
fn subscribed(subscriber: &Cluster) -> String {
    query(
        subscriber,
        "SELECT string_agg(srrelid::regclass::text, ', ' ORDER BY srrelid::regclass::text)
           FROM pg_subscription_rel",
    )
}

/// Writes to the publisher's own tables while a native subscription follows it: a DDL
/// publication's configuration changes, and a keyless table's follow-up is remembered.
fn write_own_tables(publisher: &Cluster) {
    query(
        publisher,
        "ALTER PUBLICATION d SET (ddl = 'table');
         CREATE TABLE keyless (a int);
         INSERT INTO t VALUES (2, 'b');",
    );
    assert_eq!(
        query(
            publisher,
            "SELECT count(*) FROM ddl_sync.keyless_identity WHERE relid = 'keyless'::regclass"
        ),
        "1",
        "the keyless follow-up wrote no row of the publisher's own"
    );
}

/// `subscriber`'s copy of table `t` once caught up, and that its apply worker never failed.
fn rows_arrived(publisher: &Cluster, subscriber: &Cluster) {
    wait_caught_up(publisher, subscriber, "s", TIMEOUT);
    assert_eq!(
        query(subscriber, "SELECT string_agg(v, ',' ORDER BY id) FROM t"),
        "a,b"
    );
    assert_eq!(
        query(
            subscriber,
            "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 's'"
        ),
        "0"
    );
}

#[test]
fn a_native_subscription_gets_none_of_the_extensions_tables() {
    let publisher = ddl_publisher("own-publisher");
    let version: u32 = query(&publisher, "SHOW server_version_num")
        .parse()
        .unwrap();
    query(
        &publisher,
        "CREATE TABLE t (id int PRIMARY KEY, v text);
         INSERT INTO t VALUES (1, 'a');
         CREATE PUBLICATION p FOR ALL TABLES;
         CREATE PUBLICATION d FOR TABLE t WITH (ddl = 'all');",
    );

    // A subscriber with the extension, subscribing natively (no ddl option): the initial
    // sync and the subscription hold t alone, and the publisher's configuration stays its own.
    let subscriber = ddl_subscriber("own-subscriber", &["ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    query(
        &subscriber,
        &format!(
            "CREATE SUBSCRIPTION s CONNECTION '{}' PUBLICATION p",
            publisher.connstr("postgres")
        ),
    );
    wait_synchronised(&subscriber, "postgres");
    assert_eq!(subscribed(&subscriber), "t");
    write_own_tables(&publisher);
    rows_arrived(&publisher, &subscriber);
    assert_eq!(
        query(
            &subscriber,
            "SELECT (SELECT count(*) FROM ddl_sync.publication_sync)
                  + (SELECT count(*) FROM ddl_sync.keyless_identity)"
        ),
        "0"
    );
    // So after a refresh.
    query(&subscriber, "CREATE TABLE keyless (a int)");
    query(
        &subscriber,
        "ALTER SUBSCRIPTION s REFRESH PUBLICATION WITH (copy_data = false)",
    );
    assert_eq!(subscribed(&subscriber), "keyless, t");

    if version < 190000 {
        // What 19's EXCEPT does below cannot be done before it: the list still has them.
        assert_ne!(own_tables_published(&publisher, "postgres", "p"), "");
        println!("own_tables: PostgreSQL {version} cannot leave a table out of FOR ALL TABLES");
        return;
    }

    // 19: none of them in a FOR ALL TABLES publication, but ddl_sync.events in one that
    // replicates DDL, whether the option comes with the publication or later.
    assert_eq!(own_tables_published(&publisher, "postgres", "p"), "");
    query(
        &publisher,
        "CREATE PUBLICATION a FOR ALL TABLES WITH (ddl = 'all')",
    );
    assert_eq!(own_tables_published(&publisher, "postgres", "a"), "events");
    query(&publisher, "ALTER PUBLICATION a SET (ddl = 'none')");
    assert_eq!(own_tables_published(&publisher, "postgres", "a"), "");
    // A schema's rule that takes DDL is enough, and removing it takes the table out again.
    let rule = query(&publisher, "SELECT ddl_sync.add_schema_rule('a', 'public')");
    assert_eq!(own_tables_published(&publisher, "postgres", "a"), "events");
    query(&publisher, &format!("SELECT ddl_sync.remove_rule({rule})"));
    assert_eq!(own_tables_published(&publisher, "postgres", "a"), "");
    query(&publisher, "ALTER PUBLICATION p SET (ddl = 'all')");
    assert_eq!(own_tables_published(&publisher, "postgres", "p"), "events");
    query(&publisher, "ALTER PUBLICATION p SET (ddl = 'none')");
    // A user's own EXCEPT list is kept, and ours is added back after SET ALL TABLES.
    query(
        &publisher,
        "CREATE TABLE local_only (id int PRIMARY KEY);
         ALTER PUBLICATION p SET ALL TABLES EXCEPT (TABLE local_only);",
    );
    assert_eq!(own_tables_published(&publisher, "postgres", "p"), "");
    assert_eq!(
        query(
            &publisher,
            "SELECT count(*) FROM pg_publication_tables
              WHERE pubname = 'p' AND tablename = 'local_only'"
        ),
        "0"
    );
    // A publication made before the extension.
    query(&publisher, "CREATE DATABASE later");
    publisher
        .psql(
            "later",
            "CREATE PUBLICATION early FOR ALL TABLES; CREATE EXTENSION ddl_sync;",
        )
        .expect("the extension after a FOR ALL TABLES publication");
    assert_eq!(own_tables_published(&publisher, "later", "early"), "");

    // A subscriber without the extension subscribes to p and follows it while the publisher
    // writes to its own tables.
    let plain = ddl_e2e::publisher("own-plain-subscriber"); // no library of ours, no extension
    query(
        &plain,
        "CREATE TABLE t (id int PRIMARY KEY, v text);
         CREATE TABLE keyless (a int);",
    );
    let (ok, said) = psql_verbose(
        &plain,
        "postgres",
        &format!(
            "CREATE SUBSCRIPTION plain_s CONNECTION '{}' PUBLICATION p",
            publisher.connstr("postgres")
        ),
    );
    assert!(
        ok,
        "a subscriber without the extension could not subscribe: {said}"
    );
    wait_synchronised(&plain, "postgres");
    assert_eq!(subscribed(&plain), "keyless, t");
    query(
        &publisher,
        "ALTER PUBLICATION d SET (ddl = 'all');
         CREATE TABLE keyless_2 (a int);
         INSERT INTO t VALUES (3, 'c');",
    );
    wait_caught_up(&publisher, &plain, "plain_s", TIMEOUT);
    assert_eq!(
        query(&plain, "SELECT string_agg(v, ',' ORDER BY id) FROM t"),
        "a,b,c"
    );
}
