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

use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use pgrx::{pg_sys, PGRXSharedMemory, PgLwLock, PgSharedMemoryInitialization};

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
        };
        Errors {
            slots: [free; SUBSCRIPTIONS],
        }
    }
}

static ERRORS: PgLwLock<Errors> = unsafe { PgLwLock::new(c"ddl_sync replay errors") };

/// Set in the postmaster while it preloads the library; inherited by every process it starts.
static mut IN_SHARED_MEMORY: bool = false;
static mut PREVIOUS_REQUEST: pg_sys::shmem_request_hook_type = None;
static mut PREVIOUS_STARTUP: pg_sys::shmem_startup_hook_type = None;

/// Requests the shared memory; does nothing unless the library is being preloaded.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn init() {
    if !pg_sys::process_shared_preload_libraries_in_progress {
        return;
    }
    PREVIOUS_REQUEST = pg_sys::shmem_request_hook;
    pg_sys::shmem_request_hook = Some(shmem_request);
    PREVIOUS_STARTUP = pg_sys::shmem_startup_hook;
    pg_sys::shmem_startup_hook = Some(shmem_startup);
    IN_SHARED_MEMORY = true;
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    if let Some(previous) = PREVIOUS_REQUEST {
        pg_guard_ffi_boundary(|| previous());
    }
    ERRORS.on_shmem_request();
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    if let Some(previous) = PREVIOUS_STARTUP {
        pg_guard_ffi_boundary(|| previous());
    }
    ERRORS.on_shmem_startup(Errors::default());
}

fn available() -> bool {
    // SAFETY: written once, in the postmaster, before any backend exists.
    unsafe { IN_SHARED_MEMORY }
}

fn database() -> u64 {
    // SAFETY: reads a backend global.
    u64::from(u32::from(unsafe { pg_sys::MyDatabaseId }))
}

fn key(subscription: pg_sys::Oid) -> u64 {
    (database() << 32) | u64::from(u32::from(subscription))
}

/// Runs `f`; an ERROR it raises is recorded for `subscription`, then raised again.
pub fn recording<T>(subscription: pg_sys::Oid, f: impl FnOnce() -> T) -> T {
    PgTryBuilder::new(std::panic::AssertUnwindSafe(f))
        .catch_others(|error| {
            let message = match &error {
                pg_sys::panic::CaughtError::PostgresError(e)
                | pg_sys::panic::CaughtError::ErrorReport(e)
                | pg_sys::panic::CaughtError::RustPanic { ereport: e, .. } => {
                    e.message().to_string()
                }
            };
            record(subscription, &message);
            error.rethrow()
        })
        .execute()
}

/// Counts an error of `subscription` and keeps `message` as its last.
pub fn record(subscription: pg_sys::Oid, message: &str) {
    if !available() {
        return;
    }
    let key = key(subscription);
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut errors = ERRORS.exclusive();
    let at = match errors.slots.iter().position(|s| s.key == key) {
        Some(at) => at,
        None => match errors.slots.iter().position(|s| s.key == 0) {
            Some(at) => at,
            None => return, // full: the server log still has it
        },
    };
    let slot = &mut errors.slots[at];
    let mut len = message.len().min(MESSAGE);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    slot.key = key;
    slot.count += 1;
    slot.at = now;
    slot.len = len;
    slot.message[..len].copy_from_slice(&message.as_bytes()[..len]);
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
            None => slot.key != 0 && slot.key >> 32 == database(),
        };
        if wanted {
            slot.key = 0;
            slot.count = 0;
            slot.len = 0;
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
            if slot.key == 0 || slot.key >> 32 != database() {
                continue;
            }
            rows.push((
                pg_sys::Oid::from(slot.key as u32),
                slot.count as i64,
                String::from_utf8_lossy(&slot.message[..slot.len]).into_owned(),
                TimestampWithTimeZone::try_from(slot.at).ok(),
            ));
        }
    }
    TableIterator::new(rows)
}

/// `ddl_sync.reset_subscription_stats(subscription)`: sets the counters of `subscription` (of
/// every subscription of this database when NULL) to zero and forgets its replay errors; the
/// rows of subscriptions that no longer exist go.
#[pg_extern(volatile)]
fn reset_subscription_stats(subscription: default!(Option<&str>, "NULL")) {
    let subid = subscription.map(|name| {
        Spi::get_one_with_args::<pg_sys::Oid>(
            "SELECT s.oid FROM pg_catalog.pg_subscription s
              WHERE s.subname = $1
                AND s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d
                                  WHERE d.datname = pg_catalog.current_database())",
            &[name.into()],
        )
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                format!("subscription \"{name}\" does not exist")
            );
        })
    });
    Spi::run_with_args(
        "UPDATE ddl_sync.subscription_counters
            SET applied = 0, skipped = 0, refused = 0, failed = 0, duplicates = 0,
                last_applied_lsn = NULL, last_applied_at = NULL,
                last_error = NULL, last_error_at = NULL, stats_reset = pg_catalog.now()
          WHERE $1 IS NULL OR subid = $1",
        &[subid.into()],
    )
    .and_then(|()| {
        Spi::run(
            "DELETE FROM ddl_sync.subscription_counters c
              WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.oid = c.subid)",
        )
    })
    .unwrap_or_else(|e| error!("ddl_sync: cannot reset ddl_sync.subscription_counters: {e}"));
    forget(subid);
}
