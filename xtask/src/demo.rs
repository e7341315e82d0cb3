//! `cargo xtask demo [--keep]`: DDL replication end to end, on two throwaway clusters.
//!
//! 1. Builds and installs the release artifacts, starts a publisher (`ddl_pgoutput` preloaded)
//!    and a subscriber, and creates the shop of `xtask/demo/schema.sql` on both (seed rows on
//!    the publisher only).
//! 2. `CREATE PUBLICATION shop FOR ALL TABLES WITH (ddl = 'all')` and `CREATE SUBSCRIPTION ...
//!    WITH (ddl = 'all')` (the subscriber preloads `ddl_sync`, which makes the subscription's
//!    slot with plugin `ddl_pgoutput`); a second slot of the same plugin for pg_recvlogical.
//! 3. Runs the steps of `xtask/demo/migration.sql` on the publisher while pgbench inserts orders
//!    (`xtask/demo/traffic.sql`), showing each step and the subscriber catching up.
//! 4. Shows the subscriber's apply log, compares `pg_dump --schema-only` of both sides and every
//!    table's rows, and decodes the second slot with `pg_recvlogical | ddl-dump`.
//!
//! Everything is removed at the end unless `--keep`, which leaves both servers running and
//! prints how to connect and how to stop them.

use crate::cmd::Cmd;
use crate::install::{install, Profile};
use crate::{project_root, Result};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DB: &str = "shop";
/// Orders per second pgbench inserts while the migration runs.
const TRAFFIC_RATE: &str = "50";
/// A pause after each step, so that the traffic goes on between the steps too.
const BETWEEN_STEPS: Duration = Duration::from_millis(500);
/// How long the subscriber may take to catch up after a step.
const CATCH_UP: Duration = Duration::from_secs(60);

pub fn run(args: &[&str]) -> Result {
    let keep = match args {
        [] => false,
        ["--keep"] => true,
        _ => return Err("usage: cargo xtask demo [--keep]".into()),
    };
    install(Profile::Release)?;
    let ddl_dump = build_ddl_dump()?;
    let dir = project_root().join("xtask/demo");
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };

    title("1. Two throwaway clusters and the shop, version 1");
    let publisher = ClusterBuilder::new()
        .name("demo-publisher")
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .map_err(|e| e.to_string())?;
    let subscriber = ClusterBuilder::new()
        .name("demo-subscriber")
        .shared_preload_libraries(&["ddl_sync"])
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "publisher on port {}, subscriber on port {}",
        publisher.port(),
        subscriber.port()
    );
    let schema = read("schema.sql")?;
    for pg in [&publisher, &subscriber] {
        sql(pg, "postgres", &format!("CREATE DATABASE {DB}"))?;
        sql(pg, DB, &format!("CREATE EXTENSION ddl_sync;\n{schema}"))?;
    }
    sql(&publisher, DB, &read("seed.sql")?)?;
    println!("tables customers, products, orders on both; 6,100 seed rows on the publisher");

    title("2. Replication with DDL");
    let setup_publisher = format!(
        "CREATE PUBLICATION {DB} FOR ALL TABLES WITH (ddl = 'all');\n\
         SELECT pg_create_logical_replication_slot('{DB}_dump', 'ddl_pgoutput');  -- for step 7"
    );
    let setup_subscriber = format!(
        "CREATE SUBSCRIPTION {DB}_sub CONNECTION '{}' PUBLICATION {DB}\n    \
         WITH (ddl = 'all');",
        publisher.connstr(DB)
    );
    show_sql("publisher", &setup_publisher);
    sql(&publisher, DB, &setup_publisher)?;
    show_sql("subscriber", &setup_subscriber);
    sql(&subscriber, DB, &setup_subscriber)?;
    wait_tables_synced(&subscriber)?;
    wait_caught_up(&publisher, &subscriber)?;
    println!(
        "initial copy done: {} orders on the subscriber",
        count(&subscriber, "orders")?
    );

    title(&format!(
        "3. The migration, with pgbench inserting {TRAFFIC_RATE} orders a second meanwhile"
    ));
    let orders_before: u64 = count(&publisher, "orders")?.parse().unwrap_or(0);
    let traffic = Traffic::start(&publisher, &dir.join("traffic.sql"))?;
    let steps = migration_steps(&read("migration.sql")?);
    let migration = run_steps(&publisher, &subscriber, &steps);
    let stopped = traffic.stop();
    migration?;
    stopped?;
    let orders_after: u64 = count(&publisher, "orders")?.parse().unwrap_or(0);
    println!(
        "\ntraffic stopped: pgbench inserted {} orders while the migration ran",
        orders_after.saturating_sub(orders_before)
    );
    wait_caught_up(&publisher, &subscriber)?;

    title("4. The subscriber's apply log (SELECT status, command_tag, object_identity FROM ddl_sync.apply_log)");
    let log = sql(
        &subscriber,
        DB,
        "SELECT rpad(status, 8) || rpad(command_tag, 26) || coalesce(object_identity, '')
           FROM ddl_sync.apply_log",
    )?;
    println!("{log}");
    let not_applied = sql(
        &subscriber,
        DB,
        "SELECT count(*) FROM ddl_sync.apply_log WHERE status <> 'applied'",
    )?;
    if not_applied != "0" {
        return Err(format!(
            "{not_applied} statements were not applied (see the log above)"
        ));
    }

    title("5. Schemas: pg_dump --schema-only of both sides");
    compare_schemas(&publisher, &subscriber)?;

    title("6. Rows: every table, publisher and subscriber");
    compare_rows(&publisher, &subscriber)?;

    title(&format!(
        "7. The same stream for any consumer: pg_recvlogical -P ddl_pgoutput -S {DB}_dump | ddl-dump"
    ));
    show_dump(&publisher, &ddl_dump)?;

    if keep {
        let (p, s) = (publisher.port(), subscriber.port());
        let (pdir, sdir) = (publisher.keep(), subscriber.keep());
        println!(
            "\nKept running (--keep):\n  publisher:  psql -h 127.0.0.1 -p {p} -U postgres {DB}   \
             (files in {pdir})\n  subscriber: psql -h 127.0.0.1 -p {s} -U postgres {DB}   \
             (files in {sdir})\nStop and remove them with:\n  \
             runuser -u postgres -- pg_ctl -D {pdir}/data stop; rm -rf {pdir}\n  \
             runuser -u postgres -- pg_ctl -D {sdir}/data stop; rm -rf {sdir}",
            pdir = pdir.display(),
            sdir = sdir.display(),
        );
    } else {
        println!("\ndemo: done; both clusters are removed (run with --keep to explore them)");
    }
    Ok(())
}

fn title(text: &str) {
    println!("\n== {text}");
}

fn show_sql(node: &str, sql: &str) {
    println!("{node}:");
    for line in sql.lines() {
        println!("    {line}");
    }
}

fn sql(pg: &Cluster, db: &str, sql: &str) -> Result<String> {
    pg.psql(db, sql).map_err(|e| e.to_string())
}

fn count(pg: &Cluster, table: &str) -> Result<String> {
    sql(pg, DB, &format!("SELECT count(*) FROM {table}"))
}

/// `ddl-dump`, built in release mode by the cargo running xtask.
fn build_ddl_dump() -> Result<PathBuf> {
    Cmd::new("cargo")
        .args(["build", "--release", "-p", "ddl-dump"])
        .dir(project_root())
        .run()?;
    Ok(project_root().join("target/release/ddl-dump"))
}

/// One step of the migration: a title and the SQL psql runs for it.
#[derive(Debug, PartialEq)]
struct Step {
    title: String,
    sql: String,
}

/// Splits the migration at its `-- step: <title>` lines (what comes before the first is a
/// comment for the reader).
fn migration_steps(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("-- step:") {
            steps.push(Step {
                title: title.trim().to_string(),
                sql: String::new(),
            });
        } else if let Some(step) = steps.last_mut() {
            step.sql.push_str(line);
            step.sql.push('\n');
        }
    }
    for step in &mut steps {
        step.sql = step.sql.trim().to_string();
    }
    steps
}

/// Runs each step on the publisher, then waits for the subscriber to apply it.
fn run_steps(publisher: &Cluster, subscriber: &Cluster, steps: &[Step]) -> Result {
    for (i, step) in steps.iter().enumerate() {
        println!("\n[{}/{}] {}", i + 1, steps.len(), step.title);
        for line in step.sql.lines() {
            println!("    {line}");
        }
        let started = Instant::now();
        sql(publisher, DB, &step.sql)?;
        let ran = started.elapsed();
        wait_caught_up(publisher, subscriber)?;
        let applied = sql(
            subscriber,
            DB,
            "SELECT count(*) FILTER (WHERE status = 'applied') || ' applied, '
                 || count(*) FILTER (WHERE status <> 'applied') || ' not'
               FROM ddl_sync.apply_log",
        )?;
        println!(
            "    -> ran in {:.0} ms on the publisher; subscriber caught up {:.0} ms later \
             (DDL statements so far: {applied})",
            ran.as_secs_f64() * 1e3,
            (started.elapsed() - ran).as_secs_f64() * 1e3,
        );
        std::thread::sleep(BETWEEN_STEPS);
    }
    Ok(())
}

/// Waits until the subscription has confirmed everything the publisher wrote so far (the
/// check PostgreSQL's own tests use: the walsender's `replay_lsn`).
fn wait_caught_up(publisher: &Cluster, subscriber: &Cluster) -> Result {
    let target = sql(publisher, DB, "SELECT pg_current_wal_lsn()")?;
    let check = format!(
        "SELECT count(*) FROM pg_stat_replication
          WHERE application_name = '{DB}_sub' AND replay_lsn >= '{target}'"
    );
    let what = format!("the subscriber to catch up with {target}");
    wait_until(publisher, &check, "1", &what, subscriber)
}

/// Waits until the subscription's initial copy of every table is done.
fn wait_tables_synced(subscriber: &Cluster) -> Result {
    let check = "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')";
    wait_until(subscriber, check, "0", "the initial copy", subscriber)
}

/// Polls `check` on `pg` until it returns `expected`, for at most [`CATCH_UP`]; the error
/// shows the tail of `subscriber`'s log, where a stuck apply worker says why.
fn wait_until(
    pg: &Cluster,
    check: &str,
    expected: &str,
    what: &str,
    subscriber: &Cluster,
) -> Result {
    let started = Instant::now();
    while sql(pg, DB, check)? != expected {
        if started.elapsed() > CATCH_UP {
            return Err(format!(
                "waited {CATCH_UP:?} for {what}; the subscriber's log:\n{}",
                subscriber.log_tail(20)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// pgbench inserting orders on the publisher until stopped.
struct Traffic {
    child: Child,
}

impl Traffic {
    fn start(publisher: &Cluster, script: &Path) -> Result<Traffic> {
        let child = Command::new(publisher.bin("pgbench"))
            .args([
                "-n",
                "-c",
                "2",
                "-j",
                "2",
                "-R",
                TRAFFIC_RATE,
                "-T",
                "3600",
                "-f",
            ])
            .arg(script)
            .arg(publisher.connstr(DB))
            .env_remove("RUST_BACKTRACE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start pgbench: {e}"))?;
        Ok(Traffic { child })
    }

    /// Stops pgbench with SIGTERM (committed transactions stay). Not SIGINT: a process started
    /// from a non-interactive background shell (`nohup`, `cmd &` in a script, some CI runners)
    /// inherits SIGINT as ignored, and pgbench would run on for its whole `-T`. SIGKILL if it
    /// has not ended after a few seconds, so that the demo never waits for it.
    fn stop(mut self) -> Result {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let out = self
            .child
            .wait_with_output()
            .map_err(|e| format!("cannot wait for pgbench: {e}"))?;
        let errors = String::from_utf8_lossy(&out.stderr);
        if errors.contains("error") || errors.contains("ERROR") {
            return Err(format!("the traffic failed:\n{errors}"));
        }
        Ok(())
    }
}

/// `pg_dump --schema-only` of the shop on both sides must be the same, line for line.
fn compare_schemas(publisher: &Cluster, subscriber: &Cluster) -> Result {
    let dump = |pg: &Cluster| -> Result<String> {
        Cmd::new(pg.bin("pg_dump"))
            .args(["--schema-only", "--no-publications", "--no-subscriptions"])
            .args(["--dbname", &pg.connstr(DB)])
            .read()
    };
    // pg_dump (since 15.14) brackets its output with `\restrict KEY`/`\unrestrict KEY`, a
    // random key per run that protects psql from a hostile dump: not part of the schema.
    let schema = |dump: String| {
        dump.lines()
            .filter(|l| !l.starts_with("\\restrict ") && !l.starts_with("\\unrestrict "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (a, b) = (schema(dump(publisher)?), schema(dump(subscriber)?));
    if a != b {
        let dir = project_root().join("target/demo");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let (pa, pb) = (dir.join("publisher.sql"), dir.join("subscriber.sql"));
        std::fs::write(&pa, &a).map_err(|e| e.to_string())?;
        std::fs::write(&pb, &b).map_err(|e| e.to_string())?;
        return Err(format!(
            "the schemas differ: diff {} {}",
            pa.display(),
            pb.display()
        ));
    }
    let objects = a
        .lines()
        .filter(|l| l.starts_with("CREATE ") || l.starts_with("ALTER TABLE ONLY"))
        .count();
    println!(
        "schemas identical: {} lines of pg_dump, {objects} CREATE/ALTER statements",
        a.lines().count()
    );
    Ok(())
}

/// Every ordinary and partition table of the shop: the same number of rows and the same
/// checksum of their text on both sides.
fn compare_rows(publisher: &Cluster, subscriber: &Cluster) -> Result {
    let tables = sql(
        publisher,
        DB,
        "SELECT c.oid::regclass FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'ddl_sync')
          ORDER BY 1::text",
    )?;
    println!(
        "{:<22} {:>10} {:>10}  checksum",
        "table", "publisher", "subscriber"
    );
    let mut differ = Vec::new();
    for table in tables.lines() {
        let figures = format!(
            "SELECT count(*) || ' ' || coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '-')
               FROM {table} t"
        );
        let (a, b) = (
            sql(publisher, DB, &figures)?,
            sql(subscriber, DB, &figures)?,
        );
        let rows = |s: &str| s.split(' ').next().unwrap_or("").to_string();
        let same = a == b;
        println!(
            "{table:<22} {:>10} {:>10}  {}",
            rows(&a),
            rows(&b),
            if same { "same" } else { "DIFFERENT" }
        );
        if !same {
            differ.push(table.to_string());
        }
    }
    if differ.is_empty() {
        println!("all rows arrived");
        Ok(())
    } else {
        Err(format!("rows differ in {}", differ.join(", ")))
    }
}

/// Decodes the second slot up to now and prints the DDL lines of `ddl-dump`.
fn show_dump(publisher: &Cluster, ddl_dump: &Path) -> Result {
    let end = sql(publisher, DB, "SELECT pg_current_wal_lsn()")?;
    let dir = project_root().join("target/demo");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("stream.bin");
    let _ = std::fs::remove_file(&file);
    let mut recv = publisher.recvlogical(DB, &format!("{DB}_dump"));
    recv.plugin("ddl_pgoutput")
        .option("proto_version", "1")
        .option("publication_names", DB);
    recv.stream_to_file(&file, &end)
        .map_err(|e| e.to_string())?;
    let text = Cmd::new(ddl_dump).args([file.as_os_str()]).read()?;
    let lines: Vec<&str> = text.lines().collect();
    let ddl: Vec<&&str> = lines.iter().filter(|l| l.contains(" DDL ")).collect();
    for line in &ddl {
        println!("{line}");
    }
    println!(
        "({} messages in {} bytes of pgoutput, {} of them DDL; the rest is pgoutput's own)",
        lines.len(),
        std::fs::metadata(&file).map_or(0, |m| m.len()),
        ddl.len()
    );
    if ddl.is_empty() {
        return Err("ddl-dump showed no DDL in the stream".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_is_split_at_step_lines() {
        let text =
            "-- about\n-- step: One\nBEGIN;\nSELECT 1;\nCOMMIT;\n\n-- step: Two\nSELECT 2;\n";
        assert_eq!(
            migration_steps(text),
            vec![
                Step {
                    title: "One".into(),
                    sql: "BEGIN;\nSELECT 1;\nCOMMIT;".into()
                },
                Step {
                    title: "Two".into(),
                    sql: "SELECT 2;".into()
                },
            ]
        );
    }

    #[test]
    fn the_demo_migration_has_titled_steps_with_sql() {
        let path = project_root().join("xtask/demo/migration.sql");
        let steps = migration_steps(&std::fs::read_to_string(path).expect("migration.sql"));
        assert!(steps.len() >= 10, "{} steps", steps.len());
        for step in &steps {
            assert!(!step.title.is_empty() && !step.sql.is_empty(), "{step:?}");
        }
    }
}
