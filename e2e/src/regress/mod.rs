//! PostgreSQL's own regression suite (`src/test/regress`, `parallel_schedule`) as the measure
//! of fidelity: run with `pg_regress --use-existing` against a server with our libraries and
//! against the same server without them, while a native subscriber replays the DDL.
//!
//! Three clusters, all with the same settings:
//! - `plain`: no library of ours, `CREATE PUBLICATION p FOR ALL TABLES`;
//! - `publisher`: `ddl_pgoutput` preloaded, the `ddl_sync` extension, `CREATE PUBLICATION p FOR
//!   ALL TABLES WITH (ddl = 'all')`;
//! - `subscriber`: `ddl_sync` preloaded, `CREATE SUBSCRIPTION ... WITH (ddl = 'all',
//!   ddl_conflict = 'skip', ddl_fallback_role = ...)` to the publisher (the suite's roles
//!   exist only where it runs: see [`FALLBACK_ROLE`]).
//!
//! The publication is on both servers because it changes the suite's results by itself (an
//! UPDATE of a table without a replica identity fails where a publication publishes updates):
//! the comparison isolates what our libraries change. `max_prepared_transactions` is 0 (the
//! server's default) on all three: the suite has an expected output for that, and with prepared
//! transactions allowed, the publication's refusals leave one prepared and the suite waits on
//! its lock forever.
//!
//! [`run`] gives a [`Report`]: publisher tests whose output changed (each with its cause),
//! whether the subscriber followed to the end, events by status, the schema difference
//! (`pg_dump --schema-only`) and the tables whose rows are equal on both nodes.

mod compare;
mod suite;

pub use compare::{Cause, ChangedTest, EventGroup, RowCheck};
pub use suite::Suite;

use crate::compare::schema_in;
use crate::{psql_script, query};
use ddl_testkit::{Cluster, ClusterBuilder, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The database the suite runs in, as `pg_regress` names it.
pub const DATABASE: &str = "regression";

/// The subscription's `ddl_fallback_role`: the suite creates (and drops) its own roles as it
/// goes, which exist on the publisher only. An ordinary role, allowed to create in `public`.
pub const FALLBACK_ROLE: &str = "regress_ddl_fallback";

/// What one run found.
pub struct Report {
    /// The source package the suite came from.
    pub package: String,
    /// Test groups run (of the schedule's).
    pub groups: (usize, usize),
    /// Tests run.
    pub tests: usize,
    /// Tests that failed without our libraries, and with them (pg_regress's verdicts).
    pub failed: (usize, usize),
    /// Tests whose output with our libraries differs from the output without them.
    pub changed: Vec<ChangedTest>,
    /// `Ok` when the subscriber applied everything the publisher wrote; else where it stopped.
    pub followed: Result<Duration, String>,
    /// Apply log rows by status.
    pub events: Vec<(String, usize)>,
    /// Events not applied, grouped by status and reason.
    pub not_applied: Vec<EventGroup>,
    /// `pg_dump --schema-only` blocks (their header lines) only on the publisher, and only on
    /// the subscriber.
    pub schema: (Vec<String>, Vec<String>),
    /// Every published table's rows, compared.
    pub rows: RowCheck,
    /// Wall-clock seconds of the suite without and with our libraries.
    pub seconds: (f64, f64),
}

/// Runs the first `groups` groups of the schedule (all when `None`) on fresh clusters; the suite
/// is cached under `cache`. `progress` hears what is happening.
pub fn run(cache: &Path, groups: Option<usize>, progress: &dyn Fn(&str)) -> Result<Report, String> {
    let plain = cluster("regress-plain", &[])?;
    let publisher = cluster("regress-pub", &["ddl_pgoutput"])?;
    let subscriber = cluster("regress-sub", &["ddl_sync"])?;
    progress("preparing the suite");
    let suite = Suite::prepare(&plain.bin("pg_config").display().to_string(), cache)?;
    for pg in [&plain, &publisher, &subscriber] {
        create_database(pg)?;
    }
    sql(&plain, "CREATE PUBLICATION p FOR ALL TABLES")?;
    sql(
        &publisher,
        "CREATE EXTENSION ddl_sync; CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    )?;
    sql(
        &subscriber,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE ROLE {FALLBACK_ROLE} NOLOGIN;
             GRANT CREATE ON SCHEMA public TO {FALLBACK_ROLE};
             CREATE SUBSCRIPTION sub CONNECTION '{}' PUBLICATION p
                 WITH (ddl = 'all', ddl_conflict = 'skip', ddl_fallback_role = '{FALLBACK_ROLE}')",
            publisher.connstr(DATABASE)
        ),
    )?;

    let schedule = suite.schedule()?;
    let total = schedule.len();
    let chosen: Vec<Vec<String>> = schedule
        .into_iter()
        .take(groups.unwrap_or(usize::MAX))
        .collect();
    let work = TempDir::for_postgres("regress").map_err(|e| e.to_string())?;
    let schedule_file = work.path().join("schedule");
    let text: String = chosen
        .iter()
        .map(|g| format!("test: {}\n", g.join(" ")))
        .collect();
    std::fs::write(&schedule_file, text).map_err(|e| format!("cannot write the schedule: {e}"))?;

    progress("running the suite without our libraries");
    let plain_run = pg_regress(&suite, &plain, &schedule_file, &work.path().join("plain"))?;
    progress("running the suite with our libraries");
    let ours_run = pg_regress(
        &suite,
        &publisher,
        &schedule_file,
        &work.path().join("ours"),
    )?;
    let tests: Vec<&str> = chosen.iter().flatten().map(String::as_str).collect();
    let changed = compare::changed_tests(&tests, &plain_run, &ours_run);

    progress("waiting for the subscriber");
    let followed = follow(&publisher, &subscriber, Duration::from_secs(600));
    progress("comparing the nodes");
    let (events, not_applied) = compare::events(&subscriber)?;
    let (pub_schema, sub_schema) = (
        schema_in(&publisher, DATABASE),
        schema_in(&subscriber, DATABASE),
    );
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter()
            .filter(|block| !b.contains(block))
            .map(|block| compare::block_header(block))
            .collect()
    };
    Ok(Report {
        package: suite.package.clone(),
        groups: (chosen.len(), total),
        tests: tests.len(),
        failed: (plain_run.failed, ours_run.failed),
        changed,
        followed,
        events,
        not_applied,
        schema: (
            only(&pub_schema, &sub_schema),
            only(&sub_schema, &pub_schema),
        ),
        rows: compare::rows(&publisher, &subscriber)?,
        seconds: (plain_run.seconds, ours_run.seconds),
    })
}

fn cluster(name: &str, preload: &[&str]) -> Result<Cluster, String> {
    ClusterBuilder::new()
        .name(name)
        .shared_preload_libraries(preload)
        .conf("max_prepared_transactions", "0")
        .conf("wal_retrieve_retry_interval", "1s")
        .build()
        .map_err(|e| format!("cannot start cluster {name}: {e}"))
}

/// The database as `pg_regress` makes it when it is not told to use an existing one.
fn create_database(pg: &Cluster) -> Result<(), String> {
    pg.psql(
        "postgres",
        &format!("CREATE DATABASE {DATABASE} TEMPLATE = template0"),
    )
    .map_err(|e| e.to_string())?;
    let settings = [
        ("lc_messages", "C"),
        ("lc_monetary", "C"),
        ("lc_numeric", "C"),
        ("lc_time", "C"),
        ("bytea_output", "hex"),
        ("timezone_abbreviations", "Default"),
    ];
    let sql: String = settings
        .iter()
        .map(|(name, value)| format!("ALTER DATABASE {DATABASE} SET {name} TO '{value}';"))
        .collect();
    pg.psql("postgres", &sql).map_err(|e| e.to_string())?;
    Ok(())
}

fn sql(pg: &Cluster, sql: &str) -> Result<(), String> {
    pg.psql(DATABASE, sql)
        .map(|_| ())
        .map_err(|e| format!("{}: {sql}: {e}", pg.name()))
}

/// One pg_regress run: its output directory and verdicts.
pub(crate) struct RegressRun {
    pub out: PathBuf,
    pub failed: usize,
    pub seconds: f64,
}

fn pg_regress(
    suite: &Suite,
    pg: &Cluster,
    schedule: &Path,
    out: &Path,
) -> Result<RegressRun, String> {
    // The server writes into results/ (COPY ... TO a file there): made here, for its user.
    let results = out.join("results");
    std::fs::create_dir_all(&results)
        .map_err(|e| format!("cannot create {}: {e}", results.display()))?;
    Command::new("chown")
        .args(["-R", "postgres"])
        .arg(out)
        .status()
        .ok()
        .filter(|s| s.success())
        .or_else(|| Command::new("chmod").arg("777").arg(&results).status().ok())
        .ok_or("cannot give the results directory to the server")?;
    let started = Instant::now();
    let status = Command::new(&suite.pg_regress)
        .args(["--use-existing", "--host=127.0.0.1", "--user=postgres"])
        .arg(format!("--dbname={DATABASE}"))
        .arg(format!("--port={}", pg.port()))
        .arg(format!("--inputdir={}", suite.regress_dir.display()))
        .arg(format!("--outputdir={}", out.display()))
        .arg(format!("--dlpath={}", suite.lib_dir.display()))
        .arg(format!(
            "--bindir={}",
            pg.bin("psql").parent().unwrap_or(Path::new("")).display()
        ))
        .arg(format!("--schedule={}", schedule.display()))
        .env_remove("PGOPTIONS")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", suite.pg_regress.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let summary = std::fs::read_to_string(out.join("regression.out")).unwrap_or_default();
    let failed = summary.lines().filter(|l| l.contains("... FAILED")).count();
    if !status.success() && failed == 0 {
        return Err(format!(
            "pg_regress on {} failed ({status}) without a test failing",
            pg.name()
        ));
    }
    Ok(RegressRun {
        out: out.to_path_buf(),
        failed,
        seconds,
    })
}

/// Waits until the subscriber has applied what the publisher has written, or until it is
/// stuck: the same ERROR repeated while nothing moves, or `timeout`.
fn follow(
    publisher: &Cluster,
    subscriber: &Cluster,
    timeout: Duration,
) -> Result<Duration, String> {
    let target = query(publisher, "SELECT pg_current_wal_lsn()");
    let check = format!(
        "SELECT coalesce(replay_lsn >= '{target}', false)::text || ' ' || coalesce(replay_lsn::text, '-')
           FROM pg_stat_replication WHERE application_name = 'sub'"
    );
    let started = Instant::now();
    let mut last = (String::new(), Instant::now());
    loop {
        let answer = publisher.psql("postgres", &check).unwrap_or_default();
        if answer.starts_with("true") {
            return Ok(started.elapsed());
        }
        // The walsender's row comes and goes while an apply worker restarts: progress is a
        // new replay LSN, not a new answer.
        let lsn = answer.split_whitespace().nth(1).unwrap_or("");
        if !lsn.is_empty() && lsn != last.0 {
            last = (lsn.to_string(), Instant::now());
        }
        let stalled = last.1.elapsed() > Duration::from_secs(60);
        if stalled || started.elapsed() > timeout {
            return Err(compare::last_error(subscriber).unwrap_or_else(|| {
                format!(
                    "no progress for {:?}, no ERROR in the log",
                    last.1.elapsed()
                )
            }));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Runs `script` in the suite's database; what psql printed (errors do not stop it).
pub(crate) fn script(pg: &Cluster, script: &str) -> String {
    let out = psql_script(pg, DATABASE, &["-v", "ON_ERROR_STOP=0"], script);
    String::from_utf8_lossy(&out.stdout).into_owned()
}
