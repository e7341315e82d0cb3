//! Lock contention on the subscriber: a local session holds a lock the replay of a DDL statement
//! needs. The replay must wait (not fail, not skip), show operators what it waits on, and once
//! the lock is gone apply everything exactly once. Two scenarios:
//! - [`lock_wait`]: the local session holds `LOCK TABLE t IN ACCESS SHARE MODE` in an open
//!   transaction while the publisher alters `t`; the session then commits.
//! - [`deadlock`]: the same, but the local session then updates a row the apply worker has
//!   already changed in the same remote transaction: a deadlock, which PostgreSQL breaks by
//!   cancelling one side; whichever it is, nothing may be lost.
//!
//! Used by the e2e tests and by `cargo xtask reliability`.

use crate::compare::{rows_difference, schema_difference};
use crate::replication::{ddl_subscriber, query, subscribe, wait_caught_up};
use crate::{ddl_publisher, wait_for, Session, APPLY_WORKER};
use ddl_testkit::Cluster;
use std::time::Duration;

/// What a scenario saw.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The apply worker's `wait_event_type/wait_event` while blocked.
    pub wait_event: String,
    /// The lock it waited for, from `pg_locks` (`mode on relation`).
    pub waiting_for: String,
    /// Whether `pg_blocking_pids()` of the worker named the local session.
    pub blocked_by_local_session: bool,
    /// The worker's `pg_stat_activity.query` while blocked.
    pub query: String,
    /// How the contention ended (who was cancelled, if anyone).
    pub outcome: String,
    /// Apply log rows: `status command_tag`, in order.
    pub apply_log: Vec<String>,
    /// `pg_dump --schema-only` or row differences after catching up, if any.
    pub difference: Option<String>,
}

impl Report {
    /// Waited visibly, blocked by the local session, the statement shown, then applied once,
    /// with both sides the same.
    pub fn passed(&self, statement: &str) -> bool {
        self.wait_event.starts_with("Lock/")
            && self.blocked_by_local_session
            && self.query.contains(statement)
            && self.apply_log.iter().all(|l| l.starts_with("applied "))
            && self.difference.is_none()
    }
}

/// How long anything may take here.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The statement the publisher runs while the subscriber's session holds its lock.
pub const ALTER: &str = "ALTER TABLE t ADD COLUMN c int";

/// Publisher and subscriber with `t` (rows 1..3) and `u` (one row) replicated as DDL and rows.
fn pair(name: &str) -> (Cluster, Cluster) {
    let publisher = ddl_publisher(&format!("{name}-pub"));
    let subscriber = ddl_subscriber(&format!("{name}-sub"), &[]);
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    subscribe(&subscriber, &publisher, "sub", "s", "all", "error");
    query(
        &publisher,
        "CREATE TABLE t (id int PRIMARY KEY);
         INSERT INTO t VALUES (1), (2), (3);
         CREATE TABLE u (id int PRIMARY KEY, v int NOT NULL);
         INSERT INTO u VALUES (1, 10);",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    (publisher, subscriber)
}

/// The apply worker's wait, once it waits on a heavyweight lock: (wait event, lock, blocked by
/// `local_pid`, query).
fn blocked_worker(subscriber: &Cluster, local_pid: &str) -> (String, String, bool, String) {
    let sql = format!(
        "SELECT a.wait_event_type || '/' || a.wait_event,
                l.mode || ' on ' || coalesce(l.relation::regclass::text, l.locktype),
                {local_pid} = ANY (pg_blocking_pids(a.pid)),
                replace(a.query, E'\\n', ' ')
           FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
          WHERE a.{APPLY_WORKER} AND a.wait_event_type = 'Lock'"
    );
    wait_for("the apply worker to wait on a lock", TIMEOUT, || {
        let row = subscriber
            .psql("postgres", &sql)
            .map_err(|e| e.to_string())?;
        let f: Vec<&str> = row.splitn(4, '|').collect();
        match f.as_slice() {
            [event, lock, blocked, query] => Ok((
                event.to_string(),
                lock.to_string(),
                *blocked == "t",
                query.to_string(),
            )),
            _ => Err(format!("{row:?}\n{}", subscriber.log_tail(10))),
        }
    })
}

/// Catches up and fills the apply log and the differences.
fn settle(publisher: &Cluster, subscriber: &Cluster, report: &mut Report) {
    wait_caught_up(publisher, subscriber, "sub", TIMEOUT);
    report.apply_log = query(
        subscriber,
        "SELECT coalesce(apply_status, 'NULL') || ' ' || command_tag || ' ' || sql
           FROM ddl_sync.events ORDER BY origin_lsn",
    )
    .lines()
    .map(str::to_string)
    .collect();
    report.difference =
        schema_difference(publisher, subscriber).or_else(|| rows_difference(publisher, subscriber));
}

/// A local transaction holds ACCESS SHARE on `t` while the publisher inserts a row, alters `t`
/// and inserts another; the session commits once the worker is seen waiting.
pub fn lock_wait() -> Report {
    let (publisher, subscriber) = pair("lock-wait");
    let mut local = Session::open(&subscriber, "local");
    local.run("BEGIN; LOCK TABLE t IN ACCESS SHARE MODE;");
    let pid = query(
        &subscriber,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'local'",
    );
    query(
        &publisher,
        &format!("BEGIN; INSERT INTO t VALUES (4); {ALTER}; INSERT INTO t VALUES (5, 5); COMMIT;"),
    );
    let (wait_event, waiting_for, blocked, activity) = blocked_worker(&subscriber, &pid);
    let mut report = Report {
        wait_event,
        waiting_for,
        blocked_by_local_session: blocked,
        query: activity,
        ..Report::default()
    };
    // (Not even a SELECT on t could run now: it would queue behind the worker's lock request.)
    local.run("COMMIT;");
    local.finish();
    report.outcome = "the local session committed and the replay went on".to_string();
    settle(&publisher, &subscriber, &mut report);
    report
}

/// As [`lock_wait`], with a remote transaction that first updates `u`; the local session then
/// updates the same row of `u`: each waits for the other.
pub fn deadlock() -> Report {
    let (publisher, subscriber) = pair("deadlock");
    let mut local = Session::open(&subscriber, "local");
    local.run("BEGIN; LOCK TABLE t IN ACCESS SHARE MODE;");
    let pid = query(
        &subscriber,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'local'",
    );
    query(
        &publisher,
        &format!("BEGIN; UPDATE u SET v = v + 1 WHERE id = 1; {ALTER}; COMMIT;"),
    );
    let (wait_event, waiting_for, blocked, activity) = blocked_worker(&subscriber, &pid);
    let mut report = Report {
        wait_event,
        waiting_for,
        blocked_by_local_session: blocked,
        query: activity,
        ..Report::default()
    };
    report.outcome = match local.try_run("UPDATE u SET v = 0 WHERE id = 1;") {
        Err(e) if e.contains("deadlock detected") => {
            "deadlock detected: PostgreSQL cancelled the local session's transaction; \
             the replay went on"
                .to_string()
        }
        Err(e) => format!("the local session failed otherwise: {e}"),
        Ok(()) => {
            // The worker was the one cancelled: it restarts and retries the transaction once
            // the local session is done.
            local.run("COMMIT;");
            "deadlock detected: PostgreSQL cancelled the apply worker, which retried the \
             transaction"
                .to_string()
        }
    };
    drop(local);
    settle(&publisher, &subscriber, &mut report);
    report
}
