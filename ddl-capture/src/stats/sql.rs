//! The statistics as SQL functions of `ddl_pgoutput.so`, which the `ddl_sync` extension
//! declares (`LANGUAGE c`) and shows as the views `ddl_sync.publication_stats` and
//! `ddl_sync.publication_rule_stats`. Each shows the current database's publications only.

use super::{available, RuleSlot, STATS};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

fn timestamp(value: i64) -> Option<TimestampWithTimeZone> {
    (value != 0)
        .then(|| TimestampWithTimeZone::try_from(value).ok())
        .flatten()
}

/// The publication of a slot's key, when the slot is this database's.
fn publication_here(key: u64) -> Option<pg_sys::Oid> {
    ddl_server::shmem::slot_object_here(key)
}

/// One row per publication of this database that counted something since the server started.
// pg_extern reads the column names from the spelled-out tuple: no type alias possible.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile)]
fn ddl_sync_publication_stats() -> TableIterator<
    'static,
    (
        name!(publication, pg_sys::Oid),
        name!(captured, i64),
        name!(filtered, i64),
        name!(emitted, i64),
        name!(last_captured_at, Option<TimestampWithTimeZone>),
        name!(last_emitted_at, Option<TimestampWithTimeZone>),
        name!(last_emitted_lsn, Option<i64>),
        name!(stats_reset, Option<TimestampWithTimeZone>),
    ),
> {
    let mut rows = Vec::new();
    if available() {
        let stats = STATS.share();
        for slot in &stats.publications {
            let Some(publication) = publication_here(slot.key.load(Relaxed)) else {
                continue;
            };
            let lsn = slot.last_emitted_lsn.load(Relaxed);
            rows.push((
                publication,
                slot.captured.load(Relaxed) as i64,
                slot.filtered.load(Relaxed) as i64,
                slot.emitted.load(Relaxed) as i64,
                timestamp(slot.last_captured_at.load(Relaxed)),
                timestamp(slot.last_emitted_at.load(Relaxed)),
                (lsn != 0).then_some(lsn as i64),
                timestamp(slot.reset_at.load(Relaxed)),
            ));
        }
    }
    TableIterator::new(rows)
}

/// One row per publication of this database for which a decoding session refused `ddl_sync`
/// messages (forged, copied from another transaction, or malformed). A function of its own so
/// that the previous version's `publication_counters()` keeps its columns.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile)]
fn ddl_sync_publication_rejected_stats() -> TableIterator<
    'static,
    (
        name!(publication, pg_sys::Oid),
        name!(rejected, i64),
        name!(last_rejected_at, Option<TimestampWithTimeZone>),
        name!(last_rejected_lsn, Option<i64>),
    ),
> {
    let mut rows = Vec::new();
    if available() {
        let stats = STATS.share();
        for slot in &stats.publications {
            let rejected = slot.rejected.load(Relaxed);
            let Some(publication) = publication_here(slot.key.load(Relaxed)) else {
                continue;
            };
            if rejected == 0 {
                continue;
            }
            let lsn = slot.last_rejected_lsn.load(Relaxed);
            rows.push((
                publication,
                rejected as i64,
                timestamp(slot.last_rejected_at.load(Relaxed)),
                (lsn != 0).then_some(lsn as i64),
            ));
        }
    }
    TableIterator::new(rows)
}

/// One row per (publication, `publication_sync` row, rule) that kept statements from a
/// publication of this database: `rule` is the rule's number in the row's rules (from 0), or
/// -1 for the row's kinds; `row` 0 means no enabled row applied.
#[pg_extern(volatile)]
fn ddl_sync_publication_rule_stats() -> TableIterator<
    'static,
    (
        name!(publication, pg_sys::Oid),
        name!(row, pg_sys::Oid),
        name!(rule, i32),
        name!(filtered, i64),
    ),
> {
    let mut rows = Vec::new();
    if available() {
        let stats = STATS.share();
        for slot in &stats.rules {
            let Some(publication) = publication_here(slot.key.load(Relaxed)) else {
                continue;
            };
            rows.push((
                publication,
                pg_sys::Oid::from(slot.row.load(Relaxed)),
                slot.rule.load(Relaxed),
                slot.filtered.load(Relaxed) as i64,
            ));
        }
    }
    TableIterator::new(rows)
}

/// Sets the counters of `publication` (all of this database's when NULL) to zero, and forgets
/// publications that no longer exist.
#[pg_extern(volatile)]
fn ddl_sync_reset_publication_stats(publication: Option<pg_sys::Oid>) {
    if !available() {
        return;
    }
    let wanted =
        |key: u64| publication_here(key).is_some_and(|here| publication.is_none_or(|p| here == p));
    let keys: Vec<u64> = {
        let stats = STATS.share();
        let keys = stats.publications.iter().map(|s| s.key.load(Relaxed));
        keys.filter(|k| wanted(*k)).collect()
    };
    // Looked up before the exclusive lock: a catalog lookup may read from disk.
    let gone: Vec<u64> = keys
        .into_iter()
        .filter(|k| {
            let publication = pg_sys::Oid::from(*k as u32);
            // SAFETY: a syscache lookup in a transaction.
            unsafe { pg_sys::get_publication_name(publication, true) }.is_null()
        })
        .collect();
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let stats = STATS.exclusive();
    for slot in &stats.publications {
        let key = slot.key.load(Relaxed);
        if !wanted(key) {
            continue;
        }
        slot.captured.store(0, Relaxed);
        slot.filtered.store(0, Relaxed);
        slot.emitted.store(0, Relaxed);
        slot.last_captured_at.store(0, Relaxed);
        slot.last_emitted_at.store(0, Relaxed);
        slot.last_emitted_lsn.store(0, Relaxed);
        slot.rejected.store(0, Relaxed);
        slot.last_rejected_at.store(0, Relaxed);
        slot.last_rejected_lsn.store(0, Relaxed);
        slot.reset_at.store(now, Relaxed);
        if gone.contains(&key) {
            slot.reset_at.store(0, Relaxed);
            slot.key.store(0, Relaxed);
        }
    }
    for slot in stats.rules.iter().filter(|s| wanted(s.key.load(Relaxed))) {
        free_rule(slot);
    }
}

fn free_rule(slot: &RuleSlot) {
    slot.filtered.store(0, Relaxed);
    slot.row.store(0, Relaxed);
    slot.rule.store(0, Relaxed);
    slot.key.store(0, Relaxed);
}
