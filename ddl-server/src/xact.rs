//! Transactions: backend state that must not outlive its transaction (one registration of
//! PostgreSQL's transaction callbacks per library, shared by everything in it that keeps such
//! state), and subtransactions that catch an ERROR ([`in_subtransaction`]).

use pgrx::pg_sys;
use pgrx::PgTryBuilder;
use std::cell::RefCell;

/// How a transaction or subtransaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The transaction is about to commit or be prepared (the `PRE_` events): its statements
    /// are done, the commit may still fail.
    Committing,
    /// The transaction committed or was prepared.
    Committed,
    /// The transaction aborted.
    Aborted,
    /// A subtransaction at nesting `level` committed into its parent.
    SubCommitted { level: i32 },
    /// A subtransaction at nesting `level` aborted.
    SubAborted { level: i32 },
}

/// What is told of each end.
pub type Listener = fn(End);

thread_local! {
    static LISTENERS: RefCell<Vec<Listener>> = const { RefCell::new(Vec::new()) };
}

/// Calls `listener` at the end of every transaction and subtransaction.
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

extern "C-unwind" {
    /// The server's own, not pgrx's binding, whose guard (a `sigsetjmp`) would cost more than
    /// the rest of the callback: it only reads a field, and cannot fail. Called for every
    /// subtransaction of every backend (and every transaction that logical decoding replays
    /// through the SQL functions).
    #[link_name = "GetCurrentTransactionNestLevel"]
    fn nest_level() -> std::ffi::c_int;
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
        E::XACT_EVENT_COMMIT | E::XACT_EVENT_PARALLEL_COMMIT | E::XACT_EVENT_PREPARE => {
            End::Committed
        }
        _ => End::Committing,
    });
}

unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _mine: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent as E;
    if event == E::SUBXACT_EVENT_ABORT_SUB || event == E::SUBXACT_EVENT_COMMIT_SUB {
        // SAFETY: the callback runs inside the ending subtransaction, whose level this is.
        let level = unsafe { nest_level() };
        tell(if event == E::SUBXACT_EVENT_ABORT_SUB {
            End::SubAborted { level }
        } else {
            End::SubCommitted { level }
        });
    }
}

/// An ERROR caught by [`in_subtransaction`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaughtError {
    /// Its SQLSTATE, packed as `ErrorData.sqlerrcode` (`MAKE_SQLSTATE`).
    pub sqlstate: i32,
    /// Its message.
    pub message: String,
}

impl std::fmt::Display for CaughtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Runs `f` in a subtransaction: an ERROR inside rolls back only what `f` did and comes back as
/// a [`CaughtError`], and so does a value `keep` rejects (a failure reported without an ERROR, such
/// as an adapter's fatal result, undoes what came before it as an ERROR would). For the `skip`
/// conflict policy, and for lookups that may fail where failing is an answer.
///
/// Runs in a transaction; `f` must leave the memory context and resource owner as it found
/// them (both are restored after it anyway).
pub fn in_subtransaction<T>(f: impl FnOnce() -> T, keep: fn(&T) -> bool) -> Result<T, CaughtError> {
    // Unwind-safe enough: after an ERROR, what `f` changed in the server is rolled back with the
    // subtransaction, and the caller only restores the role it saved before.
    let f = std::panic::AssertUnwindSafe(f);
    // SAFETY: the pattern of PL/pgSQL's exception blocks: begin, then release or roll back,
    // restoring the memory context and resource owner of the caller either way; `f` runs in
    // the subtransaction, and an ERROR it raises is caught before the subtransaction is gone.
    unsafe {
        let memory = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(memory);
        PgTryBuilder::new(|| {
            let value = f();
            if keep(&value) {
                pg_sys::ReleaseCurrentSubTransaction();
            } else {
                pg_sys::RollbackAndReleaseCurrentSubTransaction();
            }
            pg_sys::MemoryContextSwitchTo(memory);
            pg_sys::CurrentResourceOwner = owner;
            Ok(value)
        })
        .catch_others(|error| {
            pg_sys::MemoryContextSwitchTo(memory);
            let caught = match &error {
                pg_sys::panic::CaughtError::PostgresError(e)
                | pg_sys::panic::CaughtError::ErrorReport(e)
                | pg_sys::panic::CaughtError::RustPanic { ereport: e, .. } => CaughtError {
                    sqlstate: e.sql_error_code() as i32,
                    message: e.message().to_string(),
                },
            };
            // As PL/pgSQL does before it rolls back: the ERROR, copied above, leaves the error
            // stack (pgrx 0.19 keeps it there until the handler returns).
            pg_sys::FlushErrorState();
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
            pg_sys::MemoryContextSwitchTo(memory);
            pg_sys::CurrentResourceOwner = owner;
            Err(caught)
        })
        .execute()
    }
}
