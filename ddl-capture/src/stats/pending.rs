//! The capture's counts wait for their transaction: a statement whose (sub)transaction rolls
//! back took its record with it and was never captured, so it must not be counted either.
//! Counts are kept per subtransaction in the backend, handed to the parent when a
//! subtransaction commits, dropped when it aborts, and added to shared memory when the
//! top-level transaction commits or is prepared.

use super::{available, count_rule, with_publication};
use crate::rules::Verdict;
use ddl_server::xact::{self, End};
use pgrx::pg_sys;
use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;

struct Pending {
    /// The nesting level of the (sub)transaction it is counted in.
    level: i32,
    publication: pg_sys::Oid,
    verdict: Verdict,
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// Notes what each publication decided about a statement the current (sub)transaction ran;
/// counted if it commits.
pub fn count_capture(verdicts: &[(pg_sys::Oid, Verdict)]) {
    if !available() || verdicts.is_empty() {
        return;
    }
    let level = ddl_server::xact::nest_level();
    PENDING.with_borrow_mut(|pending| {
        pending.extend(verdicts.iter().map(|&(publication, verdict)| Pending {
            level,
            publication,
            verdict,
        }));
    });
}

/// Follows the counts through the ends of their (sub)transactions.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn follow_transactions() {
    // SAFETY: the caller's promise.
    unsafe { xact::at_end(on_end) };
}

fn on_end(end: End) {
    match end {
        End::Committed => flush(),
        End::Aborted => PENDING.with_borrow_mut(Vec::clear),
        // Its own subtransactions ended before it: what they counted is already its own.
        End::SubCommitted { level } => PENDING.with_borrow_mut(|pending| {
            pending
                .iter_mut()
                .filter(|p| p.level == level)
                .for_each(|p| p.level = level - 1)
        }),
        End::SubAborted { level } => {
            PENDING.with_borrow_mut(|pending| pending.retain(|p| p.level < level))
        }
        End::Committing => {}
    }
}

/// Adds the committed counts to shared memory. Runs after the commit: takes LWLocks, never
/// raises an error.
fn flush() {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    if pending.is_empty() {
        return;
    }
    // SAFETY: reads the clock.
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    for p in pending {
        let key = ddl_server::shmem::slot_key(p.publication);
        match p.verdict {
            Verdict::Takes => with_publication(key, |slot| {
                slot.captured.fetch_add(1, Relaxed);
                slot.last_captured_at.store(now, Relaxed);
            }),
            Verdict::Filtered { row, rule } => {
                with_publication(key, |slot| {
                    slot.filtered.fetch_add(1, Relaxed);
                });
                let rule = rule.map_or(-1, |r| i32::try_from(r).unwrap_or(i32::MAX));
                count_rule(key, u32::from(row), rule);
            }
        }
    }
}
