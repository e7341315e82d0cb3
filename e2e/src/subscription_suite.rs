//! PostgreSQL's own logical replication suite (`src/test/subscription`, TAP) with `ddl_sync` on
//! every node: both libraries preloaded (`TEMP_CONFIG`, which PostgreSQL::Test::Cluster appends
//! to each node's postgresql.conf) and `CREATE EXTENSION ddl_sync` in databases `postgres` and
//! `template1` of every primary after its first start (`DdlSyncEverywhere.pm`, loaded into each
//! test script through `PERL5OPT`). No test of it replicates DDL: it shows that installing the
//! extension leaves native logical replication as it is, subscriptions and publications
//! `FOR ALL TABLES` included.
//!
//! The suite comes from the server's source package, like the regression suite
//! ([`crate::regress::Suite`]), and runs against the installed server's programs the way
//! upstream's `make installcheck` does, without a build: `prove` as the server's OS user, its
//! files under a temporary `TESTDIR`.

use crate::regress::{pg_config_value, Suite};
use ddl_testkit::TempDir;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The module that creates the extension on every node.
const SHIM: &str = include_str!("subscription_suite/DdlSyncEverywhere.pm");

/// One run of the suite.
pub struct Outcome {
    /// The test files that passed, by name (`001_rep_changes`).
    pub passed: Vec<String>,
    /// The test files that failed, with the end of their log.
    pub failed: Vec<(String, String)>,
    /// The server package the suite came from.
    pub package: String,
    /// Wall time of the whole suite.
    pub seconds: f64,
}

/// Runs the suite of the server `pg_config` describes (cached under `cache`, as
/// [`Suite::prepare`] does), `jobs` test files at a time.
pub fn run(pg_config: &str, cache: &Path, jobs: usize) -> Result<Outcome, String> {
    let suite = Suite::prepare(pg_config, cache)?;
    let tests_dir = suite.source.join("src/test/subscription");
    let modules = suite.source.join("src/test/perl");
    let mut files: Vec<PathBuf> = std::fs::read_dir(tests_dir.join("t"))
        .map_err(|e| format!("{} has no TAP suite: {e}", suite.source.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pl"))
        .collect();
    files.sort();

    let work = TempDir::for_postgres("subscription-suite").map_err(|e| e.to_string())?;
    let shim_dir = work.path().join("perl");
    std::fs::create_dir_all(&shim_dir).map_err(|e| format!("cannot create the shim's dir: {e}"))?;
    std::fs::write(shim_dir.join("DdlSyncEverywhere.pm"), SHIM)
        .map_err(|e| format!("cannot write the shim: {e}"))?;
    let temp_config = work.path().join("temp_config.conf");
    std::fs::write(
        &temp_config,
        "shared_preload_libraries = 'ddl_pgoutput, ddl_sync'\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", temp_config.display()))?;
    let testdir = work.path().join("out");
    std::fs::create_dir_all(testdir.join("tmp_check"))
        .map_err(|e| format!("cannot create {}: {e}", testdir.display()))?;
    // The tests write there as the server's OS user.
    for dir in [&testdir, &testdir.join("tmp_check")] {
        ddl_testkit::give_to_server_user(dir).map_err(|e| e.to_string())?;
    }

    let bindir = pg_config_value(pg_config, "--bindir")?;
    let configure = pg_config_value(pg_config, "--configure")?;
    let path = format!("{bindir}:{}", std::env::var("PATH").unwrap_or_default());
    // The suite's own switches, as its Makefile would export them from the build's settings.
    let with_icu = if configure.contains("--with-icu") {
        "yes"
    } else {
        "no"
    };
    let with_ssl = if configure.contains("openssl") {
        "openssl"
    } else {
        ""
    };
    let mut prove = ddl_testkit::server_command(Path::new("env"), &tests_dir);
    prove
        .arg(format!("PATH={path}"))
        // Where the nodes and logs go: 15 and 16 read TESTDIR, 17 and later the other two.
        .arg(format!("TESTDIR={}", testdir.display()))
        .arg(format!(
            "TESTDATADIR={}",
            testdir.join("tmp_check").display()
        ))
        .arg(format!(
            "TESTLOGDIR={}",
            testdir.join("tmp_check/log").display()
        ))
        .arg(format!("PG_REGRESS={}", suite.pg_regress.display()))
        .arg(format!("with_icu={with_icu}"))
        .arg(format!("with_ssl={with_ssl}"))
        .arg(format!(
            "PERL5LIB={}:{}:{}",
            shim_dir.display(),
            modules.display(),
            tests_dir.display()
        ))
        .arg("PERL5OPT=-MDdlSyncEverywhere")
        .arg(format!("TEMP_CONFIG={}", temp_config.display()))
        .args(["prove", "-j", &jobs.to_string(), "-I"])
        .arg(&modules)
        .args(["-I", "."])
        .args(
            files
                .iter()
                .map(|f| f.strip_prefix(&tests_dir).unwrap_or(f)),
        )
        .env_remove("PGPORT")
        .env_remove("PGHOST")
        .env_remove("PGDATA")
        .env_remove("PG_TEST_EXTRA")
        .env_remove("top_builddir");
    let started = Instant::now();
    let out = prove
        .output()
        .map_err(|e| format!("cannot run prove: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed_names = failed_files(&stdout);
    if !out.status.success() && failed_names.is_empty() {
        return Err(format!(
            "prove failed ({}) without naming a test:\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let name_of = |f: &PathBuf| {
        f.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let failed = failed_names
        .iter()
        .map(|name| {
            let log = testdir.join(format!("tmp_check/log/regress_log_{name}"));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            (name.clone(), tail)
        })
        .collect();
    let passed = files
        .iter()
        .map(name_of)
        .filter(|n| !failed_names.contains(n))
        .collect();
    Ok(Outcome {
        passed,
        failed,
        package: suite.package,
        seconds,
    })
}

/// The test files prove's summary names as failed (`t/004_sync.pl (Wstat: ...)`), by name.
fn failed_files(stdout: &str) -> Vec<String> {
    let Some((_, summary)) = stdout.split_once("Test Summary Report") else {
        return Vec::new();
    };
    summary
        .lines()
        .filter_map(|l| l.strip_prefix("t/"))
        .filter_map(|l| l.split(".pl").next())
        .map(str::to_string)
        .collect()
}
