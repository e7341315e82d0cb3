//! Bounds on a replay, so that no role without rights on the subscriber can hold the apply
//! worker, and with it every table of the subscription:
//! - `ddl_sync.replay_lock_timeout`: how long a replayed statement waits for each lock, unless
//!   the apply worker's own `lock_timeout` is shorter (a role
//!   may hold a lock on a table it has no right to: parse analysis locks before permissions
//!   are checked, `BEGIN; PREPARE p AS SELECT 1 FROM t;`). The wait then ends with
//!   PostgreSQL's ERROR (`55P03`), a transient one whatever `ddl_conflict` says: the event is
//!   not skipped but retried, the transaction undone, when the apply worker starts again
//!   (`wal_retrieve_retry_interval` later), and it shows in `subscription_stats` (errors, last
//!   error) and `ddl_sync.failing_events` meanwhile, naming the wait;
//! - `ddl_sync.replay_statement_timeout`: how long a replayed statement may run (a
//!   materialized view whose query sleeps where it is replayed), 0 for no bound: it then fails
//!   (`57014`) under the subscription's `ddl_conflict`: `skip` records it and goes on, `error`
//!   stops the apply worker on it, as for any failing statement.
//!
//! Both are the apply worker's own settings (`postgresql.conf`, `ALTER SYSTEM`; read again on
//! reload), never the event's.

use ddl_adapter::{Failure, Outcome, SqlState};
use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting};

static LOCK_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(10_000);
static STATEMENT_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(0);

/// Defines the two settings.
pub(crate) fn define_settings() {
    GucRegistry::define_int_guc(
        c"ddl_sync.replay_lock_timeout",
        c"How long a replayed DDL statement waits for each lock before its transaction is retried.",
        c"0 waits for ever. A role may hold a lock on a table it has no right to; the wait ends \
          with an ERROR, the apply worker retries, and subscription_stats shows it.",
        &LOCK_TIMEOUT,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"ddl_sync.replay_statement_timeout",
        c"How long a replayed DDL statement may run; 0 for no bound.",
        c"A statement that runs longer fails, under the subscription's ddl_conflict policy.",
        &STATEMENT_TIMEOUT,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
}

/// Runs `f`, a replay's attempt, with both bounds. A shorter `lock_timeout` the apply worker
/// already has (`ALTER DATABASE ... SET lock_timeout`, say) is kept.
pub fn bounded<T>(f: impl FnOnce() -> T) -> T {
    let bound = LOCK_TIMEOUT.get();
    // SAFETY: the server's own variable behind `lock_timeout`, read in its backend.
    let current = unsafe { pg_sys::LockTimeout };
    let lock_timeout = if bound > 0 && (current == 0 || bound < current) {
        bound
    } else {
        current
    }
    .to_string();
    ddl_server::guc::with_settings(&[("lock_timeout", &lock_timeout)], || {
        let _timer = ddl_server::timeout::StatementTimer::arm(STATEMENT_TIMEOUT.get());
        f()
    })
}

/// `outcome` of a [`bounded`] attempt that took `elapsed`: a cancel (`57014`, transient) once
/// the statement's bound has passed is the statement timeout's own, which every retry would
/// meet again, so it is the statement's failure; a cancel from elsewhere stays transient.
pub fn out_of_time(outcome: Outcome, elapsed: std::time::Duration) -> Outcome {
    let bound = STATEMENT_TIMEOUT.get();
    let canceled = SqlState::new("57014");
    match outcome {
        Outcome::Retryable(failure)
            if failure.sqlstate == canceled
                && bound > 0
                && elapsed.as_millis() >= u128::from(bound.unsigned_abs()) =>
        {
            Outcome::Fatal(Failure {
                message: format!(
                    "{} (it ran longer than ddl_sync.replay_statement_timeout)",
                    failure.message
                ),
                ..failure
            })
        }
        other => other,
    }
}
