//! The counters of `ddl_sync.subscription_counters` (sql/stats.sql): one row per subscription,
//! written in the apply worker's transaction, so exactly as durable as the DDL they count, and
//! kept when the apply log is purged.
//!
//! The apply trigger counts each event in backend memory, and the counts are written once per
//! transaction, just before it commits: a migration's transaction holds several events, and
//! what is written is the same. The row is written as a catalog row
//! (`extension_tables::write_row`, some 46,000 instructions; an UPDATE through SPI cost
//! 106,000). A transaction being prepared writes its counts as a row of its own,
//! `ddl_sync.prepared_counts` (see [`write_prepared`]). Counts made in a subtransaction that
//! rolls back (a streamed transaction's subtransaction aborted on the publisher, which a
//! parallel apply worker rolls back) go with it, as the row would have; an aborted
//! transaction takes all of them.

use ddl_server::extension_tables::{self, RowValues};
use ddl_server::xact;
use pgrx::prelude::*;
use pgrx::{register_xact_callback, PgXactCallbackEvent};
use std::cell::RefCell;
use std::ffi::CStr;

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
        register_xact_callback(PgXactCallbackEvent::PrePrepare, write_prepared);
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

/// The transaction's counts, one per subscription.
fn totals() -> Vec<Pending> {
    let mut totals: Vec<Pending> = Vec::new();
    for p in PENDING.take() {
        let at = match totals.iter().position(|t| t.subid == p.subid) {
            Some(at) => at,
            None => {
                totals.push(Pending {
                    subid: p.subid,
                    ..Pending::default()
                });
                totals.len() - 1
            }
        };
        let total = &mut totals[at];
        total.applied += p.applied;
        total.skipped += p.skipped;
        total.refused += p.refused;
        total.failed += p.failed;
        total.duplicates += p.duplicates;
        total.verified += p.verified;
        total.diverged += p.diverged;
        total.last_applied = p.last_applied.or(total.last_applied);
        total.last_error = p.last_error.or(total.last_error.take());
    }
    totals
}

/// Writes the transaction's counts into their subscriptions' rows (before its commit).
#[inline(never)] // a phase of `cargo xtask bench apply-instructions`
fn write() {
    for total in totals() {
        write_one(total);
    }
}

/// Writes a transaction's counts as it is prepared: a row of `prepared_counts` each, which
/// holds no lock another transaction needs. The subscription's own row is not written: the
/// prepared transaction would hold it until its COMMIT PREPARED, which the apply worker
/// reaches only after applying what committed on the publisher meanwhile, whose counts it
/// writes there (the worker would wait for itself).
fn write_prepared() {
    // SAFETY: in the transaction being prepared, which has an ID (it wrote its apply log rows).
    let xid = unsafe { pg_sys::GetTopFullTransactionId() }.value as i64;
    for total in totals() {
        // SAFETY: in the transaction, before it is prepared; every NOT NULL column set, with
        // values of their types (see `add_to`).
        unsafe {
            extension_tables::insert_row(PREPARED, |row| {
                row.set(c"subid", Some(pg_sys::Datum::from(total.subid)));
                row.set(c"prepared_xid", Some(pg_sys::Datum::from(xid)));
                total.add_to(row);
            })
        };
    }
}

/// Adds `p`, and the counts of the transactions prepared here and committed since (deleting
/// their rows), to its subscription's row (made at the subscription's first event), as a
/// catalog row: the commit runs as the subscription's owner, who (on 16+,
/// `pg_create_subscription`) need not be allowed to write the table, and the table's REPLICA
/// trigger would keep this change, the extension's own. Its other writer,
/// `reset_subscription_stats`, takes the row's lock too.
fn write_one(mut p: Pending) {
    // SAFETY: in the transaction, before its commit; the lock that the row's writers take
    // (write_row takes it too; the rows of prepared transactions are taken under it); each
    // column read and written with its type (see `add_row` and `add_to`).
    unsafe {
        if may_have_prepared(p.subid) {
            extension_tables::lock_row(COUNTERS, p.subid);
            extension_tables::take_rows(PREPARED, c"subid", p.subid, |row| p.add_row(row));
        }
        extension_tables::write_row(COUNTERS, c"subid", p.subid, |row| p.add_to(row));
    }
}

/// Whether subscription `subid` may have rows in [`PREPARED`]: not when this is its apply
/// worker and it does not use two_phase (a scan of the table at every commit of every other
/// subscription costs some 8,000 instructions). A row left behind by a subscription whose
/// two_phase was turned off since (18 allows it) still counts in `subscription_stats`.
fn may_have_prepared(subid: pg_sys::Oid) -> bool {
    // SAFETY: the apply worker's subscription, or NULL in another backend; read, not kept.
    let worker = unsafe { pg_sys::MySubscription.as_ref() };
    // LOGICALREP_TWOPHASE_STATE_DISABLED
    worker.is_none_or(|s| s.oid != subid || s.twophasestate as u8 != b'd')
}

impl Pending {
    /// Adds the counts of `row`, a row of [`PREPARED`], and takes its last applied event and
    /// last problem where they are later than these.
    fn add_row(&mut self, row: &RowValues) {
        let count = |column: &CStr| row.get(column).map_or(0, |d| d.value() as i64);
        self.applied += count(c"applied");
        self.skipped += count(c"skipped");
        self.refused += count(c"refused");
        self.failed += count(c"failed");
        self.duplicates += count(c"duplicates");
        self.verified += count(c"verified");
        self.diverged += count(c"diverged");
        let at = |column: &CStr| row.get(column).map(|d| d.value() as pg_sys::TimestampTz);
        if let (Some(lsn), Some(at)) = (row.get(c"last_applied_lsn"), at(c"last_applied_at")) {
            if self.last_applied.is_none_or(|(_, mine)| at > mine) {
                self.last_applied = Some((lsn.value() as u64, at));
            }
        }
        if let (Some(error), Some(at)) = (row.get(c"last_error"), at(c"last_error_at")) {
            if self.last_error.as_ref().is_none_or(|(_, mine)| at > *mine) {
                // SAFETY: a text column of the row, valid while the caller holds it.
                self.last_error = Some((unsafe { ddl_server::text::utf8_text(error) }, at));
            }
        }
    }

    /// Adds these counts to `row` (a row of either table; a NULL count is zero), and sets its
    /// last applied event and last problem where these are later.
    fn add_to(&self, row: &mut RowValues) {
        let add = |row: &mut RowValues, column: &CStr, n: i64| {
            let before = row.get(column).map_or(0, |d| d.value() as i64);
            row.set(column, Some(pg_sys::Datum::from(before + n)));
        };
        add(row, c"applied", self.applied);
        add(row, c"skipped", self.skipped);
        add(row, c"refused", self.refused);
        add(row, c"failed", self.failed);
        add(row, c"duplicates", self.duplicates);
        add(row, c"verified", self.verified);
        add(row, c"diverged", self.diverged);
        let later = |row: &RowValues, column: &CStr, at: pg_sys::TimestampTz| {
            row.get(column)
                .is_none_or(|d| at > d.value() as pg_sys::TimestampTz)
        };
        if let Some((lsn, at)) = self.last_applied {
            if later(row, c"last_applied_at", at) {
                row.set(c"last_applied_lsn", Some(pg_sys::Datum::from(lsn)));
                row.set(c"last_applied_at", Some(pg_sys::Datum::from(at)));
            }
        }
        if let Some((error, at)) = &self.last_error {
            if later(row, c"last_error_at", *at) {
                row.set(c"last_error", error.as_str().into_datum());
                row.set(c"last_error_at", Some(pg_sys::Datum::from(*at)));
            }
        }
    }
}

/// The table counted into.
pub(super) const COUNTERS: &CStr = c"subscription_counters";

/// The counts of transactions prepared here, until added to [`COUNTERS`].
pub(super) const PREPARED: &CStr = c"prepared_counts";
