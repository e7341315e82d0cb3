//! `cargo xtask regress`: PostgreSQL's regression suite through DDL replication, into
//! FIDELITY.md, one section per major (`ddl_e2e::regress` runs it; this writes the report).
//!
//! ```text
//! cargo xtask regress [--groups N] [--debug]
//! ```
//!
//! The suite comes from Debian's source package of the installed server (cached in
//! `target/regress/`); `--groups N` runs the first N groups of its `parallel_schedule` (the
//! short version `cargo xtask test` runs is e2e's `tests/regress.rs`). The libraries are release
//! builds unless `--debug`. The command fails when the subscriber did not follow to the end or a
//! test's output changed for no documented reason, after writing the report.

use crate::install::{install, Profile};
use crate::{project_root, Result};
use ddl_e2e::regress::{self, Cause, EventGroup, Follower, Report};
use ddl_testkit::report::{write_section, Machine};
use std::fmt::Write;

const USAGE: &str = "usage: cargo xtask regress [--groups N] [--debug]";
/// The report both `regress` and `realworld` write into, each its own sections.
pub(crate) const FILE: &str = "FIDELITY.md";
/// What the report opens with.
pub(crate) const INTRO: &str = "# Fidelity\n\n\
    What installing ddl_sync changes for users of a publisher, and how far a subscriber follows \
    real-world DDL, measured with PostgreSQL's own regression suite (`cargo xtask regress`) and \
    with real applications' schemas and upgrade histories (`cargo xtask realworld`). A short \
    version of each runs with the ordinary tests (`cargo test -p ddl-e2e --test regress`, \
    `--test realworld`).\n";

/// Each major has its own section (Debian's 15 and 18 sources hold the suite).
fn heading(r: &Report) -> String {
    format!("## The regression suite on PostgreSQL {}", r.major)
}

pub fn run(args: &[&str]) -> Result {
    let mut groups = None;
    let mut profile = Profile::Release;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--groups" => {
                groups = Some(
                    rest.next()
                        .and_then(|n| n.parse().ok())
                        .ok_or(USAGE.to_string())?,
                )
            }
            "--debug" => profile = Profile::Debug,
            _ => return Err(USAGE.into()),
        }
    }
    if let Some(why) = regress::unavailable() {
        return Err(format!("regress: {why}"));
    }
    install(profile)?;
    let cache = project_root().join("target/regress");
    let report = regress::run(&cache, groups, &|step| println!("regress: {step}"))?;
    let command = match groups {
        Some(n) => format!("cargo xtask regress --groups {n}"),
        None => "cargo xtask regress".to_string(),
    };
    let libraries = match profile {
        Profile::Release => "release build",
        Profile::Debug => "debug build",
    };
    write_section(
        FILE,
        INTRO,
        &heading(&report),
        &section(&report, &command, libraries),
    )?;
    let unexplained = report
        .changed
        .iter()
        .filter(|t| t.cause == Cause::Unexplained)
        .count();
    if let Some(f) = report.followers.iter().find(|f| f.followed.is_err()) {
        return Err(format!(
            "regress: the subscriber with {} stopped (see {FILE})",
            f.configuration()
        ));
    }
    match unexplained {
        0 => Ok(()),
        n => Err(format!(
            "regress: {n} test(s) changed for no documented reason"
        )),
    }
}

fn section(r: &Report, command: &str, libraries: &str) -> String {
    let machine = Machine::describe();
    let mut s = format!("{}\n\n", heading(r));
    let _ = writeln!(
        s,
        "`{command}` on {} (libraries: {libraries}), {}: {} tests in {} of the schedule's {} \
         groups, from Debian's `{}`.\n",
        machine.date,
        machine.line(),
        r.tests,
        r.groups.0,
        r.groups.1,
        r.package
    );
    let _ = writeln!(
        s,
        "Set-up: five clusters with the same settings (`max_prepared_transactions = 0`, the \
         server default). Without our libraries: `CREATE PUBLICATION p FOR ALL TABLES`. With \
         them: `ddl_pgoutput` preloaded, `CREATE EXTENSION ddl_sync`, `CREATE PUBLICATION p FOR \
         ALL TABLES WITH (ddl = 'all')`, and three subscribers (`ddl_sync` preloaded): two with \
         `CREATE SUBSCRIPTION ... WITH (ddl = 'all', ddl_conflict = 'skip' | 'error', \
         ddl_fallback_role = 'regress_ddl_fallback')`: the suite makes its roles as it goes, on \
         the publisher only, and the fallback (an ordinary role that owns the subscriber's \
         database) runs their statements; one under `skip` without a fallback role, a user's \
         first configuration, where every statement of those roles is refused (and the tables \
         they made are made from their definitions). Where a subscriber stops, the run acts as an operator would and \
         lists each step: `ddl_sync.resolve_event(..., 'skip')` for a DDL event that failed \
         twice under `error`, `ALTER SUBSCRIPTION ... SKIP (lsn = ...)` for a transaction whose \
         rows failed twice. The suite runs with \
         `pg_regress --use-existing` against database `regression` of each publisher. The \
         publication is on both because it changes results by itself (an UPDATE of a table \
         without a replica identity fails); the tests that fail on both for that reason are \
         not ours to fix.\n"
    );
    s.push_str("### The publisher: what users see\n\n");
    let _ = writeln!(
        s,
        "| | without our libraries | with them |\n|---|---|---|\n\
         | tests failed (pg_regress, against the stock expected output) | {} | {} |\n\
         | suite wall-clock time | {:.0} s | {:.0} s |\n",
        r.failed.0, r.failed.1, r.seconds.0, r.seconds.1
    );
    if r.changed.is_empty() {
        s.push_str("No test's output changed.\n\n");
    } else {
        let _ = writeln!(
            s,
            "{} test(s) print something else with our libraries:\n\n| test | changed lines | \
             why |\n|---|---|---|",
            r.changed.len()
        );
        for t in &r.changed {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                t.name,
                t.diff_lines,
                t.cause.describe()
            );
        }
        s.push('\n');
        for t in r.changed.iter().filter(|t| t.cause == Cause::Unexplained) {
            let _ = writeln!(s, "`{}`, first changed lines:\n\n```diff", t.name);
            for line in &t.sample {
                let _ = writeln!(s, "{line}");
            }
            s.push_str("```\n\n");
        }
    }
    for f in &r.followers {
        follower(&mut s, f);
    }
    s
}

/// The section of one subscriber.
fn follower(s: &mut String, f: &Follower) {
    let _ = writeln!(
        s,
        "### The subscriber with `{}`: does it follow?\n",
        f.configuration()
    );
    match &f.followed {
        Ok(took) => {
            let _ = writeln!(
                s,
                "It applied everything the publisher wrote ({:.0} s after the suite ended).\n",
                took.as_secs_f64()
            );
        }
        Err(e) => {
            let _ = writeln!(s, "**It stopped**: `{}`.\n", cell(e));
        }
    }
    if f.interventions.is_empty() {
        s.push_str("No operator step was needed.\n\n");
    } else {
        let _ = writeln!(
            s,
            "The operator's steps on the way ({}):\n\n| step | LSN | the error it answered |\n|---|---|---|",
            f.interventions.len()
        );
        for i in &f.interventions {
            let _ = writeln!(s, "| {} | {} | {} |", i.action, i.lsn, cell(&i.error));
        }
        s.push('\n');
    }
    let statuses: Vec<String> = f.events.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(s, "DDL events in the apply log: {}.\n", statuses.join(", "));
    let _ = writeln!(
        s,
        "Made from the definitions events carry, where the statement did not make them here: \
         {} table(s); columns or a key added to {} more.\n",
        f.made.tables, f.made.completed
    );
    let applied = f
        .events
        .iter()
        .find(|(k, _)| k == "applied")
        .map_or(0, |(_, n)| *n);
    let diverged = f
        .events
        .iter()
        .find(|(k, _)| k == "diverged")
        .map_or(0, |(_, n)| *n);
    let _ = writeln!(
        s,
        "Verification: {} of the {applied} applied events shown to have made here what they \
         made on the publisher; {diverged} diverged (by reason below); {} applied and not \
         compared.\n",
        f.verification.verified,
        applied - f.verification.verified,
    );
    groups_table(
        s,
        "Applied events not compared, by command tag and why (a statement that makes nothing \
         described has no description: ddl-wire's README lists what is described)",
        ["command tag", "why"],
        &f.verification.not_compared,
    );
    groups_table(
        s,
        "Events not applied, by reason (names blanked)",
        ["status", "reason"],
        &f.not_applied,
    );
    let _ = writeln!(
        s,
        "Rows: {} of {} published tables ({:.1} %) have the same rows on both nodes.\n",
        f.rows.equal,
        f.rows.tables,
        100.0 * f.rows.equal as f64 / f.rows.tables.max(1) as f64
    );
    if !f.rows.differing.is_empty() {
        s.push_str(
            "<details><summary>Tables that differ</summary>\n\n| table | difference |\n|---|---|\n",
        );
        for (table, why) in &f.rows.differing {
            let _ = writeln!(s, "| {} | {} |", cell(table), cell(why));
        }
        s.push_str("\n</details>\n\n");
    }
    let _ = writeln!(
        s,
        "Schema (`pg_dump --schema-only`, the extension and the publication/subscription left \
         out): {} object block(s) only on the publisher, {} only on the subscriber.\n",
        f.schema.0.len(),
        f.schema.1.len()
    );
    if !f.schema.0.is_empty() || !f.schema.1.is_empty() {
        s.push_str("<details><summary>Objects that differ</summary>\n\n");
        for (side, blocks) in [("publisher", &f.schema.0), ("subscriber", &f.schema.1)] {
            for b in blocks {
                let _ = writeln!(s, "- only on the {side}: {}", cell(b));
            }
        }
        s.push_str("\n</details>\n\n");
    }
}

/// `text` fit for a Markdown table cell.
pub(crate) fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('`', "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A folded table of event groups under `summary` (nothing when there are none); `columns`
/// names the groups' status and reason columns.
pub(crate) fn groups_table(
    s: &mut String,
    summary: &str,
    columns: [&str; 2],
    groups: &[EventGroup],
) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "<details><summary>{summary}</summary>\n\n| {} | events | {} | e.g. |\n|---|---|---|---|",
        columns[0], columns[1]
    );
    for g in groups {
        let _ = writeln!(
            s,
            "| {} | {} | {} | `{}` |",
            g.status,
            g.count,
            cell(&g.reason),
            cell(&g.example)
        );
    }
    s.push_str("\n</details>\n\n");
}
