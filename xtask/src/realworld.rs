//! `cargo xtask realworld`: real applications' schemas and upgrade histories through DDL
//! replication, into FIDELITY.md, one section per major (`ddl_e2e::realworld` runs them; this
//! writes the report).
//!
//! ```text
//! cargo xtask realworld [--apps a,b,...] [--debug]
//! ```
//!
//! The histories are fetched at run time from Debian's and PyPI's registries (cached in
//! `target/realworld/`), never kept here. The libraries are release builds unless `--debug`.
//! The command fails when an application's history did anything the stock run did not: an
//! error beyond the stock publisher's, an event not applied, a schema or rows that differ, a
//! subscriber that did not catch up; after writing the report.

use crate::install::{install, Profile};
use crate::regress::{cell, groups_table, FILE, INTRO};
use crate::{project_root, setup, Result};
use ddl_e2e::realworld::{self, App, AppReport, APPS};
use ddl_testkit::report::{write_section, Machine};
use std::fmt::Write;

const USAGE: &str = "usage: cargo xtask realworld [--apps a,b,...] [--debug]";
pub fn run(args: &[&str]) -> Result {
    let mut chosen: Vec<&'static App> = APPS.iter().collect();
    let mut profile = Profile::Release;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--apps" => {
                let names = rest.next().ok_or(USAGE.to_string())?;
                chosen = names
                    .split(',')
                    .map(|n| realworld::app(n).ok_or(format!("realworld: no application {n}")))
                    .collect::<Result<_>>()?;
            }
            "--debug" => profile = Profile::Debug,
            _ => return Err(USAGE.into()),
        }
    }
    install(profile)?;
    let cache = project_root().join("target/realworld");
    let reports = realworld::run(&chosen, &cache, &|step| println!("realworld: {step}"));
    let major = setup::pg().major();
    let command = if chosen.len() == APPS.len() {
        "cargo xtask realworld".to_string()
    } else {
        let names: Vec<&str> = chosen.iter().map(|a| a.name).collect();
        format!("cargo xtask realworld --apps {}", names.join(","))
    };
    let libraries = match profile {
        Profile::Release => "release build",
        Profile::Debug => "debug build",
    };
    let heading = format!("## Real applications on PostgreSQL {major}");
    write_section(
        FILE,
        INTRO,
        &heading,
        &section(&heading, &reports, &command, libraries),
    )?;
    let failing: Vec<String> = reports
        .iter()
        .filter_map(|(app, r)| match r {
            Ok(r) => (!problems(r).is_empty())
                .then(|| format!("{} ({})", app.name, problems(r).join(", "))),
            Err(e) => Some(format!("{} ({e})", app.name)),
        })
        .collect();
    if failing.is_empty() {
        Ok(())
    } else {
        Err(format!("realworld: {} (see {FILE})", failing.join("; ")))
    }
}

/// What went wrong in an application's run, as short phrases; empty when nothing did.
fn problems(r: &AppReport) -> Vec<String> {
    let mut found = Vec::new();
    if !r.beyond.is_empty() {
        found.push(format!(
            "{} error(s) beyond the stock run's",
            r.beyond.len()
        ));
    }
    let not_applied: usize = r
        .events
        .iter()
        .filter(|(status, _)| status != "applied")
        .map(|(_, n)| n)
        .sum();
    if not_applied > 0 {
        found.push(format!("{not_applied} event(s) not applied"));
    }
    if !r.schema_diff.is_empty() {
        found.push(format!("{} schema diff line(s)", r.schema_diff.len()));
    }
    if !r.rows.differing.is_empty() {
        found.push(format!(
            "{} table(s) with other rows",
            r.rows.differing.len()
        ));
    }
    if let Err(e) = &r.caught_up {
        found.push(format!("the subscriber stopped: {e}"));
    }
    found
}

fn section(
    heading: &str,
    reports: &[(&'static App, std::result::Result<AppReport, String>)],
    command: &str,
    libraries: &str,
) -> String {
    let machine = Machine::describe();
    let mut s = format!("{heading}\n\n");
    let _ = writeln!(
        s,
        "`{command}` on {} (libraries: {libraries}), {}.\n",
        machine.date,
        machine.line()
    );
    s.push_str(
        "Each application's PostgreSQL schema and upgrade scripts, fetched from Debian's and \
         PyPI's registries at run time, replayed in order with `psql -f` (on after errors) on \
         fresh clusters: a stock publisher (`CREATE PUBLICATION p FOR ALL TABLES`) as the \
         baseline, and ours (`ddl_pgoutput` preloaded, `CREATE EXTENSION ddl_sync`, `CREATE \
         PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')`) with a native subscriber (`ddl_sync` \
         preloaded, `CREATE SUBSCRIPTION ... WITH (ddl = 'all')`, nothing else: \
         `ddl_conflict = 'error'`, no operator). A history starts from the oldest release that \
         ships a whole schema and goes on with the upgrade scripts a newer release ships for \
         each version after it; where packages ship no such chain, the install script alone. \
         Errors beyond the baseline are those of our publisher that the stock one did not have; \
         schema diff lines compare both nodes' `pg_dump --schema-only` (the extension and the \
         publication or subscription left out); rows compare every published table.\n\n",
    );
    s.push_str(
        "| application | scripts | errors (stock / ours) | beyond the baseline | events | \
         verified | schema diff lines | tables with other rows | publisher time (stock / ours) \
         | subscriber caught up |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (app, r) in reports {
        match r {
            Ok(r) => {
                let events: Vec<String> =
                    r.events.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let caught = match &r.caught_up {
                    Ok(secs) => format!("{secs:.1} s after"),
                    Err(_) => "**no**".to_string(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} / {} | {} | {} | {} | {} | {} of {} | {:.2} s / {:.2} s | {caught} |",
                    app.name,
                    r.scripts,
                    r.errors.0,
                    r.errors.1,
                    r.beyond.len(),
                    if events.is_empty() { "none".to_string() } else { events.join(", ") },
                    r.verification.verified,
                    r.schema_diff.len(),
                    r.rows.differing.len(),
                    r.rows.tables,
                    r.seconds.0,
                    r.seconds.1,
                );
            }
            Err(e) => {
                let _ = writeln!(s, "| {} | not run: {} | | | | | | | | |", app.name, cell(e));
            }
        }
    }
    s.push('\n');
    for (app, r) in reports {
        let _ = write!(s, "### {}\n\n{}.", app.name, app.about);
        let Ok(r) = r else {
            s.push_str("\n\n");
            continue;
        };
        let _ = writeln!(s, " From {}.\n", r.source);
        if let Err(e) = &r.caught_up {
            let _ = writeln!(s, "**The subscriber stopped**: `{}`.\n", cell(e));
        }
        if !r.stock_errors.is_empty() {
            let mut distinct: Vec<(&String, usize)> = Vec::new();
            for e in &r.stock_errors {
                match distinct.iter_mut().find(|(d, _)| *d == e) {
                    Some((_, n)) => *n += 1,
                    None => distinct.push((e, 1)),
                }
            }
            // Fewer on ours: a policy kept the history working (FIDELITY's policies say which).
            let ours = match r.errors.1 {
                n if n >= r.stock_errors.len() => "ours had each of them too".to_string(),
                n => format!("ours had {n}"),
            };
            let _ = writeln!(
                s,
                "<details><summary>The stock run's errors ({}; {ours}), as PostgreSQL raises \
                 them for this history with a publication FOR ALL TABLES</summary>\n\n\
                 | script: error | times |\n|---|---|",
                r.stock_errors.len()
            );
            for (e, n) in distinct.iter().take(20) {
                let _ = writeln!(s, "| {} | {n} |", cell(e));
            }
            s.push_str("\n</details>\n\n");
        }
        if !r.beyond.is_empty() {
            s.push_str("Errors beyond the stock run's:\n\n");
            for e in &r.beyond {
                let _ = writeln!(s, "- `{}`", cell(e));
            }
            s.push('\n');
        }
        groups_table(
            &mut s,
            "Events not applied, by reason (names blanked)",
            ["status", "reason"],
            &r.not_applied,
        );
        groups_table(
            &mut s,
            "Applied events not compared, by command tag and why",
            ["command tag", "why"],
            &r.verification.not_compared,
        );
        if !r.schema_diff.is_empty() {
            s.push_str("<details><summary>Schema diff lines</summary>\n\n```diff\n");
            for line in r.schema_diff.iter().take(40) {
                let _ = writeln!(s, "{line}");
            }
            s.push_str("```\n\n</details>\n\n");
        }
        if !r.rows.differing.is_empty() {
            s.push_str("<details><summary>Tables that differ</summary>\n\n| table | difference |\n|---|---|\n");
            for (table, why) in &r.rows.differing {
                let _ = writeln!(s, "| {} | {} |", cell(table), cell(why));
            }
            s.push_str("\n</details>\n\n");
        }
    }
    s
}
