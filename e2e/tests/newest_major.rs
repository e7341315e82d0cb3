//! What PostgreSQL 19 added that touches DDL replication, on a 19 server (on older majors this
//! test says so and checks nothing): a DDL publication `FOR ALL TABLES EXCEPT` ddl_sync's own
//! events table would carry no DDL, so it is refused like one that leaves the table out; a
//! subscription with `ddl` through a foreign server (`CREATE SUBSCRIPTION ... SERVER`) is refused
//! as not supported, before anything is made, while one through a connection string takes
//! 19's `REFRESH SEQUENCES` and ddl_sync's `sync_sequences` alike; `REPACK`, 19's successor of
//! CLUSTER, stays each node's own. (A statement an older publisher read with `standard_conforming_strings = off` is
//! cross_version.rs's.)

use ddl_e2e::{ddl_publisher, ddl_subscriber, psql_verbose, query, wait_synchronised};

#[test]
fn nineteen_excepts_servers_and_repack_are_handled() {
    let publisher = ddl_publisher("pg19-publisher");
    let version: u32 = query(&publisher, "SHOW server_version_num")
        .parse()
        .unwrap();
    if version < 190000 {
        println!("newest_major: PostgreSQL {version} has none of 19's EXCEPT, SERVER and REPACK");
        return;
    }
    query(&publisher, "CREATE TABLE t (id int PRIMARY KEY)");

    // The events table excepted: the server's own list of the publication's tables decides.
    let (ok, said) = psql_verbose(
        &publisher,
        "postgres",
        "CREATE PUBLICATION p FOR ALL TABLES EXCEPT (TABLE ddl_sync.events) WITH (ddl = 'all')",
    );
    assert!(!ok, "a DDL publication without its events was made: {said}");
    assert!(
        said.contains(
            "publication \"p\" replicates DDL, but its FOR ALL TABLES EXCEPT leaves out \
             ddl_sync.events"
        ),
        "{said}"
    );
    // Excepting another table is the publisher's business.
    query(
        &publisher,
        "CREATE TABLE local_only (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR ALL TABLES EXCEPT (TABLE local_only) WITH (ddl = 'all');",
    );

    // Through a foreign server: refused with the reason, and no subscription is left.
    let subscriber = ddl_subscriber("pg19-subscriber", &["ddl_sync"]);
    let (ok, said) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "CREATE EXTENSION postgres_fdw;
             CREATE SERVER publisher FOREIGN DATA WRAPPER postgres_fdw OPTIONS ({});
             CREATE USER MAPPING FOR CURRENT_USER SERVER publisher;
             CREATE SUBSCRIPTION s SERVER publisher PUBLICATION p WITH (ddl = 'all');",
            server_options(&publisher.connstr("postgres"))
        ),
    );
    assert!(!ok, "a ddl subscription through a server was made: {said}");
    assert!(
        said.contains("0A000")
            && said.contains("a subscription with \"ddl\" cannot connect through a foreign server"),
        "{said}"
    );
    assert_eq!(
        query(&subscriber, "SELECT count(*) FROM pg_subscription"),
        "0"
    );

    // Through a connection string it is made, and 19's sequence synchronisation (a publication
    // FOR ALL SEQUENCES, REFRESH SEQUENCES) works beside ddl_sync.sync_sequences: whichever
    // moves the subscriber's sequence first, it ends at the publisher's value, never past it.
    query(
        &publisher,
        "CREATE SEQUENCE counter; SELECT nextval('counter') FROM generate_series(1, 5);
         CREATE PUBLICATION seqs FOR ALL SEQUENCES;",
    );
    query(
        &subscriber,
        "CREATE TABLE t (id int PRIMARY KEY); CREATE SEQUENCE counter;",
    );
    query(
        &subscriber,
        &format!(
            "CREATE SUBSCRIPTION s CONNECTION '{}' PUBLICATION p, seqs WITH (ddl = 'all')",
            publisher.connstr("postgres")
        ),
    );
    wait_synchronised(&subscriber, "postgres");
    query(&subscriber, "ALTER SUBSCRIPTION s REFRESH SEQUENCES");
    let moved = query(
        &subscriber,
        "SELECT coalesce(string_agg(sequence || ' ' || publisher_value, ','), '')
           FROM ddl_sync.sync_sequences('s')",
    );
    assert!(moved.is_empty() || moved == "public.counter 5", "{moved}");
    assert_eq!(query(&subscriber, "SELECT last_value FROM counter"), "5");

    // REPACK is not captured; the CREATE TABLE after it is.
    let counted = || {
        query(
            &publisher,
            "SELECT captured + filtered FROM ddl_sync.publication_stats WHERE publication = 'p'",
        )
        .parse::<u64>()
        .expect("a count")
    };
    let before = counted();
    query(&publisher, "REPACK t");
    assert_eq!(counted(), before, "REPACK was captured");
    query(&publisher, "CREATE TABLE after_repack (id int PRIMARY KEY)");
    assert_eq!(counted(), before + 1);
}

/// A libpq connection string's `key=value` pairs as postgres_fdw's server options.
fn server_options(connstr: &str) -> String {
    connstr
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .filter(|(key, _)| matches!(*key, "host" | "port" | "dbname"))
        .map(|(key, value)| format!("{key} '{}'", value.trim_matches('\'')))
        .collect::<Vec<_>>()
        .join(", ")
}
