//! `cargo xtask bench decode`: `ddl_pgoutput` against `pgoutput`, decoding the same WAL through
//! a real walsender, into the `## Decode` section of BENCHMARKS.md.
//!
//! Targets (from the issue): decoding time ddl_pgoutput / pgoutput <= 1.03, and the walsender's
//! private memory at most 1 MiB above pgoutput's.
//!
//! 1. Release builds are installed (`cargo xtask install`); one throwaway cluster preloads
//!    `ddl_pgoutput`, has the `ddl_sync` extension and a publication `FOR ALL TABLES WITH
//!    (ddl = 'all')`, runs with autovacuum off, and gets `pgbench -i`. Both plugins run on this
//!    same cluster, so the only difference between them is the plugin.
//! 2. Per workload (plain tpcb-like, then tpcb-like with 1% of cheap DDL): N + 1 slots per
//!    plugin are made, the workload runs, its end LSN is noted, and one more transaction is
//!    committed after it so that pg_recvlogical sees data past `--endpos` and stops at once.
//! 3. Round 0 decodes one slot per plugin with `pg_recvlogical --endpos` (a real walsender) into
//!    files; rounds 1 to N are timed, write to /dev/null and alternate the order (ABBA). While
//!    pg_recvlogical runs, the walsender (pid from pg_stat_replication, joined to the slot) is
//!    read from /proc: its CPU time and its memory (RssAnon, VmHWM, VmRSS, RssFile, RssShmem, and the
//!    pages of ddl_pgoutput.so from smaps).
//! 4. Sanity, on round 0's files: taking the DDL events (the Relation and Insert messages of
//!    `ddl_sync.events`, and the BEGIN/COMMIT pairs left empty) out of ddl_pgoutput's output
//!    must leave pgoutput's output byte for byte, with exactly one event per DDL transaction
//!    pgbench ran.
//!
//! ```text
//! cargo xtask bench decode [--runs N] [--transactions N]
//! ```

use crate::events::split_events;
use crate::procfs::{foreign_note, mapped_rss_kb, quiet_check, Foreign, Status, Watch, Watched};
use crate::{
    check_release_installed, median, options, pgbench, pgbench_figure, reproduce, rounds_note,
    script_dir, section_heading, spread, verdict, write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask bench decode [--runs N] [--transactions N]";

/// Targets from the issue.
const TIME_RATIO_TARGET: f64 = 1.03;
const MEMORY_TARGET_MIB: f64 = 1.0;

/// pgbench scale (500,000 pgbench_accounts rows), loaded before any slot exists.
const PGBENCH_SCALE: u32 = 5;
/// pgbench clients; the transactions are split evenly between them.
const PGBENCH_CLIENTS: u32 = 2;
/// The DDL script's share of the mixed workload, in percent (`-b tpcb-like@99 -f ddl.sql@1`).
const DDL_PERCENT: u32 = 1;
/// The mixed workload's DDL: cheap, repeatable, always captured (kind `table`).
pub(crate) const DDL_SCRIPT: &str = "\\set n random(1, 1000000000)\n\
                          COMMENT ON TABLE pgbench_branches IS 'bench :n';\n";
/// Every DDL event of the mixed workload must be this statement.
const DDL_PREFIX: &str = "COMMENT ON TABLE pgbench_branches IS 'bench ";

pub(crate) const PUBLICATION: &str = "bench";
/// A table written to after each workload's end LSN (see [`measure`]).
const END_MARK: &str = "bench_end";
/// The longest one pg_recvlogical run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// How often the walsender's /proc/<pid>/status is read.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);
/// Every how many readings of /proc/<pid>/status the much slower smaps is read too.
const SMAPS_EVERY: u32 = 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Plugin {
    Pgoutput,
    DdlPgoutput,
}

impl Plugin {
    fn name(self) -> &'static str {
        match self {
            Plugin::Pgoutput => "pgoutput",
            Plugin::DdlPgoutput => "ddl_pgoutput",
        }
    }
}

/// One of the two workloads.
struct Workload {
    /// Short name, used in slot and file names.
    key: &'static str,
    /// With the DDL script mixed in.
    ddl: bool,
}

const WORKLOADS: [Workload; 2] = [
    Workload {
        key: "plain",
        ddl: false,
    },
    Workload {
        key: "ddl",
        ddl: true,
    },
];

/// One pg_recvlogical run.
pub(crate) struct Run {
    plugin: Plugin,
    /// The round (1..=runs) it was timed in.
    round: u32,
    /// pg_recvlogical's wall time.
    secs: f64,
    /// The walsender's CPU time and memory (from /proc/<walsender>/status, in kB: the last
    /// VmHWM seen, the largest of the others).
    pub(crate) walsender: Watched,
    /// How many times the walsender's figures were read.
    samples: u32,
}

/// What one workload gave.
struct Measured {
    key: &'static str,
    ddl: bool,
    /// Transactions pgbench ran, and of them the DDL script's.
    transactions: u64,
    ddl_transactions: u64,
    tps: f64,
    /// WAL written by the workload, bytes.
    wal_bytes: u64,
    /// The timed runs (output to /dev/null).
    runs: Vec<Run>,
    sanity: Sanity,
}

/// The comparison of the outputs of the untimed first round (see [`measure`]).
struct Sanity {
    pg_bytes: u64,
    pg_messages: usize,
    ddl_bytes: u64,
    events: usize,
    /// Events that are not the workload's DDL statement.
    foreign_events: usize,
    event_relations: usize,
    empty_transactions: usize,
    /// Bytes taken out of ddl_pgoutput's output (messages with their `\n`).
    removed_bytes: u64,
    /// What is left equals pgoutput's output byte for byte.
    identical: bool,
}

pub fn run(args: &[&str]) -> Result {
    let (mut runs, mut transactions) = (6, 100_000);
    options(
        args,
        USAGE,
        &mut [("--runs", &mut runs), ("--transactions", &mut transactions)],
        &mut [],
    )?;
    let per_client = transactions.div_ceil(PGBENCH_CLIENTS);

    // Release builds are what users run: `cargo xtask bench` installed them (checked below).
    let (dir, script) = script_dir("decode", DDL_SCRIPT)?;

    let pg = ClusterBuilder::new()
        .name("bench-decode")
        // The slots hold the WAL of a workload until they are all drained.
        .conf("max_wal_size", "8GB")
        // Autovacuum after a workload would compete with the timed walsenders for the CPUs, and
        // the relcache invalidations it sends make a running walsender send Relation messages
        // again: outputs of the same WAL would then differ by a few hundred bytes.
        .conf("autovacuum", "off")
        .conf("max_replication_slots", &(2 * runs + 4).to_string())
        .conf("max_wal_senders", &(2 * runs + 4).to_string())
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .map_err(|e| e.to_string())?;
    check_release_installed(&pg)?;
    let sql = |sql: &str| pg.psql("postgres", sql).map_err(|e| e.to_string());
    let server = sql("SELECT version()")?;
    sql(&format!(
        "CREATE EXTENSION ddl_sync;
         CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all');
         CREATE TABLE {END_MARK} (id int);"
    ))?;
    pgbench(&pg, &["-i", "-q", "-s", &PGBENCH_SCALE.to_string()])?;
    sql("CHECKPOINT")?;
    let idle = quiet_check()?;
    let watch = Watch::start(&[&pg])?;

    let mut measured = Vec::new();
    for workload in &WORKLOADS {
        measured.push(measure(&pg, workload, runs, per_client, &script, &dir)?);
    }
    let foreign = watch.finish();
    println!("bench: {}", foreign_note(&foreign));
    drop(pg);

    for m in &measured {
        println!("{}", summary(m));
    }
    let heading = section_heading("Decode", &server);
    let section = section(
        &Machine::describe(),
        idle,
        &foreign,
        &server,
        runs,
        per_client,
        &measured,
    );
    write_section(&heading, &section)
}

/// Runs one workload and decodes it `runs` times with each plugin.
fn measure(
    pg: &Cluster,
    workload: &Workload,
    runs: u32,
    per_client: u32,
    script: &Path,
    dir: &Path,
) -> Result<Measured> {
    let sql = |sql: &str| pg.psql("postgres", sql).map_err(|e| e.to_string());
    let slot = |plugin: Plugin, i: u32| format!("bench_{}_{}_{i}", workload.key, plugin.name());
    let plugins = [Plugin::Pgoutput, Plugin::DdlPgoutput];

    // Slots first: each decodes the workload from its start, and pg_recvlogical consumes them.
    // Round 0 writes files for the sanity check (and warms the page cache with the WAL); rounds
    // 1..=runs are timed and write to /dev/null, so that pg_recvlogical, which makes two write
    // calls per message, stays cheaper than the walsender it feeds.
    let rounds = runs + 1;
    let mut create = String::new();
    for i in 0..rounds {
        for plugin in plugins {
            create.push_str(&format!(
                "SELECT pg_create_logical_replication_slot('{}', '{}');\n",
                slot(plugin, i),
                plugin.name()
            ));
        }
    }
    sql(&create)?;

    let start = sql("SELECT pg_current_wal_lsn()")?;
    let clients = PGBENCH_CLIENTS.to_string();
    let per_client_arg = per_client.to_string();
    let mut args = vec![
        "-n",
        "-c",
        &clients,
        "-j",
        &clients,
        "-t",
        &per_client_arg,
        "--random-seed=20240101",
    ];
    let tpcb = format!("tpcb-like@{}", 100 - DDL_PERCENT);
    let ddl_arg = format!("{}@{DDL_PERCENT}", script.display());
    if workload.ddl {
        args.extend(["-b", &tpcb, "-f", &ddl_arg]);
    } else {
        args.extend(["-b", "tpcb-like"]);
    }
    println!("bench: workload {}", workload.key);
    let report = pgbench(pg, &args)?;
    let transactions =
        pgbench_figure(&report, "number of transactions actually processed:").map(|n| n as u64)?;
    let ddl_transactions = if workload.ddl {
        script_transactions(&report, "ddl.sql")?
    } else {
        0
    };
    let tps = pgbench_figure(&report, "tps =")?;
    let end = sql("SELECT pg_current_wal_lsn()")?;
    let wal_bytes: u64 = sql(&format!(
        "SELECT pg_wal_lsn_diff('{end}', '{start}')::bigint"
    ))?
    .parse()
    .map_err(|e| format!("WAL size: {e}"))?;
    // Past the end: a record that no plugin sends, then a transaction that both send and that
    // starts after `end`, so pg_recvlogical stops as soon as it sees it.
    sql(&format!(
        "SELECT pg_logical_emit_message(false, 'bench', 'end');
         INSERT INTO {END_MARK} VALUES (1);
         CHECKPOINT;"
    ))?;

    let out = |plugin: Plugin| dir.join(format!("{}-{}.out", workload.key, plugin.name()));
    let mut done = Vec::new();
    for i in 0..rounds {
        let order = if i % 2 == 1 {
            plugins
        } else {
            [plugins[1], plugins[0]]
        };
        for plugin in order {
            let file = (i == 0).then(|| out(plugin));
            let run = decode_once(pg, &slot(plugin, i), plugin, i, &end, file.as_deref())?;
            println!(
                "bench: {} {:<12} {}: {:.3} s, walsender CPU {:.0} ms, {:?}",
                workload.key,
                plugin.name(),
                if i == 0 { "to file" } else { "timed" },
                run.secs,
                run.walsender.cpu_ms,
                run.walsender.peak
            );
            if i > 0 {
                done.push(run);
            }
        }
    }
    let mut drop_slots = String::new();
    for i in 0..rounds {
        for plugin in plugins {
            drop_slots.push_str(&format!(
                "SELECT pg_drop_replication_slot('{}');\n",
                slot(plugin, i)
            ));
        }
    }
    sql(&drop_slots)?;

    let sanity = compare(&out(Plugin::Pgoutput), &out(Plugin::DdlPgoutput))?;
    Ok(Measured {
        key: workload.key,
        ddl: workload.ddl,
        transactions,
        ddl_transactions,
        tps,
        wal_bytes,
        runs: done,
        sanity,
    })
}

/// How many transactions pgbench's report gives for the script whose name contains `name`:
/// `SQL script 2: .../ddl.sql` is followed by ` - weight: ...` and ` - 1012 transactions (...)`.
pub(crate) fn script_transactions(report: &str, name: &str) -> Result<u64> {
    report
        .lines()
        .skip_while(|l| !(l.starts_with("SQL script") && l.contains(name)))
        .skip(1)
        .take_while(|l| !l.starts_with("SQL script"))
        .find_map(|l| {
            let (n, rest) = l.trim().strip_prefix("- ")?.split_once(' ')?;
            rest.starts_with("transactions").then(|| n.parse().ok())?
        })
        .ok_or_else(|| format!("no transaction count for {name} in the pgbench report:\n{report}"))
}

/// Decodes `slot` up to `end` with pg_recvlogical into `out` (else /dev/null), timing it and
/// sampling the walsender's CPU time and memory until pg_recvlogical exits.
pub(crate) fn decode_once(
    pg: &Cluster,
    slot: &str,
    plugin: Plugin,
    round: u32,
    end: &str,
    out: Option<&Path>,
) -> Result<Run> {
    let out = match out {
        Some(out) => {
            // pg_recvlogical appends to an existing file.
            match std::fs::remove_file(out) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot remove {}: {e}", out.display()))
                }
                _ => out,
            }
        }
        None => Path::new("/dev/null"),
    };
    let mut cmd = pg.recvlogical("postgres", slot).command();
    cmd.args(["--start", "--no-loop", "--endpos", end])
        // No fsync of the output file: the disk is not what is measured.
        .args(["--fsync-interval", "0"])
        .args(["-o", "proto_version=1"])
        .arg("-o")
        .arg(format!("publication_names={PUBLICATION}"))
        .arg("-f")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());

    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start pg_recvlogical: {e}"))?;
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let (mut pid, mut walsender, mut samples) = (None, Watched::default(), 0);
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| format!("cannot wait for pg_recvlogical: {e}"))?
        {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "pg_recvlogical on slot {slot} did not reach {end} within {RUN_TIMEOUT:?}"
            ));
        }
        match pid {
            None => pid = walsender_pid(pg, slot)?,
            Some(p) => {
                if walsender.read(p) {
                    if samples % SMAPS_EVERY == 0 {
                        let plugin_kb = mapped_rss_kb(p, "/ddl_pgoutput.so").unwrap_or(0);
                        walsender.peak.plugin_kb = walsender.peak.plugin_kb.max(plugin_kb);
                    }
                    samples += 1;
                }
            }
        }
        std::thread::sleep(SAMPLE_EVERY);
    };
    let secs = started.elapsed().as_secs_f64();
    let errors = errors.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "pg_recvlogical on slot {slot} failed ({status}):\n{}",
            errors.trim_end()
        ));
    }
    if samples == 0 {
        return Err(format!(
            "the walsender of slot {slot} was never seen while pg_recvlogical ran ({secs:.3} s); \
             the workload is too small to measure"
        ));
    }
    Ok(Run {
        plugin,
        round,
        secs,
        walsender,
        samples,
    })
}

/// The pid of the walsender that has `slot`, from pg_stat_replication (application name
/// `pg_recvlogical`) and the slot's `active_pid`; `None` until it has started.
fn walsender_pid(pg: &Cluster, slot: &str) -> Result<Option<u32>> {
    let pid = pg
        .psql(
            "postgres",
            &format!(
                "SELECT r.pid FROM pg_stat_replication r
                 JOIN pg_replication_slots s ON s.active_pid = r.pid
                 WHERE s.slot_name = '{slot}' AND r.application_name = 'pg_recvlogical'"
            ),
        )
        .map_err(|e| e.to_string())?;
    Ok(pid.trim().parse().ok())
}

/// Compares the two outputs of one workload (see [`Sanity`]).
fn compare(pg_path: &Path, ddl_path: &Path) -> Result<Sanity> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let (pg, ddl) = (read(pg_path)?, read(ddl_path)?);
    let pg_split = split_events(&pg).map_err(|e| format!("{}: {e}", pg_path.display()))?;
    if !pg_split.events.is_empty() {
        return Err(format!("{} holds DDL events", pg_path.display()));
    }
    let split = split_events(&ddl).map_err(|e| format!("{}: {e}", ddl_path.display()))?;
    let mut at = 0;
    let mut identical = true;
    for m in &split.kept {
        if pg.get(at..at + m.len()) != Some(*m) {
            identical = false;
            break;
        }
        at += m.len();
    }
    identical &= at == pg.len();
    let kept: usize = split.kept.iter().map(|m| m.len()).sum();
    Ok(Sanity {
        pg_bytes: pg.len() as u64,
        pg_messages: pg_split.kept.len(),
        ddl_bytes: ddl.len() as u64,
        events: split.events.len(),
        foreign_events: split
            .events
            .iter()
            .filter(|sql| !sql.starts_with(DDL_PREFIX))
            .count(),
        event_relations: split.event_relations,
        empty_transactions: split.empty_transactions,
        removed_bytes: (ddl.len() - kept) as u64,
        identical,
    })
}

/// Figures of one plugin in one workload (timed runs).
struct PluginFigures {
    best: f64,
    median: f64,
    cpu_best: f64,
    cpu_median: f64,
    /// Spread of the wall times, percent.
    spread: f64,
    /// Each memory figure's median over the runs (one run's peak is its VmHWM).
    mem: Status,
    /// The largest VmHWM of any run.
    hwm_max_kb: u64,
    min_samples: u32,
}

fn figures(m: &Measured, plugin: Plugin) -> PluginFigures {
    let runs: Vec<&Run> = m.runs.iter().filter(|r| r.plugin == plugin).collect();
    let secs: Vec<f64> = runs.iter().map(|r| r.secs).collect();
    let cpu: Vec<f64> = runs.iter().map(|r| r.walsender.cpu_ms).collect();
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    PluginFigures {
        best: min(&secs),
        median: median(&secs),
        cpu_best: min(&cpu),
        cpu_median: median(&cpu),
        spread: spread(&secs),
        mem: Status::median(&runs.iter().map(|r| r.walsender.peak).collect::<Vec<_>>()),
        hwm_max_kb: runs
            .iter()
            .map(|r| r.walsender.peak.hwm_kb)
            .max()
            .unwrap_or(0),
        min_samples: runs.iter().map(|r| r.samples).min().unwrap_or(0),
    }
}

/// ddl_pgoutput / pgoutput of one figure, round by round.
fn round_ratios(m: &Measured, figure: fn(&Run) -> f64) -> Vec<f64> {
    let of = |plugin, round| {
        m.runs
            .iter()
            .find(|r| r.plugin == plugin && r.round == round)
            .map(figure)
    };
    let rounds = m.runs.iter().map(|r| r.round).max().unwrap_or(0);
    (1..=rounds)
        .filter_map(|i| Some(of(Plugin::DdlPgoutput, i)? / of(Plugin::Pgoutput, i)?))
        .collect()
}

/// The ratios of one workload, ddl_pgoutput over pgoutput.
struct Ratios {
    /// Wall time, best runs and medians.
    best: f64,
    median: f64,
    /// Walsender CPU time, best runs and medians.
    cpu_best: f64,
    cpu_median: f64,
    /// Private memory (RssAnon) difference, MiB: the figure judged.
    memory_mib: f64,
}

fn ratios(m: &Measured) -> Ratios {
    let (pg, ddl) = (
        figures(m, Plugin::Pgoutput),
        figures(m, Plugin::DdlPgoutput),
    );
    Ratios {
        best: ddl.best / pg.best,
        median: ddl.median / pg.median,
        cpu_best: ddl.cpu_best / pg.cpu_best,
        cpu_median: ddl.cpu_median / pg.cpu_median,
        memory_mib: diff_mib(ddl.mem.anon_kb, pg.mem.anon_kb),
    }
}

/// Whether the workload's outputs passed the sanity check.
fn sane(m: &Measured) -> bool {
    let s = &m.sanity;
    s.identical && s.foreign_events == 0 && s.events as u64 == m.ddl_transactions
}

fn summary(m: &Measured) -> String {
    let r = ratios(m);
    format!(
        "bench: {}: wall time ratio {:.3} (median {:.3}), walsender CPU ratio {:.3} (median \
         {:.3}), private memory {:+.2} MiB, {} DDL events for {} DDL transactions, identical after \
         stripping: {}",
        m.key,
        r.best,
        r.median,
        r.cpu_best,
        r.cpu_median,
        r.memory_mib,
        m.sanity.events,
        m.ddl_transactions,
        m.sanity.identical
    )
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn diff_mib(kb: u64, than_kb: u64) -> f64 {
    (kb as f64 - than_kb as f64) / 1024.0
}

fn mib(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

/// The `## Decode on PostgreSQL N` section.
fn section(
    machine: &Machine,
    idle: f64,
    foreign: &Foreign,
    server: &str,
    runs: u32,
    per_client: u32,
    measured: &[Measured],
) -> String {
    let heading = section_heading("Decode", server);
    let command = reproduce("decode", server);
    let mut s = format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--transactions N`). It \
         installs release builds (`cargo xtask install`), runs the workloads below on a throwaway \
         cluster, decodes them with both plugins and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line}; CPUs {idle:.0}% idle over 3 s just before the measurements; \
         {foreign}\n\
         - Server: {server}\n\
         - Cluster: ddl-testkit defaults (`fsync = off`, `shared_buffers = 32MB`, `wal_level = \
         logical`), `shared_preload_libraries = 'ddl_pgoutput'`, `max_wal_size = 8GB`, `autovacuum = off` \
         (it would compete with the timed walsenders, and its relcache invalidations make a \
         running walsender send Relation messages again, so outputs of the same WAL would \
         differ), `CREATE EXTENSION ddl_sync`, `CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = \
         'all')`, `pgbench -i -s {PGBENCH_SCALE}` before any slot exists. Both plugins decode the \
         same WAL on this one cluster: the only difference is the plugin.\n\
         - Workloads: `plain` is `pgbench -n -c {PGBENCH_CLIENTS} -j {PGBENCH_CLIENTS} -t \
         {per_client} -b tpcb-like`; `ddl` is the same with `-b tpcb-like@{tpcb} -f \
         ddl.sql@{DDL_PERCENT}`, where ddl.sql is `COMMENT ON TABLE pgbench_branches IS 'bench \
         :n'` (`:n` random), so about {DDL_PERCENT}% of the transactions are one captured DDL \
         each.\n\
         - Method: before each workload, {rounds} slots per plugin are created; after it, its end \
         LSN is the `--endpos` (a CHECKPOINT follows, so the checkpointer is idle during the \
         runs) of `pg_recvlogical --start --no-loop --fsync-interval 0 -o \
         proto_version=1 -o publication_names={PUBLICATION}` (a real walsender), one slot per \
         plugin per round. Round 0 writes files (`-f FILE`) for the sanity check below and warms \
         the page cache; rounds 1 to {runs} are timed and write to `-f /dev/null`, in \
         alternating order (ABBA): pg_recvlogical makes two write calls per message, and into a \
         file that would cost about as much as the decoding being measured. Wall time is \
         pg_recvlogical's, connection and plugin startup included. The walsender's pid is taken \
         from `pg_stat_replication` (application_name `pg_recvlogical`, joined to the slot's \
         `active_pid`) while it runs, and read every {sample} ms until pg_recvlogical exits: \
         its CPU time (`se.sum_exec_runtime` of /proc/<pid>/sched, the last reading: the \
         decoding work itself, whatever the client does) and /proc/<pid>/status, and every \
         {smaps_ms} ms /proc/<pid>/smaps for the pages of ddl_pgoutput.so. VmRSS = RssAnon \
         (private memory: palloc, caches, the reorder buffer) + RssFile (mapped files: the code \
         of the libraries, in the page cache once for every process) + RssShmem (the shared \
         memory the process touched: shared buffers, ...); VmHWM is its peak, kept by the kernel. \
         The memory figure judged is the walsender's private memory, RssAnon: it is what each \
         walsender adds to the machine. RssFile and RssShmem count pages that exist anyway and \
         that another walsender maps again without adding memory: the plugin's machine code \
         (the kernel maps up to 64 KiB of a file around every page first touched, so calling a \
         few functions spread over the library's 2.3 MB of code maps about a MiB of it; the \
         `ddl_pgoutput.so` column shows it) and the shared buffers through which the walsender \
         read catalog pages (the events relation, its publications, `publication_sync`). VmHWM \
         and the parts are shown too. Each memory figure in the tables is the median over the \
         {runs} timed runs of a plugin of that run's value (one run's peak is its VmHWM; the \
         others are the largest values its readings saw): single runs sometimes touch another \
         MiB or two of library code, whichever the plugin. Spread is (slowest - fastest) / median of a plugin's wall times: the noise of \
         this machine, against which the ratio has to be read.\n\
         - Sanity (round 0): both outputs are parsed with ddl-wire; taking the DDL events out of \
         ddl_pgoutput's (Relation and Insert messages of `ddl_sync.events`, then the BEGIN/COMMIT \
         pairs left empty, since pgoutput sends nothing for a DDL-only transaction) must leave \
         pgoutput's output byte for byte, and every event must be the workload's COMMENT, one \
         per DDL transaction pgbench reported.\n",
        date = machine.date,
        machine_line = machine.line(),
        foreign = foreign_note(foreign),
        tpcb = 100 - DDL_PERCENT,
        rounds = runs + 1,
        sample = SAMPLE_EVERY.as_millis(),
        smaps_ms = SAMPLE_EVERY.as_millis() * u128::from(SMAPS_EVERY),
    );
    for m in measured {
        let (pg, ddl) = (
            figures(m, Plugin::Pgoutput),
            figures(m, Plugin::DdlPgoutput),
        );
        let r = ratios(m);
        let what = if m.ddl {
            format!(
                "{} transactions, {} of them DDL",
                m.transactions, m.ddl_transactions
            )
        } else {
            format!("{} transactions", m.transactions)
        };
        s.push_str(&format!(
            "\nWorkload `{key}`: {what} ({tps:.0} tps while written), {wal} of WAL.\n\n\
             | plugin | wall, best of {runs} | wall, median | spread | walsender CPU, best | CPU, \
             median | RssAnon | VmHWM | VmRSS | RssFile | of which ddl_pgoutput.so | RssShmem |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            key = m.key,
            tps = m.tps,
            wal = mb(m.wal_bytes),
        ));
        for (plugin, f) in [(Plugin::Pgoutput, &pg), (Plugin::DdlPgoutput, &ddl)] {
            s.push_str(&format!(
                "| {} | {:.3} s | {:.3} s | {:.0}% | {:.3} s | {:.3} s | {} | {} | {} | {} | {} | {} |\n",
                plugin.name(),
                f.best,
                f.median,
                f.spread,
                f.cpu_best / 1e3,
                f.cpu_median / 1e3,
                mib(f.mem.anon_kb),
                mib(f.mem.hwm_kb),
                mib(f.mem.rss_kb),
                mib(f.mem.file_kb),
                mib(f.mem.plugin_kb),
                mib(f.mem.shmem_kb),
            ));
        }
        let san = &m.sanity;
        let diff = |field: fn(&Status) -> u64| diff_mib(field(&ddl.mem), field(&pg.mem));
        s.push_str(&format!(
            "\n- Time ddl_pgoutput / pgoutput, wall: **{:.3}** best of {runs} (median {:.3}) \
             (target <= {TIME_RATIO_TARGET}: {}; {}); walsender CPU: **{:.3}** best (median \
             {:.3}) ({}; {})\n\
             - Walsender private memory (RssAnon, median of the runs' peaks) ddl_pgoutput - \
             pgoutput: **{:+.2} MiB** (target <= +{MEMORY_TARGET_MIB} MiB: {}); resident set \
             peak (VmHWM) {:+.2} MiB (the largest VmHWM of any run: {} and {}), of which \
             RssFile {:+.2} MiB (ddl_pgoutput.so's own pages {:+.2} MiB) and RssShmem {:+.2} \
             MiB: pages shared with every other process (see Method)\n\
             - Sanity: {}. ddl_pgoutput's {} bytes less {} events, {} `ddl_sync.events` Relation \
             messages and {} emptied BEGIN/COMMIT pairs ({} bytes) {} pgoutput's {} bytes ({} \
             messages){}; pgbench reported {} DDL transactions. The walsender was read at least \
             {} times per timed run.\n",
            r.best,
            r.median,
            verdict(r.best <= TIME_RATIO_TARGET),
            rounds_note(&round_ratios(m, |r| r.secs), |r| r <= TIME_RATIO_TARGET),
            r.cpu_best,
            r.cpu_median,
            verdict(r.cpu_best <= TIME_RATIO_TARGET),
            rounds_note(&round_ratios(m, |r| r.walsender.cpu_ms), |r| r
                <= TIME_RATIO_TARGET),
            r.memory_mib,
            verdict(r.memory_mib <= MEMORY_TARGET_MIB),
            diff(|m| m.hwm_kb),
            mib(pg.hwm_max_kb),
            mib(ddl.hwm_max_kb),
            diff(|m| m.file_kb),
            diff(|m| m.plugin_kb),
            diff(|m| m.shmem_kb),
            if sane(m) { "passed" } else { "FAILED" },
            san.ddl_bytes,
            san.events,
            san.event_relations,
            san.empty_transactions,
            san.removed_bytes,
            if san.identical { "are" } else { "are NOT" },
            san.pg_bytes,
            san.pg_messages,
            if san.identical { ", byte for byte" } else { "" },
            m.ddl_transactions,
            pg.min_samples.min(ddl.min_samples),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_counts_are_read_from_the_report() {
        let report = "transaction type: multiple scripts\n\
                      SQL script 1: <builtin: TPC-B (sort of)>\n \
                      - weight: 99 (targets 99.0% of total)\n \
                      - 98990 transactions (99.0% of total, tps = 1642.3)\n\
                      SQL script 2: /x/target/bench/decode/ddl.sql\n \
                      - weight: 1 (targets 1.0% of total)\n \
                      - 1010 transactions (1.0% of total, tps = 16.7)\n";
        assert_eq!(script_transactions(report, "ddl.sql").unwrap(), 1010);
        assert!(script_transactions(report, "other.sql").is_err());
    }
}
