//! The capture's counts wait for their transaction: a statement whose (sub)transaction rolls
//! back took its record with it and was never captured, so it must not be counted either.
//! Counts are kept per subtransaction in the backend, handed to the parent when a
//! subtransaction commits, dropped when it aborts, and added to shared memory when the
//! top-level transaction commits or is prepared.

use super::{available, count_rule, key, with_publication};
use crate::rules::Verdict;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;

struct Pending {
    subxact: pg_sys::SubTransactionId,
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
    // SAFETY: reads the current transaction state.
    let subxact = unsafe { pg_sys::GetCurrentSubTransactionId() };
    PENDING.with_borrow_mut(|pending| {
        if pending.is_empty() {
            // SAFETY: registered once per process, and only when there is something to count.
            unsafe { register() };
        }
        pending.extend(verdicts.iter().map(|&(publication, verdict)| Pending {
            subxact,
            publication,
            verdict,
        }));
    });
}

/// Registers the callbacks the first time something is counted in this process.
unsafe fn register() {
    static mut REGISTERED: bool = false;
    if !REGISTERED {
        pg_sys::RegisterXactCallback(Some(on_xact), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(on_subxact), std::ptr::null_mut());
        REGISTERED = true;
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_xact(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    match event {
        XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT | XACT_EVENT_PREPARE => flush(),
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT => PENDING.with_borrow_mut(Vec::clear),
        _ => {}
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_subxact(
    event: pg_sys::SubXactEvent::Type,
    subxact: pg_sys::SubTransactionId,
    parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent::*;
    PENDING.with_borrow_mut(|pending| match event {
        SUBXACT_EVENT_COMMIT_SUB => pending
            .iter_mut()
            .filter(|p| p.subxact == subxact)
            .for_each(|p| p.subxact = parent),
        // Its own subtransactions ended before it: what they counted is already its own.
        SUBXACT_EVENT_ABORT_SUB => pending.retain(|p| p.subxact != subxact),
        _ => {}
    });
}

/// Adds the committed counts to shared memory. Runs after the commit: takes LWLocks, never
/// raises an error.
unsafe fn flush() {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    if pending.is_empty() {
        return;
    }
    let database = pg_sys::MyDatabaseId;
    let now = pg_sys::GetCurrentTimestamp();
    for p in pending {
        let key = key(database, p.publication);
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
