//! Backend state that must not outlive its transaction: one registration of PostgreSQL's
//! transaction callbacks per library, shared by everything in it that keeps such state.

use pgrx::pg_sys;
use std::cell::RefCell;

/// How a transaction or subtransaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The transaction is committing or preparing (every commit-side event, the `PRE_` ones
    /// included, so this can come more than once per transaction).
    Committed,
    /// The transaction aborted.
    Aborted,
    /// A subtransaction at nesting `level` aborted.
    SubAborted { level: i32 },
}

/// What is told of each end.
pub type Listener = fn(End);

thread_local! {
    static LISTENERS: RefCell<Vec<Listener>> = const { RefCell::new(Vec::new()) };
}

/// Calls `listener` at the end of every transaction and at the abort of every subtransaction.
///
/// # Safety
/// Call from `_PG_init` (a listener runs inside PostgreSQL's transaction callbacks: it must
/// not raise an ERROR).
pub unsafe fn at_end(listener: Listener) {
    let first = LISTENERS.with_borrow_mut(|l| {
        l.push(listener);
        l.len() == 1
    });
    if first {
        // SAFETY: static functions, registered once per process; PostgreSQL never unloads
        // a library, so they outlive every transaction.
        unsafe {
            pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
        }
    }
}

fn tell(end: End) {
    LISTENERS.with_borrow(|l| l.iter().for_each(|listener| listener(end)));
}

unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent as E;
    tell(match event {
        E::XACT_EVENT_ABORT | E::XACT_EVENT_PARALLEL_ABORT => End::Aborted,
        _ => End::Committed,
    });
}

unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _mine: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        // SAFETY: the callback runs inside the aborting subtransaction, whose level this is.
        let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
        tell(End::SubAborted { level });
    }
}
