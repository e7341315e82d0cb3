//! `cargo xtask bench capture`: what the capture (the ProcessUtility hook and the `ddl_sync`
//! event triggers) costs the publisher, into the `## Capture` section of BENCHMARKS.md.
//!
//! Targets (from the issue): DDL latency with capture / without <= 1.10; plain pgbench TPS with
//! capture / without >= 0.99.
//!
//! Two throwaway clusters run side by side, so runs can alternate without restarts: `plain` is
//! stock PostgreSQL; `capture` preloads `ddl_pgoutput`, has `CREATE EXTENSION ddl_sync` and a
//! publication `FOR ALL TABLES WITH (ddl = 'all')`, so every DDL of the benchmark is captured
//! and written to WAL (checked before the runs by decoding a few with `ddl_pgoutput`). Both get
//! `pgbench -i`, and both run with autovacuum off. Only one cluster works at a time; the other
//! idles.
//!
//! 1. DDL latency: a pgbench script of CREATE TABLE / ALTER TABLE ADD COLUMN / DROP TABLE on a
//!    name unique per script run, `-n -c 1 -t N` (the same work on both clusters), pgbench's
//!    `latency average`.
//! 2. TPS: `pgbench -n -b tpcb-like -c 2 -j 2 -T S`.
//!
//! Each measurement runs N times per cluster in alternating order (ABBA), each run after a
//! VACUUM and a CHECKPOINT; the ratios are of the medians (best shown too).
//!
//! ```text
//! cargo xtask bench capture [--runs N] [--ddl-scripts N] [--seconds S]
//! ```

use crate::events::split_events;
use crate::procfs::{foreign_note, quiet_check, server_cpu_ms, Foreign, Watch};
use crate::{
    check_release_installed, median, options, pgbench, pgbench_figure, pgbench_in, reproduce,
    rounds_note, script_dir, section_heading, spread, verdict, write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::path::Path;
use std::time::Duration;

const USAGE: &str = "usage: cargo xtask bench capture [--runs N] [--ddl-scripts N] [--seconds S]";

/// Targets from the issue.
const LATENCY_RATIO_TARGET: f64 = 1.10;
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

/// Where a measurement runs: a database of one of the clusters.
struct Target<'a> {
    name: &'static str,
    pg: &'a Cluster,
    db: &'static str,
}

/// The database of the capture cluster without the `ddl_sync` extension: the hook is loaded
/// (it is preloaded into every backend) but no event trigger fires, so nothing is captured.
const HOOK_ONLY_DB: &str = "hook_only";
/// A database of the capture cluster with the extension but no publication (its event triggers
/// disabled).
const TRIGGERS_ONLY_DB: &str = "triggers_only";

pub fn run(args: &[&str]) -> Result {
    let (mut runs, mut ddl_scripts, mut seconds) = (6, 3000, 10);
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
    // not in the other) would otherwise make the runs drift apart more than the hook costs.
    let plain = ClusterBuilder::new()
        .name("bench-capture-plain")
        .conf("autovacuum", "off")
        .conf("shared_buffers", SHARED_BUFFERS)
        .build()
        .map_err(|e| e.to_string())?;
    let capture = ClusterBuilder::new()
        .name("bench-capture-ddl")
        .conf("autovacuum", "off")
        .conf("shared_buffers", SHARED_BUFFERS)
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .map_err(|e| e.to_string())?;
    check_release_installed(&capture)?;
    let server = sql(&plain, "SELECT version()")?;
    sql(
        &capture,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all');"
        ),
    )?;
    for pg in [&plain, &capture] {
        pgbench(pg, &["-i", "-q", "-s", &PGBENCH_SCALE.to_string()])?;
    }
    let preload = |pg: &Cluster| sql(pg, "SHOW shared_preload_libraries");
    let (plain_preload, capture_preload) = (preload(&plain)?, preload(&capture)?);
    if !plain_preload.is_empty() || capture_preload != "ddl_pgoutput" {
        return Err(format!(
            "unexpected shared_preload_libraries: plain {plain_preload:?}, capture {capture_preload:?}"
        ));
    }
    let captured = check_capture(&capture, &script, &dir)?;
    sql(&capture, &format!("CREATE DATABASE {HOOK_ONLY_DB}"))?;
    sql(&capture, &format!("CREATE DATABASE {TRIGGERS_ONLY_DB}"))?;
    capture
        .psql(TRIGGERS_ONLY_DB, "CREATE EXTENSION ddl_sync")
        .map_err(|e| e.to_string())?;
    let plain_target = Target {
        name: "plain",
        pg: &plain,
        db: "postgres",
    };
    let capture_target = Target {
        name: "capture",
        pg: &capture,
        db: "postgres",
    };
    let hook_target = Target {
        name: "hook only",
        pg: &capture,
        db: HOOK_ONLY_DB,
    };
    let triggers_target = Target {
        name: "triggers, no DDL publication",
        pg: &capture,
        db: TRIGGERS_ONLY_DB,
    };
    let idle = quiet_check()?;
    let watch = Watch::start(&[&plain, &capture])?;

    let seconds_arg = seconds.to_string();
    let ddl_scripts_arg = ddl_scripts.to_string();
    let script_arg = script.display().to_string();
    let clients = TPS_CLIENTS.to_string();
    println!("bench: DDL latency");
    let ddl = alternate(
        &[
            &plain_target,
            &hook_target,
            &triggers_target,
            &capture_target,
        ],
        runs,
        &["-n", "-c", "1", "-t", &ddl_scripts_arg, "-f", &script_arg],
    )?;
    println!("bench: tpcb-like TPS");
    let tps = alternate(
        &[&plain_target, &capture_target],
        runs,
        &[
            "-n",
            "-b",
            "tpcb-like",
            "-c",
            &clients,
            "-j",
            &clients,
            "-T",
            &seconds_arg,
        ],
    )?;
    let foreign = watch.finish();
    println!("bench: {}", foreign_note(&foreign));
    drop((plain, capture));

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

fn sql(pg: &Cluster, sql: &str) -> Result<String> {
    pg.psql("postgres", sql).map_err(|e| e.to_string())
}

/// Proves that the `capture` cluster really captures the benchmark's DDL: one script run is
/// decoded with `ddl_pgoutput` through pg_recvlogical and must give one event per statement.
/// Returns the events' statements.
fn check_capture(pg: &Cluster, script: &Path, dir: &Path) -> Result<Vec<String>> {
    let slot = "bench_check";
    sql(
        pg,
        &format!("SELECT pg_create_logical_replication_slot('{slot}', 'ddl_pgoutput')"),
    )?;
    pgbench(
        pg,
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
    let end = sql(pg, "SELECT pg_current_wal_lsn()")?;
    // A transaction past `end` that the plugin sends, so pg_recvlogical stops at once.
    sql(
        pg,
        "UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1",
    )?;
    let out = dir.join("check.out");
    let mut recv = pg.recvlogical("postgres", slot);
    recv.plugin("ddl_pgoutput")
        .option("proto_version", "1")
        .option("publication_names", PUBLICATION)
        .timeout(Duration::from_secs(60));
    recv.stream_to_file(&out, &end).map_err(|e| e.to_string())?;
    sql(pg, &format!("SELECT pg_drop_replication_slot('{slot}')"))?;

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
            "the capture cluster did not capture the benchmark's DDL as expected \
             ({DDL_TAGS:?}); events decoded: {events:?}"
        ));
    }
    println!("bench: the capture cluster captured {events:?}");
    Ok(events)
}

/// Runs pgbench with `args` `runs` times on each target, in forward then reverse order (ABBA),
/// each run after a VACUUM of its database and a CHECKPOINT; returns the samples per target.
/// Round 0 is a warm-up and is not kept: the first run of a kind was slower on every
/// configuration.
fn alternate(targets: &[&Target], runs: u32, args: &[&str]) -> Result<Vec<Vec<Sample>>> {
    let mut samples: Vec<Vec<Sample>> = targets.iter().map(|_| Vec::new()).collect();
    for i in 0..=runs {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if i % 2 == 0 {
            order.reverse();
        }
        for t in order {
            let Target { name, pg, db } = *targets[t];
            pg.psql(db, "VACUUM").map_err(|e| e.to_string())?;
            sql(pg, "CHECKPOINT")?;
            let start = sql(pg, "SELECT pg_current_wal_lsn()")?;
            let cpu_before = server_cpu_ms(pg)?;
            let report = pgbench_in(pg, db, args)?;
            // Let the postmaster reap pgbench's backends, so their time is in its cutime.
            std::thread::sleep(std::time::Duration::from_millis(200));
            let cpu = server_cpu_ms(pg)? - cpu_before;
            let end = sql(pg, "SELECT pg_current_wal_lsn()")?;
            let wal: f64 = sql(pg, &format!("SELECT pg_wal_lsn_diff('{end}', '{start}')"))?
                .parse()
                .map_err(|e| format!("WAL size: {e}"))?;
            let transactions =
                pgbench_figure(&report, "number of transactions actually processed:")?;
            let sample = Sample {
                latency_ms: pgbench_figure(&report, "latency average =")?,
                tps: pgbench_figure(&report, "tps =")?,
                wal_per_transaction: wal / transactions.max(1.0),
                server_cpu_us: 1e3 * cpu / transactions.max(1.0),
            };
            if i == 0 {
                println!("bench: {name:<9} warm-up done");
                continue;
            }
            println!(
                "bench: {name:<9} latency {:.3} ms, {:.1} tps, {:.0} WAL bytes and {:.0} µs of \
                 server CPU per transaction",
                sample.latency_ms, sample.tps, sample.wal_per_transaction, sample.server_cpu_us
            );
            samples[t].push(sample);
        }
    }
    Ok(samples)
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

/// Median and best of one figure over a configuration's runs (`best` is the lowest for
/// latencies, the highest for rates).
fn stats(samples: &[Sample], figure: fn(&Sample) -> f64, lower_is_better: bool) -> (f64, f64) {
    let values: Vec<f64> = samples.iter().map(figure).collect();
    let best = if lower_is_better {
        values.iter().copied().fold(f64::INFINITY, f64::min)
    } else {
        values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    };
    (median(&values), best)
}

fn list(samples: &[Sample], figure: fn(&Sample) -> f64, decimals: usize) -> String {
    samples
        .iter()
        .map(|s| format!("{:.*}", decimals, figure(s)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `## Capture on PostgreSQL N` section. `ddl` holds the samples of plain, hook only and capture; `tps`
/// those of plain and capture.
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
    let cpu_ratios = |a: &[Sample], b: &[Sample]| per_round(a, b, cpu);
    let lat: Vec<(f64, f64)> = ddl.iter().map(|v| stats(v, latency, true)).collect();
    let rates: Vec<(f64, f64)> = tps.iter().map(|v| stats(v, rate, false)).collect();
    let lat_ratio = median(&per_round(&ddl[0], &ddl[3], latency));
    let triggers_ratio = median(&per_round(&ddl[0], &ddl[2], latency));
    let hook_ratio = median(&per_round(&ddl[0], &ddl[1], latency));
    let tps_ratio = median(&per_round(&tps[0], &tps[1], rate));
    let (lat_of_medians, lat_best_ratio) = (lat[3].0 / lat[0].0, lat[3].1 / lat[0].1);
    let (hook_of_medians, hook_best_ratio) = (lat[1].0 / lat[0].0, lat[1].1 / lat[0].1);
    let (tps_of_medians, tps_best_ratio) = (rates[1].0 / rates[0].0, rates[1].1 / rates[0].1);
    let captured: Vec<String> = captured.iter().map(|s| format!("`{s}`")).collect();

    let mut ddl_rows = String::new();
    for (name, (samples, (med, best))) in [
        "plain",
        "hook only",
        "triggers, no DDL publication",
        "capture",
    ]
    .iter()
    .zip(ddl.iter().zip(&lat))
    {
        ddl_rows.push_str(&format!(
            "| {name} | {med:.3} ms | {best:.3} ms | {:.0}% | {} | {:.0} µs | {:.0} B |\n",
            spread_of(samples, latency),
            list(samples, latency, 3),
            stats(samples, cpu, true).0,
            stats(samples, wal, true).0,
        ));
    }
    let mut tps_rows = String::new();
    for (name, (samples, (med, best))) in ["plain", "capture"].iter().zip(tps.iter().zip(&rates)) {
        tps_rows.push_str(&format!(
            "| {name} | {med:.1} | {best:.1} | {:.0}% | {} | {:.0} µs |\n",
            spread_of(samples, rate),
            list(samples, rate, 1),
            stats(samples, cpu, true).0,
        ));
    }

    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--ddl-scripts N`, \
         `--seconds S`). It installs release builds (`cargo xtask install`), starts two \
         throwaway clusters and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line}; CPUs {idle:.0}% idle over 3 s just before the measurements; \
         {foreign}\n\
         - Server: {server}\n\
         - Clusters: two, running side by side (only one works at a time), both with ddl-testkit \
         defaults (`fsync = off`, `wal_level = logical`), `shared_buffers = {SHARED_BUFFERS}` \
         (the whole database fits), `autovacuum = off` (see Method) and `pgbench -i -s \
         {PGBENCH_SCALE}`. `plain`: nothing else. `capture`: `shared_preload_libraries = \
         'ddl_pgoutput'` (the ProcessUtility hook), `CREATE EXTENSION ddl_sync` (the capture \
         event triggers) and `CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = \
         'all')`, so every DDL below is captured and written to WAL as a logical message. \
         Checked before the runs: one script run on `capture`, decoded with `ddl_pgoutput` \
         through pg_recvlogical, gave the events {captured}. `hook only`: a second database \
         (`{HOOK_ONLY_DB}`) of the capture cluster, without the extension: the hook is loaded in \
         its backends but no event trigger fires and nothing is captured, which separates the \
         hook's cost from the capture's. `triggers, no DDL publication`: a third database \
         (`{TRIGGERS_ONLY_DB}`) with the extension and no publication: the extension keeps \
         its event triggers disabled there (no publication takes DDL), so PostgreSQL collects \
         no command: what the extension costs a database that replicates no DDL (the \
         `instructions` benchmark counts it exactly).\n\
         - Why `fsync = off`: the figures are CPU-bound, which is what the hook and the capture \
         cost: CPU work in the backend (keeping the statement text, the event triggers reading \
         the command collection, classifying, the rules lookup, writing the WAL message). With \
         fsync on, every commit would also wait for a WAL flush that both configurations pay \
         alike (milliseconds on a plain disk), which only dilutes the ratio; without it the \
         capture's cost shows at its largest relative size, the stricter comparison.\n\
         - Method: each measurement runs {runs} times per configuration after an untimed warm-up \
         round (the first run of a kind was slower everywhere), in forward then reverse order \
         (ABBA), each run after a `VACUUM` of its database and a `CHECKPOINT`: the DDL \
         runs create and drop tens of thousands of tables, and catalog bloat, or an autovacuum \
         worker waking during one run and not another, made runs drift apart by more than what \
         is measured. A ratio is the median of the per-round ratios (each round runs every \
         configuration back to back, so a slow drift of the machine cancels out); the ratio of \
         the medians and that of the best runs are shown too.\n\n\
         DDL latency: pgbench script `\\set n random(1, 1000000000)`, `CREATE TABLE \
         bench_ddl_:n (id bigint, v integer)`, `ALTER TABLE bench_ddl_:n ADD COLUMN note \
         integer`, `DROP TABLE bench_ddl_:n` (three autocommit transactions per script run), \
         `pgbench -n -c 1 -t {ddl_scripts} -f ddl.sql`: a fixed count, so that every \
         configuration creates and drops as many tables (the catalogs and the data directory \
         grow with them and later runs are a little slower; the alternation spreads that \
         evenly). pgbench's `latency average` is per script run, i.e. per three DDL \
         statements; WAL is per script run too.\n\n\
         | configuration | median | best | spread | runs, in order (ms) | server CPU per script run \
         | WAL per script run |\n\
         |---|---:|---:|---:|---|---:|---:|\n\
         {ddl_rows}\n\
         - DDL latency capture / plain: **{lat_ratio:.3}** (of the medians: \
         {lat_of_medians:.3}, best runs: {lat_best_ratio:.3}) \
         (target <= {LATENCY_RATIO_TARGET:.2}: {lat_verdict}); {lat_noise}\n\
         - DDL latency hook only / plain: **{hook_ratio:.3}** (of the medians: \
         {hook_of_medians:.3}, best runs: {hook_best_ratio:.3}) \
         ({hook_verdict} if the target is read as the hook alone); {hook_noise}\n\
         - DDL latency triggers, no DDL publication / plain: **{triggers_ratio:.3}** (what \
         the extension costs a database without DDL publications, whose event triggers it \
         keeps disabled; {triggers_noise})\n\
         - Server CPU per script run, capture / plain: **{cpu_ratio:.3}**, hook only / plain: \
         **{cpu_hook_ratio:.3}** (medians of the per-round ratios; {cpu_noise})\n\n\
         TPS: `pgbench -n -b tpcb-like -c {TPS_CLIENTS} -j {TPS_CLIENTS} -T {seconds}` (no DDL: \
         what the hook costs ordinary transactions, whose BEGIN and END pass through it).\n\n\
         | configuration | median | best | spread | runs, in order (tps) | server CPU per \
         transaction |\n\
         |---|---:|---:|---:|---|---:|\n\
         {tps_rows}\n\
         - TPS capture / plain: **{tps_ratio:.3}** (of the medians: {tps_of_medians:.3}, best \
         runs: {tps_best_ratio:.3}) (target >= \
         {TPS_RATIO_TARGET:.2}: {tps_verdict}); {tps_noise}\n\
         - Server CPU per transaction, capture / plain: **{tps_cpu_ratio:.3}** (median of the \
         per-round ratios; {tps_cpu_noise}; the TPS target read as CPU, <= {tps_cpu_target:.3}: \
         {tps_cpu_verdict})\n\n\
         Spread is (slowest - fastest) / median over the runs of one configuration: the noise \
         of this machine, against which a ratio has to be read. Server CPU is the CPU time of \
         the cluster's processes during a run (the postmaster's, including what its exited \
         children used, and that of every live process below it, from /proc) per pgbench \
         transaction: unlike latency and TPS it does not depend on how the two CPUs were shared \
         with pgbench itself.\n",
        date = machine.date,
        machine_line = machine.line(),
        foreign = foreign_note(foreign),
        captured = captured.join(", "),
        lat_verdict = verdict(lat_ratio <= LATENCY_RATIO_TARGET),
        hook_verdict = verdict(hook_ratio <= LATENCY_RATIO_TARGET),
        tps_verdict = verdict(tps_ratio >= TPS_RATIO_TARGET),
        lat_noise = rounds_note(&per_round(&ddl[0], &ddl[3], latency), |r| {
            r <= LATENCY_RATIO_TARGET
        }),
        hook_noise = rounds_note(&per_round(&ddl[0], &ddl[1], latency), |r| {
            r <= LATENCY_RATIO_TARGET
        }),
        triggers_noise = rounds_note(&per_round(&ddl[0], &ddl[2], latency), |r| {
            r <= LATENCY_RATIO_TARGET
        }),
        cpu_ratio = median(&cpu_ratios(&ddl[0], &ddl[3])),
        cpu_hook_ratio = median(&cpu_ratios(&ddl[0], &ddl[1])),
        cpu_noise = rounds_note(&cpu_ratios(&ddl[0], &ddl[3]), |r| r <= LATENCY_RATIO_TARGET),
        tps_cpu_ratio = median(&cpu_ratios(&tps[0], &tps[1])),
        tps_cpu_noise = rounds_note(&cpu_ratios(&tps[0], &tps[1]), |r| {
            r <= 1.0 / TPS_RATIO_TARGET
        }),
        tps_cpu_target = 1.0 / TPS_RATIO_TARGET,
        tps_cpu_verdict = verdict(median(&cpu_ratios(&tps[0], &tps[1])) <= 1.0 / TPS_RATIO_TARGET),
        tps_noise = rounds_note(&per_round(&tps[0], &tps[1], rate), |r| {
            r >= TPS_RATIO_TARGET
        }),
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
        assert_eq!(stats(&runs, latency, true), (1.1, 1.0));
        let slower = [sample(2.0), sample(3.0), sample(2.2)];
        assert_eq!(per_round(&runs, &slower, latency), [2.0, 2.5, 2.0]);
    }
}
