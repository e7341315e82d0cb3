//! Generated columns under DDL replication. By default a publication does not send their
//! values: the replayed `CREATE TABLE` makes the same generated columns on the subscriber,
//! which computes them. PostgreSQL 18's `publish_generated_columns = stored` sends the stored
//! ones' values, which a generated column on the subscriber cannot take.

use ddl_e2e::{create_subscription, ddl_publisher, ddl_subscriber, query, wait_caught_up};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

fn version(pg: &Cluster) -> u32 {
    query(pg, "SHOW server_version_num").parse().unwrap()
}

/// A publisher with publication `p` (`with` its options) and a subscriber subscribed to it.
fn pair(name: &str, with: &str) -> (Cluster, Cluster) {
    let publisher = ddl_publisher(&format!("{name}-pub"));
    query(
        &publisher,
        &format!("CREATE PUBLICATION p FOR ALL TABLES WITH ({with})"),
    );
    let subscriber = ddl_subscriber(&format!("{name}-sub"), &["ddl_sync"]);
    let (ok, said) = create_subscription(&subscriber, "postgres", &publisher, "ddl = 'all'");
    assert!(ok, "{said}");
    (publisher, subscriber)
}

#[test]
fn generated_columns_are_made_and_computed_on_the_subscriber() {
    let (publisher, subscriber) = pair("gen", "ddl = 'all'");
    // 18 has virtual generated columns (and makes them the default kind).
    let virtual_column = if version(&publisher) >= 180000 {
        ", c int GENERATED ALWAYS AS (a * 3) VIRTUAL"
    } else {
        ""
    };
    query(
        &publisher,
        &format!(
            "CREATE TABLE g (a int PRIMARY KEY, b int GENERATED ALWAYS AS (a * 2) STORED{virtual_column});
             INSERT INTO g (a) VALUES (1), (2);
             ALTER TABLE g ADD COLUMN d int GENERATED ALWAYS AS (a + 100) STORED;
             INSERT INTO g (a) VALUES (3);"
        ),
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    let rows = "SELECT string_agg(g::text, ' ' ORDER BY a) FROM g";
    assert_eq!(query(&subscriber, rows), query(&publisher, rows));
    let kinds = "SELECT string_agg(attname || ':' || attgenerated::text, ',' ORDER BY attnum)
                   FROM pg_attribute WHERE attrelid = 'g'::regclass AND attnum > 0";
    assert_eq!(query(&subscriber, kinds), query(&publisher, kinds));
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.events WHERE apply_status <> 'applied'"
        ),
        "0"
    );
    // The plugin said, for each statement, that this stream sends no generated column.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(command_tag || ' [' || sent_generated_columns || ']', ', '
                               ORDER BY applied_at) FROM ddl_sync.events"
        ),
        "CREATE TABLE [], ALTER TABLE []"
    );
}

#[test]
fn published_generated_columns_become_plain_columns_that_take_the_values() {
    let probe = ddl_publisher("pubgen-probe");
    if version(&probe) < 180000 {
        println!("generated_columns: publish_generated_columns is new in 18");
        return;
    }
    drop(probe);
    let (publisher, subscriber) = pair("pubgen", "ddl = 'all', publish_generated_columns = stored");
    query(
        &publisher,
        "CREATE TABLE g (a int PRIMARY KEY, b int GENERATED ALWAYS AS (a * 2) STORED,
                         c int GENERATED ALWAYS AS (a * 3) VIRTUAL);
         INSERT INTO g (a) VALUES (1), (2);
         ALTER TABLE g ADD COLUMN d int GENERATED ALWAYS AS (a + 100) STORED;
         INSERT INTO g (a) VALUES (3);
         ALTER TABLE g ADD COLUMN e text;
         INSERT INTO g (a, e) VALUES (4, 'after');",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    let rows = "SELECT string_agg(g::text, ' ' ORDER BY a) FROM g";
    assert_eq!(query(&subscriber, rows), query(&publisher, rows));
    // The stored ones are sent and take the publisher's values; the virtual one is not sent
    // (publish_generated_columns covers stored columns only) and stays generated.
    let kinds = "SELECT string_agg(attname || ':' || attgenerated::text, ',' ORDER BY attnum)
                   FROM pg_attribute WHERE attrelid = 'g'::regclass AND attnum > 0";
    assert_eq!(query(&subscriber, kinds), "a:,b:,c:v,d:,e:");
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(apply_status || ' ' || command_tag || coalesce(': ' || apply_detail, ''),
                               E'\n' ORDER BY applied_at) FROM ddl_sync.events"
        ),
        "applied CREATE TABLE: column b of public.g is a plain column here: the publisher sends its \
         values (publish_generated_columns or a column list), which a generated column cannot \
         take; verified, but for differences made on purpose: table public.g column b: \
         generated (a plain column here: the publisher sends its values)\n\
         applied ALTER TABLE: column d of public.g is a plain column here: the publisher sends its \
         values (publish_generated_columns or a column list), which a generated column cannot \
         take; verified, but for differences made on purpose: table public.g column b: \
         generated, table public.g column d: generated (a plain column here: the publisher \
         sends its values)\n\
         applied ALTER TABLE: verified, but for differences made on purpose: table public.g \
         column b: generated, table public.g column d: generated (a plain column here: the \
         publisher sends its values)"
    );
    // What the publisher's plugin said this stream sends, as of each statement: the table's
    // stored generated columns (the virtual one is not sent), one name per line.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(replace(sent_generated_columns, E'\\n', ';'), ' | '
                               ORDER BY applied_at) FROM ddl_sync.events"
        ),
        "b; | b;d; | b;d;"
    );
}
