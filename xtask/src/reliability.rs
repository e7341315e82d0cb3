//! `cargo xtask reliability`: the fault and bad-input campaign, on throwaway clusters, into
//! RELIABILITY.md (one section per part; the `## Fuzzing` section is filled in by hand and
//! never rewritten).
//!
//! ```text
//! cargo xtask reliability [--trials N] [--seed S] [--transactions N] [--debug]
//! ```
//!
//! 1. Crashes: N trials per side (default 20): a fresh publisher and subscriber, a stream of
//!    transactions mixing DDL and rows, and one SIGKILL of every process of the publisher, or of
//!    the subscriber, at a random point of it; then the statements and rows the publisher
//!    committed are counted on the subscriber by sequence number (`ddl_e2e::faults`). Every
//!    other trial uses a subscription with `streaming = on`.
//! 2. Hostile inputs on both sides (`ddl_e2e::hostile`).
//! 3. Attacks by an ordinary role (`ddl_e2e::attacks`): forged, replayed and poisoned records,
//!    spoofed keys, privileges, missing roles, search_path hijacks, code that would run as the
//!    subscription owner, user-settable switches.
//! 4. Lock contention on the subscriber (`ddl_e2e::contention`).
//!
//! The same code runs in small in `cargo test -p ddl-e2e` (tests `faults`, `hostile`,
//! `attacks`, `contention`; `attacks` runs in full). The libraries installed are release
//! builds (what users run) unless `--debug`. The command fails when any trial or case failed,
//! after writing the report.

use crate::install::{install, Profile};
use crate::Result;
use ddl_e2e::attacks;
use ddl_e2e::contention;
use ddl_e2e::faults::{self, Plan, Rng, Side};
use ddl_e2e::hostile;
use ddl_testkit::report::{write_section, Machine};
use std::panic::AssertUnwindSafe;
use std::time::Instant;

const USAGE: &str =
    "usage: cargo xtask reliability [--trials N] [--seed S] [--transactions N] [--debug]";
const FILE: &str = "RELIABILITY.md";
const INTRO: &str = "# Reliability\n\n\
    The fault and bad-input campaign of ddl_sync. Every section but `Fuzzing` is written by \
    `cargo xtask reliability` (the command is in each section); `Fuzzing` is filled in by hand. \
    Small versions of the crash, hostile-input and lock tests, and all the attacks, run with \
    the ordinary tests \
    (`cargo test -p ddl-e2e --test faults --test hostile --test attacks --test contention`).\n";
const CRASHES: &str = "## Crashes (kill -9)";
const HOSTILE: &str = "## Hostile inputs";
const ATTACKS: &str = "## Attacks";
const CONTENTION: &str = "## Lock contention";
const FUZZING: &str = "## Fuzzing";
/// Fuzz targets of `ddl-wire/fuzz` and the entry points each drives.
const FUZZ_TARGETS: [(&str, &str); 6] = [
    (
        "parse_message",
        "`Message::parse`, `Message::parse_prefix` (every protocol context)",
    ),
    (
        "stream_decoder",
        "`StreamDecoder::decode` over message sequences (streamed blocks)",
    ),
    ("record", "`DdlRecord::parse` (the captured-DDL record)"),
    (
        "event",
        "`EventsRelation::from_relation`, `EventsRelation::event`",
    ),
    (
        "framed",
        "`FramedReader` (the golden fixtures' framed files)",
    ),
    (
        "recvlogical",
        "`RecvlogicalReader` (pg_recvlogical output files)",
    ),
];

struct Settings {
    trials: u32,
    seed: u64,
    transactions: u32,
    profile: Profile,
}

pub fn run(args: &[&str]) -> Result {
    let settings = parse(args)?;
    install(settings.profile)?;
    let machine = Machine::describe();
    let started = Instant::now();

    let crashes = crash_trials(&settings);
    let hostile = catch("hostile inputs", hostile::run);
    let attacks = catch("attacks", attacks::run);
    let contention = [
        ("lock wait", catch("lock wait", contention::lock_wait)),
        ("deadlock", catch("deadlock", contention::deadlock)),
    ];
    let minutes = started.elapsed().as_secs_f64() / 60.0;

    let command = command_line(&settings);
    let header = |what: &str| {
        format!(
            "Run on {} ({}), PostgreSQL 15 from the system packages, {} builds of \
             ddl_pgoutput and ddl_sync; the whole campaign took {minutes:.1} minutes. {what}\n\n\
             Reproduce: `{command}`\n\n",
            machine.date,
            machine.line(),
            match settings.profile {
                Profile::Release => "release",
                Profile::Debug => "debug",
            }
        )
    };
    write_section(
        FILE,
        INTRO,
        CRASHES,
        &crash_section(&settings, &crashes, &header),
    )?;
    write_section(FILE, INTRO, HOSTILE, &hostile_section(&hostile, &header))?;
    write_section(FILE, INTRO, ATTACKS, &attacks_section(&attacks, &header))?;
    write_section(
        FILE,
        INTRO,
        CONTENTION,
        &contention_section(&contention, &header),
    )?;
    ensure_fuzzing_section()?;

    let failed_trials = crashes.iter().filter(|t| !t.passed()).count();
    let failed = |outcomes: &std::result::Result<Vec<hostile::Outcome>, String>| match outcomes {
        Ok(outcomes) => outcomes.iter().filter(|o| !o.passed).count(),
        Err(_) => 1,
    };
    let failed_cases = failed(&hostile);
    let failed_attacks = failed(&attacks);
    let failed_locks = contention
        .iter()
        .filter(|(_, r)| !r.as_ref().is_ok_and(|r| r.passed(contention::ALTER)))
        .count();
    if failed_trials + failed_cases + failed_attacks + failed_locks > 0 {
        return Err(format!(
            "{failed_trials} crash trials, {failed_cases} hostile cases, {failed_attacks} \
             attacks and {failed_locks} lock scenarios failed (see {FILE})"
        ));
    }
    Ok(())
}

fn parse(args: &[&str]) -> Result<Settings> {
    let mut settings = Settings {
        trials: 20,
        seed: seed_from_clock(),
        transactions: 40,
        profile: Profile::Release,
    };
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        let mut number = |flag: &str| {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{flag} needs a number\n{USAGE}"))
        };
        match arg {
            "--trials" => settings.trials = number("--trials")? as u32,
            "--seed" => settings.seed = number("--seed")?,
            "--transactions" => settings.transactions = number("--transactions")? as u32,
            "--debug" => settings.profile = Profile::Debug,
            _ => return Err(USAGE.to_string()),
        }
    }
    if settings.trials == 0 || settings.transactions < 10 {
        return Err(format!(
            "--trials must be positive, --transactions at least 10\n{USAGE}"
        ));
    }
    Ok(settings)
}

/// A seed when none is given: the clock's nanoseconds (printed in the report, so any run can
/// be repeated).
fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

fn command_line(s: &Settings) -> String {
    format!(
        "cargo xtask reliability --trials {} --seed {} --transactions {}{}",
        s.trials,
        s.seed,
        s.transactions,
        if matches!(s.profile, Profile::Debug) {
            " --debug"
        } else {
            ""
        }
    )
}

/// Runs `f`, turning a panic (a set-up failure, a time-out) into an error with its message.
fn catch<T>(what: &str, f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string());
        eprintln!("reliability: {what} failed: {message}");
        message
    })
}

/// One crash trial: its plan and what it found (or why it could not finish).
struct Trial {
    plan: Plan,
    report: std::result::Result<faults::Report, String>,
}

impl Trial {
    fn passed(&self) -> bool {
        self.report.as_ref().is_ok_and(faults::Report::passed)
    }
}

fn crash_trials(s: &Settings) -> Vec<Trial> {
    let mut rng = Rng::new(s.seed);
    let mut out = Vec::new();
    for side in [Side::Subscriber, Side::Publisher] {
        for i in 0..s.trials {
            let streaming = i % 2 == 1;
            // Half the subscriber's kills come while a replay waits inside its transaction.
            let mut plan = if side == Side::Subscriber && i % 4 >= 2 {
                Plan::mid_replay(s.transactions as usize, streaming, &mut rng)
            } else {
                Plan::random(side, s.transactions as usize, streaming, &mut rng)
            };
            plan.name = format!("rel-{}-{i}", side.name());
            let report = catch(&plan.name, || faults::trial(&plan));
            let trial = Trial { plan, report };
            println!(
                "reliability: {} trial {}/{}: {}",
                side.name(),
                i + 1,
                s.trials,
                match &trial.report {
                    Ok(r) if r.passed() => format!(
                        "passed ({} DDL, {} rows committed; killed after {} transactions)",
                        r.ddl_committed, r.rows_committed, r.committed_at_kill
                    ),
                    Ok(r) => format!("FAILED: {}", r.problems().join("; ")),
                    Err(e) => format!("FAILED to run: {e}"),
                }
            );
            out.push(trial);
        }
    }
    out
}

/// A table cell: no line breaks, `|` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn crash_section(s: &Settings, trials: &[Trial], header: &dyn Fn(&str) -> String) -> String {
    let mut out = format!("{CRASHES}\n\n");
    out.push_str(&header(&format!(
        "{} trials per side, {} transactions per trial, seed {}.",
        s.trials, s.transactions, s.seed
    )));
    out.push_str(
        "**How a node is killed.** SIGKILL to every process of the cluster at once \
         (`ddl_testkit::Cluster::kill`): the postmaster is stopped with SIGSTOP so it forks \
         nothing new, then it and all its children get SIGKILL. Not `pg_ctl stop -m immediate`: \
         that is SIGQUIT, which every process handles (and the walsender and apply worker exit \
         through their own code); not SIGKILL of the postmaster alone: its backends would go on \
         running, and committing, until they notice. Nothing of the cluster runs another \
         instruction, the next start runs crash recovery. The clusters run with `fsync = off` \
         (throwaway clusters): what a process wrote survives in the OS page cache, so this \
         tests PostgreSQL's and ddl_sync's crash recovery, not the disk.\n\n\
         **The stream.** Each transaction inserts rows into `ledger` (every tenth 3,000 rows, \
         which spill to disk on the publisher's 64 kB `logical_decoding_work_mem`, or stream \
         to the subscriber in the `streaming = on` trials) and runs one DDL statement: create \
         a table and fill it, add a column to `ledger` and use it, create an index, comment on \
         a table and update its rows, drop a table, or create a view; every seventh also runs \
         a DDL statement in a savepoint it rolls back. A writer runs the transactions one \
         after another with psql, 20 ms apart; when its connection dies it waits for the \
         publisher, asks whether the transaction committed, and runs it again if not. The \
         kill comes after a random number of committed transactions plus 0 to 40 ms; the \
         killed node is started again at once. A subscriber killed at a random time is mostly \
         between transactions (it keeps up with the stream), so half of the subscriber's \
         trials (\"in a replay\") take the kill point further: from there a local session \
         holds `ledger` (ACCESS SHARE) in an open transaction, the next `ALTER TABLE ledger` of \
         the stream waits for it inside its transaction, after that transaction's first rows, \
         and the kill comes once `pg_stat_activity` shows the apply worker waiting.\n\n\
         **The counting.** Every statement carries a sequence number: DDL in a comment inside \
         its text (`CREATE TABLE w_3 /* seq 17 */ ...`, kept by the capture), which the \
         subscriber's apply log (`ddl_sync.events`, one row per origin LSN) shows; rows as \
         the `seq` column of `ledger`, which has no key, so a row applied twice would stay \
         visible. What the publisher committed is read on the publisher after recovery: each \
         DDL statement inserts its number into `stream_ddl` in the same transaction, so a \
         transaction the crash interrupted is not counted (it never happened). Lost = committed \
         on the publisher and not on the subscriber; duplicated = applied more than once; \
         phantom = applied but never committed (e.g. the rolled-back savepoints). Then \
         `pg_dump --schema-only` of both sides (`ddl_e2e::compare`, as in the migration test), \
         the rows of every table (count and md5), the apply log's statuses, and the server logs \
         (any process that died of a signal other than the kill, any PANIC).\n\n",
    );
    out.push_str(
        "| side | trials | passed | DDL committed | DDL lost | DDL twice | DDL phantom | rows \
         committed | rows lost | rows twice | rows phantom | schemas equal | tables equal | \
         writer in doubt | longest catch-up |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for side in [Side::Subscriber, Side::Publisher] {
        let of_side: Vec<&Trial> = trials.iter().filter(|t| t.plan.side == side).collect();
        let ok: Vec<&faults::Report> = of_side
            .iter()
            .filter_map(|t| t.report.as_ref().ok())
            .collect();
        let sum = |f: &dyn Fn(&faults::Report) -> usize| ok.iter().map(|r| f(r)).sum::<usize>();
        let unfinished = of_side.len() - ok.len();
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} s |\n",
                side.name(),
                of_side.len(),
                of_side.iter().filter(|t| t.passed()).count(),
                sum(&|r| r.ddl_committed),
                sum(&|r| r.ddl_lost.len()),
                sum(&|r| r.ddl_duplicated.len()),
                sum(&|r| r.ddl_phantom.len()),
                sum(&|r| r.rows_committed),
                sum(&|r| r.rows_lost.len()),
                sum(&|r| r.rows_duplicated.len()),
                sum(&|r| r.rows_phantom.len()),
                format_args!(
                    "{}/{}",
                    ok.iter().filter(|r| r.schema_difference.is_none()).count(),
                    of_side.len()
                ),
                format_args!(
                    "{}/{}",
                    ok.iter().filter(|r| r.rows_difference.is_none()).count(),
                    of_side.len()
                ),
                sum(&|r| usize::from(r.in_doubt)),
                ok.iter()
                    .map(|r| r.catch_up.as_secs_f64())
                    .fold(0.0, f64::max),
            ),
        );
        if unfinished > 0 {
            let _ = std::fmt::Write::write_fmt(
                &mut out,
                format_args!(
                    "\n{unfinished} {} trials did not finish (below).\n",
                    side.name()
                ),
            );
        }
    }
    let in_replay = trials
        .iter()
        .filter(|t| t.report.as_ref().is_ok_and(|r| r.replay_waiting_at_kill))
        .count();
    let planned = trials.iter().filter(|t| t.plan.mid_replay).count();
    out.push_str(&format!(
        "\n{in_replay} of the {planned} subscriber kills planned \"in a replay\" came while the \
         apply worker was seen waiting inside a transaction (its `ALTER TABLE ledger`).\n"
    ));
    out.push_str(
        "\nLost, twice and phantom rows count the statements (sequence numbers) affected. \
         \"Writer in doubt\": trials where the kill cut the writer's connection before it \
         heard the commit (always the case when the publisher is killed mid-transaction).\n\n\
         ### Trials\n\n\
         | # | side | streaming | killed after (transactions + ms) | kill point | in doubt | DDL committed | rows committed | result |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for (i, t) in trials.iter().enumerate() {
        let (doubt, ddl, rows, result) = match &t.report {
            Ok(r) => (
                if r.in_doubt { "yes" } else { "no" }.to_string(),
                r.ddl_committed.to_string(),
                r.rows_committed.to_string(),
                if r.passed() {
                    "pass".to_string()
                } else {
                    format!("FAIL: {}", cell(&r.problems().join("; ")))
                },
            ),
            Err(e) => (
                "?".into(),
                "?".into(),
                "?".into(),
                format!("did not finish: {}", cell(&truncate(e, 600))),
            ),
        };
        let committed_at_kill = t
            .report
            .as_ref()
            .map_or_else(|_| "?".to_string(), |r| r.committed_at_kill.to_string());
        let kill_point = match (&t.report, t.plan.mid_replay) {
            (_, false) => "random",
            (Ok(r), true) if r.replay_waiting_at_kill => "in a replay (worker seen waiting)",
            (Ok(_), true) => "in a replay (worker NOT seen waiting)",
            (Err(_), true) => "in a replay",
        };
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "| {} | {} | {} | {} (planned {}) + {} ms | {kill_point} | {doubt} | {ddl} | {rows} | {result} |\n",
                i + 1,
                t.plan.side.name(),
                if t.plan.streaming { "on" } else { "off" },
                committed_at_kill,
                t.plan.kill_after,
                t.plan.delay.as_millis(),
            ),
        );
    }
    out
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

fn hostile_section(
    outcomes: &std::result::Result<Vec<hostile::Outcome>, String>,
    header: &dyn Fn(&str) -> String,
) -> String {
    let mut out = format!("{HOSTILE}\n\n");
    out.push_str(&header(
        "One publisher and one subscriber (conflict policy `error`, DDL kinds `table, index, \
         schema, view`), one case after another; after each, a marker row inserted on the \
         publisher must arrive (nothing after a bad input is lost), and what the case left in \
         the subscriber's apply log and the publisher's server log is shown.",
    ));
    outcome_table(&mut out, outcomes, "cases", "input");
    out
}

fn attacks_section(
    outcomes: &std::result::Result<Vec<hostile::Outcome>, String>,
    header: &dyn Fn(&str) -> String,
) -> String {
    let mut out = format!("{ATTACKS}\n\n");
    out.push_str(&header(
        "The attacker is `mallory`, made with `CREATE ROLE mallory LOGIN` and nothing else, on \
         the publisher and where a case needs it on the subscriber (`ghost` exists only on the \
         publisher, `eve` only on the subscriber); schema `public` lets every role create \
         objects, as before PostgreSQL 15. One publisher and one subscriber \
         (conflict policy `error`, every DDL kind), one attack after another (`ddl_e2e::attacks`, \
         whose module documentation lists the classes). Each attack must fail, and say why: a \
         WARNING in the publisher's log with the `rejected` counter of \
         `ddl_sync.publication_stats`, an apply log row of the subscriber's `ddl_sync.events` \
         with its detail, or the attacker's error. After each, a genuine DDL statement and a \
         marker row committed on the publisher must arrive, through the same walsender \
         process. Planted code calls `mallory_escalate`, which writes into `attack_log` and \
         makes mallory a superuser when it runs as one; the last row checks that this never \
         happened on either node. \"setup\" rows are the attacker's ordinary DDL, which must \
         replicate as usual. The same attacks run with \
         `cargo test -p ddl-e2e --test attacks` (after `cargo xtask install --debug`).",
    ));
    outcome_table(&mut out, outcomes, "attacks", "attack");
    out
}

/// `N of M <what> as expected.` and the table of `outcomes`, whose first column is `first`.
fn outcome_table(
    out: &mut String,
    outcomes: &std::result::Result<Vec<hostile::Outcome>, String>,
    what: &str,
    first: &str,
) {
    match outcomes {
        Err(e) => out.push_str(&format!("The {what} did not finish: {}\n", cell(e))),
        Ok(outcomes) => {
            let passed = outcomes.iter().filter(|o| o.passed).count();
            out.push_str(&format!(
                "{passed} of {} {what} as expected.\n\n| {first} | expected | observed | result |\n|---|---|---|---|\n",
                outcomes.len()
            ));
            for o in outcomes {
                out.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    cell(&o.name),
                    cell(o.expected),
                    cell(&truncate(&o.observed, 700)),
                    if o.passed { "pass" } else { "FAIL" }
                ));
            }
        }
    }
}

fn contention_section(
    scenarios: &[(&str, std::result::Result<contention::Report, String>)],
    header: &dyn Fn(&str) -> String,
) -> String {
    let mut out = format!("{CONTENTION}\n\n");
    out.push_str(&header(
        "On the subscriber a local session runs `BEGIN; LOCK TABLE t IN ACCESS SHARE MODE;` \
         and keeps the transaction open; the publisher then runs a transaction with \
         `ALTER TABLE t ADD COLUMN c int`. The apply worker's replay waits for the lock; what \
         operators see is read from `pg_stat_activity` and `pg_locks` while it waits. In the \
         deadlock scenario the remote transaction first updates a row of `u`, and the local \
         session, still holding its lock, then updates the same row.",
    ));
    out.push_str(
        "While a statement is replayed, the apply worker reports it as its running query \
         (`pgstat_report_activity`, ddl-apply's `subscriber/activity.rs`): \
         `pg_stat_activity.query` is `/* ddl_sync replay <origin system identifier> \
         <origin LSN> */ <statement>`, next to PostgreSQL's own `wait_event` and \
         `pg_blocking_pids()`. A query to see it:\n\n\
         ```sql\n\
         SELECT a.pid, a.wait_event_type, a.wait_event, pg_blocking_pids(a.pid) AS blocked_by,\n\
         \x20      l.mode, l.relation::regclass, a.query\n\
         \x20 FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted\n\
         \x20WHERE a.backend_type IN ('logical replication worker',          -- 15, 16\n\
         \x20                         'logical replication apply worker',    -- 17 and later\n\
         \x20                         'logical replication parallel worker');\n\
         ```\n\n\
         | scenario | wait event | waiting for | blocked by the local session | pg_stat_activity.query | outcome | apply log | both sides equal | result |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, report) in scenarios {
        match report {
            Ok(r) => out.push_str(&format!(
                "| {name} | {} | {} | {} | `{}` | {} | {} | {} | {} |\n",
                cell(&r.wait_event),
                cell(&r.waiting_for),
                if r.blocked_by_local_session {
                    "yes"
                } else {
                    "no"
                },
                cell(&truncate(&r.query, 200)),
                cell(&r.outcome),
                cell(&r.apply_log.join("; ")),
                r.difference.as_deref().map_or("yes".to_string(), cell),
                if r.passed(contention::ALTER) {
                    "pass"
                } else {
                    "FAIL"
                }
            )),
            Err(e) => out.push_str(&format!(
                "| {name} | | | | | did not finish: {} | | | FAIL |\n",
                cell(&truncate(e, 600))
            )),
        }
    }
    out
}

/// Writes the `## Fuzzing` section only when the file has none: its figures come from runs
/// made by hand, which this command must not overwrite.
fn ensure_fuzzing_section() -> Result {
    let path = crate::project_root().join(FILE);
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    if doc.lines().any(|l| l.trim_end() == FUZZING) {
        return Ok(());
    }
    let mut section = format!(
        "{FUZZING}\n\n\
         <!-- Filled in by hand: `cargo xtask reliability` never rewrites this section. -->\n\n\
         **Not run yet.** The `ddl-wire` parsers are fuzzed with cargo-fuzz (libFuzzer), each \
         target for 10 minutes (target: 0 crashes):\n\n\
         ```sh\n\
         cd ddl-wire/fuzz && cargo +nightly fuzz run <target> -- -max_total_time=600\n\
         ```\n\n\
         | target | entry points | date | executions | corpus | crashes |\n\
         |---|---|---|---|---|---|\n"
    );
    for (target, entry) in FUZZ_TARGETS {
        section.push_str(&format!("| `{target}` | {entry} | | | | |\n"));
    }
    write_section(FILE, INTRO, FUZZING, &section)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_read_and_the_command_line_repeats_them() {
        let s = parse(&["--trials", "3", "--seed", "42", "--debug"]).unwrap();
        assert_eq!((s.trials, s.seed, s.transactions), (3, 42, 40));
        assert_eq!(
            command_line(&s),
            "cargo xtask reliability --trials 3 --seed 42 --transactions 40 --debug"
        );
        assert!(parse(&["--trials", "0"]).is_err());
        assert!(parse(&["--transactions", "9"]).is_err());
        assert!(parse(&["--seed"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }

    #[test]
    fn cells_stay_in_their_column() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(truncate("ééé", 3), "é...");
    }

    #[test]
    fn every_fuzz_target_is_listed() {
        let dir = crate::project_root().join("ddl-wire/fuzz/fuzz_targets");
        let mut targets: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".rs").map(str::to_string)
            })
            .filter(|n| n != "context") // shared code, not a target
            .collect();
        targets.sort();
        let mut listed: Vec<String> = FUZZ_TARGETS.iter().map(|(t, _)| t.to_string()).collect();
        listed.sort();
        assert_eq!(targets, listed);
    }
}
