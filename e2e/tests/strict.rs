//! `schema_mode = strict` on a subscriber (the published tables compared on both sides when the
//! subscription is created, enabled or switched to strict; local DDL on them refused while it
//! is enabled), and the publisher's policy for ALTER TABLE statements that compute existing
//! rows' values on each node (`ddl_sync.volatile_rewrite`).

use ddl_e2e::{
    assert_no_subscription_made, ddl_publisher, ddl_subscriber, psql_verbose, query,
    wait_caught_up, wait_for,
};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// `CREATE SUBSCRIPTION sub ... PUBLICATION p WITH (<with>)`, verbosely.
fn create_subscription(subscriber: &Cluster, publisher: &Cluster, with: &str) -> (bool, String) {
    psql_verbose(
        subscriber,
        "postgres",
        &format!(
            "CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH ({with});",
            publisher.connstr("postgres")
        ),
    )
}

/// Waits until every table of the subscriber's subscriptions is ready (the initial copies done).
fn wait_ready(subscriber: &Cluster) {
    wait_for("every table ready", TIMEOUT, || {
        match query(
            subscriber,
            "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'",
        )
        .as_str()
        {
            "0" => Ok(()),
            n => Err(format!("{n} not ready")),
        }
    });
}

/// The error of a statement that must fail: its verbose messages.
fn refused(pg: &Cluster, sql: &str) -> String {
    let (ok, messages) = psql_verbose(pg, "postgres", sql);
    assert!(!ok, "{sql} succeeded: {messages}");
    messages
}

/// Runs statements that must succeed; their notices and warnings.
fn accepted(pg: &Cluster, sql: &str) -> String {
    let (ok, messages) = psql_verbose(pg, "postgres", sql);
    assert!(ok, "{sql} failed: {messages}");
    messages
}

#[test]
fn strict_mode_lists_every_difference_rechecks_and_guards_replicated_tables() {
    let publisher = ddl_publisher("strict-pub");
    query(
        &publisher,
        "CREATE TABLE same (id int PRIMARY KEY, note text);
         CREATE TABLE typed (id int PRIMARY KEY, amount numeric(10, 2) NOT NULL, gone text,
                             g int GENERATED ALWAYS AS (id * 2) STORED);
         CREATE TABLE keyed (id int PRIMARY KEY, code text NOT NULL);
         CREATE TABLE absent (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR TABLE same, typed, keyed, absent WITH (ddl = 'all');",
    );
    let subscriber = ddl_subscriber("strict-sub", &["ddl_sync"]);
    query(
        &subscriber,
        "CREATE TABLE same (id int PRIMARY KEY, note text);
         CREATE TABLE typed (id bigint PRIMARY KEY, amount numeric(12, 2), extra date, g int);
         CREATE TABLE keyed (id int, code text NOT NULL);
         ALTER TABLE keyed REPLICA IDENTITY FULL;",
    );

    // Every difference, one line each; nothing is created.
    let messages = refused(
        &subscriber,
        &format!(
            "CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH (ddl = 'all', schema_mode = 'strict');",
            publisher.connstr("postgres")
        ),
    );
    let expected = [
        "table public.absent: published, missing on the subscriber",
        "table public.keyed: primary key: publisher says (id), subscriber says none",
        "table public.keyed: replica identity: publisher says primary key (id), subscriber says full",
        "table public.keyed, column id: not null: publisher says NOT NULL, subscriber says nullable",
        "table public.typed, column amount: type: publisher says numeric(10,2), subscriber says numeric(12,2)",
        "table public.typed, column amount: not null: publisher says NOT NULL, subscriber says nullable",
        "table public.typed, column extra: missing on the publisher (subscriber says date)",
        "table public.typed, column g: generated: publisher says GENERATED ALWAYS AS ((id * 2)) STORED, subscriber says not generated",
        "table public.typed, column gone: missing on the subscriber (publisher says text)",
        "table public.typed, column id: type: publisher says integer, subscriber says bigint",
    ];
    assert!(
        messages.contains(
            "ERROR:  55000: subscription \"sub\" has schema_mode = strict, and its tables differ from the publisher's (10 differences)"
        ),
        "{messages}"
    );
    assert!(
        messages.contains(&format!("DETAIL:  {}\n", expected.join("\n"))),
        "{messages}"
    );
    assert!(
        messages.contains("HINT:  Make the subscriber's tables match"),
        "{messages}"
    );
    assert_no_subscription_made(&subscriber, &publisher);

    // Identical tables: accepted, and the mode is stored.
    query(
        &subscriber,
        "DROP TABLE typed, keyed;
         CREATE TABLE typed (id int PRIMARY KEY, amount numeric(10, 2) NOT NULL, gone text,
                             g int GENERATED ALWAYS AS (id * 2) STORED);
         CREATE TABLE keyed (id int PRIMARY KEY, code text NOT NULL);
         CREATE TABLE absent (id int PRIMARY KEY);",
    );
    let (ok, messages) = create_subscription(
        &subscriber,
        &publisher,
        "ddl = 'all', schema_mode = 'strict'",
    );
    assert!(ok, "{messages}");
    assert_eq!(
        query(
            &subscriber,
            "SELECT schema_mode FROM ddl_sync.subscription_ddl"
        ),
        "strict"
    );
    wait_ready(&subscriber);

    // The guard: local DDL on a replicated table is refused while the subscription is enabled...
    for (sql, table) in [
        ("ALTER TABLE same ADD COLUMN local int", "same"),
        ("CREATE INDEX ON same (note)", "same"),
        ("ALTER TABLE keyed RENAME COLUMN code TO label", "keyed"),
        ("DROP TABLE absent", "absent"),
    ] {
        let messages = refused(&subscriber, &format!("{sql};"));
        assert!(
            messages.contains(&format!(
                "ERROR:  55000: table public.{table} is replicated by subscription \"sub\" (schema_mode = strict): local DDL on it is refused"
            )) && messages.contains(
                "HINT:  Run the DDL on the publisher: it replicates. For maintenance, SET ddl_sync.allow_local_ddl = on"
            ),
            "{sql}: {messages}"
        );
    }
    // ...but not on a table it does not replicate, nor with the maintenance switch.
    accepted(
        &subscriber,
        "CREATE TABLE local_only (id int); ALTER TABLE local_only ADD COLUMN note text;",
    );
    accepted(
        &subscriber,
        "SET ddl_sync.allow_local_ddl = on;
         CREATE INDEX same_note ON same (note);
         DROP INDEX same_note;",
    );
    // The apply worker's replay is let through.
    query(
        &publisher,
        "ALTER TABLE same ADD COLUMN added int; INSERT INTO same VALUES (1, 'one', 11);",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(
            &subscriber,
            "SELECT id || ' ' || note || ' ' || added FROM same"
        ),
        "1 one 11"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(status, ',') FROM ddl_sync.apply_log WHERE command_tag = 'ALTER TABLE'"
        ),
        "applied"
    );

    // ENABLE compares again: a difference made while the subscription was disabled is refused.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub DISABLE;
         ALTER TABLE typed ALTER COLUMN amount TYPE numeric(14, 2);",
    );
    let messages = refused(&subscriber, "ALTER SUBSCRIPTION sub ENABLE;");
    assert!(
        messages.contains("(1 difference)")
            && messages.contains(
                "DETAIL:  table public.typed, column amount: type: publisher says numeric(10,2), subscriber says numeric(14,2)\n"
            ),
        "{messages}"
    );
    assert_eq!(
        query(&subscriber, "SELECT subenabled FROM pg_subscription"),
        "f"
    );
    query(
        &subscriber,
        "ALTER TABLE typed ALTER COLUMN amount TYPE numeric(10, 2);
         ALTER SUBSCRIPTION sub ENABLE;",
    );
    assert_eq!(
        query(&subscriber, "SELECT subenabled FROM pg_subscription"),
        "t"
    );

    // Relaxed: no guard; switching back to strict compares again and keeps relaxed on failure.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (schema_mode = 'relaxed');
         ALTER TABLE same ADD COLUMN local int;",
    );
    let messages = refused(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (schema_mode = 'strict');",
    );
    assert!(
        messages.contains(
            "DETAIL:  table public.same, column local: missing on the publisher (subscriber says integer)\n"
        ),
        "{messages}"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT schema_mode FROM ddl_sync.subscription_ddl"
        ),
        "relaxed"
    );
    query(
        &subscriber,
        "ALTER TABLE same DROP COLUMN local;
         ALTER SUBSCRIPTION sub SET (schema_mode = 'strict');",
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT schema_mode FROM ddl_sync.subscription_ddl"
        ),
        "strict"
    );

    // A bad value, and schema_mode without ddl.
    let messages = refused(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (schema_mode = 'strictest');",
    );
    assert!(
        messages.contains("ERROR:  22023: invalid value for subscription parameter \"schema_mode\": unknown schema mode \"strictest\" (valid: strict, relaxed)"),
        "{messages}"
    );
    let messages = refused(
        &subscriber,
        &format!(
            "CREATE SUBSCRIPTION other CONNECTION '{}' PUBLICATION p WITH (schema_mode = 'strict', connect = false);",
            publisher.connstr("postgres")
        ),
    );
    assert!(
        messages.contains("ERROR:  22023: subscription parameter \"schema_mode\" requires \"ddl\""),
        "{messages}"
    );
}

/// The values of a table on one node, in key order.
fn values(pg: &Cluster, table: &str) -> String {
    query(
        pg,
        &format!("SELECT string_agg(x::text, ';' ORDER BY x.id) FROM {table} x"),
    )
}

#[test]
fn volatile_rewrites_are_refused_warned_about_or_replicated_as_rows() {
    let publisher = ddl_publisher("volatile-pub");
    let tables = "CREATE TABLE t (id int PRIMARY KEY, v int);
                  CREATE TABLE full_t (id int PRIMARY KEY, v int);
                  ALTER TABLE full_t REPLICA IDENTITY FULL;
                  CREATE TABLE empty_t (id int PRIMARY KEY);
                  CREATE TABLE nokey (v int);";
    query(
        &publisher,
        &format!(
            "{tables}
             INSERT INTO t SELECT g, g FROM generate_series(1, 20) g;
             INSERT INTO full_t SELECT g, g FROM generate_series(1, 5) g;
             INSERT INTO nokey SELECT g FROM generate_series(1, 5) g;
             CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');"
        ),
    );
    let subscriber = ddl_subscriber("volatile-sub", &["ddl_sync"]);
    query(&subscriber, tables);
    let (ok, messages) = create_subscription(&subscriber, &publisher, "ddl = 'all'");
    assert!(ok, "{messages}");
    wait_ready(&subscriber);
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(values(&subscriber, "t"), values(&publisher, "t"));

    // refuse (the default): each kind of statement, with why and what to do instead.
    for (sql, detail) in [
        (
            "ALTER TABLE t ADD COLUMN r float8 DEFAULT random()",
            "DETAIL:  Column r: DEFAULT random() is not immutable, each node computes it for itself.",
        ),
        (
            "ALTER TABLE t ADD COLUMN at timestamptz NOT NULL DEFAULT now()",
            "DETAIL:  Column at: DEFAULT now() is not immutable, each node computes it for itself.",
        ),
        (
            "ALTER TABLE t ADD COLUMN n serial",
            "DETAIL:  Column n: DEFAULT nextval('t_n_seq'::regclass) is not immutable, each node computes it for itself.",
        ),
        (
            "ALTER TABLE t ADD COLUMN i int GENERATED ALWAYS AS IDENTITY",
            "DETAIL:  Column i: an identity column, numbered on each node in its own row order.",
        ),
        // PostgreSQL collects these in parts, split where it makes the serial's sequence: the
        // column comes after the split (the first only adds columns, the second does more).
        (
            "ALTER TABLE t ADD COLUMN e text, ADD COLUMN n2 serial",
            "DETAIL:  Column n2: DEFAULT nextval('t_n2_seq'::regclass) is not immutable, each node computes it for itself.",
        ),
        (
            "ALTER TABLE t ADD COLUMN e text, ADD COLUMN n3 serial, ALTER COLUMN v SET NOT NULL",
            "DETAIL:  Column n3: DEFAULT nextval('t_n3_seq'::regclass) is not immutable, each node computes it for itself.",
        ),
        (
            "ALTER TABLE t ALTER COLUMN v TYPE float8 USING v * random()",
            "DETAIL:  Column v: USING ((v)::double precision * random()) is not immutable, each node computes it for itself.",
        ),
    ] {
        let messages = refused(&publisher, &format!("{sql};"));
        assert!(
            messages.contains(
                "ERROR:  0A000: ALTER TABLE would give the existing rows of public.t values computed on each node"
            ) && messages.contains(detail)
                && messages.contains("HINT:  Add the column without the default, fill it with UPDATE (rows replicate), then ALTER COLUMN ... SET DEFAULT; or SET ddl_sync.volatile_rewrite = 'rows'"),
            "{sql}: {messages}"
        );
    }
    // Not refused: an immutable default, a volatile one on a table without rows.
    accepted(
        &publisher,
        "ALTER TABLE t ADD COLUMN k int DEFAULT 7;
         ALTER TABLE empty_t ADD COLUMN r float8 DEFAULT random();",
    );

    // warn: replicated as it is, and the values differ.
    let messages = accepted(
        &publisher,
        "SET ddl_sync.volatile_rewrite = warn;
         ALTER TABLE t ADD COLUMN w float8 DEFAULT random();",
    );
    assert!(
        messages.contains(
            "WARNING:  0A000: ALTER TABLE would give the existing rows of public.t values computed on each node"
        ),
        "{messages}"
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    let w = "SELECT string_agg(w::text, ';' ORDER BY id) FROM t";
    assert_ne!(query(&subscriber, w), query(&publisher, w));
    query(&publisher, "ALTER TABLE t DROP COLUMN w");

    // rows: the publisher's values follow the statement as row updates.
    accepted(
        &publisher,
        "SET ddl_sync.volatile_rewrite = rows;
         ALTER TABLE t ADD COLUMN r float8 DEFAULT random(),
                       ADD COLUMN n serial,
                       ADD COLUMN i int GENERATED ALWAYS AS IDENTITY;
         UPDATE t SET v = -v WHERE id % 2 = 0;
         SET ddl_sync.volatile_rewrite = rows;
         ALTER TABLE t ALTER COLUMN v TYPE float8 USING v * random();
         INSERT INTO t (id, v) VALUES (100, 1);",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(values(&subscriber, "t"), values(&publisher, "t"));
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.apply_log WHERE status <> 'applied'"
        ),
        "0"
    );
    // ...when subscribers can find the rows: not by REPLICA IDENTITY FULL.
    let messages = refused(
        &publisher,
        "SET ddl_sync.volatile_rewrite = rows;
         ALTER TABLE full_t ADD COLUMN r float8 DEFAULT random();",
    );
    assert!(
        messages.contains("ERROR:  0A000: ddl_sync.volatile_rewrite = 'rows' cannot replicate the new values of public.full_t")
            && messages.contains("DETAIL:  full_t has REPLICA IDENTITY FULL"),
        "{messages}"
    );
    // ...nor by a key made of the new values (the statement's own primary key).
    let messages = refused(
        &publisher,
        "SET ddl_sync.volatile_rewrite = rows;
         ALTER TABLE nokey ADD COLUMN id serial PRIMARY KEY;",
    );
    assert!(
        messages.contains(
            "DETAIL:  The replica identity of nokey includes column id, whose values differ: subscribers could not find the rows."
        ),
        "{messages}"
    );
}
