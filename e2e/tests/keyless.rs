//! Tables without a key on a publisher that replicates DDL (`ddl_sync.keyless_tables`): an
//! application's own updates and deletes keep working there, and replicate.

use ddl_e2e::{create_subscription, ddl_publisher, ddl_subscriber, psql_verbose, query};
use ddl_e2e::{wait_caught_up, wait_for};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `sql` as role `app` (created `LOGIN` only): whether it succeeded, and what psql said.
fn as_app(pg: &Cluster, sql: &str) -> (bool, String) {
    psql_verbose(
        pg,
        "postgres",
        &format!("SET SESSION AUTHORIZATION app;\n{sql}\n"),
    )
}

/// [`as_app`] for statements that must succeed: what psql said.
fn run_as_app(pg: &Cluster, sql: &str) -> String {
    let (ok, said) = as_app(pg, sql);
    assert!(ok, "{sql}: {said}");
    said
}

/// Each table's replica identity (`relreplident`), schema `app`, by name.
fn identities(pg: &Cluster) -> String {
    query(
        pg,
        "SELECT string_agg(relname || ' ' || relreplident::text, ', ' ORDER BY relname)
           FROM pg_class WHERE relnamespace = 'app'::regnamespace AND relkind IN ('r', 'p')",
    )
}

/// The tables whose FULL replica identity the policy set, by name.
fn tracked(pg: &Cluster) -> String {
    query(
        pg,
        "SELECT coalesce(string_agg(relid::regclass::text, ', ' ORDER BY relid::regclass::text), '')
           FROM ddl_sync.keyless_identity",
    )
}

/// Every row of every table of schema `app`, as text.
fn rows(pg: &Cluster) -> String {
    let tables = query(
        pg,
        "SELECT string_agg(oid::regclass::text, ' ' ORDER BY relname) FROM pg_class
          WHERE relnamespace = 'app'::regnamespace AND relkind IN ('r', 'p')",
    );
    tables
        .split_whitespace()
        .map(|t| {
            let rows = query(
                pg,
                &format!(
                    "SELECT coalesce(string_agg(x::text, ';' ORDER BY x::text), '') FROM {t} x"
                ),
            );
            format!("{t}: {rows}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn tables_without_a_key_get_replica_identity_full_until_they_have_one() {
    let publisher = ddl_publisher("keyless-pub");
    let subscriber = ddl_subscriber("keyless-sub", &["ddl_sync"]);
    for pg in [&publisher, &subscriber] {
        query(pg, "CREATE ROLE app LOGIN");
    }
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    );
    let (ok, said) = create_subscription(&subscriber, "postgres", &publisher, "ddl = 'all'");
    assert!(ok, "{said}");
    query(&publisher, "CREATE SCHEMA app AUTHORIZATION app");

    // A migration's bookkeeping table and a log without a key: the application's updates and
    // deletes work on the publisher (PostgreSQL refuses them otherwise) and replicate.
    let said = run_as_app(
        &publisher,
        "CREATE TABLE app.version (v int);
         INSERT INTO app.version VALUES (1);
         UPDATE app.version SET v = 2;
         CREATE TABLE app.log (at int, what text);
         INSERT INTO app.log VALUES (1, 'a'), (2, 'b');
         DELETE FROM app.log WHERE at = 1;
         CREATE TEMP TABLE scratch (a int);",
    );
    assert!(
        said.contains("NOTICE:  00000: replica identity of table app.version set to FULL")
            && said.contains(
                "DETAIL:  The table has no primary key, and a publication publishes its updates \
                 and deletes, which PostgreSQL refuses on a table without a replica identity."
            )
            && said.contains("HINT:  A primary key makes it DEFAULT again.")
            && said.contains("replica identity of table app.log set to FULL"),
        "{said}"
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(identities(&publisher), "log f, version f");
    assert_eq!(identities(&subscriber), identities(&publisher));
    assert_eq!(rows(&subscriber), rows(&publisher));
    assert_eq!(rows(&publisher), "app.log: (2,b)\napp.version: (2)");
    // The follow-up is an event of its own: the apply log says what was done, and verifies it.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(status || ' ' || verified || ': ' || sql, E'\\n' ORDER BY origin_lsn)
               FROM ddl_sync.apply_log WHERE sql LIKE '%REPLICA IDENTITY%'"
        ),
        "applied true: ALTER TABLE app.version REPLICA IDENTITY FULL\n\
         applied true: ALTER TABLE app.log REPLICA IDENTITY FULL"
    );
    // Remembered where the policy ran, and only there.
    assert_eq!(tracked(&publisher), "app.log, app.version");
    assert_eq!(tracked(&subscriber), "");

    // A primary key: DEFAULT again, on both nodes. A FULL the user chose stays.
    let said = run_as_app(
        &publisher,
        "ALTER TABLE app.version ADD PRIMARY KEY (v);
         ALTER TABLE app.log REPLICA IDENTITY FULL;
         ALTER TABLE app.log ADD PRIMARY KEY (at);
         UPDATE app.version SET v = 3;",
    );
    assert!(
        said.contains("NOTICE:  00000: replica identity of table app.version set back to DEFAULT"),
        "{said}"
    );
    assert!(!said.contains("app.log set back"), "{said}");
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(identities(&publisher), "log f, version d");
    assert_eq!(identities(&subscriber), identities(&publisher));
    assert_eq!(tracked(&publisher), "");

    // Made by CREATE TABLE AS, partitioned, a partition: each its own FULL.
    run_as_app(
        &publisher,
        "CREATE TABLE app.copied AS SELECT 1 AS a;
         CREATE TABLE app.parts (k int) PARTITION BY RANGE (k);
         CREATE TABLE app.parts_1 PARTITION OF app.parts FOR VALUES FROM (0) TO (10);
         INSERT INTO app.parts VALUES (1), (5);
         UPDATE app.parts SET k = 2 WHERE k = 1;
         DELETE FROM app.parts WHERE k = 5;
         UPDATE app.copied SET a = 7;",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        identities(&publisher),
        "copied f, log f, parts f, parts_1 f, version d"
    );
    assert_eq!(identities(&subscriber), identities(&publisher));
    assert_eq!(rows(&subscriber), rows(&publisher));
    assert_eq!(tracked(&publisher), "app.copied, app.parts, app.parts_1");

    // Dropped: forgotten with it.
    run_as_app(&publisher, "DROP TABLE app.copied;");
    assert_eq!(tracked(&publisher), "app.parts, app.parts_1");

    // A column a subscriber could not compare: no FULL, said why; PostgreSQL's refusal stays.
    let said = run_as_app(&publisher, "CREATE TABLE app.geo (p point);");
    assert!(
        said.contains(
            "WARNING:  01000: table app.geo has no primary key, and its replica identity cannot \
             be FULL"
        ) && said.contains("DETAIL:  Column p is of type point, which has no equality operator"),
        "{said}"
    );
    let (ok, said) = as_app(&publisher, "UPDATE app.geo SET p = NULL;");
    assert!(
        !ok && said.contains("does not have a replica identity and publishes updates"),
        "{said}"
    );

    // refuse: the statement fails, with the reason and the fix.
    let (ok, said) = as_app(
        &publisher,
        "SET ddl_sync.keyless_tables = refuse; CREATE TABLE app.refused (a int);",
    );
    assert!(
        !ok && said.contains(
            "ERROR:  55000: table app.refused has no replica identity, and a publication \
             publishes its updates and deletes"
        ) && said.contains("HINT:  Declare a primary key."),
        "{said}"
    );
    // native: as PostgreSQL does.
    let (ok, said) = as_app(
        &publisher,
        "SET ddl_sync.keyless_tables = native;
         CREATE TABLE app.native (a int);
         DELETE FROM app.native;",
    );
    assert!(
        !ok && said.contains("does not have a replica identity and publishes deletes"),
        "{said}"
    );

    // A publication that publishes no updates or deletes: nothing to do.
    query(
        &publisher,
        "ALTER PUBLICATION p SET (publish = 'insert, truncate')",
    );
    let said = run_as_app(&publisher, "CREATE TABLE app.inserted (a int);");
    assert!(!said.contains("replica identity"), "{said}");
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        identities(&publisher),
        "geo d, inserted d, log f, native d, parts f, parts_1 f, version d"
    );
    assert_eq!(identities(&subscriber), identities(&publisher));
    wait_for("no apply error", TIMEOUT, || {
        match query(
            &subscriber,
            "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 'sub'",
        )
        .as_str()
        {
            "0" => Ok(()),
            n => Err(format!("{n} apply errors")),
        }
    });
}
