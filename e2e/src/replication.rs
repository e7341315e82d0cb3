//! Publisher/subscriber pairs with a native subscription that replays DDL, and waiting for them.

use crate::wait_for;
use ddl_testkit::{Cluster, ClusterBuilder};
use std::time::Duration;

/// Runs `sql` on database `postgres`; panics with psql's error.
pub fn query(pg: &Cluster, sql: &str) -> String {
    pg.psql("postgres", sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A subscriber cluster with the `ddl_sync` extension in database `postgres` and `preload` in
/// `shared_preload_libraries` (`ddl_sync` there gives CREATE SUBSCRIPTION its `ddl` options).
/// Failed apply workers are restarted after one second instead of five, so a test waiting for
/// a retry stays short.
pub fn ddl_subscriber(name: &str, preload: &[&str]) -> Cluster {
    let pg = ClusterBuilder::new()
        .name(name)
        .shared_preload_libraries(preload)
        .conf("wal_retrieve_retry_interval", "1s")
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"));
    query(&pg, "CREATE EXTENSION ddl_sync");
    pg
}

/// `node` subscribes to `from`'s publication `p` through the existing `ddl_pgoutput` slot
/// `slot` (PostgreSQL 15 cannot create it with that plugin), without copying data, replaying
/// the DDL kinds `ddl` under the conflict policy `conflict`.
pub fn subscribe(
    node: &Cluster,
    from: &Cluster,
    name: &str,
    slot: &str,
    ddl: &str,
    conflict: &str,
) {
    subscribe_in(node, from, "postgres", name, slot, ddl, conflict);
}

/// [`subscribe`] in database `db` of both nodes.
pub fn subscribe_in(
    node: &Cluster,
    from: &Cluster,
    db: &str,
    name: &str,
    slot: &str,
    ddl: &str,
    conflict: &str,
) {
    let sql = format!(
        "CREATE SUBSCRIPTION {name} CONNECTION '{}' PUBLICATION p
             WITH (create_slot = false, slot_name = '{slot}', copy_data = false, enabled = false);
         SELECT ddl_sync.set_subscription_ddl('{name}', '{ddl}', '{conflict}');
         ALTER SUBSCRIPTION {name} ENABLE;",
        from.connstr(db)
    );
    node.psql(db, &sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Waits until subscription `name` of `subscriber` has applied and confirmed everything
/// `publisher` had written when this was called (its walsender's `replay_lsn`, as PostgreSQL's
/// own tests wait for catch-up). On time-out the panic shows both servers' logs.
pub fn wait_caught_up(publisher: &Cluster, subscriber: &Cluster, name: &str, timeout: Duration) {
    let target = query(publisher, "SELECT pg_current_wal_lsn()");
    let check = format!(
        "SELECT replay_lsn >= '{target}' FROM pg_stat_replication WHERE application_name = '{name}'"
    );
    wait_for(
        &format!("subscription {name} to reach {target}"),
        timeout,
        || match publisher.psql("postgres", &check) {
            Ok(done) if done == "t" => Ok(()),
            other => Err(format!(
                "{other:?}\n--- subscriber log ---\n{}\n--- publisher log ---\n{}",
                subscriber.log_tail(30),
                publisher.log_tail(10)
            )),
        },
    );
}

/// Delivers hand-made DDL events straight into `subscriber`'s `ddl_sync.events` as the apply
/// worker of subscription `name` would: under that subscription's replication origin, which
/// only a superuser session can take, while the subscription is disabled (an origin is used by
/// one process at a time). Each event is `(dialect, kind, command tag, statement)`; they replay
/// through the apply trigger like arriving ones.
///
/// The output plugin sends only records its capture sealed, and the capture writes only the
/// dialects a server parses (postgres, tsql): this is how tests reach the replay with anything
/// else (another dialect's adapter, a statement no capture would write).
pub fn deliver_events(subscriber: &Cluster, name: &str, events: &[(&str, &str, &str, &str)]) {
    query(subscriber, &format!("ALTER SUBSCRIPTION {name} DISABLE"));
    wait_for(
        &format!("the apply worker of {name} to stop"),
        Duration::from_secs(30),
        || {
            let workers = query(
                subscriber,
                &format!("SELECT count(pid) FROM pg_stat_subscription WHERE subname = '{name}'"),
            );
            if workers == "0" {
                Ok(())
            } else {
                Err(workers)
            }
        },
    );
    let mut sql = format!(
        "SELECT pg_replication_origin_session_setup('pg_' || oid) FROM pg_subscription
          WHERE subname = '{name}';"
    );
    for (n, (dialect, kind, tag, statement)) in events.iter().enumerate() {
        sql.push_str(&crate::hostile::event_insert_sql(
            n as u32 + 1,
            dialect,
            kind,
            tag,
            statement,
        ));
        sql.push(';');
    }
    sql.push_str("SELECT pg_replication_origin_session_reset();");
    query(subscriber, &sql);
    query(subscriber, &format!("ALTER SUBSCRIPTION {name} ENABLE"));
}

/// A publisher with table `t` and publication `p` (FOR ALL TABLES, ddl = 'all'), and a
/// subscriber (`ddl_sync` preloaded) with table `t` and subscription `sub` to it, created as a
/// user would, through `CREATE SUBSCRIPTION ... WITH (ddl = 'all', ddl_conflict =
/// conflict)` (which also makes its `ddl_pgoutput` slot). `t` is empty: no data is copied, so
/// every table is ready at once and [`wait_caught_up`] means its rows arrived (a table sync
/// would apply them in its own worker, after the apply worker's position).
pub fn subscribed_pair(name: &str, conflict: &str) -> (Cluster, Cluster) {
    let publisher = crate::ddl_publisher(&format!("{name}-pub"));
    query(
        &publisher,
        "CREATE TABLE t (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    let subscriber = ddl_subscriber(&format!("{name}-sub"), &["ddl_sync"]);
    query(
        &subscriber,
        &format!(
            "CREATE TABLE t (id int PRIMARY KEY);
             CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p
                 WITH (ddl = 'all', ddl_conflict = '{conflict}', copy_data = false)",
            publisher.connstr("postgres")
        ),
    );
    (publisher, subscriber)
}

/// Waits until every table of database `db`'s subscriptions on `subscriber` is synchronised
/// (`pg_subscription_rel` all `r`eady): before that, the apply worker leaves their rows to the
/// table sync workers, so a row written meanwhile may arrive later than a catch-up says.
pub fn wait_synchronised(subscriber: &Cluster, db: &str) {
    crate::wait_for(
        "the subscribed tables to be synchronised",
        Duration::from_secs(60),
        || {
            let pending = subscriber
                .psql(
                    db,
                    "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'",
                )
                .map_err(|e| e.to_string())?;
            (pending == "0").then_some(()).ok_or(pending)
        },
    );
}

/// `CREATE SUBSCRIPTION sub CONNECTION <publisher's database postgres> PUBLICATION p WITH
/// (<with>)` in database `db` of `subscriber`, with verbose errors: whether it succeeded, and
/// what psql wrote to stderr (notices, warnings, errors).
pub fn create_subscription(
    subscriber: &Cluster,
    db: &str,
    publisher: &Cluster,
    with: &str,
) -> (bool, String) {
    crate::psql_verbose(
        subscriber,
        db,
        &format!(
            "CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH ({with});",
            publisher.connstr("postgres")
        ),
    )
}

/// Asserts that a CREATE SUBSCRIPTION that failed left nothing behind: no subscription on
/// `subscriber`, no slot on `publisher`.
pub fn assert_no_subscription_made(subscriber: &Cluster, publisher: &Cluster) {
    assert_eq!(
        query(subscriber, "SELECT count(*) FROM pg_subscription"),
        "0",
        "a subscription was left behind"
    );
    assert_eq!(
        query(publisher, "SELECT count(*) FROM pg_replication_slots"),
        "0",
        "a slot was left behind"
    );
}
