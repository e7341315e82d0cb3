//! The counters of `ddl_sync.subscription_counters` (sql/stats.sql): one row per subscription,
//! written in the apply worker's transaction, so exactly as durable as the DDL they count, and
//! kept when the apply log is purged.
//!
//! The apply trigger counts each event in backend memory, and the counts are written once per
//! transaction, just before it commits (or is prepared): an UPDATE costs some 100,000
//! instructions, a migration's transaction holds several events, and what is written is the
//! same. Counts made in a subtransaction that rolls back (a streamed transaction's
//! subtransaction aborted on the publisher, which a parallel apply worker rolls back) go with
//! it, as the row would have; an aborted transaction takes all of them.

use crate::privilege::AsCatalogOwner;
use ddl_server::errors::OrInternal;
use ddl_server::xact;
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::{register_xact_callback, PgXactCallbackEvent};
use std::cell::RefCell;

/// The counts of one subscription made at one (sub)transaction level, not yet written.
#[derive(Default)]
struct Pending {
    subid: pg_sys::Oid,
    /// The nesting level that counted them (see `xact::nest_level`).
    level: i32,
    applied: i64,
    skipped: i64,
    refused: i64,
    failed: i64,
    duplicates: i64,
    verified: i64,
    diverged: i64,
    /// The last applied (or diverged) event: its LSN, and when.
    last_applied: Option<(u64, pg_sys::TimestampTz)>,
    /// The last problem: `status: detail`, and when.
    last_error: Option<(String, pg_sys::TimestampTz)>,
}

thread_local! {
    /// In the order counted: a later entry's `last_*` are the later ones.
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// Counts one event of subscription `subid` (nothing without one): `status` is an apply status
/// or `duplicate`; `verified`: applied, and what it made here shown equal to the publisher's
/// description. `lsn` is the event's (`ddl_sync.events.lsn`).
#[inline(never)] // a phase of `cargo xtask bench apply-instructions`
pub fn count(
    subid: Option<pg_sys::Oid>,
    status: &str,
    detail: Option<&str>,
    lsn: u64,
    verified: bool,
) {
    let Some(subid) = subid else {
        return;
    };
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let level = xact::nest_level();
    let first = PENDING.with_borrow_mut(|pending| {
        let first = pending.is_empty();
        let at = match pending.last() {
            Some(p) if p.subid == subid && p.level == level => pending.len() - 1,
            _ => {
                pending.push(Pending {
                    subid,
                    level,
                    ..Pending::default()
                });
                pending.len() - 1
            }
        };
        let p = &mut pending[at];
        let one = |counted: bool| i64::from(counted);
        p.applied += one(status == "applied");
        p.skipped += one(status == "skipped");
        p.refused += one(status == "refused");
        p.failed += one(status == "failed");
        p.duplicates += one(status == "duplicate");
        p.verified += one(status == "applied" && verified);
        p.diverged += one(status == "diverged");
        if matches!(status, "applied" | "diverged") {
            p.last_applied = Some((lsn, now));
        }
        if matches!(status, "diverged" | "refused" | "failed") {
            p.last_error = Some((format!("{status}: {}", detail.unwrap_or("")), now));
        }
        first
    });
    if first {
        // pgrx forgets both at the transaction's end, whichever comes.
        register_xact_callback(PgXactCallbackEvent::PreCommit, write);
        register_xact_callback(PgXactCallbackEvent::PrePrepare, write);
    }
}

/// Follows the (sub)transaction ends: what a rolled-back level counted is forgotten, what a
/// committed subtransaction counted becomes its parent's.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn follow_transaction_ends() {
    // SAFETY: the caller's promise; the listener only changes backend memory, so it cannot
    // raise an ERROR inside PostgreSQL's transaction callbacks.
    unsafe {
        xact::at_end(|end| match end {
            xact::End::Aborted | xact::End::Committed => PENDING.with_borrow_mut(Vec::clear),
            xact::End::SubAborted { level } => {
                PENDING.with_borrow_mut(|pending| pending.retain(|p| p.level < level))
            }
            xact::End::SubCommitted { level } => PENDING.with_borrow_mut(|pending| {
                for p in pending.iter_mut().filter(|p| p.level == level) {
                    p.level = level - 1;
                }
            }),
            xact::End::Committing => {}
        })
    };
}

/// Writes the transaction's counts, one row per subscription (before its commit).
#[inline(never)] // a phase of `cargo xtask bench apply-instructions`
fn write() {
    let pending = PENDING.take();
    if pending.is_empty() {
        return;
    }
    // The commit runs outside any statement: SPI needs a snapshot to run in. (An ERROR below
    // aborts the transaction, which pops it.)
    // SAFETY: in the transaction, before its commit; popped below.
    unsafe { pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot()) };
    // As the extension's owner, whose table it is, and a local change in replica mode: the
    // commit runs as the subscription's owner, who (on 16+, `pg_create_subscription`) need
    // not be a superuser; the trigger that counted ran as the events table's owner.
    let owner = AsCatalogOwner::enter();
    let mut subids: Vec<pg_sys::Oid> = Vec::new();
    for p in &pending {
        if !subids.contains(&p.subid) {
            subids.push(p.subid);
        }
    }
    for subid in subids {
        let mut total = Pending {
            subid,
            ..Pending::default()
        };
        for p in pending.iter().filter(|p| p.subid == subid) {
            total.applied += p.applied;
            total.skipped += p.skipped;
            total.refused += p.refused;
            total.failed += p.failed;
            total.duplicates += p.duplicates;
            total.verified += p.verified;
            total.diverged += p.diverged;
            total.last_applied = p.last_applied.or(total.last_applied);
            total.last_error = p.last_error.clone().or(total.last_error);
        }
        write_one(&total);
    }
    drop(owner);
    // SAFETY: the snapshot pushed above.
    unsafe { pg_sys::PopActiveSnapshot() };
}

/// Adds `p` to its subscription's row.
fn write_one(p: &Pending) {
    let timestamptz = |at: Option<pg_sys::TimestampTz>| match at {
        // SAFETY: timestamptz is a 64-bit integer passed by value.
        Some(at) => unsafe { DatumWithOid::new(at, pg_sys::TIMESTAMPTZOID) },
        None => DatumWithOid::null_oid(pg_sys::TIMESTAMPTZOID),
    };
    let args = || {
        [
            p.subid.into(),
            p.applied.into(),
            p.skipped.into(),
            p.refused.into(),
            p.failed.into(),
            p.duplicates.into(),
            p.verified.into(),
            p.diverged.into(),
            match p.last_applied {
                // SAFETY: pg_lsn is a 64-bit integer passed by value.
                Some((lsn, _)) => unsafe { DatumWithOid::new(lsn as i64, pg_sys::PG_LSNOID) },
                None => DatumWithOid::null_oid(pg_sys::PG_LSNOID),
            },
            timestamptz(p.last_applied.map(|(_, at)| at)),
            p.last_error.as_ref().map(|(e, _)| e.as_str()).into(),
            timestamptz(p.last_error.as_ref().map(|(_, at)| *at)),
        ]
    };
    let int8 = PgOid::BuiltIn(PgBuiltInOids::INT8OID);
    let timestamptz_type = PgOid::BuiltIn(PgBuiltInOids::TIMESTAMPTZOID);
    let types = [
        PgOid::BuiltIn(PgBuiltInOids::OIDOID),
        int8,
        int8,
        int8,
        int8,
        int8,
        int8,
        int8,
        PgOid::BuiltIn(PgBuiltInOids::PG_LSNOID),
        timestamptz_type,
        PgOid::BuiltIn(PgBuiltInOids::TEXTOID),
        timestamptz_type,
    ];
    // An UPDATE (the row is there from the subscription's first event on), and an INSERT when
    // it found none: INSERT ... ON CONFLICT tries its speculative insertion first at every
    // call, and costs twice as much. (Should a parallel apply worker and the leader both find
    // no row at a subscription's first events, one fails on the key and is retried.)
    let updated = ddl_server::spi::run_kept(
        "UPDATE ddl_sync.subscription_counters SET
             applied = applied OPERATOR(pg_catalog.+) $2,
             skipped = skipped OPERATOR(pg_catalog.+) $3,
             refused = refused OPERATOR(pg_catalog.+) $4,
             failed = failed OPERATOR(pg_catalog.+) $5,
             duplicates = duplicates OPERATOR(pg_catalog.+) $6,
             verified = verified OPERATOR(pg_catalog.+) $7,
             diverged = diverged OPERATOR(pg_catalog.+) $8,
             last_applied_lsn = coalesce($9, last_applied_lsn),
             last_applied_at = coalesce($10, last_applied_at),
             last_error = coalesce($11, last_error),
             last_error_at = coalesce($12, last_error_at)
         WHERE subid OPERATOR(pg_catalog.=) $1",
        &types,
        true,
        &args(),
        |rows| rows.len(),
    )
    .or_internal("cannot count the events in ddl_sync.subscription_counters");
    if updated == 0 {
        ddl_server::spi::run_kept(
            "INSERT INTO ddl_sync.subscription_counters
                 (subid, applied, skipped, refused, failed, duplicates, verified, diverged,
                  last_applied_lsn, last_applied_at, last_error, last_error_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            &types,
            true,
            &args(),
            |_| (),
        )
        .or_internal("cannot count the events in ddl_sync.subscription_counters");
    }
}
