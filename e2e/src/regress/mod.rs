//! PostgreSQL's own regression suite (`src/test/regress`, `parallel_schedule`) as the measure
//! of fidelity: run with `pg_regress --use-existing` against a server with our libraries and
//! against the same server without them, while a native subscriber replays the DDL.
//!
//! Three clusters, all with the same settings:
//! - `plain`: no library of ours, `CREATE PUBLICATION p FOR ALL TABLES`;
//! - `publisher`: `ddl_pgoutput` preloaded, the `ddl_sync` extension, `CREATE PUBLICATION p FOR
//!   ALL TABLES WITH (ddl = 'all')`;
//! - three subscribers: `ddl_sync` preloaded, `CREATE SUBSCRIPTION ... WITH (ddl = 'all',
//!   ddl_conflict = 'skip' | 'error', ddl_fallback_role = ...)` to the publisher (the suite's
//!   roles exist only where it runs: see [`FALLBACK_ROLE`]), and one under `skip` without a
//!   fallback role (a user's first configuration: every statement of those roles is refused);
//!   an operator settles what stops them ([`follow`]).
//!
//! The publication is on both servers because it changes the suite's results by itself (an
//! UPDATE of a table without a replica identity fails where a publication publishes updates):
//! the comparison isolates what our libraries change. For the same reason the publisher's
//! database runs with `ddl_sync.keyless_tables = native`: the default would give the suite's
//! hundreds of keyless tables `REPLICA IDENTITY FULL`, and its updates of them would succeed
//! where the plain server refuses them, a difference in most tests that would hide any other
//! (FIDELITY.md's policies say so). `max_prepared_transactions` is 0 (the
//! server's default) on all three: the suite has an expected output for that, and with prepared
//! transactions allowed, the publication's refusals leave one prepared and the suite waits on
//! its lock forever.
//!
//! [`run`] gives a [`Report`]: publisher tests whose output changed (each with its cause), and
//! per subscriber whether it followed to the end (and what the operator did), events by
//! status, the schema difference (`pg_dump --schema-only`) and the tables whose rows are equal
//! on both nodes.

pub(crate) mod compare;
mod follow;
mod suite;

pub use compare::{Cause, ChangedTest, EventGroup, MadeFromDefinition, RowCheck, Verification};
pub use follow::Intervention;
pub(crate) use suite::pg_config_value;
pub use suite::{unavailable, Suite};

use crate::compare::schema_in;
use crate::psql_script;
use ddl_testkit::{Cluster, ClusterBuilder, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The database the suite runs in, as `pg_regress` names it.
pub const DATABASE: &str = "regression";

/// The subscription's `ddl_fallback_role`: the suite creates (and drops) its own roles as it
/// goes, which exist on the publisher only. An ordinary role that owns the subscriber's
/// database (so it may create schemas, and objects in `public`), as an application's owner
/// role would; a GRANT to it would show in `pg_dump`.
pub const FALLBACK_ROLE: &str = "regress_ddl_fallback";

/// What one run found.
pub struct Report {
    /// The source package the suite came from.
    pub package: String,
    /// The server's major version (`15`).
    pub major: String,
    /// Test groups run (of the schedule's).
    pub groups: (usize, usize),
    /// Tests run.
    pub tests: usize,
    /// Tests that failed without our libraries, and with them (pg_regress's verdicts).
    pub failed: (usize, usize),
    /// Tests whose output with our libraries differs from the output without them.
    pub changed: Vec<ChangedTest>,
    /// Wall-clock seconds of the suite without and with our libraries.
    pub seconds: (f64, f64),
    /// The subscribers: `ddl_conflict = 'skip'`, then `'error'`.
    pub followers: Vec<Follower>,
}

/// How one subscriber followed.
pub struct Follower {
    /// Its `ddl_conflict`.
    pub conflict: &'static str,
    /// Whether it names [`FALLBACK_ROLE`] as its `ddl_fallback_role`: without one (a user's
    /// first configuration), every statement of the suite's roles is refused.
    pub fallback: bool,
    /// `Ok` when it applied everything the publisher wrote (how long after the suite ended);
    /// else where it stopped.
    pub followed: Result<Duration, String>,
    /// What the operator did on the way.
    pub interventions: Vec<Intervention>,
    /// Apply log rows by status.
    pub events: Vec<(String, usize)>,
    /// Events not applied, grouped by status and reason.
    pub not_applied: Vec<EventGroup>,
    /// What it made from the definitions events carry.
    pub made: MadeFromDefinition,
    /// What verification found among the applied events.
    pub verification: Verification,
    /// `pg_dump --schema-only` blocks (their header lines) only on the publisher, and only on
    /// the subscriber.
    pub schema: (Vec<String>, Vec<String>),
    /// Every published table's rows, compared.
    pub rows: RowCheck,
}

impl Follower {
    /// How it is configured, for messages: `ddl_conflict = 'skip'` and whether it has no
    /// fallback role.
    pub fn configuration(&self) -> String {
        let fallback = if self.fallback {
            ""
        } else {
            ", no ddl_fallback_role"
        };
        format!("ddl_conflict = '{}'{fallback}", self.conflict)
    }
}

/// The subscribers, in the order of [`Report::followers`]: each one's conflict policy, whether
/// it has a fallback role, and its name.
const SUBSCRIBERS: [(&str, bool, &str); 3] = [
    ("skip", true, "skip"),
    ("error", true, "error"),
    ("skip", false, "skip_no_fallback"),
];

/// Runs the first `groups` groups of the schedule (all when `None`) on fresh clusters; the suite
/// is cached under `cache`. `progress` hears what is happening.
pub fn run(cache: &Path, groups: Option<usize>, progress: &dyn Fn(&str)) -> Result<Report, String> {
    let plain = cluster("regress-plain", &[])?;
    let publisher = cluster("regress-pub", &["ddl_pgoutput"])?;
    let subscribers: Vec<Cluster> = SUBSCRIBERS
        .iter()
        .map(|(_, _, name)| cluster(&format!("regress-sub-{name}"), &["ddl_sync"]))
        .collect::<Result<_, _>>()?;
    progress("preparing the suite");
    let suite = Suite::prepare(&plain.bin("pg_config").display().to_string(), cache)?;
    for pg in [&plain, &publisher].into_iter().chain(&subscribers) {
        create_database(pg)?;
    }
    sql(&plain, "CREATE PUBLICATION p FOR ALL TABLES")?;
    sql(
        &publisher,
        &format!(
            "CREATE EXTENSION ddl_sync; CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
             ALTER DATABASE {DATABASE} SET ddl_sync.keyless_tables = native;"
        ),
    )?;
    for (subscriber, (conflict, fallback, name)) in subscribers.iter().zip(SUBSCRIBERS) {
        let (role, option) = if fallback {
            (
                format!(
                    "CREATE ROLE {FALLBACK_ROLE} NOLOGIN;
                     ALTER DATABASE {DATABASE} OWNER TO {FALLBACK_ROLE};"
                ),
                format!(", ddl_fallback_role = '{FALLBACK_ROLE}'"),
            )
        } else {
            (String::new(), String::new())
        };
        sql(
            subscriber,
            &format!(
                "CREATE EXTENSION ddl_sync;
                 {role}
                 CREATE SUBSCRIPTION sub_{name} CONNECTION '{}' PUBLICATION p
                     WITH (ddl = 'all', ddl_conflict = '{conflict}'{option})",
                publisher.connstr(DATABASE)
            ),
        )?;
    }

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

    let publisher_schema = schema_in(&publisher, DATABASE);
    let mut followers = Vec::new();
    for (subscriber, (conflict, fallback, name)) in subscribers.iter().zip(SUBSCRIBERS) {
        progress(&format!("following as sub_{name}"));
        let (followed, interventions) = follow::follow(
            &publisher,
            subscriber,
            &format!("sub_{name}"),
            Duration::from_secs(3600),
        );
        let (events, not_applied, made, verification) = compare::events(subscriber, DATABASE)?;
        let subscriber_schema = schema_in(subscriber, DATABASE);
        let only = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter()
                .filter(|block| !b.contains(block))
                .map(|block| compare::block_header(block))
                .collect()
        };
        followers.push(Follower {
            conflict,
            fallback,
            followed,
            interventions,
            events,
            not_applied,
            made,
            verification,
            schema: (
                only(&publisher_schema, &subscriber_schema),
                only(&subscriber_schema, &publisher_schema),
            ),
            rows: compare::rows(&publisher, subscriber, DATABASE)?,
        });
    }
    Ok(Report {
        package: suite.package.clone(),
        major: suite.major.clone(),
        groups: (chosen.len(), total),
        tests: tests.len(),
        failed: (plain_run.failed, ours_run.failed),
        changed,
        seconds: (plain_run.seconds, ours_run.seconds),
        followers,
    })
}

fn cluster(name: &str, preload: &[&str]) -> Result<Cluster, String> {
    ClusterBuilder::new()
        .name(name)
        .shared_preload_libraries(preload)
        .conf("max_prepared_transactions", "0")
        // An apply worker that stopped on an ERROR starts again this soon (5 s by default):
        // under `error`, each event the suite's missing roles fail is tried twice before it is
        // skipped, and waiting costs the run minutes.
        .conf("wal_retrieve_retry_interval", "200ms")
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
    let run = Command::new(&suite.pg_regress)
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
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", suite.pg_regress.display()))?;
    let status = run.status;
    let seconds = started.elapsed().as_secs_f64();
    let summary = std::fs::read_to_string(out.join("regression.out")).unwrap_or_default();
    // 15 prints `test ... FAILED`; 16 and later print TAP, `not ok N - test`.
    let failed = summary
        .lines()
        .filter(|l| l.contains("... FAILED") || l.starts_with("not ok "))
        .count();
    if !status.success() && failed == 0 {
        return Err(format!(
            "pg_regress on {} failed ({status}) without a test failing: {}",
            pg.name(),
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    Ok(RegressRun {
        out: out.to_path_buf(),
        failed,
        seconds,
    })
}

/// Runs `script` in database `db`; what psql printed (errors do not stop it).
pub(crate) fn script(pg: &Cluster, db: &str, script: &str) -> String {
    let out = psql_script(pg, db, &["-v", "ON_ERROR_STOP=0"], script);
    String::from_utf8_lossy(&out.stdout).into_owned()
}
