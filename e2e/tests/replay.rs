//! DDL replay on a native subscriber: the statements run inside the apply worker's transaction,
//! in order with the rows. What a publisher may send that it should not (hostile rows and
//! messages) is in `hostile.rs`, with the rest of the bad-input cases.

use ddl_e2e::{ddl_publisher, ddl_subscriber, deliver_events, query, subscribe, wait_for};
use ddl_testkit::{Cluster, TempDir};
use std::process::Command;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Publisher with publication `p` (FOR ALL TABLES, ddl = 'all') on slot `s`; subscriber with
/// `sub` replaying `ddl` under `conflict`.
fn pair(name: &str, ddl: &str, conflict: &str) -> (Cluster, Cluster) {
    let publisher = publisher_of_pair(name);
    let subscriber = subscriber_of_pair(name, ddl, conflict, &[], &publisher);
    (publisher, subscriber)
}

fn publisher_of_pair(name: &str) -> Cluster {
    let publisher = ddl_publisher(&format!("{name}-pub"));
    query(
        &publisher,
        "CREATE TABLE t (id int PRIMARY KEY);
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    publisher
}

/// The subscriber of [`pair`], with `preload` as its shared_preload_libraries.
fn subscriber_of_pair(
    name: &str,
    ddl: &str,
    conflict: &str,
    preload: &[&str],
    publisher: &Cluster,
) -> Cluster {
    let subscriber = ddl_subscriber(&format!("{name}-sub"), preload);
    query(&subscriber, "CREATE TABLE t (id int PRIMARY KEY)");
    subscribe(&subscriber, publisher, "sub", "s", ddl, conflict);
    subscriber
}

/// Waits until the subscriber's apply log has `n` rows; returns `status|command_tag|detail` lines.
fn wait_log(subscriber: &Cluster, publisher: &Cluster, n: usize) -> Vec<String> {
    wait_for(
        &format!("{n} rows in the subscriber's apply log"),
        TIMEOUT,
        || {
            let log = subscriber
                .psql(
                    "postgres",
                    "SELECT apply_status || '|' || command_tag || '|' || coalesce(apply_detail, '')
                   FROM ddl_sync.events ORDER BY origin_lsn",
                )
                .map_err(|e| e.to_string())?;
            let lines: Vec<String> = log.lines().map(str::to_string).collect();
            if lines.len() >= n {
                Ok(lines)
            } else {
                Err(format!(
                    "{lines:?}\n{}\n{}",
                    subscriber.log_tail(20),
                    publisher.log_tail(5)
                ))
            }
        },
    )
}

#[test]
fn ddl_and_rows_replay_in_order_and_new_tables_get_their_rows() {
    let (publisher, subscriber) = pair("replay-order", "all", "error");
    query(
        &publisher,
        "BEGIN;
         INSERT INTO t VALUES (1);
         ALTER TABLE t ADD COLUMN note text;
         INSERT INTO t VALUES (2, 'two');
         COMMIT;
         CREATE TABLE fresh (id int PRIMARY KEY, v text);
         INSERT INTO fresh VALUES (1, 'a'), (2, 'b');
         CREATE INDEX fresh_v ON fresh (v);
         CREATE SCHEMA app;
         CREATE TABLE app.items (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text);
         INSERT INTO app.items (name) VALUES ('x');
         SET search_path = app, public;
         ALTER TABLE items RENAME COLUMN name TO title;
         INSERT INTO items (title) VALUES ('y');",
    );
    let log = wait_log(&subscriber, &publisher, 6);
    assert!(log.iter().all(|l| l.starts_with("applied|")), "{log:#?}");
    wait_for("rows of the new tables", TIMEOUT, || {
        let got = query(
            &subscriber,
            "SELECT (SELECT string_agg(id || ':' || coalesce(note, '-'), ',' ORDER BY id) FROM t) || ' '
                 || (SELECT string_agg(v, ',' ORDER BY id) FROM fresh) || ' '
                 || (SELECT string_agg(title, ',' ORDER BY id) FROM app.items)",
        );
        if got == "1:-,2:two a,b x,y" {
            Ok(())
        } else {
            Err(got)
        }
    });
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'fresh_v'"
        ),
        "1"
    );
}

#[test]
fn tables_made_from_queries_get_the_publishers_rows_once() {
    let (publisher, subscriber) = pair("replay-ctas", "all", "error");
    query(&publisher, "INSERT INTO t SELECT generate_series(1, 5)");
    wait_for("the first rows", TIMEOUT, || {
        let n = query(&subscriber, "SELECT count(*) FROM t");
        if n == "5" {
            Ok(())
        } else {
            Err(n)
        }
    });
    // A row only the subscriber has: running the queries there would copy it too.
    query(&subscriber, "INSERT INTO t VALUES (100)");
    query(
        &publisher,
        "CREATE TABLE copied AS SELECT id FROM t;
         SELECT id INTO picked FROM t WHERE id > 3;
         CREATE MATERIALIZED VIEW counted AS SELECT count(*) AS n FROM t;",
    );
    let log = wait_log(&subscriber, &publisher, 3);
    assert!(log.iter().all(|l| l.starts_with("applied|")), "{log:#?}");
    wait_for("the rows of the new tables", TIMEOUT, || {
        let got = query(
            &subscriber,
            "SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM copied) || ' '
                 || (SELECT string_agg(id::text, ',' ORDER BY id) FROM picked)",
        );
        if got == "1,2,3,4,5 4,5" {
            Ok(())
        } else {
            Err(got)
        }
    });
    // A materialized view's rows are the subscriber's own: its query ran there.
    assert_eq!(query(&subscriber, "SELECT n FROM counted"), "6");
}

#[test]
fn skip_policy_records_the_failure_and_goes_on() {
    let (publisher, subscriber) = pair("replay-skip", "all", "skip");
    // The subscriber already has a table the publisher creates: the replay fails there.
    query(&subscriber, "CREATE TABLE clash (id int PRIMARY KEY)");
    query(
        &publisher,
        "CREATE TABLE clash (id int PRIMARY KEY);
         CREATE TABLE after_clash (id int PRIMARY KEY);
         INSERT INTO after_clash VALUES (7);",
    );
    let log = wait_log(&subscriber, &publisher, 2);
    assert!(
        log[0].starts_with("failed|CREATE TABLE|") && log[0].contains("already exists"),
        "{log:#?}"
    );
    assert!(log[1].starts_with("applied|CREATE TABLE|"), "{log:#?}");
    wait_for("the row after the failed statement", TIMEOUT, || {
        let n = query(&subscriber, "SELECT count(*) FROM after_clash");
        if n == "1" {
            Ok(())
        } else {
            Err(n)
        }
    });
}

/// Compiles e2e/c/ddl_sync_test_adapter.c, a dialect adapter in its own extension library,
/// against the server's headers and the ddl_sync_adapter.h that `cargo xtask install` put next
/// to them; returns the directory (kept while it lives) and the library's path.
fn build_test_adapter(pg: &Cluster) -> (TempDir, String) {
    let pg_config = |flag: &str| {
        let out = Command::new(pg.bin("pg_config"))
            .arg(flag)
            .output()
            .expect("pg_config runs");
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_string()
    };
    let server = pg_config("--includedir-server");
    let dir = TempDir::for_postgres("c-adapter").expect("temp dir");
    let library = dir.path().join("ddl_sync_test_adapter.so");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/c/ddl_sync_test_adapter.c");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wall", "-Werror", "-o"])
        .arg(&library)
        .arg(format!("-I{server}"))
        .arg(format!("-I{server}/extension/ddl_sync"))
        .arg(source)
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let library = library.to_str().expect("UTF-8 path").to_string();
    (dir, library)
}

#[test]
fn an_adapter_registered_by_another_extension_replays_its_dialect() {
    let publisher = publisher_of_pair("replay-c-adapter");
    let (_dir, library) = build_test_adapter(&publisher);
    let subscriber = subscriber_of_pair("replay-c-adapter", "all", "skip", &[&library], &publisher);
    // Registered from _PG_init in the postmaster: every backend has it.
    assert_eq!(
        query(
            &subscriber,
            "SELECT name || ' ' || source FROM ddl_sync.adapters() WHERE dialect = 'mysql'"
        ),
        "mysql-c c"
    );
    deliver_events(
        &subscriber,
        "sub",
        &[
            (
                "mysql",
                "table",
                "CREATE TABLE",
                "CREATE TABLE `Orders` (`Id` int PRIMARY KEY)",
            ),
            (
                "mysql",
                "table",
                "CREATE TABLE",
                "CREATE TABLE ereport (a int)",
            ),
        ],
    );
    let log = wait_log(&subscriber, &publisher, 2);
    assert_eq!(
        log,
        [
            "applied|CREATE TABLE|",
            "failed|CREATE TABLE|the mysql-c adapter refuses \"CREATE TABLE ereport (a int)\"",
        ],
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(DISTINCT apply_adapter, ',') FROM ddl_sync.events"
        ),
        "mysql-c"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(attname, ',') FROM pg_attribute
              WHERE attrelid = 'public.\"Orders\"'::regclass AND attnum > 0"
        ),
        "Id"
    );
}

#[test]
fn statements_run_as_their_role_with_their_search_path() {
    // Roles are global objects, never replicated: both nodes get theirs before replication
    // starts. `ghost` exists only on the publisher: its statement is refused, never run as the
    // subscription owner (a superuser) instead.
    let publisher = ddl_publisher("replay-roles-pub");
    query(
        &publisher,
        "CREATE TABLE t (id int PRIMARY KEY); CREATE ROLE app; CREATE ROLE ghost;
         CREATE SCHEMA app_s AUTHORIZATION app; CREATE SCHEMA ghost_s AUTHORIZATION ghost;
         CREATE SCHEMA s1; CREATE SCHEMA s2;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    let subscriber = ddl_subscriber("replay-roles-sub", &["ddl_sync"]);
    query(
        &subscriber,
        "CREATE TABLE t (id int PRIMARY KEY); CREATE ROLE app;
         CREATE SCHEMA app_s AUTHORIZATION app; CREATE SCHEMA ghost_s;
         CREATE SCHEMA s1; CREATE SCHEMA s2;",
    );
    subscribe(&subscriber, &publisher, "sub", "s", "all", "error");
    query(
        &publisher,
        "SET ROLE app; CREATE TABLE app_s.t1 (id int PRIMARY KEY); RESET ROLE;
         SET ROLE ghost; CREATE TABLE ghost_s.t2 (id int PRIMARY KEY); RESET ROLE;
         SET search_path = s2, s1;
         CREATE TABLE unq (id int PRIMARY KEY);
         CREATE TABLE s1.only_s1 (id int PRIMARY KEY);
         ALTER TABLE only_s1 ADD COLUMN v int;
         INSERT INTO unq VALUES (1); INSERT INTO only_s1 VALUES (1, 10);
         INSERT INTO app_s.t1 VALUES (1);",
    );
    let log = wait_log(&subscriber, &publisher, 5);
    assert_eq!(
        log.iter().filter(|l| l.starts_with("applied|")).count(),
        4,
        "{log:#?}"
    );
    // The role that ran it, where it exists; refused, with the reason on the row, where not.
    // The refused statement's table is then made from its definition (so that its rows cannot
    // stop the subscription), owned by the subscription owner: ghost gets nothing here.
    assert_eq!(
        query(
            &subscriber,
            "SELECT c.relname || ':' || pg_get_userbyid(c.relowner) FROM pg_class c
              WHERE c.relname IN ('t1', 't2') ORDER BY 1"
        ),
        "t1:app\nt2:postgres"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT role_name || '|' || status || '|' || coalesce(detail, '') FROM ddl_sync.apply_log
              WHERE object_identity IN ('app_s.t1', 'ghost_s.t2') ORDER BY object_identity"
        ),
        "app|applied|\nghost|refused|role \"ghost\" does not exist on this subscriber; create it \
         (with the rights it should have here), or name a ddl_fallback_role, and the statement \
         can be replayed; ghost_s.t2 was made from the publisher's definition, its columns and \
         key only, owned by postgres: the statement did not make it here"
    );
    // A fallback role the subscription names replays them instead; never a superuser.
    let err = subscriber
        .psql(
            "postgres",
            "ALTER SUBSCRIPTION sub SET (ddl_fallback_role = 'postgres')",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"postgres\" is a superuser"), "{err}");
    // Only the subscription's owner may name it: an ordinary role is told so.
    let err = subscriber
        .psql(
            "postgres",
            "CREATE ROLE nobody LOGIN; SET ROLE nobody;
             ALTER SUBSCRIPTION sub SET (ddl_fallback_role = 'app');",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("must be owner of subscription sub"), "{err}");
    query(
        &subscriber,
        "CREATE ROLE stand_in NOLOGIN; GRANT USAGE, CREATE ON SCHEMA ghost_s TO stand_in;
         ALTER SUBSCRIPTION sub SET (ddl_fallback_role = 'stand_in');",
    );
    query(
        &publisher,
        "SET ROLE ghost; CREATE TABLE ghost_s.t3 (id int PRIMARY KEY); RESET ROLE;
         INSERT INTO ghost_s.t3 VALUES (3);",
    );
    wait_log(&subscriber, &publisher, 6);
    assert_eq!(
        query(
            &subscriber,
            "SELECT status || '|' || detail || '|' || pg_get_userbyid(c.relowner)
               FROM ddl_sync.apply_log, pg_class c
              WHERE object_identity = 'ghost_s.t3' AND c.oid = 'ghost_s.t3'::regclass"
        ),
        "applied|role \"ghost\" does not exist on this subscriber; ran as the fallback role \
         \"stand_in\"; verified, but for differences made on purpose: table ghost_s.t3 owner \
         (the statement ran as ddl_fallback_role: its role does not exist here)|stand_in"
    );
    // A later statement on that table, by a role that exists here, finds it still the
    // fallback role's: made on purpose, not a divergence.
    query(&publisher, "ALTER TABLE ghost_s.t3 ADD COLUMN note text");
    wait_log(&subscriber, &publisher, 7);
    assert_eq!(
        query(
            &subscriber,
            "SELECT status || '|' || detail FROM ddl_sync.apply_log
              WHERE object_identity = 'ghost_s.t3' AND command_tag = 'ALTER TABLE'"
        ),
        "applied|verified, but for differences made on purpose: table ghost_s.t3 owner (owned \
         by ddl_fallback_role: the role that owns it on the publisher does not exist here)"
    );
    // Unqualified names resolve through the publisher's search_path, not the worker's.
    wait_for(
        "the rows in the tables named without schema",
        TIMEOUT,
        || {
            let got = query(
                &subscriber,
                "SELECT (SELECT count(*) FROM s2.unq) || ' ' || (SELECT v FROM s1.only_s1)
                 || ' ' || (SELECT count(*) FROM pg_tables WHERE tablename = 'unq')",
            );
            if got == "1 10 1" {
                Ok(())
            } else {
                Err(got)
            }
        },
    );
    // Nothing of the replayed settings stays in the worker: its own later rows still apply.
    query(&publisher, "INSERT INTO t VALUES (42)");
    wait_for("a row of table t after the replays", TIMEOUT, || {
        let n = query(&subscriber, "SELECT count(*) FROM public.t WHERE id = 42");
        if n == "1" {
            Ok(())
        } else {
            Err(n)
        }
    });
}

/// Under `ddl_conflict = 'skip'`, a statement that fails for a reason that passes (here
/// `lock_timeout`: a session of the subscriber holds the table) is not skipped: the apply
/// worker stops with the statement's own SQLSTATE and PostgreSQL retries the transaction,
/// which applies once the lock is gone. Only failures retrying would not fix are skipped.
#[test]
fn a_failure_that_passes_is_retried_not_skipped() {
    let (publisher, subscriber) = ddl_e2e::subscribed_pair("replay-transient", "skip");
    query(
        &subscriber,
        "ALTER DATABASE postgres SET lock_timeout = '200ms';
         ALTER SYSTEM SET log_error_verbosity = 'verbose'; SELECT pg_reload_conf();",
    );
    // A new apply worker, which has the setting.
    let workers = |what: &str, count: &str| {
        wait_for(what, TIMEOUT, || {
            let n = query(
                &subscriber,
                "SELECT count(pid) FROM pg_stat_subscription WHERE subname = 'sub'",
            );
            if n == count {
                Ok(())
            } else {
                Err(n)
            }
        })
    };
    query(&subscriber, "ALTER SUBSCRIPTION sub DISABLE");
    workers("the apply worker to stop", "0");
    query(&subscriber, "ALTER SUBSCRIPTION sub ENABLE");
    workers("a new apply worker", "1");
    let holder = {
        let subscriber = subscriber.connstr("postgres");
        std::thread::spawn(move || {
            let out = Command::new("psql")
                .args([
                    subscriber.as_str(),
                    "-c",
                    "BEGIN; LOCK TABLE t; SELECT pg_sleep(3); COMMIT;",
                ])
                .output()
                .expect("psql runs");
            assert!(out.status.success(), "{out:?}");
        })
    };
    wait_for("the lock on t", TIMEOUT, || {
        let held = query(
            &subscriber,
            "SELECT count(*) FROM pg_locks WHERE relation = 't'::regclass AND granted",
        );
        if held == "0" {
            Err(held)
        } else {
            Ok(())
        }
    });
    query(
        &publisher,
        "ALTER TABLE t ADD COLUMN note text; INSERT INTO t VALUES (1, 'after');",
    );
    holder.join().expect("the lock holder ends");
    ddl_e2e::wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(&subscriber, "SELECT note FROM t WHERE id = 1"),
        "after"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT status FROM ddl_sync.apply_log WHERE sql LIKE 'ALTER TABLE t ADD COLUMN note%'"
        ),
        "applied"
    );
    let log = std::fs::read_to_string(subscriber.log_path()).unwrap_or_default();
    assert!(
        log.contains(
            "ERROR:  55P03: ddl_sync: replay of \"ALTER TABLE t ADD COLUMN note text\" failed: \
             canceling statement due to lock timeout"
        ),
        "the retry, with the statement's SQLSTATE, is in the log: {}",
        log.lines()
            .filter(|l| l.contains("lock timeout"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
