//! `cargo xtask bench apply-instructions`: what the subscriber's apply worker spends per
//! replayed DDL event, in CPU instructions counted by callgrind, against what the same
//! statements cost a session on the same server; and where the difference goes, by phase.
//! Written into the `## Apply instructions` section of BENCHMARKS.md.
//!
//! Why instructions: the `apply` benchmark's wall-time ratio moves by tens of percent from run
//! to run on this machine (see `instructions` for the same reasoning about the capture); a
//! count repeats to a fraction of a percent, so each cut of #31 can be measured.
//!
//! Two throwaway clusters. The publisher preloads `ddl_pgoutput`, has `ddl_sync` and a
//! publication `FOR ALL TABLES WITH (ddl = 'all')` with a `ddl_pgoutput` slot; the subscriber
//! has `ddl_sync` and a native subscription on that slot replaying all DDL (`streaming = off`,
//! so that one apply worker applies everything), and a database `plain` without the
//! extension. The subscriber runs under `valgrind --tool=callgrind --trace-children=yes`.
//!
//! The workload is the `apply` benchmark's migration without its DML (the statements a
//! subscriber replays; rows are the native apply's business), N and 2N DDL statements on fresh
//! schemas. For each: the subscription is disabled, the publisher runs the migration, the
//! subscription is enabled, the subscriber waits for the migration's last row, and the
//! subscription is disabled again: the apply worker exits and callgrind writes its count.
//! (count(2N) - count(N)) / N is the apply worker's cost of one replayed event, without the
//! worker's start and end. The baseline: a session in database `plain` of the same subscriber
//! runs the same migrations (as one psql script each); (count(2N) - count(N)) / N is what a
//! statement costs a session, its parse and commit included. The phases are inclusive counts
//! of functions in the worker of the longer run, per event.
//!
//! ```text
//! cargo xtask bench apply-instructions [--runs N] [--statements N] [--layout NAME]
//! ```
//!
//! `--layout partitions` or `--layout tenants` replays one of the scale runs' layouts
//! ([`Layout`]) instead of the migration, printed and not written: the section holds the
//! migration's figures.

use crate::instructions::{callgrind_wrapper, check_valgrind, inclusive_counts, totals};
use crate::layouts::Layout;
use crate::migration::Migration;
use crate::{
    check_release_installed, median, options, reproduce, section_heading, spread, sql, verdict,
    write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask bench apply-instructions [--runs N] [--statements N] \
                     [--layout partitions|tenants]";

/// Target of issue #31: the product's instructions per replayed event (the apply worker's, less
/// what the statement costs a session) at most this share of the statement's own.
const OVERHEAD_TARGET: f64 = 0.25;

const SUBSCRIPTION: &str = "bench";
const SLOT: &str = "bench_apply_instructions";
const MARK: &str = "bench_mark";
/// The longest the subscriber (under callgrind, some 50 times slower) may take for a run.
const APPLY_TIMEOUT: Duration = Duration::from_secs(1200);

/// The phases of a replayed event: (symbol as callgrind names it, what it is). Nested rows are
/// part of the rows above them.
const PHASES: [(&str, &str); 17] = [
    (
        "ExecSimpleRelationInsert",
        "the apply worker inserts the event's row (the trigger included)",
    ),
    (
        "apply_event_wrapper",
        "the apply trigger (everything of ddl_sync's below)",
    ),
    ("ddl_sync::replay::replay_event", "the replay of the event"),
    (
        "ddl_sync::replay::statement::execute",
        "the statement itself (PostgreSQL's ProcessUtility, hooks included)",
    ),
    (
        "ddl_sync::subscriber::applying::Subscription::config",
        "the subscription's DDL configuration",
    ),
    (
        "ddl_sync::replay::settings::usable",
        "the event's settings checked",
    ),
    (
        "ddl_sync::replay::statement::check",
        "the statement parsed and checked (kind, object, schema)",
    ),
    (
        "ddl_sync::replay::host::execute_claimed",
        "the statement checked against the claim as its role (from the check's parse), and run (the statement included)",
    ),
    (
        "ddl_sync::replay::verify_made",
        "verification: what it made, described and compared",
    ),
    (
        "ddl_sync::replay::tables::make_missing",
        "tables the publisher has and this node lacks",
    ),
    (
        "ddl_sync::subscriber::applying::Subscription::register_relation",
        "new tables registered in the subscription",
    ),
    ("ddl_sync::replay::log_verdict", "the LOG line"),
    (
        "ddl_sync::replay::counters::count",
        "the event counted, in memory",
    ),
    (
        "ddl_sync::replay::counters::write",
        "the transaction's counts written to the subscription's row, before its commit",
    ),
    (
        "ddl_sync::replay::trigger::duplicate",
        "the duplicate check",
    ),
    ("CommitTransactionCommand", "the apply transaction's commit"),
    (
        "process_syncing_tables",
        "PostgreSQL's table sync bookkeeping at each commit",
    ),
];

pub fn run(args: &[&str]) -> Result {
    // N = 500: 2N is the 1,000-statement migration of the `apply` benchmark. (The apply
    // worker's receive loop, which depends on how the WAL happens to arrive, varies by a few
    // million instructions from run to run: 0.07 % to 0.7 % of the figure at N = 200, 0.33 %
    // at 500; the phases below it repeat exactly.)
    let (mut runs, mut statements) = (2, 500);
    let (layout, args) = layout_option(args)?;
    options(
        &args,
        USAGE,
        &mut [("--runs", &mut runs), ("--statements", &mut statements)],
        &mut [],
    )?;
    check_valgrind()?;
    let mut apply = Vec::new();
    let mut plain = Vec::new();
    let mut phases = Vec::new();
    let mut server = String::new();
    for run in 1..=runs {
        let measured = measure(statements as usize, layout)?;
        println!(
            "bench: apply instructions run {run}: apply worker {:.0} per event, session {:.0} \
             per statement",
            measured.apply, measured.plain
        );
        apply.push(measured.apply);
        plain.push(measured.plain);
        if phases.is_empty() {
            phases = measured.phases;
        }
        server = measured.server;
    }
    let heading = section_heading("Apply instructions", &server);
    let text = section(
        &Machine::describe(),
        &server,
        statements as usize,
        &apply,
        &plain,
        &phases,
    );
    match layout {
        None => write_section(&heading, &text)?,
        Some(layout) => println!("bench: layout {}, not written:", layout.name()),
    }
    println!("{text}");
    Ok(())
}

/// `--layout NAME` taken out of `args`: the layout named, and the other arguments.
fn layout_option<'a>(args: &[&'a str]) -> Result<(Option<Layout>, Vec<&'a str>)> {
    let Some(at) = args.iter().position(|a| *a == "--layout") else {
        return Ok((None, args.to_vec()));
    };
    let name = args.get(at + 1).copied().unwrap_or_default();
    let layout = Layout::ALL
        .into_iter()
        .find(|l| l.name() == name)
        .ok_or_else(|| format!("--layout needs partitions or tenants, not `{name}`\n{USAGE}"))?;
    let rest = args[..at].iter().chain(args.iter().skip(at + 2));
    Ok((Some(layout), rest.copied().collect()))
}

/// The DDL of `statements` statements on fresh schemas named from `schema`: the migration's,
/// or `layout`'s.
fn workload(layout: Option<Layout>, schema: &str, statements: usize) -> Migration {
    match layout {
        None => Migration::generate(schema, statements, 0),
        Some(layout) => layout.migration(schema, statements),
    }
    .without_dml()
}

/// What one run measured.
struct Measured {
    /// The apply worker's instructions per replayed event.
    apply: f64,
    /// A session's instructions per statement.
    plain: f64,
    /// Inclusive instructions per event of each of [`PHASES`].
    phases: Vec<f64>,
    server: String,
}

fn measure(statements: usize, layout: Option<Layout>) -> Result<Measured> {
    let publisher = ClusterBuilder::new()
        .name("bench-applyi-pub")
        .conf("autovacuum", "off")
        // The subscriber under callgrind is slow to answer.
        .conf("wal_sender_timeout", "0")
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .map_err(|e| e.to_string())?;
    let mut subscriber = ClusterBuilder::new()
        .name("bench-applyi-sub")
        .conf("autovacuum", "off")
        .conf("wal_receiver_timeout", "0")
        // The launcher starts an enabled subscription's worker within 100 ms, not 5 s.
        .conf("wal_retrieve_retry_interval", "100ms")
        .build()
        .map_err(|e| e.to_string())?;
    sql(
        &publisher,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE TABLE {MARK} (id integer PRIMARY KEY);
             CREATE PUBLICATION bench FOR ALL TABLES WITH (ddl = 'all');
             SELECT pg_create_logical_replication_slot('{SLOT}', 'ddl_pgoutput');"
        ),
    )?;
    check_release_installed(&publisher)?;
    sql(
        &subscriber,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE TABLE {MARK} (id integer PRIMARY KEY);
             CREATE SUBSCRIPTION {SUBSCRIPTION} CONNECTION '{}' PUBLICATION bench
                 WITH (create_slot = false, slot_name = '{SLOT}', copy_data = false,
                       enabled = false, streaming = off);
             SELECT ddl_sync.set_subscription_ddl('{SUBSCRIPTION}', 'all', 'error');
             CREATE DATABASE plain;",
            publisher.connstr("postgres")
        ),
    )?;
    let server = sql(&subscriber, "SELECT version()")?;
    subscriber
        .stop(ddl_testkit::StopMode::Fast)
        .map_err(|e| e.to_string())?;
    let out = subscriber.base_dir().join("callgrind");
    let wrapper = callgrind_wrapper(&subscriber, &out)?;
    subscriber
        .start_as(Some(&wrapper))
        .map_err(|e| e.to_string())?;
    check_release_installed(&subscriber)?;

    let pair = Pair {
        publisher: &publisher,
        subscriber: &subscriber,
        out: &out,
        marks: std::cell::Cell::new(0),
        layout,
    };
    // A warm-up, so that both measured runs find the same caches and catalogs.
    pair.replicate("w", statements / 10)?;
    let (short, _) = pair.replicate("a", statements)?;
    let (long, long_file) = pair.replicate("b", 2 * statements)?;
    let plain_short = pair.session("pa", statements)?;
    let plain_long = pair.session("pb", 2 * statements)?;
    let symbols: Vec<&str> = PHASES.iter().map(|(symbol, _)| *symbol).collect();
    let events = (2 * statements) as f64;
    let phases: Vec<f64> = inclusive_counts(&long_file, &symbols)?
        .into_iter()
        .map(|count| count / events)
        .collect();
    // Every phase runs for this workload: a count of 0 is a function renamed or inlined.
    if let Some(((symbol, _), _)) = PHASES.iter().zip(&phases).find(|(_, c)| **c == 0.0) {
        return Err(format!(
            "no instructions counted for `{symbol}` in {}: renamed or inlined?",
            long_file.display()
        ));
    }
    // The profile stays for `callgrind_annotate` (the cluster's directory goes).
    let kept = crate::bench_dir()?.join("apply-instructions.callgrind");
    std::fs::copy(&long_file, &kept).map_err(|e| {
        format!(
            "cannot copy {} to {}: {e}",
            long_file.display(),
            kept.display()
        )
    })?;
    // A fast stop waits for every process, each writing its counts as it exits.
    subscriber
        .stop(ddl_testkit::StopMode::Fast)
        .map_err(|e| e.to_string())?;
    Ok(Measured {
        apply: (long - short) / statements as f64,
        plain: (plain_long - plain_short) / statements as f64,
        phases,
        server,
    })
}

struct Pair<'a> {
    publisher: &'a Cluster,
    subscriber: &'a Cluster,
    /// Where callgrind writes the subscriber's counts.
    out: &'a Path,
    /// The last id inserted into [`MARK`].
    marks: std::cell::Cell<u32>,
    layout: Option<Layout>,
}

impl Pair<'_> {
    /// Runs the DDL of a migration of `statements` statements on schema `schema` on the
    /// publisher and has one apply worker replay it; the worker's instruction count and file.
    fn replicate(&self, schema: &str, statements: usize) -> Result<(f64, PathBuf)> {
        let migration = workload(self.layout, schema, statements);
        let since = sql(self.publisher, "SELECT pg_current_wal_lsn()")?;
        let id = self.marks.get() + 1;
        self.marks.set(id);
        sql(
            self.publisher,
            &format!("{}INSERT INTO {MARK} VALUES ({id});", migration.script()),
        )?;
        sql(
            self.subscriber,
            &format!("ALTER SUBSCRIPTION {SUBSCRIPTION} ENABLE"),
        )?;
        let started = Instant::now();
        let pid = loop {
            let state = sql(
                self.subscriber,
                &format!(
                    "SELECT EXISTS (SELECT FROM {MARK} WHERE id = {id}) || ' ' ||
                            coalesce((SELECT pid FROM pg_stat_subscription
                                      WHERE subname = '{SUBSCRIPTION}' AND relid IS NULL), 0)
                            || ' ' || (SELECT apply_error_count FROM pg_stat_subscription_stats
                                       WHERE subname = '{SUBSCRIPTION}')"
                ),
            )?;
            let failed = !state.ends_with(" 0");
            if let Some(pid) = state.strip_prefix("true ").filter(|_| !failed) {
                break pid.split(' ').next().unwrap_or_default().to_string();
            }
            if failed || started.elapsed() > APPLY_TIMEOUT {
                let why = if failed {
                    "the apply worker failed".to_string()
                } else {
                    format!("not applied within {} s", APPLY_TIMEOUT.as_secs())
                };
                return Err(format!(
                    "mark {id}: {why}\nsubscriber log:\n{}",
                    self.subscriber.log_tail(30)
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        sql(
            self.subscriber,
            &format!("ALTER SUBSCRIPTION {SUBSCRIPTION} DISABLE"),
        )?;
        // Every DDL statement replayed, none otherwise: else the count means something else.
        let log = sql(
            self.subscriber,
            &format!(
                "SELECT coalesce(string_agg(s || ' ' || n, ', ' ORDER BY s), 'none')
                 FROM (SELECT coalesce(apply_status, 'unset') AS s, count(*) AS n
                       FROM ddl_sync.events WHERE origin_lsn > '{since}' GROUP BY 1) c"
            ),
        )?;
        if log != format!("applied {}", migration.ddl_count()) {
            return Err(format!(
                "the subscriber's apply log for schema {schema} is `{log}`, not `applied {}`",
                migration.ddl_count()
            ));
        }
        let file = self.out.join(format!("cg.{pid}"));
        Ok((totals(&file)?, file))
    }

    /// The same DDL run by one session in database `plain`; its instruction count.
    fn session(&self, schema: &str, statements: usize) -> Result<f64> {
        let migration = workload(self.layout, schema, statements);
        let pid = self
            .subscriber
            .psql(
                "plain",
                &format!("SELECT pg_backend_pid();\n{}", migration.script()),
            )
            .map_err(|e| e.to_string())?;
        totals(&self.out.join(format!("cg.{}", pid.trim())))
    }
}

/// The `## Apply instructions` section.
fn section(
    machine: &Machine,
    server: &str,
    statements: usize,
    apply: &[f64],
    plain: &[f64],
    phases: &[f64],
) -> String {
    let heading = section_heading("Apply instructions", server);
    let command = reproduce("apply-instructions", server);
    let (apply_m, plain_m) = (median(apply), median(plain));
    let overhead = (apply_m - plain_m) / plain_m;
    let mut rows = String::new();
    for (i, (a, p)) in apply.iter().zip(plain).enumerate() {
        rows.push_str(&format!("| {} | {a:.0} | {p:.0} | {:.3} |\n", i + 1, a / p));
    }
    let mut phase_rows = String::new();
    for ((symbol, what), count) in PHASES.iter().zip(phases) {
        phase_rows.push_str(&format!("| `{symbol}` | {what} | {count:.0} |\n"));
    }
    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--statements N`). It needs \
         valgrind; it installs release builds, starts a throwaway publisher and a subscriber \
         under callgrind, and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line} (instruction counts do not depend on it, or on its load)\n\
         - Server: {server}\n\
         - Method: the `apply` benchmark's migration without its DML, N = {statements} and 2N \
           DDL statements on fresh schemas, replayed by one apply worker each (`streaming = \
           off`, `ddl = 'all'`, conflict `error`, every event verified where described); \
           (instructions(2N) - instructions(N)) / N is the apply worker's cost per replayed \
           event, without its start and end: receiving the change, inserting the event's row, \
           the apply trigger and the statement, the commit. The baseline is the same \
           statements run by a session on the same subscriber, in a database without the \
           extension, counted the same way: the statement's own cost, its parse and commit \
           included. Spread is (max - min) / median over the runs.\n\n\
         | run | apply worker, per event | session, per statement | apply / session |\n\
         |---:|---:|---:|---:|\n\
         {rows}\n\
         - Apply worker / session: **{ratio:.3}** (spread {apply_spread:.2} % and \
           {plain_spread:.2} %).\n\
         - Product overhead per replayed event (apply worker - session) / session: \
           **{overhead_pct:.0} %** (target <= {target:.0} %: {overhead_verdict}).\n\n\
         Where the apply worker's instructions go (inclusive counts per event in the longer \
         run; nested rows are part of the rows above them; the whole profile \
         of the last run is left in `target/bench/apply-instructions.callgrind`):\n\n\
         | function | what | instructions per event |\n\
         |---|---|---:|\n\
         {phase_rows}",
        date = machine.date,
        machine_line = machine.line(),
        ratio = apply_m / plain_m,
        apply_spread = spread(apply),
        plain_spread = spread(plain),
        overhead_pct = overhead * 100.0,
        target = OVERHEAD_TARGET * 100.0,
        overhead_verdict = verdict(overhead <= OVERHEAD_TARGET),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_option_is_taken_out_or_refused_with_the_usage() {
        assert_eq!(
            layout_option(&["--runs", "1", "--layout", "tenants", "--statements", "50"]),
            Ok((
                Some(Layout::Tenants),
                vec!["--runs", "1", "--statements", "50"]
            ))
        );
        assert_eq!(
            layout_option(&["--runs", "1"]),
            Ok((None, vec!["--runs", "1"]))
        );
        for wrong in [&["--layout", "migration"][..], &["--layout"][..]] {
            let refused = layout_option(wrong).unwrap_err();
            assert!(refused.ends_with(USAGE), "{refused}");
        }
    }
}
