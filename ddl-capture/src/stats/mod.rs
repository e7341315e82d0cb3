//! Publisher statistics: per publication, how many statements were captured for it, filtered
//! by its rules (and by which rule), and emitted by decoding sessions that asked for it.
//!
//! The counting happens in different processes: capture in the backends that run DDL,
//! emission in walsenders (and in `pg_logical_slot_*_changes` callers). So the counters live in
//! shared memory, which `ddl_pgoutput` requests when it is in `shared_preload_libraries`
//! (without the preload nothing is counted, and the SQL functions return no rows). They are
//! kept until the server stops or `ddl_sync.reset_publication_stats` clears them, like
//! PostgreSQL's own cumulative statistics between resets, but without a file at shutdown.
//!
//! Hot path: one shared LWLock acquisition and a scan of a small fixed table to find the
//! publication's slot, then atomic increments; the exclusive lock is taken only the first time
//! a publication (or a filtering rule) is seen, and by resets. A table that is full counts
//! nothing more for new keys (see [`PUBLICATIONS`], [`RULES`]).

mod pending;
mod sql;

pub use pending::count_capture;
pub use sql::{
    ddl_sync_publication_rejected_stats_wrapper, ddl_sync_publication_rule_stats_wrapper,
    ddl_sync_publication_stats_wrapper, ddl_sync_reset_publication_stats_wrapper,
    pg_finfo_ddl_sync_publication_rejected_stats_wrapper,
    pg_finfo_ddl_sync_publication_rule_stats_wrapper, pg_finfo_ddl_sync_publication_stats_wrapper,
    pg_finfo_ddl_sync_reset_publication_stats_wrapper,
};

use pgrx::{pg_sys, PGRXSharedMemory, PgLwLock};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

/// How many (database, publication) pairs are counted.
pub const PUBLICATIONS: usize = 512;
/// How many (publication, rule) pairs that filtered something are counted.
pub const RULES: usize = 2048;

/// The counters of one publication. `key` is `database << 32 | publication`, 0 when free;
/// timestamps are `TimestampTz`, 0 for never.
#[derive(Default)]
struct PublicationSlot {
    key: AtomicU64,
    captured: AtomicU64,
    filtered: AtomicU64,
    emitted: AtomicU64,
    last_captured_at: AtomicI64,
    last_emitted_at: AtomicI64,
    last_emitted_lsn: AtomicU64,
    /// `ddl_sync` messages refused while decoding for the publication (not sealed by the
    /// capture in their transaction, or malformed).
    rejected: AtomicU64,
    last_rejected_at: AtomicI64,
    last_rejected_lsn: AtomicU64,
    reset_at: AtomicI64,
}

/// How often one rule kept statements from one publication. `row` is the `publication_sync`
/// row (0: no enabled row applied), `rule` its rule number or -1 for the row's kinds.
#[derive(Default)]
struct RuleSlot {
    key: AtomicU64,
    row: AtomicU32,
    rule: AtomicI32,
    filtered: AtomicU64,
}

struct Stats {
    publications: [PublicationSlot; PUBLICATIONS],
    rules: [RuleSlot; RULES],
}

// SAFETY: only atomics, no pointers: valid in every process that maps the segment.
unsafe impl PGRXSharedMemory for Stats {}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            publications: std::array::from_fn(|_| PublicationSlot::default()),
            rules: std::array::from_fn(|_| RuleSlot::default()),
        }
    }
}

// SAFETY: a name no other segment uses (ddl_sync.so's is "ddl_sync replay errors").
static STATS: PgLwLock<Stats> = unsafe { PgLwLock::new(c"ddl_sync publication statistics") };

/// Places the statistics in shared memory; does nothing unless the library is being preloaded.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn init() {
    // SAFETY: the caller's promise.
    unsafe {
        if ddl_server::shmem::preload(&STATS) {
            pending::follow_transactions();
        }
    }
}

fn available() -> bool {
    ddl_server::shmem::available()
}

/// Runs `f` on the slot of `key`, claiming a free one the first time. Nothing when the table
/// is full.
fn with_publication(key: u64, f: impl Fn(&PublicationSlot)) {
    {
        let stats = STATS.share();
        if let Some(slot) = stats
            .publications
            .iter()
            .find(|s| s.key.load(Relaxed) == key)
        {
            f(slot);
            return;
        }
    }
    let stats = STATS.exclusive();
    let keys = stats.publications.iter().map(|s| s.key.load(Relaxed));
    if let Some(at) = ddl_server::shmem::slot_for(keys, key) {
        let slot = &stats.publications[at];
        slot.key.store(key, Relaxed);
        f(slot);
    }
}

/// Counts one statement filtered by (`row`, `rule`) for the publication `key`.
fn count_rule(key: u64, row: u32, rule: i32) {
    let matches = |s: &RuleSlot| {
        s.key.load(Relaxed) == key && s.row.load(Relaxed) == row && s.rule.load(Relaxed) == rule
    };
    {
        let stats = STATS.share();
        if let Some(slot) = stats.rules.iter().find(|s| matches(s)) {
            slot.filtered.fetch_add(1, Relaxed);
            return;
        }
    }
    let stats = STATS.exclusive();
    let slot = stats.rules.iter().find(|s| matches(s)).or_else(|| {
        let free = stats.rules.iter().find(|s| s.key.load(Relaxed) == 0)?;
        free.key.store(key, Relaxed);
        free.row.store(row, Relaxed);
        free.rule.store(rule, Relaxed);
        Some(free)
    });
    if let Some(slot) = slot {
        slot.filtered.fetch_add(1, Relaxed);
    }
}

/// Counts a DDL event sent at `lsn` to a decoding session that asked for `publication`.
pub fn count_emitted(publication: pg_sys::Oid, lsn: pg_sys::XLogRecPtr) {
    if !available() {
        return;
    }
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    with_publication(ddl_server::shmem::slot_key(publication), |slot| {
        slot.emitted.fetch_add(1, Relaxed);
        slot.last_emitted_at.store(now, Relaxed);
        slot.last_emitted_lsn.fetch_max(lsn, Relaxed);
    });
}

/// Counts a `ddl_sync` message at `lsn` that a decoding session asking for `publication` refused.
pub fn count_rejected(publication: pg_sys::Oid, lsn: pg_sys::XLogRecPtr) {
    if !available() {
        return;
    }
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    with_publication(ddl_server::shmem::slot_key(publication), |slot| {
        slot.rejected.fetch_add(1, Relaxed);
        slot.last_rejected_at.store(now, Relaxed);
        slot.last_rejected_lsn.fetch_max(lsn, Relaxed);
    });
}
