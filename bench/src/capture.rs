//! `cargo xtask bench capture`: what the capture (the ProcessUtility hook and the `ddl_sync`
//! event triggers) costs the publisher, into the `## Capture` section of BENCHMARKS.md.
//!
//! Targets (from the issues): DDL latency and server CPU with capture / without <= 1.10, with
//! the extension but no DDL publication <= 1.03; plain pgbench TPS with capture / without
//! >= 0.99 (or an interval that includes 1).
//!
//! One throwaway cluster, restarted with and without `ddl_pgoutput` in
//! `shared_preload_libraries` between the configurations of every round, each configuration in
//! a database of its own: `plain` (no library, no extension), `hook only` (the same database
//! with the library preloaded), `extension, no DDL publication` (`CREATE EXTENSION ddl_sync`,
//! no publication), `capture` (and a publication `FOR ALL TABLES WITH (ddl = 'all')`, checked
//! to capture the benchmark's DDL by decoding it with `ddl_pgoutput`). One cluster, so that
//! every configuration runs on the same files and catalogs' history: two clusters side by side
//! drifted apart by more than what is measured.
//!
//! 1. DDL latency: a pgbench script of CREATE TABLE / ALTER TABLE ADD COLUMN / DROP TABLE on a
//!    name unique per script run, `-n -c 1 -t N`, pgbench's `latency average`, and the
//!    server's CPU time per script run.
//! 2. TPS: `pgbench -n -b tpcb-like -c 2 -j 2 -T S` in `plain` and `capture`.
//!
//! Each round runs every configuration once, the restarts included, in forward then reverse
//! order (ABBA), each run after a VACUUM and a CHECKPOINT; a ratio is the geometric mean of
//! the per-round ratios with its 95% confidence interval (Student's t on their logarithms).
//!
//! ```text
//! cargo xtask bench capture [--runs N] [--ddl-scripts N] [--seconds S]
//! ```

use crate::events::split_events;
use crate::procfs::{foreign_note, quiet_check, server_cpu_ms, Foreign, Watch};
use crate::{
    check_release_installed, median, options, pgbench_figure, pgbench_in, reproduce, script_dir,
    section_heading, spread, sql, write_section, Interval, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::path::Path;
use std::time::Duration;

const USAGE: &str = "usage: cargo xtask bench capture [--runs N] [--ddl-scripts N] [--seconds S]";

/// Targets from the issue.
const LATENCY_RATIO_TARGET: f64 = 1.10;
const NO_PUBLICATION_TARGET: f64 = 1.03;
const TPS_RATIO_TARGET: f64 = 0.99;

const PGBENCH_SCALE: u32 = 5;
/// Room for the whole pgbench database (about 80 MB at scale 5), so that no run spends its time
/// evicting buffers.
const SHARED_BUFFERS: &str = "256MB";
const TPS_CLIENTS: u32 = 2;
const PUBLICATION: &str = "bench";
/// Three DDL statements (three transactions) per script run, on a table no other run uses.
/// No variable-length column, so no TOAST table: one file per table, and the file system's work
/// (a dropped table's file stays until the next checkpoint) stays small.
const DDL_SCRIPT: &str = "\\set n random(1, 1000000000)\n\
                          CREATE TABLE bench_ddl_:n (id bigint, v integer);\n\
                          ALTER TABLE bench_ddl_:n ADD COLUMN note integer;\n\
                          DROP TABLE bench_ddl_:n;\n";
/// The command tags one script run must produce as DDL events.
const DDL_TAGS: [&str; 3] = ["CREATE TABLE", "ALTER TABLE", "DROP TABLE"];

/// One pgbench run.
struct Sample {
    /// `latency average`, ms.
    latency_ms: f64,
    tps: f64,
    /// WAL written per pgbench transaction (script run), bytes.
    wal_per_transaction: f64,
    /// CPU time of the server's processes per pgbench transaction, µs.
    server_cpu_us: f64,
}

/// One configuration: its database, and whether the library is preloaded.
struct Config {
    name: &'static str,
    preload: bool,
    db: &'static str,
}

const PLAIN: Config = Config {
    name: "plain",
    preload: false,
    db: "plain",
};
const HOOK_ONLY: Config = Config {
    name: "hook only",
    preload: true,
    db: "plain",
};
const NO_DDL_PUBLICATION: Config = Config {
    name: "extension, no DDL publication",
    preload: true,
    db: "no_ddl_publication",
};
const CAPTURE: Config = Config {
    name: "capture",
    preload: true,
    db: "capture",
};
/// The DDL latency's configurations; the first is the baseline.
const DDL_CONFIGS: [&Config; 4] = [&PLAIN, &HOOK_ONLY, &NO_DDL_PUBLICATION, &CAPTURE];
/// The TPS configurations.
const TPS_CONFIGS: [&Config; 2] = [&PLAIN, &CAPTURE];

pub fn run(args: &[&str]) -> Result {
    let (mut runs, mut ddl_scripts, mut seconds) = (16, 2000, 8);
    options(
        args,
        USAGE,
        &mut [
            ("--runs", &mut runs),
            ("--ddl-scripts", &mut ddl_scripts),
            ("--seconds", &mut seconds),
        ],
        &mut [],
    )?;

    // Release builds are what users run: `cargo xtask bench` installed them (checked below).
    let (dir, script) = script_dir("capture", DDL_SCRIPT)?;

    // Autovacuum is off and each run starts after a VACUUM: the DDL runs create and drop tens
    // of thousands of tables, and catalog bloat (or an autovacuum worker waking in one run and
    // not in the other) would otherwise make the runs drift apart more than the capture costs.
    let mut pg = ClusterBuilder::new()
        .name("bench-capture")
        .conf("autovacuum", "off")
        .conf("shared_buffers", SHARED_BUFFERS)
        // The script's table has no key: measured is the capture of its statements, not the
        // policy's follow-up for keyless tables, a statement of its own (ddl-capture's
        // keyless.rs).
        .conf("ddl_sync.keyless_tables", "native")
        .build()
        .map_err(|e| e.to_string())?;
    set_preload(&mut pg, true)?;
    check_release_installed(&pg)?;
    let server = sql(&pg, "SELECT version()")?;
    for config in [&PLAIN, &NO_DDL_PUBLICATION, &CAPTURE] {
        sql(&pg, &format!("CREATE DATABASE {}", config.db))?;
    }
    pg.psql(NO_DDL_PUBLICATION.db, "CREATE EXTENSION ddl_sync")
        .map_err(|e| e.to_string())?;
    pg.psql(
        CAPTURE.db,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all');"
        ),
    )
    .map_err(|e| e.to_string())?;
    for config in TPS_CONFIGS {
        pgbench_in(
            &pg,
            config.db,
            &["-i", "-q", "-s", &PGBENCH_SCALE.to_string()],
        )?;
    }
    let captured = check_capture(&pg, &script, &dir)?;
    let idle = quiet_check()?;
    let watch = Watch::start(&[&pg])?;

    let ddl_args = [
        "-n",
        "-c",
        "1",
        "-t",
        &ddl_scripts.to_string(),
        "-f",
        &script.display().to_string(),
    ]
    .map(String::from);
    let tps_args = [
        "-n",
        "-b",
        "tpcb-like",
        "-c",
        &TPS_CLIENTS.to_string(),
        "-j",
        &TPS_CLIENTS.to_string(),
        "-T",
        &seconds.to_string(),
    ]
    .map(String::from);
    let mut ddl: Vec<Vec<Sample>> = DDL_CONFIGS.iter().map(|_| Vec::new()).collect();
    let mut tps: Vec<Vec<Sample>> = TPS_CONFIGS.iter().map(|_| Vec::new()).collect();
    // Round 0 is a warm-up and is not kept: the first run of a kind was slower everywhere.
    for round in 0..=runs {
        // The configurations in order, grouped by library so that a round restarts twice; every
        // other round in reverse.
        let mut order: Vec<&Config> = DDL_CONFIGS.to_vec();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut running: Option<bool> = None;
        for config in order {
            // Every group starts on a freshly started server, as the first one of a round.
            if running != Some(config.preload) {
                set_preload(&mut pg, config.preload)?;
                running = Some(config.preload);
            }
            let sample = measure(&pg, config, &ddl_args)?;
            let tps_sample = if TPS_CONFIGS.iter().any(|c| c.name == config.name) {
                Some(measure(&pg, config, &tps_args)?)
            } else {
                None
            };
            if round == 0 {
                println!("bench: {:<30} warm-up done", config.name);
                continue;
            }
            println!(
                "bench: round {round} {:<30} DDL latency {:.3} ms, {:.0} µs server CPU per script run",
                config.name, sample.latency_ms, sample.server_cpu_us
            );
            let at = DDL_CONFIGS.iter().position(|c| c.name == config.name);
            ddl[at.expect("a DDL configuration")].push(sample);
            if let Some(sample) = tps_sample {
                println!(
                    "bench: round {round} {:<30} {:.1} tps, {:.0} µs server CPU per transaction",
                    config.name, sample.tps, sample.server_cpu_us
                );
                let at = TPS_CONFIGS.iter().position(|c| c.name == config.name);
                tps[at.expect("a TPS configuration")].push(sample);
            }
        }
    }
    let foreign = watch.finish();
    println!("bench: {}", foreign_note(&foreign));
    drop(pg);

    let heading = section_heading("Capture", &server);
    let section = section(
        &Machine::describe(),
        idle,
        &foreign,
        &server,
        runs,
        ddl_scripts,
        seconds,
        &captured,
        &ddl,
        &tps,
    );
    write_section(&heading, &section)
}

/// Whether the running server has `ddl_pgoutput` preloaded.
fn preloaded(pg: &Cluster) -> Result<bool> {
    Ok(sql(pg, "SHOW shared_preload_libraries")? == "ddl_pgoutput")
}

/// Restarts the server with or without the library (ALTER SYSTEM), and checks that it took.
fn set_preload(pg: &mut Cluster, preload: bool) -> Result {
    let change = if preload {
        "ALTER SYSTEM SET shared_preload_libraries = 'ddl_pgoutput'"
    } else {
        "ALTER SYSTEM RESET shared_preload_libraries"
    };
    sql(pg, change)?;
    pg.restart().map_err(|e| e.to_string())?;
    if preloaded(pg)? != preload {
        return Err(format!("the server did not restart as `{change}` asks"));
    }
    Ok(())
}

/// One pgbench run of `config` with `args`, after a VACUUM of its database and a CHECKPOINT.
fn measure(pg: &Cluster, config: &Config, args: &[String]) -> Result<Sample> {
    pg.psql(config.db, "VACUUM").map_err(|e| e.to_string())?;
    sql(pg, "CHECKPOINT")?;
    let start = sql(pg, "SELECT pg_current_wal_lsn()")?;
    let cpu_before = server_cpu_ms(pg)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = pgbench_in(pg, config.db, &args)?;
    // Let the postmaster reap pgbench's backends, so their time is in its cutime.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let cpu = server_cpu_ms(pg)? - cpu_before;
    let end = sql(pg, "SELECT pg_current_wal_lsn()")?;
    let wal: f64 = sql(pg, &format!("SELECT pg_wal_lsn_diff('{end}', '{start}')"))?
        .parse()
        .map_err(|e| format!("WAL size: {e}"))?;
    let transactions = pgbench_figure(&report, "number of transactions actually processed:")?;
    Ok(Sample {
        latency_ms: pgbench_figure(&report, "latency average =")?,
        tps: pgbench_figure(&report, "tps =")?,
        wal_per_transaction: wal / transactions.max(1.0),
        server_cpu_us: 1e3 * cpu / transactions.max(1.0),
    })
}

/// Proves that the `capture` database really captures the benchmark's DDL: one script run is
/// decoded with `ddl_pgoutput` through pg_recvlogical and must give one event per statement.
/// Returns the events' statements.
fn check_capture(pg: &Cluster, script: &Path, dir: &Path) -> Result<Vec<String>> {
    let slot = "bench_check";
    let in_capture = |sql: &str| pg.psql(CAPTURE.db, sql).map_err(|e| e.to_string());
    in_capture(&format!(
        "SELECT pg_create_logical_replication_slot('{slot}', 'ddl_pgoutput')"
    ))?;
    pgbench_in(
        pg,
        CAPTURE.db,
        &[
            "-n",
            "-c",
            "1",
            "-t",
            "1",
            "-f",
            &script.display().to_string(),
        ],
    )?;
    let end = in_capture("SELECT pg_current_wal_lsn()")?;
    // A transaction past `end` that the plugin sends, so pg_recvlogical stops at once.
    in_capture("UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1")?;
    let out = dir.join("check.out");
    let mut recv = pg.recvlogical(CAPTURE.db, slot);
    recv.plugin("ddl_pgoutput")
        .option("proto_version", "1")
        .option("publication_names", PUBLICATION)
        .timeout(Duration::from_secs(60));
    recv.stream_to_file(&out, &end).map_err(|e| e.to_string())?;
    in_capture(&format!("SELECT pg_drop_replication_slot('{slot}')"))?;

    let bytes = std::fs::read(&out).map_err(|e| format!("cannot read {}: {e}", out.display()))?;
    let events: Vec<String> = split_events(&bytes)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .events
        .iter()
        .map(|s| s.to_string())
        .collect();
    let matches = events.len() == DDL_TAGS.len()
        && events
            .iter()
            .zip(DDL_TAGS)
            .all(|(sql, tag)| sql.starts_with(tag));
    if !matches {
        return Err(format!(
            "the capture database did not capture the benchmark's DDL as expected \
             ({DDL_TAGS:?}); events decoded: {events:?}"
        ));
    }
    println!("bench: the capture database captured {events:?}");
    Ok(events)
}

/// [`spread`] of one figure over a configuration's runs.
fn spread_of(samples: &[Sample], figure: fn(&Sample) -> f64) -> f64 {
    spread(&samples.iter().map(figure).collect::<Vec<_>>())
}

/// `b / a` of one figure, round by round.
fn per_round(a: &[Sample], b: &[Sample], figure: fn(&Sample) -> f64) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(a, b)| figure(b) / figure(a))
        .collect()
}

fn list(samples: &[Sample], figure: fn(&Sample) -> f64, decimals: usize) -> String {
    samples
        .iter()
        .map(|s| format!("{:.*}", decimals, figure(s)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The median of one figure over a configuration's runs.
fn median_of(samples: &[Sample], figure: fn(&Sample) -> f64) -> f64 {
    median(&samples.iter().map(figure).collect::<Vec<_>>())
}

/// The `## Capture on PostgreSQL N` section. `ddl` holds the samples of [`DDL_CONFIGS`], `tps`
/// those of [`TPS_CONFIGS`], round by round.
#[allow(clippy::too_many_arguments)]
fn section(
    machine: &Machine,
    idle: f64,
    foreign: &Foreign,
    server: &str,
    runs: u32,
    ddl_scripts: u32,
    seconds: u32,
    captured: &[String],
    ddl: &[Vec<Sample>],
    tps: &[Vec<Sample>],
) -> String {
    let heading = section_heading("Capture", server);
    let command = reproduce("capture", server);
    let latency = |s: &Sample| s.latency_ms;
    let rate = |s: &Sample| s.tps;
    let wal = |s: &Sample| s.wal_per_transaction;
    let cpu = |s: &Sample| s.server_cpu_us;
    let against_plain =
        |i: usize, figure: fn(&Sample) -> f64| Interval::of(&per_round(&ddl[0], &ddl[i], figure));
    let mut ddl_rows = String::new();
    for (i, (config, samples)) in DDL_CONFIGS.iter().zip(ddl).enumerate() {
        let (lat, cpu_ratio) = if i == 0 {
            ("1".to_string(), "1".to_string())
        } else {
            (
                against_plain(i, latency).show(),
                against_plain(i, cpu).show(),
            )
        };
        ddl_rows.push_str(&format!(
            "| {} | {:.3} ms | {:.0}% | {lat} | {:.0} µs | {cpu_ratio} | {:.0} B | {} |\n",
            config.name,
            median_of(samples, latency),
            spread_of(samples, latency),
            median_of(samples, cpu),
            median_of(samples, wal),
            list(samples, latency, 3),
        ));
    }
    let tps_ratio = Interval::of(&per_round(&tps[0], &tps[1], rate));
    let tps_cpu = Interval::of(&per_round(&tps[0], &tps[1], cpu));
    let mut tps_rows = String::new();
    for (config, samples) in TPS_CONFIGS.iter().zip(tps) {
        tps_rows.push_str(&format!(
            "| {} | {:.1} | {:.0}% | {:.0} µs | {} |\n",
            config.name,
            median_of(samples, rate),
            spread_of(samples, rate),
            median_of(samples, cpu),
            list(samples, rate, 1),
        ));
    }
    let capture = DDL_CONFIGS.len() - 1;
    let (capture_lat, capture_cpu) = (against_plain(capture, latency), against_plain(capture, cpu));
    let (no_pub_lat, no_pub_cpu) = (against_plain(2, latency), against_plain(2, cpu));
    let captured: Vec<String> = captured.iter().map(|s| format!("`{s}`")).collect();

    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--ddl-scripts N`, `--seconds S`). \
         It installs release builds (`cargo xtask install`), starts one throwaway cluster and \
         rewrites this section. The instruction counts of the same statements, and where they \
         go, are in \"Instructions\".\n\n\
         - Date: {date}\n\
         - Machine: {machine_line}; CPUs {idle:.0}% idle over 3 s just before the measurements; \
         {foreign}\n\
         - Server: {server}\n\
         - Cluster: one, with ddl-testkit defaults (`fsync = off`, `wal_level = logical`), \
         `shared_buffers = {SHARED_BUFFERS}` (the whole database fits), `autovacuum = off` \
         (see Method). Configurations, each in a database of its own: `plain` (database \
         `{plain}`; the server started without `ddl_pgoutput`), `hook only` (the same database, \
         the server started with `shared_preload_libraries = 'ddl_pgoutput'`: the hook runs, \
         nothing is captured), `extension, no DDL publication` (database `{no_pub}` with \
         `CREATE EXTENSION ddl_sync` and no publication: the extension keeps its event triggers \
         disabled there), `capture` (database `{capture_db}` with the extension and `CREATE \
         PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all')`: every DDL below is \
         captured, sealed and written to WAL). Checked before the runs: one script run in \
         `{capture_db}`, decoded with `ddl_pgoutput` through pg_recvlogical, gave the events \
         {captured}. `{plain}` and `{capture_db}` have `pgbench -i -s {PGBENCH_SCALE}`.\n\
         - Why `fsync = off`: the figures are CPU-bound, which is what the capture costs. With \
         fsync on, every commit would also wait for a WAL flush that every configuration pays \
         alike (milliseconds on a plain disk), which only dilutes the ratio.\n\
         - Method: {runs} rounds after an untimed warm-up round. A round runs every \
         configuration once, in forward then (next round) reverse order, and restarts the \
         server with or without the library before each group of configurations (so twice); \
         each run follows a `VACUUM` of its database and a `CHECKPOINT`: the DDL runs create \
         and drop tens of thousands of tables, and catalog bloat made runs drift by more than \
         what is measured. One cluster, so that every configuration runs on the same files: \
         two clusters side by side drifted apart by more than the capture costs (the earlier \
         method). A ratio is the geometric mean of the per-round ratios (each round measures \
         every configuration within a few minutes, so a slow drift of the machine cancels \
         out), with its 95% confidence interval from Student's t on their logarithms. Server \
         CPU is the CPU time of the cluster's processes during a run (the postmaster's, \
         including what its exited children used, and that of every live process below it, \
         from /proc), per pgbench transaction: unlike latency, it does not depend on how the \
         two CPUs were shared with pgbench.\n\n\
         DDL latency: pgbench script `\\set n random(1, 1000000000)`, `CREATE TABLE \
         bench_ddl_:n (id bigint, v integer)`, `ALTER TABLE bench_ddl_:n ADD COLUMN note \
         integer`, `DROP TABLE bench_ddl_:n` (three autocommit transactions per script run), \
         `pgbench -n -c 1 -t {ddl_scripts} -f ddl.sql`, with `ddl_sync.keyless_tables = native` (the \
         table has no key: its `REPLICA IDENTITY FULL` would be a fourth statement). Latency, \
         CPU and WAL are per script run (three statements).\n\n\
         | configuration | median latency | spread | latency / plain | median server CPU | \
         server CPU / plain | WAL | runs, in order (ms) |\n\
         |---|---:|---:|---|---:|---|---:|---|\n\
         {ddl_rows}\n\
         - Capture / plain: DDL latency {capture_lat_show} (target <= \
         {LATENCY_RATIO_TARGET:.2}: {capture_lat_verdict}); server CPU {capture_cpu_show} \
         ({capture_cpu_verdict}).\n\
         - Extension, no DDL publication / plain: DDL latency {no_pub_lat_show} (target <= \
         {NO_PUBLICATION_TARGET:.2}: {no_pub_lat_verdict}); server CPU {no_pub_cpu_show} \
         ({no_pub_cpu_verdict}).\n\n\
         TPS: `pgbench -n -b tpcb-like -c {TPS_CLIENTS} -j {TPS_CLIENTS} -T {seconds}` (no DDL: \
         what the hook costs ordinary transactions, whose BEGIN and END pass through it).\n\n\
         | configuration | median tps | spread | median server CPU per transaction | runs, in \
         order (tps) |\n\
         |---|---:|---:|---:|---|\n\
         {tps_rows}\n\
         - TPS capture / plain: {tps_show} (target >= {TPS_RATIO_TARGET:.2} or an interval \
         that includes 1: {tps_verdict}); server CPU per transaction {tps_cpu_show}.\n\n\
         Spread is (slowest - fastest) / median over the runs of one configuration: the noise \
         of this machine, which the rounds' pairing and the interval account for. This run \
         tells capture / plain to within ±{precision:.1}% (the interval's half-width): a \
         verdict needs an interval on one side of the target, and where none is possible the \
         instruction counts (\"Instructions\"), which repeat to a fraction of a percent, \
         decide.\n",
        date = machine.date,
        machine_line = machine.line(),
        foreign = foreign_note(foreign),
        captured = captured.join(", "),
        plain = PLAIN.db,
        no_pub = NO_DDL_PUBLICATION.db,
        capture_db = CAPTURE.db,
        capture_lat_show = capture_lat.show(),
        capture_lat_verdict = capture_lat.at_most(LATENCY_RATIO_TARGET),
        capture_cpu_show = capture_cpu.show(),
        capture_cpu_verdict = capture_cpu.at_most(LATENCY_RATIO_TARGET),
        no_pub_lat_show = no_pub_lat.show(),
        no_pub_lat_verdict = no_pub_lat.at_most(NO_PUBLICATION_TARGET),
        no_pub_cpu_show = no_pub_cpu.show(),
        no_pub_cpu_verdict = no_pub_cpu.at_most(NO_PUBLICATION_TARGET),
        tps_show = tps_ratio.show(),
        tps_verdict = tps_ratio.at_least(TPS_RATIO_TARGET),
        tps_cpu_show = tps_cpu.show(),
        precision = 100.0 * ((capture_lat.high / capture_lat.low).sqrt() - 1.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(latency_ms: f64) -> Sample {
        Sample {
            latency_ms,
            tps: 0.0,
            wal_per_transaction: 0.0,
            server_cpu_us: 0.0,
        }
    }

    #[test]
    fn spreads_and_stats() {
        let runs = [sample(1.0), sample(1.2), sample(1.1)];
        let latency = |s: &Sample| s.latency_ms;
        assert!((spread_of(&runs, latency) - 100.0 * 0.2 / 1.1).abs() < 1e-9);
        assert_eq!(median_of(&runs, latency), 1.1);
        let slower = [sample(2.0), sample(3.0), sample(2.2)];
        assert_eq!(per_round(&runs, &slower, latency), [2.0, 2.5, 2.0]);
    }
}
