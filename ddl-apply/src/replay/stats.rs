//! The subscriber's statistics that are not in tables: replay errors under the `error`
//! conflict policy, kept where a rollback cannot take them; and the reset of all of them.
//!
//! The counters of applied, skipped, refused, failed and duplicate events are rows of
//! `ddl_sync.subscription_counters`, which the apply trigger updates in the apply worker's
//! transaction (sql/stats.sql): they are exactly as durable as the DDL they count, and survive
//! a purge of the apply log.
//!
//! A statement that fails under `ddl_conflict = 'error'` raises an ERROR in the apply worker:
//! its transaction rolls back, with the apply log row and the counters of
//! `ddl_sync.subscription_counters`, and the worker retries. So the count of such errors and
//! the last one live in shared memory, which `ddl_sync.so` requests when it is in
//! `shared_preload_libraries` (as subscribers should have it); without the preload they are
//! only in the server log. They are kept until the server stops or
//! `ddl_sync.reset_subscription_stats` clears them.

use crate::subscriber::config::subscription_oid;
use ddl_server::errors::OrInternal;
use pgrx::prelude::*;
use pgrx::{pg_sys, PGRXSharedMemory, PgLwLock};

/// How many (database, subscription) pairs are tracked.
const SUBSCRIPTIONS: usize = 64;
/// The longest message kept, in bytes (cut at a character boundary).
const MESSAGE: usize = 1024;

#[derive(Clone, Copy)]
struct Slot {
    /// `database << 32 | subscription`; 0 when free.
    key: u64,
    count: u64,
    /// `TimestampTz` of the last error.
    at: i64,
    len: usize,
    message: [u8; MESSAGE],
    /// The origin (system identifier, LSN) of the event that failed last.
    origin: (i64, u64),
    sql_len: usize,
    sql: [u8; MESSAGE],
    /// `ddl_sync.resolve_event` was called for that event since it last failed.
    decided: bool,
    /// `ddl_sync.resolve_event` was called for the subscription since the server started (or
    /// the slot was taken): its replay looks for decisions. Never cleared while the slot is
    /// the subscription's, so a decision not yet committed cannot be missed.
    resolving: bool,
}

struct Errors {
    slots: [Slot; SUBSCRIPTIONS],
}

// SAFETY: plain values, no pointers.
unsafe impl PGRXSharedMemory for Errors {}

impl Default for Errors {
    fn default() -> Errors {
        let free = Slot {
            key: 0,
            count: 0,
            at: 0,
            len: 0,
            message: [0; MESSAGE],
            origin: (0, 0),
            sql_len: 0,
            sql: [0; MESSAGE],
            decided: false,
            resolving: false,
        };
        Errors {
            slots: [free; SUBSCRIPTIONS],
        }
    }
}

// SAFETY: the name is this segment's alone: the capture's (`ddl_sync publication statistics`)
// is the only other segment the project requests.
static ERRORS: PgLwLock<Errors> = unsafe { PgLwLock::new(c"ddl_sync replay errors") };

/// Places the errors in shared memory; does nothing unless the library is being preloaded.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn init() {
    // SAFETY: the caller's promise (from `_PG_init`, once per process), and no other call
    // places ERRORS: once per segment, as `preload` asks.
    unsafe { ddl_server::shmem::preload(&ERRORS) };
}

fn available() -> bool {
    ddl_server::shmem::available()
}

fn key(subscription: pg_sys::Oid) -> u64 {
    ddl_server::shmem::slot_key(subscription)
}

/// The event whose replay failed: its origin and statement.
pub struct Failed<'a> {
    pub origin: (i64, u64),
    pub sql: &'a str,
}

/// Runs `f`, the replay of `event`; an ERROR it raises is recorded for `subscription`, then
/// raised again.
pub fn recording<T>(subscription: pg_sys::Oid, event: &Failed<'_>, f: impl FnOnce() -> T) -> T {
    PgTryBuilder::new(std::panic::AssertUnwindSafe(f))
        .catch_others(|error| {
            let message = match &error {
                pg_sys::panic::CaughtError::PostgresError(e)
                | pg_sys::panic::CaughtError::ErrorReport(e)
                | pg_sys::panic::CaughtError::RustPanic { ereport: e, .. } => {
                    e.message().to_string()
                }
            };
            record(subscription, event, &message);
            error.rethrow()
        })
        .execute()
}

/// Counts an error of `subscription` and keeps `message` and `event` as its last.
pub fn record(subscription: pg_sys::Oid, event: &Failed<'_>, message: &str) {
    if !available() {
        return;
    }
    let key = key(subscription);
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut errors = ERRORS.exclusive();
    let Some(at) = ddl_server::shmem::slot_for(errors.slots.iter().map(|s| s.key), key) else {
        return; // full: the server log still has it
    };
    let slot = &mut errors.slots[at];
    slot.key = key;
    slot.count += 1;
    slot.at = now;
    slot.len = keep(message, &mut slot.message);
    slot.origin = event.origin;
    slot.sql_len = keep(event.sql, &mut slot.sql);
    slot.decided = false;
}

/// Copies as much of `text` into `buffer` as fits, cut at a character boundary; its length.
fn keep(text: &str, buffer: &mut [u8; MESSAGE]) -> usize {
    let mut len = text.len().min(MESSAGE);
    while !text.is_char_boundary(len) {
        len -= 1;
    }
    buffer[..len].copy_from_slice(&text.as_bytes()[..len]);
    len
}

/// Whether `ddl_sync.resolve_event` was used for `subscription` since the server started: only
/// then can one of its events have a decision. (A transaction may hold several events that
/// fail in turn: each gets its decision while the slot shows another, so the slot's event is
/// not the test.)
pub fn resolving(subscription: pg_sys::Oid) -> bool {
    available() && {
        let key = key(subscription);
        ERRORS
            .share()
            .slots
            .iter()
            .any(|s| s.key == key && s.resolving)
    }
}

/// Notes that the event `subscription` is stuck on has a decision (`ddl_sync.resolve_event`).
pub fn decided(subscription: pg_sys::Oid) {
    if !available() {
        return;
    }
    let key = key(subscription);
    let mut errors = ERRORS.exclusive();
    if let Some(slot) = errors.slots.iter_mut().find(|s| s.key == key) {
        slot.decided = true;
        slot.resolving = true;
    }
}

/// Forgets the error of `subscription` when it was the event with `origin`, which has now gone
/// through (applied, or skipped or refused by decision): the subscription is no longer stuck
/// on it.
pub fn passed(subscription: pg_sys::Oid, origin: (i64, u64)) {
    if !available() {
        return;
    }
    let key = key(subscription);
    let stuck_here = |s: &Slot| s.key == key && s.origin == origin;
    if !ERRORS.share().slots.iter().any(stuck_here) {
        return;
    }
    let mut errors = ERRORS.exclusive();
    if let Some(slot) = errors.slots.iter_mut().find(|s| stuck_here(s)) {
        slot.origin = (0, 0);
        slot.sql_len = 0;
        slot.decided = false;
    }
}

/// The event a subscription is stuck on: the last one that failed under the `error` policy.
pub struct Failing {
    pub origin_sysid: i64,
    /// As PostgreSQL prints an LSN (`X/Y`).
    pub origin_lsn: String,
    pub sql: String,
}

/// The event `subscription` last failed on, if it failed since the server started (or the
/// last reset, or the last `resolve_event`).
pub fn failing(subscription: pg_sys::Oid) -> Option<Failing> {
    if !available() {
        return None;
    }
    let key = key(subscription);
    let errors = ERRORS.share();
    let slot = errors
        .slots
        .iter()
        .find(|s| s.key == key && s.origin != (0, 0))?;
    Some(Failing {
        origin_sysid: slot.origin.0,
        origin_lsn: ddl_server::text::lsn(ddl_wire::Lsn(slot.origin.1)),
        sql: String::from_utf8_lossy(&slot.sql[..slot.sql_len]).into_owned(),
    })
}

/// Forgets the errors of `subscription` (every subscription of this database when `None`).
pub fn forget(subscription: Option<pg_sys::Oid>) {
    if !available() {
        return;
    }
    let mut errors = ERRORS.exclusive();
    for slot in errors.slots.iter_mut() {
        let wanted = match subscription {
            Some(s) => slot.key == key(s),
            None => ddl_server::shmem::slot_object_here(slot.key).is_some(),
        };
        if wanted {
            slot.key = 0;
            slot.count = 0;
            slot.len = 0;
            slot.origin = (0, 0);
            slot.sql_len = 0;
            slot.decided = false;
            slot.resolving = false;
        }
    }
}

/// `ddl_sync.subscription_errors()`: the replay errors under the `error` policy of this
/// database's subscriptions since the server started (or the last reset).
#[pg_extern(volatile)]
fn subscription_errors() -> TableIterator<
    'static,
    (
        name!(subid, pg_sys::Oid),
        name!(errors, i64),
        name!(last_error, String),
        name!(last_error_at, Option<TimestampWithTimeZone>),
    ),
> {
    let mut rows = Vec::new();
    if available() {
        let errors = ERRORS.share();
        for slot in errors.slots.iter() {
            let Some(subid) = ddl_server::shmem::slot_object_here(slot.key) else {
                continue;
            };
            rows.push((
                subid,
                slot.count as i64,
                String::from_utf8_lossy(&slot.message[..slot.len]).into_owned(),
                TimestampWithTimeZone::try_from(slot.at).ok(),
            ));
        }
    }
    TableIterator::new(rows)
}

/// `ddl_sync.failing_event_list()`, under the view `ddl_sync.failing_events`: per subscription
/// of this database stuck on a DDL event (its last replay error under the `error` policy since
/// the server started), the event and the error, for `ddl_sync.resolve_event`.
#[pg_extern(volatile)]
#[allow(clippy::type_complexity)] // pgrx's form of a set-returning function: one name per column
fn failing_event_list() -> TableIterator<
    'static,
    (
        name!(subid, pg_sys::Oid),
        name!(origin_sysid, i64),
        name!(origin_lsn, String),
        name!(sql, String),
        name!(error, String),
        name!(failed_at, Option<TimestampWithTimeZone>),
        name!(attempts, i64),
        name!(decided, bool),
    ),
> {
    let mut rows = Vec::new();
    if available() {
        let errors = ERRORS.share();
        for slot in errors.slots.iter() {
            let Some(subid) = ddl_server::shmem::slot_object_here(slot.key) else {
                continue;
            };
            if slot.origin == (0, 0) {
                continue;
            }
            rows.push((
                subid,
                slot.origin.0,
                ddl_server::text::lsn(ddl_wire::Lsn(slot.origin.1)),
                String::from_utf8_lossy(&slot.sql[..slot.sql_len]).into_owned(),
                String::from_utf8_lossy(&slot.message[..slot.len]).into_owned(),
                TimestampWithTimeZone::try_from(slot.at).ok(),
                slot.count as i64,
                slot.decided,
            ));
        }
    }
    TableIterator::new(rows)
}

/// `ddl_sync.reset_subscription_stats(subscription)`: sets the counters of `subscription` (of
/// every subscription of this database when NULL) to zero and forgets its replay errors; the
/// rows of subscriptions that no longer exist go. (What a transaction still prepared here
/// counted is added when it commits.)
#[pg_extern(volatile)]
fn reset_subscription_stats(subscription: default!(Option<&str>, "NULL")) {
    let subid = subscription.map(subscription_oid);
    // The apply workers write their counts without an UPDATE's re-reading of a row changed
    // meanwhile: each takes its row's lock first, and so does this.
    let rows = match subid {
        Some(subid) => vec![subid],
        None => Spi::connect(|client| {
            client
                .select(
                    "SELECT subid FROM ddl_sync.subscription_counters
                     UNION SELECT subid FROM ddl_sync.prepared_counts",
                    None,
                    &[],
                )?
                .map(|row| row.get::<pg_sys::Oid>(1))
                .filter_map(Result::transpose)
                .collect::<Result<Vec<_>, _>>()
        })
        .or_internal("cannot read ddl_sync.subscription_counters"),
    };
    for subid in rows {
        // SAFETY: in the function's transaction.
        unsafe { ddl_server::extension_tables::lock_row(super::counters::COUNTERS, subid) };
    }
    Spi::run_with_args(
        "UPDATE ddl_sync.subscription_counters
            SET applied = 0, verified = 0, diverged = 0, skipped = 0, refused = 0, failed = 0,
                duplicates = 0,
                last_applied_lsn = NULL, last_applied_at = NULL,
                last_error = NULL, last_error_at = NULL, stats_reset = pg_catalog.now()
          WHERE $1 IS NULL OR subid = $1",
        &[subid.into()],
    )
    .and_then(|()| {
        // What transactions still prepared counted is added when they commit.
        Spi::run_with_args(
            "DELETE FROM ddl_sync.prepared_counts WHERE $1 IS NULL OR subid = $1",
            &[subid.into()],
        )
    })
    .and_then(|()| {
        Spi::run(
            "DELETE FROM ddl_sync.subscription_counters c
              WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.oid = c.subid)",
        )
    })
    .or_internal("cannot reset ddl_sync.subscription_counters");
    forget(subid);
}
