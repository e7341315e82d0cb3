//! `cargo xtask bench decode-instructions`: what `ddl_pgoutput` costs the decoding against
//! `pgoutput`, in CPU instructions counted by valgrind's callgrind, into the `## Decode
//! instructions` section of BENCHMARKS.md.
//!
//! Why instructions: the `decode` benchmark times real walsenders, and on this 2-CPU virtual
//! machine its rounds scatter by ±20 %, on both sides of 1, so its ratio cannot tell 3 % from
//! noise (see `instructions` for the same finding about DDL). The same decoding of the same
//! WAL executes the same instructions to a few hundredths of a percent, as long as nothing
//! waits: a walsender's loop waits for its client, as often as timing has it, so its counts
//! vary by a few percent between runs. The decoding is therefore counted in a backend, through
//! the SQL interface, which runs the same plugin callbacks and waits for nothing.
//!
//! One throwaway cluster preloads `ddl_pgoutput`, has the extension and a publication `FOR ALL
//! TABLES WITH (ddl = 'all')`, runs with autovacuum off, and gets `pgbench -i`. Per workload
//! (the `decode` benchmark's: plain tpcb-like, then with 1 % of `COMMENT` DDL), four slots are
//! made (K and 2K, for each plugin), pgbench runs the workload twice (halves A and B) and the
//! LSN after each half is noted. The cluster is then restarted under `valgrind --tool=callgrind
//! --trace-children=yes` and each slot decoded by `pg_logical_slot_get_binary_changes` in its
//! own session: to the end of A for the K slots, of B for the 2K slots. A backend writes its
//! count when it exits; count(2K) - count(K) is the decoding of half B, without the session,
//! the plugin's startup or the snapshot building, which both share.
//!
//! ```text
//! cargo xtask bench decode-instructions [--transactions N]
//! ```

use crate::decode::{script_transactions, DDL_SCRIPT, PUBLICATION};
use crate::instructions::{callgrind_wrapper, inclusive_counts, totals};
use crate::{
    check_release_installed, options, pgbench, reproduce, script_dir, section_heading, sql,
    verdict, write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder, StopMode};
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: cargo xtask bench decode-instructions [--transactions N]";

/// Target from the issue: decoding ddl_pgoutput / pgoutput.
const TARGET: f64 = 1.03;
/// pgbench scale, as small as keeps two clients from waiting on each other much.
const PGBENCH_SCALE: &str = "1";
/// pgbench clients; a half's transactions are split evenly between them.
const CLIENTS: u32 = 2;
/// The DDL script's share of the mixed workload, in percent, as in `decode`.
const DDL_PERCENT: u32 = 1;
/// The `described` workload's DDL: a table statement, whose record carries its description
/// (ddl-server's `describe`, made by the capture: the table's columns, constraints and
/// indexes), where the `decode` benchmark's `COMMENT` has none.
const DESCRIBED_SCRIPT: &str = "\\set n random(1, 1000000000)\n\
                                ALTER TABLE pgbench_branches ALTER COLUMN filler SET DEFAULT 'bench :n';\n";
/// Row changes per tpcb-like transaction (three UPDATEs, one INSERT).
const CHANGES_PER_TRANSACTION: u64 = 4;

/// The functions whose inclusive counts explain ddl_pgoutput's cost: (symbol as callgrind
/// names it, what it is).
const PROFILE: [(&str, &str); 7] = [
    (
        "ddl_pgoutput::ddl_event",
        "a `ddl_sync` message: check, rules, send",
    ),
    (
        "ddl_pgoutput::authentic_record",
        "parse the record, verify its seal, its system and transaction",
    ),
    (
        "ddl_capture::rules::PublicationRules::decoding",
        "the publications' rules (kept between events)",
    ),
    (
        "ddl_capture::rules::PublicationRules::verdicts",
        "what each publication decides",
    ),
    (
        "ddl_pgoutput::events::send",
        "the event's row, given to pgoutput's change callback",
    ),
    (
        "RelationIdGetRelation",
        "relcache entries, opened or rebuilt",
    ),
    (
        "ddl_server::xact::subxact_callback",
        "the library's subtransaction callback (the SQL interface replays each transaction \
         in a subtransaction; a walsender in a transaction of its own)",
    ),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Plugin {
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

const PLUGINS: [Plugin; 2] = [Plugin::Pgoutput, Plugin::DdlPgoutput];

/// One workload's WAL, waiting to be decoded.
struct Written {
    key: &'static str,
    ddl: bool,
    /// The end of half A and of half B.
    ends: [String; 2],
    /// Transactions of half B, and of them the DDL script's.
    transactions: u64,
    ddl_transactions: u64,
}

/// What a plugin wrote while decoding.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Output {
    messages: u64,
    bytes: u64,
}

/// What decoding one workload's half B cost each plugin.
struct Counted {
    written: Written,
    /// Instructions, per plugin in [`PLUGINS`] order.
    instructions: [f64; 2],
    /// What each plugin wrote.
    outputs: [Output; 2],
    /// ddl_pgoutput's [`PROFILE`] functions that ran: (symbol, what, instructions in half B).
    profile: Vec<(&'static str, &'static str, f64)>,
}

pub fn run(args: &[&str]) -> Result {
    let mut transactions = 10_000;
    options(
        args,
        USAGE,
        &mut [("--transactions", &mut transactions)],
        &mut [],
    )?;
    crate::instructions::check_valgrind()?;
    let (_, script) = script_dir("decode-instructions", DDL_SCRIPT)?;
    let (_, described) = script_dir("decode-instructions-described", DESCRIBED_SCRIPT)?;

    let mut pg = ClusterBuilder::new()
        .name("bench-decode-instr")
        .conf("max_wal_size", "8GB")
        // As in `decode`: autovacuum's relcache invalidations would make the plugins send
        // Relation messages again, so that two decodings of the same WAL would differ.
        .conf("autovacuum", "off")
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .map_err(|e| e.to_string())?;
    check_release_installed(&pg)?;
    let server = sql(&pg, "SELECT version()")?;
    sql(
        &pg,
        &format!(
            "CREATE EXTENSION ddl_sync;
             CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all');"
        ),
    )?;
    pgbench(&pg, &["-i", "-q", "-s", PGBENCH_SCALE])?;
    let per_client = transactions.div_ceil(CLIENTS);
    let written = [
        ("plain", None),
        ("ddl", Some(&script)),
        ("described", Some(&described)),
    ]
    .into_iter()
    .map(|(key, script)| write(&pg, key, script.map(PathBuf::as_path), per_client))
    .collect::<Result<Vec<_>>>()?;

    pg.stop(StopMode::Fast).map_err(|e| e.to_string())?;
    let out = pg.base_dir().join("callgrind");
    let wrapper = callgrind_wrapper(&pg, &out)?;
    pg.start_as(Some(&wrapper)).map_err(|e| e.to_string())?;
    let mut counted = Vec::new();
    for written in written {
        counted.push(count(&pg, &out, written)?);
    }
    pg.stop(StopMode::Fast).map_err(|e| e.to_string())?;
    drop(pg);

    let heading = section_heading("Decode instructions", &server);
    let text = section(&Machine::describe(), &server, transactions, &counted);
    write_section(&heading, &text)?;
    println!("{text}");
    Ok(())
}

fn slot(key: &str, plugin: Plugin, half: usize) -> String {
    format!("bench_{key}_{}_{}", plugin.name(), ["k", "2k"][half])
}

/// Makes the workload's four slots, then runs its two halves (with `script` as 1 % of the
/// transactions, if any).
fn write(
    pg: &Cluster,
    key: &'static str,
    script: Option<&Path>,
    per_client: u32,
) -> Result<Written> {
    let ddl = script.is_some();
    let mut create = String::new();
    for plugin in PLUGINS {
        for half in 0..2 {
            create.push_str(&format!(
                "SELECT pg_create_logical_replication_slot('{}', '{}');\n",
                slot(key, plugin, half),
                plugin.name()
            ));
        }
    }
    sql(pg, &create)?;
    let clients = CLIENTS.to_string();
    let per_client = per_client.to_string();
    let tpcb = format!("tpcb-like@{}", 100 - DDL_PERCENT);
    let ddl_arg = script
        .map(|script| format!("{}@{DDL_PERCENT}", script.display()))
        .unwrap_or_default();
    let mut args = vec!["-n", "-c", &clients, "-j", &clients, "-t", &per_client];
    if ddl {
        args.extend(["-b", &tpcb, "-f", &ddl_arg]);
    } else {
        args.extend(["-b", "tpcb-like"]);
    }
    println!("bench: workload {key}");
    let mut ends = [String::new(), String::new()];
    let mut report = String::new();
    for end in &mut ends {
        report = pgbench(pg, &args)?;
        *end = sql(pg, "SELECT pg_current_wal_lsn()")?;
        // Decoding up to `end` goes on to the first commit at or after it: this one, which
        // neither plugin sends (a message, without the `messages` option).
        sql(pg, "SELECT pg_logical_emit_message(true, 'bench', 'end')")?;
    }
    let transactions =
        crate::pgbench_figure(&report, "number of transactions actually processed:")? as u64;
    let ddl_transactions = if ddl {
        script_transactions(&report, "ddl.sql")?
    } else {
        0
    };
    sql(pg, "CHECKPOINT")?;
    Ok(Written {
        key,
        ddl,
        ends,
        transactions,
        ddl_transactions,
    })
}

/// Decodes the workload's four slots under callgrind.
fn count(pg: &Cluster, out: &Path, written: Written) -> Result<Counted> {
    let mut instructions = [0.0; 2];
    let mut outputs = [Output::default(); 2];
    let mut ddl_files = Vec::new();
    // The first session to decode reads the catalog pages it needs into shared buffers; the
    // sessions counted must all find them there.
    for plugin in PLUGINS {
        let slot = slot(written.key, plugin, 0);
        sql(
            pg,
            &format!(
                "SELECT count(*) FROM pg_logical_slot_peek_binary_changes('{slot}', '{}', NULL, \
                 'proto_version', '1', 'publication_names', '{PUBLICATION}')",
                written.ends[0]
            ),
        )?;
    }
    for (i, plugin) in PLUGINS.into_iter().enumerate() {
        let mut halves = [(0.0, Output::default()); 2];
        for (half, end) in written.ends.iter().enumerate() {
            let (file, output) = decode(pg, out, &slot(written.key, plugin, half), end)?;
            halves[half] = (totals(&file)?, output);
            println!(
                "bench: {} {} to the end of half {}: {:.0} instructions, {} messages",
                written.key,
                plugin.name(),
                ["A", "B"][half],
                halves[half].0,
                output.messages
            );
            if plugin == Plugin::DdlPgoutput {
                ddl_files.push(file);
            }
        }
        instructions[i] = halves[1].0 - halves[0].0;
        outputs[i] = Output {
            messages: halves[1].1.messages - halves[0].1.messages,
            bytes: halves[1].1.bytes - halves[0].1.bytes,
        };
    }
    // Without DDL, the plugins must have written the same: else the counts compare different
    // work.
    if !written.ddl && outputs[0] != outputs[1] {
        return Err(format!(
            "workload {}: pgoutput wrote {:?}, ddl_pgoutput {:?}",
            written.key, outputs[0], outputs[1]
        ));
    }
    let symbols: Vec<&str> = PROFILE.iter().map(|(symbol, _)| *symbol).collect();
    let short = inclusive_counts(&ddl_files[0], &symbols)?;
    let long = inclusive_counts(&ddl_files[1], &symbols)?;
    let profile = PROFILE
        .iter()
        .zip(short.iter().zip(&long))
        .filter(|(_, (_, long))| **long > 0.0)
        .map(|((symbol, what), (short, long))| (*symbol, *what, long - short))
        .collect();
    Ok(Counted {
        written,
        instructions,
        outputs,
        profile,
    })
}

/// Decodes `slot` up to `end` in one session; the callgrind file of its backend, and the
/// messages and bytes the plugin wrote.
fn decode(pg: &Cluster, out: &Path, slot: &str, end: &str) -> Result<(PathBuf, Output)> {
    let text = sql(
        pg,
        &format!(
            "SELECT pg_backend_pid();
             SELECT count(*), sum(length(data)) FROM pg_logical_slot_get_binary_changes('{slot}', \
             '{end}', NULL, 'proto_version', '1', 'publication_names', '{PUBLICATION}');"
        ),
    )?;
    let mut lines = text.lines();
    let (Some(pid), Some(figures)) = (lines.next(), lines.next()) else {
        return Err(format!("unexpected output decoding {slot}: {text}"));
    };
    let output = figures
        .split_once('|')
        .and_then(|(n, b)| {
            Some(Output {
                messages: n.parse().ok()?,
                bytes: b.parse().ok()?,
            })
        })
        .ok_or_else(|| format!("unexpected output decoding {slot}: {text}"))?;
    Ok((out.join(format!("cg.{}", pid.trim())), output))
}

/// The `## Decode instructions` section.
fn section(machine: &Machine, server: &str, transactions: u32, counted: &[Counted]) -> String {
    let heading = section_heading("Decode instructions", server);
    let command = reproduce("decode-instructions", server);
    let mut rows = String::new();
    let mut verdicts = String::new();
    let mut profile_rows = String::new();
    for c in counted {
        let w = &c.written;
        let [pgoutput, ddl_pgoutput] = c.instructions;
        let ratio = ddl_pgoutput / pgoutput;
        let [pg_out, ddl_out] = c.outputs;
        rows.push_str(&format!(
            "| {} | {} | {} | {} / {} | {} / {} | {:.0} | {:.0} | {:.4} |\n",
            w.key,
            w.transactions,
            w.ddl_transactions,
            pg_out.messages,
            ddl_out.messages,
            pg_out.bytes,
            ddl_out.bytes,
            pgoutput,
            ddl_pgoutput,
            ratio
        ));
        let changes = (w.transactions - w.ddl_transactions) * CHANGES_PER_TRANSACTION;
        let extra = ddl_pgoutput - pgoutput;
        let per = if w.ddl {
            format!(
                "beyond the row changes' share at the `plain` workload's rate, {:.0} \
                 instructions per DDL event ({} events)",
                (extra - plain_extra_per_change(counted) * changes as f64)
                    / w.ddl_transactions.max(1) as f64,
                w.ddl_transactions
            )
        } else {
            format!(
                "{:.0} instructions per row change ({changes} changes)",
                extra / changes as f64
            )
        };
        verdicts.push_str(&format!(
            "- `{}`: ddl_pgoutput / pgoutput **{ratio:.4}** (target <= {TARGET}: {}); {per}.\n",
            w.key,
            verdict(ratio <= TARGET)
        ));
        if w.ddl {
            for (symbol, what, count) in &c.profile {
                profile_rows.push_str(&format!(
                    "| {} | `{symbol}` | {what} | {:.0} | {:.0} | {:.0} |\n",
                    w.key,
                    count,
                    count / w.ddl_transactions.max(1) as f64,
                    count / w.transactions.max(1) as f64
                ));
            }
        }
    }
    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (option: `--transactions N`, per half). It needs valgrind; it \
         installs release builds, starts a throwaway cluster and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line} (instruction counts do not depend on it, or on its load)\n\
         - Server: {server}\n\
         - Method: one cluster (`ddl_pgoutput` preloaded, autovacuum off, `CREATE EXTENSION \
           ddl_sync`, a publication `FOR ALL TABLES WITH (ddl = 'all')`, `pgbench -i -s \
           {PGBENCH_SCALE}`). Per workload four slots (K and 2K for each plugin), then pgbench \
           twice ({transactions} transactions each, {CLIENTS} clients; `plain` is `-b tpcb-like`, \
           `ddl` is `-b tpcb-like@{tpcb} -f ddl.sql@{DDL_PERCENT}` with the `decode` benchmark's \
           `COMMENT` statement, which is not described, `described` the same with `ALTER TABLE \
           pgbench_branches ALTER COLUMN filler SET DEFAULT 'bench :n'`, whose record carries its \
           table's description, made by the capture), each followed by a transactional message \
           that neither plugin sends. The cluster is restarted under callgrind and every slot \
           decoded in its own session by `pg_logical_slot_get_binary_changes(slot, end, NULL, \
           'proto_version', '1', 'publication_names', 'bench')`: the K slots to the end of the \
           first run, the 2K slots to the end of the second. The plugins' callbacks are those a \
           walsender runs; a walsender's own loop, though, waits for its client, and how often \
           depends on timing: its counts vary by a few percent between runs of the same WAL, more \
           than what is measured. Each backend's count when it exits, 2K less K: the decoding of \
           the second run alone, without the session, the plugin's startup and the initial \
           snapshot, which both share. The counts are what the backend executes in user space. \
           Without DDL the plugins must write the same messages and bytes (checked). Before the \
           counted sessions, one session per plugin decodes the first run without consuming it, so \
           that every counted session finds the catalog pages it reads in shared buffers.\n\n\
         | workload | transactions | of which DDL | messages (pgoutput / ddl_pgoutput) | \
         bytes | pgoutput instructions | ddl_pgoutput instructions | ratio |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n\
         {rows}\n\
         {verdicts}\n\
         Where ddl_pgoutput's instructions go in the workloads with DDL (inclusive counts over \
         the second run; nested rows are part of the rows above them):\n\n\
         | workload | function | what | instructions | per DDL event | per transaction |\n\
         |---|---|---|---:|---:|---:|\n\
         {profile_rows}",
        date = machine.date,
        machine_line = machine.line(),
        tpcb = 100 - DDL_PERCENT,
    )
}

/// The plain workload's extra instructions per row change (0 before it is counted).
fn plain_extra_per_change(counted: &[Counted]) -> f64 {
    counted.iter().find(|c| !c.written.ddl).map_or(0.0, |c| {
        (c.instructions[1] - c.instructions[0])
            / (c.written.transactions * CHANGES_PER_TRANSACTION) as f64
    })
}
