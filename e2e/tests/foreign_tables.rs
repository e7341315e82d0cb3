//! Foreign tables replicate only where publication and subscription name the kind `foreign`
//! (`all` does not): each node keeps its own foreign-data wrappers, servers and user mappings
//! (hosts and credentials), and a foreign table is made where a server of its server's name
//! exists, as the statement's role, whose rights on that server are this node's.

use ddl_e2e::{create_subscription, ddl_publisher, ddl_subscriber, query};
use ddl_e2e::{wait_caught_up, wait_for};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The foreign tables of schema public with their columns, by name.
fn foreign_tables(pg: &Cluster) -> String {
    query(
        pg,
        "SELECT coalesce(string_agg(format('%s(%s) %s %s', c.oid::regclass,
                                           (SELECT string_agg(attname, ' ' ORDER BY attnum)
                                              FROM pg_attribute
                                             WHERE attrelid = c.oid AND attnum > 0
                                               AND NOT attisdropped),
                                           s.srvname,
                                           coalesce(obj_description(c.oid, 'pg_class'), '-')),
                                    ', ' ORDER BY c.relname), '')
           FROM pg_class c
           JOIN pg_foreign_table f ON f.ftrelid = c.oid
           JOIN pg_foreign_server s ON s.oid = f.ftserver",
    )
}

#[test]
fn foreign_tables_replicate_where_the_kind_is_named_and_the_server_exists() {
    let publisher = ddl_publisher("foreign-pub");
    let subscriber = ddl_subscriber("foreign-sub", &["ddl_sync"]);
    // Each node's own: never replicated, made on both by hand.
    for pg in [&publisher, &subscriber] {
        query(
            pg,
            "CREATE FOREIGN DATA WRAPPER files;
             CREATE SERVER archive FOREIGN DATA WRAPPER files;",
        );
    }
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all, foreign')",
    );
    let (ok, said) =
        create_subscription(&subscriber, "postgres", &publisher, "ddl = 'all, foreign'");
    assert!(ok, "{said}");

    query(
        &publisher,
        "CREATE FOREIGN TABLE orders_2019 (id int, total numeric) SERVER archive
             OPTIONS (path '2019');
         ALTER FOREIGN TABLE orders_2019 ADD COLUMN placed date;
         ALTER TABLE orders_2019 RENAME COLUMN total TO amount;
         COMMENT ON FOREIGN TABLE orders_2019 IS 'before the move';
         CREATE FOREIGN TABLE gone (a int) SERVER archive;
         DROP FOREIGN TABLE gone;",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        foreign_tables(&publisher),
        "orders_2019(id amount placed) archive before the move"
    );
    assert_eq!(foreign_tables(&subscriber), foreign_tables(&publisher));
    assert_eq!(
        query(
            &subscriber,
            "SELECT ftoptions::text FROM pg_foreign_table WHERE ftrelid = 'orders_2019'::regclass"
        ),
        "{path=2019}"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(DISTINCT apply_status || ' ' || kind, ', ') FROM ddl_sync.events"
        ),
        "applied foreign"
    );

    // A server this node lacks: the statement fails here as PostgreSQL says, and replication
    // resumes once the operator made the server.
    query(
        &publisher,
        "CREATE SERVER elsewhere FOREIGN DATA WRAPPER files;
         CREATE FOREIGN TABLE remote (a int) SERVER elsewhere;",
    );
    wait_for("the missing server reported", TIMEOUT, || {
        let errors = query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.failing_events WHERE error LIKE '%server \"elsewhere\" does not exist%'",
        );
        if errors == "0" {
            Err("no failing event yet".into())
        } else {
            Ok(())
        }
    });
    query(
        &subscriber,
        "CREATE SERVER elsewhere FOREIGN DATA WRAPPER files",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        foreign_tables(&subscriber),
        "orders_2019(id amount placed) archive before the move, remote(a) elsewhere -"
    );

    // A role created LOGIN only, with USAGE on a server on the publisher alone: its foreign
    // table is replayed as that role and refused here as PostgreSQL refuses it, until this
    // node's administrator grants the same (grants on servers stay each node's own).
    for pg in [&publisher, &subscriber] {
        query(
            pg,
            "CREATE ROLE app LOGIN;
             GRANT CREATE ON SCHEMA public TO app;
             CREATE SERVER granted FOREIGN DATA WRAPPER files;",
        );
    }
    query(
        &publisher,
        "GRANT USAGE ON FOREIGN SERVER granted TO app;
         SET ROLE app;
         CREATE FOREIGN TABLE apps (a int) SERVER granted;",
    );
    wait_for("the missing USAGE reported", TIMEOUT, || {
        let errors = query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.failing_events
              WHERE error LIKE '%permission denied for foreign server granted%'",
        );
        if errors == "0" {
            Err("no failing event yet".into())
        } else {
            Ok(())
        }
    });
    assert_eq!(
        query(&subscriber, "SELECT to_regclass('apps') IS NULL"),
        "t"
    );
    query(&subscriber, "GRANT USAGE ON FOREIGN SERVER granted TO app");
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(
            &subscriber,
            "SELECT relowner::regrole FROM pg_class WHERE oid = 'apps'::regclass"
        ),
        "app"
    );

    // `all` alone leaves foreign tables out.
    query(&publisher, "ALTER PUBLICATION p SET (ddl = 'all')");
    query(
        &publisher,
        "CREATE FOREIGN TABLE unnamed (a int) SERVER archive;
         CREATE TABLE after_it (a int PRIMARY KEY);",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(
            &subscriber,
            "SELECT to_regclass('after_it') IS NOT NULL, to_regclass('unnamed') IS NULL"
        ),
        "t|t"
    );
}
