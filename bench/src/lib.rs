//! The project's benchmarks, run by `cargo xtask bench <wire|decode|capture|apply|copy|instructions|decode-instructions|apply-instructions>` (which
//! prepares the machine and runs this crate's `ddl-bench` binary in release mode with the same
//! arguments): each command measures one thing and rewrites its own section of BENCHMARKS.md (the
//! other sections are kept as they are).
//!
//! ```text
//! cargo xtask bench wire [--runs N] [--recapture]       ddl-wire against other pgoutput parsers
//! cargo xtask bench decode [--runs N] [--transactions N]
//!                                         ddl_pgoutput against pgoutput on the same WAL
//! cargo xtask bench capture [--runs N] [--ddl-scripts N] [--seconds S]
//!                                         DDL latency and TPS with and without capture
//! cargo xtask bench apply [--runs N] [--statements N] [--seconds S] [--rate R] [--scale N]
//!                                         a migration's apply time on a subscriber, and the
//!                                         lag of DML during a DDL burst
//! cargo xtask bench copy [--runs N] [--tables N] [--megabytes N]
//!                                         a consistent subscriber of an existing database:
//!                                         copy_schema against pg_dump -s | psql
//! cargo xtask bench instructions [--runs N] [--scripts K]
//!                                         the capture's cost per DDL statement in CPU
//!                                         instructions (callgrind)
//! cargo xtask bench decode-instructions [--transactions N]
//!                                         ddl_pgoutput against pgoutput in a walsender's
//!                                         CPU instructions (callgrind)
//! cargo xtask bench apply-instructions [--runs N] [--statements N] [--layout NAME]
//!                                         the apply worker's CPU instructions per replayed
//!                                         DDL event against a session's (callgrind); of a
//!                                         scale run's layout (printed only) with --layout
//! ```
//!
//! `decode`, `capture`, `apply`, `copy`, `instructions`, `decode-instructions` and
//! `apply-instructions` measure the server libraries that xtask installed (release
//! builds, checked once the clusters have started); `wire` times the parsers in this process,
//! so it refuses to run from a debug build. The `wire-bench` binary is the parser comparison
//! alone, for profiling by hand ([`wire::compare`]).
//!
//! What every section holds: the date, the machine (and how quiet it was), the server, the
//! workload, the method, the figures, the ratios against the targets, and the command that
//! reproduces it. Shared here: BENCHMARKS.md's sections, the check of the installed libraries,
//! pgbench and the statistics (the machine's description and the rewriting of one section of a
//! report are ddl-testkit's, shared with xtask); `procfs` reads /proc (load, CPU time, memory),
//! `events` reads the DDL events of a `ddl_pgoutput` stream, `migration` generates the migration
//! that `apply` replays.

#![forbid(unsafe_code)]

mod apply;
mod apply_instructions;
mod capture;
mod copy;
mod decode;
mod decode_instructions;
mod events;
mod instructions;
mod layouts;
mod migration;
mod procfs;
pub mod wire;

use ddl_testkit::report;
pub(crate) use ddl_testkit::report::Machine;
use ddl_testkit::{workspace_root, Cluster, Cmd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What a benchmark returns: a message for the user on failure.
pub type Result<T = ()> = std::result::Result<T, String>;

const USAGE: &str =
    "usage: cargo xtask bench <wire|decode|capture|apply|copy|instructions|decode-instructions|apply-instructions> [options]";

/// Runs the benchmark that `args` name (`wire --runs 3`).
pub fn run(args: &[&str]) -> Result {
    match args {
        ["wire", rest @ ..] => wire::run(rest),
        ["decode", rest @ ..] => decode::run(rest),
        ["capture", rest @ ..] => capture::run(rest),
        ["apply", rest @ ..] => apply::run(rest),
        ["apply-instructions", rest @ ..] => apply_instructions::run(rest),
        ["copy", rest @ ..] => copy::run(rest),
        ["instructions", rest @ ..] => instructions::run(rest),
        ["decode-instructions", rest @ ..] => decode_instructions::run(rest),
        _ => Err(USAGE.to_string()),
    }
}

/// A binary's exit: success, or the error after the binary's name on stderr.
pub fn exit(binary: &str, result: Result) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{binary}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Where the benchmarks keep their files (`target/bench/`), made when missing.
fn bench_dir() -> Result<PathBuf> {
    let dir = workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Fails unless the `ddl_pgoutput.so` and `ddl_sync.so` that `pg` loads are the release builds of
/// this tree: call it once the clusters have started (they loaded the libraries then). `cargo
/// xtask test` installs debug builds into the same directory, and a benchmark of those would mean
/// nothing. The directory is the server's own `PKGLIBDIR` (the `pg_config` view), the one it
/// loads `$libdir` libraries from.
fn check_release_installed(pg: &Cluster) -> Result {
    let pkglibdir = pg
        .psql(
            "postgres",
            "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'",
        )
        .map_err(|e| e.to_string())?;
    for library in ["ddl_pgoutput", "ddl_sync"] {
        let built = workspace_root().join(format!("target/release/lib{library}.so"));
        let installed = Path::new(&pkglibdir).join(format!("{library}.so"));
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
        if read(&built)? != read(&installed)? {
            return Err(format!(
                "{} is not the release build {} (did something install another build meanwhile?)",
                installed.display(),
                built.display()
            ));
        }
    }
    Ok(())
}

/// Reads a benchmark's options: each `--name N` of `numbers` sets its variable (N a positive
/// number), each `--name` of `flags` sets its flag; anything else is a usage error.
fn options(
    args: &[&str],
    usage: &str,
    numbers: &mut [(&str, &mut u32)],
    flags: &mut [(&str, &mut bool)],
) -> Result {
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        if let Some((flag, value)) = numbers.iter_mut().find(|(name, _)| *name == arg) {
            **value = args
                .next()
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag} needs a positive number\n{usage}"))?;
        } else if let Some((_, set)) = flags.iter_mut().find(|(name, _)| *name == arg) {
            **set = true;
        } else {
            return Err(usage.to_string());
        }
    }
    Ok(())
}

/// `target/bench/<name>/`, made when missing, with the pgbench script `ddl.sql` written into it;
/// returns the directory and the script's path.
fn script_dir(name: &str, script: &str) -> Result<(PathBuf, PathBuf)> {
    let dir = bench_dir()?.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("ddl.sql");
    std::fs::write(&path, script).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((dir, path))
}

/// The heading of benchmark `name`'s section for the server whose `version()` is `server`:
/// one section per major version, so that each version's figures stand side by side.
fn section_heading(name: &str, server: &str) -> String {
    let major = server
        .strip_prefix("PostgreSQL ")
        .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
        .filter(|m| !m.is_empty())
        .unwrap_or("?");
    format!("## {name} on PostgreSQL {major}")
}

/// The command that reproduces benchmark `name` on the server whose `version()` is `server`:
/// `cargo xtask bench <name>` on 15 (xtask's default), `cargo xtask --pg N bench <name>` else.
fn reproduce(name: &str, server: &str) -> String {
    match section_heading("", server).rsplit(' ').next() {
        Some("15") | None => format!("cargo xtask bench {name}"),
        Some(major) => format!("cargo xtask --pg {major} bench {name}"),
    }
}

/// Rewrites the section titled `heading` of BENCHMARKS.md with `section`.
fn write_section(heading: &str, section: &str) -> Result {
    report::write_section(
        "BENCHMARKS.md",
        "# Benchmarks\n\nEach section is written by the `cargo xtask bench` command it names; \
         rerun that command to update it. Figures depend on the machine: compare ratios, not \
         absolute numbers, across machines.\n",
        heading,
        section,
    )
}

/// Runs `sql` on `pg`'s database `postgres` with psql; its output.
fn sql(pg: &Cluster, sql: &str) -> Result<String> {
    pg.psql("postgres", sql).map_err(|e| e.to_string())
}

/// `met` or `NOT met`, as the sections write it.
fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}

/// Runs the cluster's pgbench against database `postgres` with `args`; returns its stdout
/// (the report), its stderr passes through.
fn pgbench(pg: &Cluster, args: &[&str]) -> Result<String> {
    pgbench_in(pg, "postgres", args)
}

/// [`pgbench`] against database `db`.
fn pgbench_in(pg: &Cluster, db: &str, args: &[&str]) -> Result<String> {
    Cmd::new(pg.bin("pgbench"))
        .args(pgbench_args(pg, db, args))
        .read()
}

/// [`pgbench`] started in the background: its report is on the child's stdout, its stderr
/// passes through.
fn pgbench_spawn(pg: &Cluster, args: &[&str]) -> Result<std::process::Child> {
    std::process::Command::new(pg.bin("pgbench"))
        .args(pgbench_args(pg, "postgres", args))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start pgbench: {e}"))
}

/// pgbench's command line: the connection to database `db` of `pg`, and `args`.
fn pgbench_args(pg: &Cluster, db: &str, args: &[&str]) -> Vec<String> {
    let port = pg.port().to_string();
    ["-h", "127.0.0.1", "-p", &port, "-U", "postgres"]
        .into_iter()
        .chain(args.iter().copied())
        .chain([db])
        .map(str::to_string)
        .collect()
}

/// The number after `key` on the line of a pgbench report that starts with it
/// (`latency average = 1.234 ms`, `tps = 567.8 (without initial connection time)`,
/// `number of transactions actually processed: 1000/1000`: the part before the slash).
fn pgbench_figure(report: &str, key: &str) -> Result<f64> {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.split('/').next()?.parse().ok())
        .ok_or_else(|| format!("no `{key}` figure in the pgbench report:\n{report}"))
}

/// The middle value (the mean of the two middle ones for an even count); `values` is not empty.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `p`-th percentile (0 < p <= 100) by the nearest-rank method: the smallest value with at
/// least p% of the values at or below it; `values` is not empty.
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// (max - min) / median of some runs' figures, in percent: this machine's noise.
fn spread(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    100.0 * (max - min) / median(values)
}

/// How consistent a comparison is from round to round: `ratios` are the per-round ratios (each
/// round runs both configurations back to back), `met` says whether one meets the target.
fn rounds_note(ratios: &[f64], met: impl Fn(f64) -> bool) -> String {
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let k = ratios.iter().filter(|&&r| met(r)).count();
    let side = if min > 1.0 {
        "all above 1"
    } else if max < 1.0 {
        "all below 1"
    } else {
        "on both sides of 1: this run cannot tell the difference from noise"
    };
    format!(
        "per-round ratios {min:.3} to {max:.3}, {side}; the target is met in {k} of {} rounds",
        ratios.len()
    )
}

/// Student's t for a two-sided 95% interval, by degrees of freedom (1 to 30).
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// A ratio measured round by round, with its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Interval {
    /// The geometric mean of the per-round ratios.
    estimate: f64,
    low: f64,
    high: f64,
}

impl Interval {
    /// From per-round ratios (each round measures both configurations back to back, so a
    /// drift of the machine cancels within a round): Student's t on their logarithms, which
    /// makes `a / b` and `b / a` agree. `ratios` is not empty; one ratio gives no interval.
    fn of(ratios: &[f64]) -> Interval {
        let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let half = if logs.len() < 2 {
            0.0
        } else {
            let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let t = T_975.get(logs.len() - 2).copied().unwrap_or(1.96);
            t * (var / n).sqrt()
        };
        Interval {
            estimate: mean.exp(),
            low: (mean - half).exp(),
            high: (mean + half).exp(),
        }
    }

    /// `**1.043** (95% CI 1.021 to 1.066)`.
    fn show(&self) -> String {
        format!(
            "**{:.3}** (95% CI {:.3} to {:.3})",
            self.estimate, self.low, self.high
        )
    }

    /// Whether the ratio is at most `target`, as far as this run can tell: met when the whole
    /// interval is, NOT met when the whole interval is above it, undecided when the interval
    /// contains it (the estimate alone would be noise dressed as a verdict).
    fn at_most(&self, target: f64) -> String {
        if self.high <= target {
            "met, the whole interval".into()
        } else if self.low > target {
            "NOT met, the whole interval is above".into()
        } else {
            "undecided: the interval contains the target".into()
        }
    }

    /// Whether the ratio is at least `target`, or the interval includes 1 (no difference this
    /// run can tell), as the TPS target reads.
    fn at_least(&self, target: f64) -> String {
        if self.low >= target {
            "met, the whole interval".into()
        } else if self.low <= 1.0 && self.high >= 1.0 {
            "met: the interval includes 1".into()
        } else if self.high < target {
            "NOT met, the whole interval is below".into()
        } else {
            "undecided: the interval contains the target".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_of_ratios() {
        let same = Interval::of(&[1.1, 1.1, 1.1]);
        assert!((same.estimate - 1.1).abs() < 1e-12 && (same.high - same.low).abs() < 1e-12);
        let one = Interval::of(&[1.3]);
        assert_eq!((one.low, one.high), (one.estimate, one.estimate));
        // Two rounds, logs 0 and 2a (a = ln 1.1): mean a, standard error a, t(1) = 12.706.
        let two = Interval::of(&[1.0, 1.21]);
        let a = 1.1f64.ln();
        assert!((two.estimate - 1.1).abs() < 1e-12);
        assert!((two.high.ln() - 13.706 * a).abs() < 1e-9);
        assert!((two.low * two.high - 1.21).abs() < 1e-9);
        // The inverse ratios give the inverse interval.
        let inverse = Interval::of(&[1.0, 1.0 / 1.21]);
        assert!((inverse.high * two.low - 1.0).abs() < 1e-9);
        assert!(two.at_most(1.10).starts_with("undecided"));
        assert_eq!(
            Interval::of(&[1.05, 1.06, 1.04]).at_most(1.10),
            "met, the whole interval"
        );
        assert!(Interval::of(&[1.2, 1.3])
            .at_most(1.10)
            .starts_with("undecided"));
        assert!(Interval::of(&[1.2, 1.21, 1.2])
            .at_most(1.10)
            .starts_with("NOT met"));
        assert_eq!(
            Interval::of(&[0.98, 1.01, 0.99]).at_least(0.99),
            "met: the interval includes 1"
        );
        assert!(Interval::of(&[0.95, 0.96, 0.95])
            .at_least(0.99)
            .starts_with("NOT met"));
    }

    #[test]
    fn pgbench_reports_are_read() {
        let report = "number of failed transactions: 0 (0.000%)\n\
                      latency average = 1.834 ms\n\
                      initial connection time = 3.120 ms\n\
                      tps = 545.172601 (without initial connection time)\n";
        assert_eq!(pgbench_figure(report, "latency average =").unwrap(), 1.834);
        assert_eq!(pgbench_figure(report, "tps =").unwrap(), 545.172601);
        assert!(pgbench_figure(report, "latency stddev =").is_err());
        let done = "number of transactions actually processed: 100000/100000\n";
        assert_eq!(
            pgbench_figure(done, "number of transactions actually processed:").unwrap(),
            100000.0
        );
    }

    #[test]
    fn ratios_are_read_against_the_spread() {
        assert!((spread(&[1.0, 1.2, 1.1]) - 100.0 * 0.2 / 1.1).abs() < 1e-9);
        assert_eq!(
            rounds_note(&[1.4, 1.5, 1.3], |r| r <= 1.1),
            "per-round ratios 1.300 to 1.500, all above 1; the target is met in 0 of 3 rounds"
        );
        assert!(rounds_note(&[0.98, 1.02], |r| r <= 1.1).contains("cannot tell"));
        assert!(rounds_note(&[0.98, 0.99], |r| r >= 0.99).contains("met in 1 of 2"));
    }

    #[test]
    fn options_are_read_or_refused_with_the_usage() {
        let (mut runs, mut seconds, mut again) = (6, 10, false);
        let mut read = |args: &[&str]| {
            options(
                args,
                "usage: x",
                &mut [("--runs", &mut runs), ("--seconds", &mut seconds)],
                &mut [("--again", &mut again)],
            )
        };
        assert_eq!(read(&["--runs", "3", "--again"]), Ok(()));
        assert_eq!(
            read(&["--seconds", "0"]),
            Err("--seconds needs a positive number\nusage: x".to_string())
        );
        assert_eq!(
            read(&["--runs", "--again"]),
            Err("--runs needs a positive number\nusage: x".to_string())
        );
        assert_eq!(read(&["--other"]), Err("usage: x".to_string()));
        assert_eq!((runs, seconds, again), (3, 10, true));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
        assert_eq!(percentile(&v, 0.1), 1.0);
        assert_eq!(percentile(&[3.0], 95.0), 3.0);
        assert_eq!(percentile(&[1.0, 2.0], 50.0), 1.0);
    }
}
