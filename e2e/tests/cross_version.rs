//! Replication between PostgreSQL majors, DDL included: the upgrade path users take with logical
//! replication (an old publisher, a new subscriber) and its reverse. The peer servers are those
//! `DDL_PG_CONFIG_PEERS` names (pg_config paths separated by `:`), which `cargo xtask test`
//! sets to every older major (with our libraries installed there) when it runs the suite on
//! 16 to 19, so that each pair of majors is tested once; on 15 this test says it has no peer and
//! checks nothing.

use ddl_e2e::pgtree::pg_config_dir;
use ddl_e2e::{psql_verbose, query, wait_caught_up, wait_synchronised};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::path::{Path, PathBuf};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The bindirs of the peer servers (none without `DDL_PG_CONFIG_PEERS`).
fn peer_bindirs() -> Vec<PathBuf> {
    let peers = std::env::var("DDL_PG_CONFIG_PEERS").unwrap_or_default();
    let bindirs: Vec<PathBuf> = peers
        .split(':')
        .filter(|c| !c.is_empty())
        .map(|config| pg_config_dir(Path::new(config), "--bindir"))
        .collect();
    if bindirs.is_empty() {
        println!(
            "cross_version: no DDL_PG_CONFIG_PEERS, so no second PostgreSQL to replicate with"
        );
    }
    bindirs
}

fn cluster(name: &str, bindir: Option<&Path>, preload: &[&str]) -> Cluster {
    let mut builder = ClusterBuilder::new();
    builder
        .name(name)
        .shared_preload_libraries(preload)
        .conf("wal_retrieve_retry_interval", "1s");
    if let Some(dir) = bindir {
        builder.bindir(dir);
    }
    let pg = builder
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"));
    query(&pg, "CREATE EXTENSION ddl_sync");
    pg
}

fn major(pg: &Cluster) -> String {
    query(
        pg,
        "SELECT current_setting('server_version_num')::int / 10000",
    )
}

/// The columns of table `t`, as the subscriber must see them.
fn columns(pg: &Cluster) -> String {
    query(
        pg,
        "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position)
           FROM information_schema.columns WHERE table_name = 't'",
    )
}

/// `subscriber` subscribes to publication `p` of `publisher` in database `db`, with one CREATE
/// SUBSCRIPTION that replays every kind of DDL and skips what fails, and waits for the tables.
fn subscribe(subscriber: &Cluster, publisher: &Cluster, db: &str, name: &str) {
    let (ok, said) = psql_verbose(
        subscriber,
        db,
        &format!(
            "CREATE SUBSCRIPTION {name} CONNECTION '{}' PUBLICATION p
                 WITH (ddl = 'all', ddl_conflict = 'skip');",
            publisher.connstr(db)
        ),
    );
    assert!(ok, "{said}");
    wait_synchronised(subscriber, db);
}

/// `publisher` replicates DDL and rows to `subscriber` through a subscription made with one
/// CREATE SUBSCRIPTION.
fn replicates(publisher: &Cluster, subscriber: &Cluster) {
    query(
        publisher,
        "CREATE TABLE t (id int PRIMARY KEY, name text);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    query(subscriber, "CREATE TABLE t (id int PRIMARY KEY, name text)");
    subscribe(subscriber, publisher, "postgres", "sub");
    query(
        publisher,
        "INSERT INTO t VALUES (1, 'one');
         ALTER TABLE t ADD COLUMN amount numeric(10,2) DEFAULT 0;
         CREATE INDEX t_name ON t (name);
         CREATE TABLE u (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, t_id int REFERENCES t);
         INSERT INTO t VALUES (2, 'two', 2.5);
         INSERT INTO u (t_id) VALUES (2);",
    );
    wait_caught_up(publisher, subscriber, "sub", TIMEOUT);
    assert_eq!(columns(subscriber), columns(publisher));
    assert_eq!(
        query(
            subscriber,
            "SELECT string_agg(id || ':' || name || ':' || amount, ',' ORDER BY id) FROM t"
        ),
        "1:one:0.00,2:two:2.50"
    );
    assert_eq!(query(subscriber, "SELECT t_id FROM u"), "2");
    assert_eq!(
        query(
            subscriber,
            "SELECT indexdef FROM pg_indexes WHERE indexname = 't_name'"
        ),
        "CREATE INDEX t_name ON public.t USING btree (name)"
    );
    let number = |pg: &Cluster| major(pg).parse::<u32>().expect("a major version");
    if number(publisher) < 19 && number(subscriber) >= 19 {
        reads_no_literal_otherwise(publisher, subscriber);
    }
}

/// 19 reads every string literal as standard conforming: a statement an older publisher read
/// with `standard_conforming_strings = off` would mean something else there, so it is refused
/// with the reason, and replication goes on.
fn reads_no_literal_otherwise(publisher: &Cluster, subscriber: &Cluster) {
    query(
        publisher,
        "SET standard_conforming_strings = off;
         CREATE TABLE quoted (s text DEFAULT 'it\\'s');
         RESET standard_conforming_strings;
         CREATE TABLE after_quoted (id int PRIMARY KEY);",
    );
    wait_caught_up(publisher, subscriber, "sub", TIMEOUT);
    let refused = query(
        subscriber,
        "SELECT apply_status || ': ' || coalesce(apply_detail, '') FROM ddl_sync.events
          WHERE sql LIKE 'CREATE TABLE quoted%'",
    );
    assert!(
        refused.starts_with(
            "refused: the statement was read with standard_conforming_strings = 'off', which \
             this server does not accept"
        ),
        "{refused}"
    );
    // The refused statement did not run: its table is made from the publisher's definition,
    // for the rows (as for any refused CREATE TABLE), which has no defaults.
    assert_eq!(
        query(
            subscriber,
            "SELECT count(*) FROM pg_attrdef WHERE adrelid = 'quoted'::regclass"
        ),
        "0"
    );
    assert_eq!(
        query(subscriber, "SELECT to_regclass('after_quoted') IS NOT NULL"),
        "t"
    );
}

#[test]
fn an_older_publisher_replicates_ddl_to_a_newer_subscriber_and_back() {
    for peer in peer_bindirs() {
        replicates_both_ways(&peer);
    }
}

fn replicates_both_ways(peer: &Path) {
    let this = cluster("xv-this", None, &["ddl_pgoutput", "ddl_sync"]);
    let other = cluster("xv-peer", Some(peer), &["ddl_pgoutput", "ddl_sync"]);
    assert_ne!(
        major(&this),
        major(&other),
        "the peer is another major version"
    );
    let (old, new) = if major(&this) < major(&other) {
        (&this, &other)
    } else {
        (&other, &this)
    };
    println!("cross_version: {} and {}", major(old), major(new));
    replicates(old, new);
    // The reverse, in other databases of the same servers.
    for pg in [old, new] {
        query(pg, "CREATE DATABASE back");
        pg.psql("back", "CREATE EXTENSION ddl_sync")
            .expect("extension");
    }
    let (ok, said) = psql_verbose(
        new,
        "back",
        "CREATE TABLE t (id int PRIMARY KEY, name text);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    assert!(ok, "{said}");
    old.psql("back", "CREATE TABLE t (id int PRIMARY KEY, name text)")
        .expect("table");
    subscribe(old, new, "back", "back");
    // A statement the older server cannot parse: refused there with its parser's own message
    // (whatever the conflict policy: no retry would parse it), and replication goes on. `IS
    // JSON` is 16's, `SET STATISTICS DEFAULT` 17's, virtual generated columns 18's, a window
    // function's `IGNORE NULLS` 19's.
    let (unparsable, marker) = match major(old).as_str() {
        "15" => (
            "ALTER TABLE t ADD COLUMN doc text CHECK (doc IS JSON)",
            "IS JSON",
        ),
        "16" => (
            "ALTER TABLE t ALTER COLUMN name SET STATISTICS DEFAULT",
            "STATISTICS DEFAULT",
        ),
        "17" => (
            "ALTER TABLE t ADD COLUMN shout text GENERATED ALWAYS AS (upper(name)) VIRTUAL",
            "VIRTUAL",
        ),
        _ => (
            "CREATE VIEW previous AS SELECT lag(name) IGNORE NULLS OVER (ORDER BY id) AS p FROM t",
            "IGNORE NULLS",
        ),
    };
    new.psql(
        "back",
        &format!(
            "{unparsable};
             ALTER TABLE t ADD COLUMN note text;
             INSERT INTO t (id, name, note) VALUES (1, 'one', 'after');"
        ),
    )
    .expect("publisher DDL");
    wait_caught_up(new, old, "back", TIMEOUT);
    let failed = old
        .psql(
            "back",
            &format!(
                "SELECT apply_status || ': ' || coalesce(apply_detail, '') FROM ddl_sync.events
                  WHERE sql LIKE '%{marker}%'"
            ),
        )
        .expect("apply log");
    assert!(
        failed.starts_with("refused: this server cannot parse it: syntax error at or near"),
        "{failed}"
    );
    assert_eq!(
        old.psql("back", "SELECT name || ':' || note FROM t")
            .expect("rows"),
        "one:after"
    );
}

/// The upgrade path in one statement: a newer server subscribes to an older one with
/// `copy_schema = true` and gets its schema, rows and later DDL. The reverse is refused before
/// anything is made: the older server's pg_dump cannot dump a newer one.
#[test]
fn copy_schema_copies_an_older_publisher_and_refuses_a_newer_one() {
    for peer in peer_bindirs() {
        copies_up_and_refuses_down(&peer);
    }
}

fn copies_up_and_refuses_down(peer: &Path) {
    let this = cluster("xv-copy-this", None, &["ddl_pgoutput", "ddl_sync"]);
    let other = cluster("xv-copy-peer", Some(peer), &["ddl_pgoutput", "ddl_sync"]);
    let (old, new) = if major(&this) < major(&other) {
        (&this, &other)
    } else {
        (&other, &this)
    };
    println!(
        "cross_version: copy_schema between {} and {}",
        major(old),
        major(new)
    );
    let schema = "CREATE TYPE mood AS ENUM ('ok', 'great');
         CREATE TABLE t (id int PRIMARY KEY, name text, m mood DEFAULT 'ok');
         CREATE INDEX t_name ON t (name);
         INSERT INTO t SELECT g, 'n' || g FROM generate_series(1, 100) g;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');";
    for pg in [old, new] {
        query(pg, schema);
    }
    let copy = |subscriber: &Cluster, publisher: &Cluster, name: &str| {
        query(subscriber, &format!("CREATE DATABASE {name}"));
        subscriber
            .psql(name, "CREATE EXTENSION ddl_sync")
            .expect("extension");
        psql_verbose(
            subscriber,
            name,
            &format!(
                "CREATE SUBSCRIPTION {name} CONNECTION '{}' PUBLICATION p
                     WITH (ddl = 'all', copy_schema = true);",
                publisher.connstr("postgres")
            ),
        )
    };

    let (ok, said) = copy(new, old, "up");
    assert!(ok, "{said}");
    wait_synchronised(new, "up");
    query(
        old,
        "ALTER TABLE t ADD COLUMN note text; INSERT INTO t (id, note) VALUES (101, 'after')",
    );
    wait_caught_up(old, new, "up", TIMEOUT);
    let rows = "SELECT count(*) || ' ' || string_agg(DISTINCT m::text, ',') || ' '
                       || (SELECT note FROM t WHERE id = 101) FROM t";
    assert_eq!(new.psql("up", rows).expect("rows"), "101 ok after");
    assert_eq!(
        new.psql(
            "up",
            "SELECT indexdef FROM pg_indexes WHERE indexname = 't_name'"
        )
        .expect("index"),
        "CREATE INDEX t_name ON public.t USING btree (name)"
    );

    let (ok, said) = copy(old, new, "down");
    assert!(!ok, "{said}");
    assert!(
        said.contains(&format!(
            "copy_schema: the publisher runs PostgreSQL {}, newer than this server's {}",
            major(new),
            major(old)
        )),
        "{said}"
    );
    assert_eq!(
        query(
            new,
            "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'down'"
        ),
        "0",
        "no slot was made"
    );
    assert_eq!(
        old.psql("down", "SELECT count(*) FROM pg_class WHERE relname = 't'")
            .expect("catalog"),
        "0"
    );
}
