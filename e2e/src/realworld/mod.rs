//! Real applications' PostgreSQL schemas and upgrade histories as a test tool: each history
//! ([`apps`]), fetched at run time from Debian's and PyPI's registries ([`registry`]), replayed
//! in order on a publisher with our libraries while a native subscriber replays its DDL, and
//! on a stock publisher with the same publication as the baseline.
//!
//! Per application, three fresh clusters, each with a database named after it:
//! - `stock`: no library of ours, `CREATE PUBLICATION p FOR ALL TABLES`;
//! - `publisher`: `ddl_pgoutput` preloaded, the `ddl_sync` extension, `CREATE PUBLICATION p FOR
//!   ALL TABLES WITH (ddl = 'all')`;
//! - `subscriber`: `ddl_sync` preloaded, `CREATE SUBSCRIPTION ... WITH (ddl = 'all')`, the
//!   defaults otherwise (`ddl_conflict = 'error'`: nobody helps it along).
//!
//! Each script runs with `psql -f` and errors do not stop it, as an administrator replaying it
//! by hand would see them. [`AppReport`] says what differed: errors with our libraries beyond
//! the stock run's, the subscriber's events by status and what verification found, the
//! schema difference (`pg_dump --schema-only`), the tables whose rows differ, and the times.

mod apps;
mod registry;

pub use apps::{app, App, APPS};

use crate::compare::schema_in;
use crate::regress::compare;
use crate::regress::{EventGroup, RowCheck, Verification};
use ddl_testkit::{Cluster, ClusterBuilder};
use registry::Registries;
use std::path::Path;
use std::time::{Duration, Instant};

/// What one application's history did.
pub struct AppReport {
    /// The application's name.
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// The packages and versions its scripts came from.
    pub source: String,
    /// Scripts replayed.
    pub scripts: usize,
    /// ERRORs psql reported, on the stock publisher and on ours.
    pub errors: (usize, usize),
    /// The stock publisher's ERRORs (as psql printed them, each after its script's label):
    /// what the history does on PostgreSQL as it is.
    pub stock_errors: Vec<String>,
    /// ERRORs on ours that the stock run did not have (as psql printed them).
    pub beyond: Vec<String>,
    /// Seconds the history took on the stock publisher and on ours.
    pub seconds: (f64, f64),
    /// Seconds from the history's end until the subscriber had applied everything; else
    /// where it stopped.
    pub caught_up: Result<f64, String>,
    /// The subscriber's events by status.
    pub events: Vec<(String, usize)>,
    /// Events not applied, grouped by status and reason.
    pub not_applied: Vec<EventGroup>,
    /// What verification found among the applied events.
    pub verification: Verification,
    /// The lines that differ between the two nodes' `pg_dump --schema-only` (`-` the
    /// publisher's, `+` the subscriber's).
    pub schema_diff: Vec<String>,
    /// The published tables' rows, compared.
    pub rows: RowCheck,
}

/// How long the subscriber may take to apply what a history wrote.
const CATCH_UP: Duration = Duration::from_secs(600);

/// Replays the history of each application in `apps`; what each did, or why it could not run
/// (a package that could not be fetched, a cluster that did not start). Downloads are cached
/// under `cache`; `progress` hears what is happening.
pub fn run(
    apps: &[&'static App],
    cache: &Path,
    progress: &dyn Fn(&str),
) -> Vec<(&'static App, Result<AppReport, String>)> {
    let mut registries = Registries::new(cache);
    apps.iter()
        .map(|app| {
            progress(&format!("{}: fetching its history", app.name));
            let report =
                (app.history)(&mut registries).and_then(|history| replay(app, &history, progress));
            (*app, report)
        })
        .collect()
}

fn replay(
    app: &'static App,
    history: &apps::History,
    progress: &dyn Fn(&str),
) -> Result<AppReport, String> {
    let db = app.name;
    let stock = cluster(&format!("rw-{db}-stock"), &[])?;
    let publisher = cluster(&format!("rw-{db}-pub"), &["ddl_pgoutput"])?;
    let subscriber = cluster(&format!("rw-{db}-sub"), &["ddl_sync"])?;
    for pg in [&stock, &publisher, &subscriber] {
        sql(
            pg,
            "postgres",
            &format!("CREATE DATABASE {db} TEMPLATE template0 ENCODING 'UTF8'"),
        )?;
    }
    sql(&stock, db, "CREATE PUBLICATION p FOR ALL TABLES")?;
    sql(
        &publisher,
        db,
        "CREATE EXTENSION ddl_sync; CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    )?;
    sql(
        &subscriber,
        db,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p WITH (ddl = 'all')",
            publisher.connstr(db)
        ),
    )?;
    let work = ddl_testkit::TempDir::for_postgres(&format!("realworld-{db}"))
        .map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    for (pg, what) in [(&stock, "the stock publisher"), (&publisher, "ours")] {
        progress(&format!("{db}: {} scripts on {what}", history.steps.len()));
        for extension in history.extensions {
            sql(
                pg,
                db,
                &format!("CREATE EXTENSION IF NOT EXISTS {extension}"),
            )?;
        }
        let started = Instant::now();
        let mut errors = Vec::new();
        for (i, step) in history.steps.iter().enumerate() {
            let file = work.path().join(format!("{i:03}.sql"));
            std::fs::write(&file, &step.sql)
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            errors.extend(replay_file(pg, db, &file, &step.label)?);
        }
        runs.push((started.elapsed().as_secs_f64(), errors));
    }
    progress(&format!("{db}: waiting for the subscriber"));
    let caught_up = catch_up(&publisher, &subscriber);
    let (events, not_applied, _, verification) = compare::events(&subscriber, db)?;
    let (ours, theirs) = (schema_in(&publisher, db), schema_in(&subscriber, db));
    let schema_diff = compare::diff(&ours.concat(), &theirs.concat());
    let rows = compare::rows(&publisher, &subscriber, db)?;
    let (stock_run, our_run) = (&runs[0], &runs[1]);
    Ok(AppReport {
        name: app.name,
        about: app.about,
        source: history.source.clone(),
        scripts: history.steps.len(),
        errors: (stock_run.1.len(), our_run.1.len()),
        stock_errors: stock_run.1.clone(),
        beyond: beyond(&stock_run.1, &our_run.1),
        seconds: (stock_run.0, our_run.0),
        caught_up,
        events,
        not_applied,
        verification,
        schema_diff,
        rows,
    })
}

/// Runs `file` (the script `label`) in `db` with psql, on after errors; each ERROR psql
/// printed, as `label: message`.
fn replay_file(pg: &Cluster, db: &str, file: &Path, label: &str) -> Result<Vec<String>, String> {
    let out = pg
        .psql_command(db)
        .args(["-v", "ON_ERROR_STOP=0", "-f"])
        .arg(file)
        // The scripts are UTF-8 (or ASCII); psql would otherwise take the C locale's SQL_ASCII.
        .env("PGCLIENTENCODING", "UTF8")
        .output()
        .map_err(|e| format!("cannot run psql: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| {
            l.split_once("ERROR:")
                .map(|(_, e)| format!("{label}: {}", e.trim()))
        })
        .collect())
}

/// The errors of `ours` that `stock` did not have (each of its errors matches one of ours).
fn beyond(stock: &[String], ours: &[String]) -> Vec<String> {
    let mut unmatched: Vec<&String> = stock.iter().collect();
    ours.iter()
        .filter(|e| match unmatched.iter().position(|s| s == e) {
            Some(at) => {
                unmatched.swap_remove(at);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// Waits until the subscriber has applied what the publisher wrote; the seconds it took, or
/// the subscriber's last error when it made no progress for a minute or took [`CATCH_UP`].
fn catch_up(publisher: &Cluster, subscriber: &Cluster) -> Result<f64, String> {
    let target = publisher
        .psql("postgres", "SELECT pg_current_wal_lsn()")
        .map_err(|e| e.to_string())?;
    let check = format!(
        "SELECT coalesce(replay_lsn >= '{target}', false)::text || ' ' || coalesce(replay_lsn::text, '-')
           FROM pg_stat_replication WHERE application_name = 'sub'"
    );
    let started = Instant::now();
    let mut last = (String::new(), Instant::now());
    loop {
        let answer = publisher.psql("postgres", &check).unwrap_or_default();
        if answer.starts_with("true") {
            return Ok(started.elapsed().as_secs_f64());
        }
        let lsn = answer.split_whitespace().nth(1).unwrap_or("").to_string();
        if !lsn.is_empty() && lsn != last.0 {
            last = (lsn, Instant::now());
        }
        if last.1.elapsed() > Duration::from_secs(60) || started.elapsed() > CATCH_UP {
            return Err(compare::last_error(subscriber)
                .unwrap_or_else(|| "no progress, and no ERROR in its log".to_string()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn cluster(name: &str, preload: &[&str]) -> Result<Cluster, String> {
    ClusterBuilder::new()
        .name(name)
        .shared_preload_libraries(preload)
        .conf("wal_retrieve_retry_interval", "1s")
        .build()
        .map_err(|e| format!("cannot start cluster {name}: {e}"))
}

fn sql(pg: &Cluster, db: &str, sql: &str) -> Result<(), String> {
    pg.psql(db, sql)
        .map(|_| ())
        .map_err(|e| format!("{}: {sql}: {e}", pg.name()))
}
