//! `cargo xtask bench instructions`: what the capture costs a DDL statement in CPU
//! instructions, counted by valgrind's callgrind in the backend that runs it, into the
//! `## Instructions` section of BENCHMARKS.md.
//!
//! Why instructions: on this 2-CPU virtual machine the DDL latency of one configuration drifts
//! by tens of percent from run to run (the file system and the catalogs change as tables come
//! and go), so a latency ratio cannot tell 5% from noise, and the machine exposes no hardware
//! counters. Callgrind counts every instruction a process executes: the same work gives the
//! same count to a few hundredths of a percent, so two runs of a configuration agree and the
//! ratios are exact. What it does not see: time spent waiting (I/O, locks) and how fast each
//! instruction is; the `capture` benchmark's latencies are the other half of the picture.
//!
//! Per configuration, a throwaway cluster (`fsync = off`, autovacuum off) is set up, stopped,
//! and started again under `valgrind --tool=callgrind --trace-children=yes`. Two sessions run
//! the `capture` benchmark's script (CREATE TABLE, ALTER TABLE ADD COLUMN, DROP TABLE, each its
//! own transaction) K and 2K times after the same warm-up; each backend writes its own count
//! when it exits, and (count(2K) - count(K)) / K is the cost of one script run, without the
//! session's start and end. The capture's profile comes from the longer session: the inclusive
//! count of the functions that make up its cost, per statement.
//!
//! ```text
//! cargo xtask bench instructions [--runs N] [--scripts K]
//! ```

use crate::{
    check_release_installed, median, options, reproduce, section_heading, spread, sql, verdict,
    write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder, Cmd};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask bench instructions [--runs N] [--scripts K]";

/// Target from the issue, for the capture against the plain server.
const CAPTURE_TARGET: f64 = 1.10;
/// Target from the issue, for a database with the extension and no DDL publication.
const NO_PUBLICATION_TARGET: f64 = 1.03;
const STATEMENTS_PER_SCRIPT: u32 = 3;

/// One configuration: its name, the libraries preloaded, the SQL that sets it up.
struct Config {
    name: &'static str,
    preload: &'static [&'static str],
    setup: &'static str,
}

const CONFIGS: [Config; 6] = [
    Config {
        name: "plain",
        preload: &[],
        setup: "",
    },
    Config {
        name: "hook only",
        preload: &["ddl_pgoutput"],
        setup: "",
    },
    Config {
        name: "extension, no DDL publication",
        preload: &["ddl_pgoutput"],
        setup: "CREATE EXTENSION ddl_sync;",
    },
    Config {
        name: "capture",
        preload: &["ddl_pgoutput"],
        setup: "CREATE EXTENSION ddl_sync;
                CREATE PUBLICATION bench FOR ALL TABLES WITH (ddl = 'all');",
    },
    // What any capture built on event triggers pays before doing anything of its own:
    // PostgreSQL collects the commands, fires the two triggers, and builds the rows of the
    // command collection (here from PL/pgSQL, as such captures are usually written).
    Config {
        name: "PL/pgSQL event triggers that only read the collection (reference)",
        preload: &[],
        setup: "CREATE FUNCTION read_commands() RETURNS event_trigger LANGUAGE plpgsql AS
                    $$BEGIN PERFORM FROM pg_event_trigger_ddl_commands(); END$$;
                CREATE FUNCTION read_dropped() RETURNS event_trigger LANGUAGE plpgsql AS
                    $$BEGIN PERFORM FROM pg_event_trigger_dropped_objects(); END$$;
                CREATE EVENT TRIGGER read_commands ON ddl_command_end
                    EXECUTE FUNCTION read_commands();
                CREATE EVENT TRIGGER read_dropped ON sql_drop EXECUTE FUNCTION read_dropped();",
    },
    // The extension's objects in the catalog, none of its code: every DDL statement's own
    // catalog work (index insertions and scans) depends on what the catalog holds.
    Config {
        name: "extension installed, library not loaded (reference)",
        preload: &[],
        setup: "CREATE EXTENSION ddl_sync;",
    },
];

/// The functions whose inclusive counts explain the capture's cost: (symbol as callgrind
/// names it, what it is).
const PROFILE: [(&str, &str); 22] = [
    (
        "EventTriggerDDLCommandEnd",
        "PostgreSQL fires ddl_command_end",
    ),
    (
        "ddl_sync_capture_ddl_command_end",
        "the capture's ddl_command_end trigger",
    ),
    (
        "pg_event_trigger_ddl_commands",
        "PostgreSQL's command list, as rows (for the statements `direct.rs` does not read)",
    ),
    (
        "ddl_capture::collection::for_each_row",
        "reading those rows",
    ),
    (
        "ddl_capture::direct::table",
        "the object of a CREATE TABLE or ADD COLUMN, from the relation cache",
    ),
    (
        "ddl_capture::objects::seen",
        "the object access hook: what each statement makes and drops, the DROP's names",
    ),
    (
        "ddl_capture::rules::PublicationRules::current",
        "the publications' rules",
    ),
    (
        "ddl_capture::trigger::Session::current",
        "the session's role and settings",
    ),
    (
        "ddl_capture::trigger::capture_target",
        "one record: classify, build, send",
    ),
    (
        "ddl_capture::shape::definition",
        "the table's shape for the record",
    ),
    (
        "ddl_capture::trigger::bindings",
        "what the statement bound by name, for the record",
    ),
    (
        "ddl_server::describe::statement",
        "the record's description: what the statement made (ddl_server::describe)",
    ),
    (
        "ddl_server::guc::with_settings",
        "the settings a description is made with, set and restored",
    ),
    (
        "ddl_server::describe::relation::plain",
        "a table with nothing to deparse described: names, types and flags",
    ),
    (
        "ddl_server::describe::relation::described",
        "a relation described in full: its columns and parts, deparsed",
    ),
    (
        "ddl_server::bindings::referenced",
        "what the objects it made use (ddl_server::bindings)",
    ),
    (
        "ddl_capture::seal::seal",
        "the record's authentication (keyed BLAKE3)",
    ),
    ("LogLogicalMessage", "the WAL message"),
    ("EventTriggerSQLDrop", "PostgreSQL fires sql_drop"),
    (
        "ddl_sync_capture_sql_drop",
        "the capture's sql_drop trigger",
    ),
    (
        "pg_event_trigger_dropped_objects",
        "PostgreSQL's dropped objects, as rows",
    ),
    (
        "EventTriggerSQLDropAddObject",
        "PostgreSQL keeps each dropped object's identity (while any sql_drop or ddl_command_end trigger is enabled)",
    ),
];

pub fn run(args: &[&str]) -> Result {
    // K = 300: why, in the section's Method.
    let (mut runs, mut scripts) = (2, 300);
    options(
        args,
        USAGE,
        &mut [("--runs", &mut runs), ("--scripts", &mut scripts)],
        &mut [],
    )?;
    check_valgrind()?;
    let mut counts: Vec<Vec<f64>> = vec![Vec::new(); CONFIGS.len()];
    let mut profile = Vec::new();
    let mut server = String::new();
    for run in 1..=runs {
        for (i, config) in CONFIGS.iter().enumerate() {
            let measured = measure(config, scripts)?;
            println!(
                "bench: instructions run {run}: {} {:.0} per script run",
                config.name, measured.per_script
            );
            counts[i].push(measured.per_script);
            server = measured.server;
            if config.name == "capture" && profile.is_empty() {
                profile = measured.profile;
            }
        }
    }
    let heading = section_heading("Instructions", &server);
    let text = section(
        &Machine::describe(),
        &server,
        runs,
        scripts,
        &counts,
        &profile,
    );
    write_section(&heading, &text)?;
    println!("{text}");
    Ok(())
}

/// Fails unless valgrind is installed.
pub(crate) fn check_valgrind() -> Result {
    Cmd::new("valgrind")
        .args(["--version"])
        .read()
        .map(|_| ())
        .map_err(|e| format!("valgrind is needed (apt-get install valgrind): {e}"))
}

/// What one configuration measured.
struct Measured {
    /// Instructions per script run.
    per_script: f64,
    /// `version()`.
    server: String,
    /// Inclusive instructions per statement of each [`PROFILE`] function that ran.
    profile: Vec<(&'static str, &'static str, f64)>,
}

fn measure(config: &Config, scripts: u32) -> Result<Measured> {
    let mut builder = ClusterBuilder::new();
    builder
        .name(&format!(
            "bench-instr-{}",
            config.name.replace([' ', ','], "-")
        ))
        .conf("autovacuum", "off")
        // As in the `capture` benchmark: its table has no key.
        .conf("ddl_sync.keyless_tables", "native")
        .shared_preload_libraries(config.preload);
    let mut pg = builder.build().map_err(|e| e.to_string())?;
    let server = sql(&pg, "SELECT version()")?;
    if !config.preload.is_empty() {
        check_release_installed(&pg)?;
    }
    if !config.setup.is_empty() {
        sql(&pg, config.setup)?;
    }
    pg.stop(ddl_testkit::StopMode::Fast)
        .map_err(|e| e.to_string())?;
    let out = pg.base_dir().join("callgrind");
    let wrapper = callgrind_wrapper(&pg, &out)?;
    pg.start_as(Some(&wrapper)).map_err(|e| e.to_string())?;
    let short = session(&pg, &out, scripts, "k")?;
    let long = session(&pg, &out, 2 * scripts, "l")?;
    let profile = profile(&long.1, 2 * scripts * STATEMENTS_PER_SCRIPT)?;
    // A fast stop waits for every process, each writing its counts as it exits, so that none
    // writes into the cluster's directory while it is removed.
    pg.stop(ddl_testkit::StopMode::Fast)
        .map_err(|e| e.to_string())?;
    drop(pg);
    Ok(Measured {
        per_script: (long.0 - short.0) / f64::from(scripts),
        server,
        profile,
    })
}

/// A script that runs the bindir's `postgres` under callgrind, one output file per process in
/// `out` (made here, the server's to write).
pub(crate) fn callgrind_wrapper(pg: &Cluster, out: &Path) -> Result<PathBuf> {
    let postgres = pg.bin("postgres");
    let path = pg.base_dir().join("postgres-under-callgrind");
    let script = format!(
        "#!/bin/sh\nexec valgrind --tool=callgrind --trace-children=yes --callgrind-out-file={}/cg.%p {} \"$@\"\n",
        out.display(),
        postgres.display()
    );
    let write = |p: &Path, text: &str| -> std::io::Result<()> {
        let mut f = std::fs::File::create(p)?;
        f.write_all(text.as_bytes())
    };
    write(&path, &script).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    // The server runs as the cluster's owner: the script is executable by all, the output
    // directory writable by all (both inside the cluster's own temporary directory).
    Cmd::new("chmod")
        .args(["755", &path.display().to_string()])
        .run()?;
    Cmd::new("chmod")
        .args(["777", &out.display().to_string()])
        .run()?;
    Ok(path)
}

/// One session that runs the script `runs` times after a warm-up; the instruction count of
/// its backend, and the file callgrind wrote it to.
fn session(pg: &Cluster, out: &Path, runs: u32, tag: &str) -> Result<(f64, PathBuf)> {
    let mut text = String::from(
        "SELECT pg_backend_pid();\nCREATE TABLE warm (id int); ALTER TABLE warm ADD COLUMN v int; DROP TABLE warm;\n",
    );
    for i in 0..runs {
        text.push_str(&format!(
            "CREATE TABLE bench_{tag}_{i} (id bigint, v integer);\n\
             ALTER TABLE bench_{tag}_{i} ADD COLUMN note integer;\n\
             DROP TABLE bench_{tag}_{i};\n"
        ));
    }
    let pid = sql(pg, &text)?;
    let file = out.join(format!("cg.{}", pid.trim()));
    Ok((totals(&file)?, file))
}

/// The total count in callgrind's `file`, waiting for it: a process writes its counts as it
/// exits, just after its client has gone.
pub(crate) fn totals(file: &Path) -> Result<f64> {
    let start = Instant::now();
    loop {
        let written = std::fs::read_to_string(file).unwrap_or_default();
        if let Some(total) = written
            .lines()
            .find_map(|l| l.strip_prefix("totals:"))
            .and_then(|t| t.trim().parse::<f64>().ok())
        {
            return Ok(total);
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!("no callgrind totals in {}", file.display()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The inclusive count of each [`PROFILE`] function in callgrind's `file`, per statement.
fn profile(file: &Path, statements: u32) -> Result<Vec<(&'static str, &'static str, f64)>> {
    let symbols: Vec<&str> = PROFILE.iter().map(|(symbol, _)| *symbol).collect();
    let counts = inclusive_counts(file, &symbols)?;
    Ok(PROFILE
        .iter()
        .zip(counts)
        .filter(|(_, count)| *count > 0.0)
        .map(|((symbol, what), count)| (*symbol, *what, count / f64::from(statements)))
        .collect())
}

/// The inclusive count of each of `symbols` (as callgrind names them; a Rust path matches its
/// monomorphised copies too) in callgrind's `file`; 0 for a function that did not run.
pub(crate) fn inclusive_counts(file: &Path, symbols: &[&str]) -> Result<Vec<f64>> {
    let annotated = Cmd::new("callgrind_annotate")
        .args([
            "--inclusive=yes",
            "--threshold=100",
            &file.display().to_string(),
        ])
        .read()?;
    Ok(symbols
        .iter()
        .map(|symbol| {
            annotated
                .lines()
                .filter(|l| {
                    l.contains(&format!(":{symbol} ")) || l.contains(&format!(":{symbol}::"))
                })
                .filter_map(|l| {
                    l.split_whitespace()
                        .next()
                        .and_then(|n| n.replace(',', "").parse::<f64>().ok())
                })
                .fold(0.0, f64::max)
        })
        .collect())
}

/// The `## Instructions` section.
fn section(
    machine: &Machine,
    server: &str,
    runs: u32,
    scripts: u32,
    counts: &[Vec<f64>],
    profile: &[(&str, &str, f64)],
) -> String {
    let heading = section_heading("Instructions", server);
    let command = reproduce("instructions", server);
    let plain = median(&counts[0]);
    let mut rows = String::new();
    let mut ratios = Vec::new();
    for (config, counts) in CONFIGS.iter().zip(counts) {
        let m = median(counts);
        let ratio = m / plain;
        ratios.push(ratio);
        rows.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.3}% | {:.4} |\n",
            config.name,
            m,
            m / f64::from(STATEMENTS_PER_SCRIPT),
            spread(counts),
            ratio
        ));
    }
    let mut profile_rows = String::new();
    for (symbol, what, per_statement) in profile {
        profile_rows.push_str(&format!("| `{symbol}` | {what} | {per_statement:.0} |\n"));
    }
    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--scripts K`). It needs valgrind; \
         it installs release builds, and per configuration starts a throwaway cluster under \
         callgrind, and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line} (instruction counts do not depend on it, or on its load)\n\
         - Server: {server}\n\
         - Method: in one backend, the `capture` benchmark's script (CREATE TABLE, ALTER TABLE \
           ADD COLUMN, DROP TABLE, three transactions) run K = {scripts} and 2K times after the \
           same warm-up; (instructions(2K) - instructions(K)) / K is one script run, without the \
           session's start and end. Why so many: when PostgreSQL deduplicates or splits a \
           catalog index page depends on what the catalog already holds, and a shorter window \
           catches an uneven share of those passes (on 18, K = 100 put 2 % between two \
           catalogs that over a whole session differed by 0.2 %, the other way). {runs} runs \
           per configuration; spread is (max - min) / \
           median. Configurations as in \"Capture\" (`fsync = off`, autovacuum off): `plain`, \
           `hook only` (`ddl_pgoutput` preloaded), `extension, no DDL publication` (and \
           `CREATE EXTENSION ddl_sync`), `capture` (and a publication `FOR ALL TABLES WITH (ddl \
           = 'all')`), and for reference `plain` with two PL/pgSQL event triggers that only \
           read `pg_event_trigger_ddl_commands()` and `pg_event_trigger_dropped_objects()` \
           (the least a capture built on event triggers pays), and `plain` with `CREATE \
           EXTENSION ddl_sync` but without the library (the catalog alone). The counts are \
           what the code executes in user space (the kernel's work, such as creating and \
           removing the tables' files, is not counted, which makes these ratios larger than \
           those of CPU time or latency in \"Capture\").\n\n\
         | configuration | instructions per script run | per statement | spread | / plain |\n\
         |---|---:|---:|---:|---:|\n\
         {rows}\n\
         - Capture / plain: **{capture:.3}** (target <= {CAPTURE_TARGET}: {capture_verdict}).\n\
         - Extension, no DDL publication / plain: **{none:.3}** (target <= \
           {NO_PUBLICATION_TARGET}: {none_verdict}).\n\
         - Hook only / plain: {hook:.3}.\n\
         - Reference / plain: {reference:.3}. Event triggers that do nothing but read the \
           command collection from PL/pgSQL cost {reference_extra:.0} instructions per \
           statement above `plain`; the capture, which also classifies, filters, describes, \
           seals and writes every statement, {capture_extra:.0}. The functions of PostgreSQL \
           below (firing the triggers, building the collection's rows, keeping dropped \
           objects' identities) are part of any capture built on event triggers.\n\
         - Extension installed, library not loaded / plain: {catalog:.3}: PostgreSQL's own \
           work for a DDL statement depends on the catalog (its indexes), and the extension's \
           objects are in it, whether any of its code runs or not. Against that same catalog, \
           capture: **{capture_same_catalog:.3}**, extension with no DDL publication: \
           {none_same_catalog:.3}.\n\n\
         Where the capture's instructions go (inclusive counts per DDL statement in the longer \
         `capture` session; nested rows are part of the rows above them):\n\n\
         | function | what | instructions per statement |\n\
         |---|---|---:|\n\
         {profile_rows}",
        date = machine.date,
        machine_line = machine.line(),
        capture = ratios[3],
        capture_verdict = verdict(ratios[3] <= CAPTURE_TARGET),
        none = ratios[2],
        none_verdict = verdict(ratios[2] <= NO_PUBLICATION_TARGET),
        hook = ratios[1],
        reference = ratios[4],
        catalog = ratios[5],
        capture_same_catalog = ratios[3] / ratios[5],
        none_same_catalog = ratios[2] / ratios[5],
        capture_extra = (ratios[3] - 1.0) * plain / f64::from(STATEMENTS_PER_SCRIPT),
        reference_extra = (ratios[4] - 1.0) * plain / f64::from(STATEMENTS_PER_SCRIPT),
    )
}
