//! `output_plugin_libraries` (PostgreSQL 15.19, 16.15, 17.11, 18.6 and later): a publisher that
//! does not list `ddl_pgoutput` warns when it is set up for DDL, and a subscription that meets
//! its refusal fails with our message and hint, leaving nothing behind; listed, everything works.
//! On a server without the parameter nothing is said.

use ddl_e2e::{
    assert_no_subscription_made, ddl_subscriber, psql_verbose, query, wait_caught_up, wait_for,
    wait_synchronised,
};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::time::Duration;

const WARNING: &str = "output_plugin_libraries does not list \"ddl_pgoutput\"";

/// A publisher preloading `ddl_pgoutput`, with `output_plugin_libraries` at PostgreSQL's
/// default when the server has the parameter.
fn publisher(name: &str) -> (Cluster, bool) {
    let mut builder = ClusterBuilder::new();
    builder
        .name(name)
        .shared_preload_libraries(&["ddl_pgoutput"]);
    let probe = builder.build().expect("publisher");
    let has_parameter = query(
        &probe,
        "SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'",
    ) == "1";
    if !has_parameter {
        return (probe, false);
    }
    drop(probe);
    builder.conf("output_plugin_libraries", "pgoutput, test_decoding");
    (builder.build().expect("publisher"), true)
}

#[test]
fn an_unlisted_plugin_is_named_on_both_sides() {
    let (publisher, has_parameter) = publisher("plugins-pub");
    let (ok, said) = psql_verbose(&publisher, "postgres", "CREATE EXTENSION ddl_sync;");
    assert!(ok, "{said}");
    assert_eq!(said.contains(WARNING), has_parameter, "{said}");
    if !has_parameter {
        // An older server: the parameter cannot be set there, so nothing may suggest it.
        let (ok, said) = psql_verbose(
            &publisher,
            "postgres",
            "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
        );
        assert!(ok && !said.contains("output_plugin_libraries"), "{said}");
        return;
    }
    assert!(
        said.contains("HINT:  Add ddl_pgoutput to output_plugin_libraries"),
        "{said}"
    );

    let (ok, said) = psql_verbose(
        &publisher,
        "postgres",
        "CREATE TABLE t (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    assert!(ok && said.contains(WARNING), "{said}");
    // A publication without DDL needs nothing of the plugin.
    let (ok, said) = psql_verbose(
        &publisher,
        "postgres",
        "CREATE PUBLICATION rows_only FOR TABLE t;",
    );
    assert!(ok && !said.contains(WARNING), "{said}");

    let subscriber = ddl_subscriber("plugins-sub", &["ddl_sync"]);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");
    let create = format!(
        "CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH (ddl = 'all');",
        publisher.connstr("postgres")
    );
    let (ok, said) = psql_verbose(&subscriber, "postgres", &create);
    assert!(!ok, "{said}");
    assert!(
        said.contains(
            "ERROR:  42501: the publisher does not allow output plugin \"ddl_pgoutput\" for slot \"sub\""
        ),
        "{said}"
    );
    assert!(
        said.contains(
            "DETAIL:  The publisher said: library \"ddl_pgoutput\" may not be used as an output plugin\n"
        )
            && said
                .contains("HINT:  On the publisher, add ddl_pgoutput to output_plugin_libraries"),
        "{said}"
    );
    // Nothing half-made: no subscription here, no slot there.
    assert_no_subscription_made(&subscriber, &publisher);

    // Listed (a reload is enough), the same statement works and DDL follows. A list, not one
    // quoted string: that would be a single name with commas in it.
    query(
        &publisher,
        "ALTER SYSTEM SET output_plugin_libraries = pgoutput, test_decoding, ddl_pgoutput;
         SELECT pg_reload_conf();",
    );
    wait_for("the publisher to reload", Duration::from_secs(30), || {
        let value = query(&publisher, "SHOW output_plugin_libraries");
        (value == "pgoutput, test_decoding, ddl_pgoutput")
            .then_some(())
            .ok_or(value)
    });
    let (ok, said) = psql_verbose(
        &publisher,
        "postgres",
        "ALTER PUBLICATION p SET (ddl = 'all');",
    );
    assert!(ok && !said.contains(WARNING), "{said}");
    let (ok, said) = psql_verbose(&subscriber, "postgres", &create);
    assert!(ok, "{said}");
    wait_synchronised(&subscriber, "postgres");
    query(
        &publisher,
        "ALTER TABLE t ADD COLUMN note text; INSERT INTO t VALUES (1, 'listed')",
    );
    wait_caught_up(&publisher, &subscriber, "sub", Duration::from_secs(60));
    assert_eq!(
        query(&subscriber, "SELECT note FROM t WHERE id = 1"),
        "listed"
    );
}
