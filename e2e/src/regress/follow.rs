//! A subscriber following the publisher through the suite, and what an operator does when it
//! is stuck: `ddl_sync.resolve_event(..., 'skip')` for a DDL event that fails under
//! `ddl_conflict = 'error'`, PostgreSQL's `ALTER SUBSCRIPTION ... SKIP` for a transaction whose
//! rows the subscriber cannot apply. Each such step is recorded, with the error it answered.

use super::{compare, DATABASE};
use crate::query;
use ddl_testkit::Cluster;
use std::time::{Duration, Instant};

/// One step an operator took to get a stuck subscription going.
pub struct Intervention {
    /// `resolve_event skip` or `SKIP transaction`.
    pub action: &'static str,
    /// The origin LSN of the DDL event, or the finish LSN of the transaction.
    pub lsn: String,
    /// The error it answered.
    pub error: String,
}

/// The most interventions one run takes before it calls the subscriber stuck.
const MAX_INTERVENTIONS: usize = 2000;

/// Waits until subscription `name` of `subscriber` has applied what `publisher` has written,
/// intervening as an operator would; stops with the last error when nothing moves for a minute,
/// after [`MAX_INTERVENTIONS`], or after `timeout`.
pub(crate) fn follow(
    publisher: &Cluster,
    subscriber: &Cluster,
    name: &str,
    timeout: Duration,
) -> (Result<Duration, String>, Vec<Intervention>) {
    let target = query(publisher, "SELECT pg_current_wal_lsn()");
    let check = format!(
        "SELECT coalesce(replay_lsn >= '{target}', false)::text || ' ' || coalesce(replay_lsn::text, '-')
           FROM pg_stat_replication WHERE application_name = '{name}'"
    );
    let started = Instant::now();
    let mut interventions = Vec::new();
    let mut last = (String::new(), Instant::now());
    loop {
        let answer = publisher.psql("postgres", &check).unwrap_or_default();
        if answer.starts_with("true") {
            return (Ok(started.elapsed()), interventions);
        }
        // The walsender's row comes and goes while an apply worker restarts: progress is a
        // new replay LSN, not a new answer.
        let lsn = answer.split_whitespace().nth(1).unwrap_or("");
        if !lsn.is_empty() && lsn != last.0 {
            last = (lsn.to_string(), Instant::now());
        }
        if interventions.len() < MAX_INTERVENTIONS {
            if let Some(step) = intervene(subscriber, name, &interventions) {
                interventions.push(step);
                last.1 = Instant::now();
                continue;
            }
        }
        let stalled = last.1.elapsed() > Duration::from_secs(60);
        if stalled || started.elapsed() > timeout {
            let why = compare::last_error(subscriber).unwrap_or_else(|| {
                format!(
                    "no progress for {:?}, no ERROR in the log",
                    last.1.elapsed()
                )
            });
            return (Err(why), interventions);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The step that gets `name` going again, taken, if it is stuck on something an operator
/// would settle: a DDL event that failed twice, or a transaction whose apply failed twice.
fn intervene(subscriber: &Cluster, name: &str, done: &[Intervention]) -> Option<Intervention> {
    let event = subscriber
        .psql(
            DATABASE,
            &format!(
                "SELECT origin_lsn || '|' || error FROM ddl_sync.failing_events
                  WHERE subscription = '{name}' AND attempts >= 2 AND NOT decided"
            ),
        )
        .unwrap_or_default();
    if let Some((lsn, error)) = event.split_once('|') {
        query_in(
            subscriber,
            &format!("SELECT ddl_sync.resolve_event('{name}', 'skip', origin_lsn => '{lsn}')"),
        )?;
        return Some(Intervention {
            action: "resolve_event skip",
            lsn: lsn.to_string(),
            error: error.to_string(),
        });
    }
    let (error, finish_lsn) = repeated_apply_error(subscriber)?;
    let skipped = |i: &Intervention| i.action == "SKIP transaction" && i.lsn == finish_lsn;
    if done.iter().any(skipped) {
        return None;
    }
    query_in(
        subscriber,
        &format!("ALTER SUBSCRIPTION {name} SKIP (lsn = '{finish_lsn}')"),
    )?;
    Some(Intervention {
        action: "SKIP transaction",
        lsn: finish_lsn,
        error,
    })
}

fn query_in(pg: &Cluster, sql: &str) -> Option<String> {
    pg.psql(DATABASE, sql).ok()
}

/// The last apply error of the subscriber's log, with the finish LSN of its transaction, when
/// it was logged at least twice (the worker retried and failed again) and is not a DDL
/// event's.
fn repeated_apply_error(subscriber: &Cluster) -> Option<(String, String)> {
    let log = std::fs::read_to_string(subscriber.log_path()).ok()?;
    let lines: Vec<&str> = log.lines().collect();
    let failures: Vec<(String, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| {
            let (prefix, error) = line.split_once("ERROR:  ")?;
            // The rest of the entry: the same process's DETAIL, HINT, QUERY and CONTEXT lines,
            // and tab-indented continuations; the apply worker's own line (where in the stream
            // it was) comes last.
            let pid = prefix.split_once(" [").map_or("", |(_, rest)| rest);
            let same_entry = |l: &&&str| {
                l.starts_with('\t')
                    || (l.contains(pid)
                        && ["DETAIL:  ", "HINT:  ", "QUERY:  ", "CONTEXT:  "]
                            .iter()
                            .any(|field| l.contains(field)))
            };
            let stream = lines[i + 1..]
                .iter()
                .take_while(same_entry)
                .find(|l| l.contains("processing remote data"))?;
            // A DDL event's failure is resolve_event's to settle, not a whole transaction's.
            if stream.contains("\"ddl_sync.events\"") {
                return None;
            }
            let finish = stream.rsplit_once("finished at ")?.1.trim();
            Some((error.to_string(), finish.to_string()))
        })
        .collect();
    let last = failures.last()?;
    let times = failures.iter().filter(|f| *f == last).count();
    (times >= 2).then(|| last.clone())
}
