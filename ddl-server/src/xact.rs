//! Transactions: backend state that must not outlive its transaction (one registration of
//! PostgreSQL's transaction callbacks per library, shared by everything in it that keeps such
//! state), subtransactions that catch an ERROR ([`in_subtransaction`]), and the one ERROR caught
//! without a subtransaction, the scanner's and raw parser's ([`catching_parser_error`]).

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
    static SUBTRANSACTION_STARTS: RefCell<Vec<fn()>> = const { RefCell::new(Vec::new()) };
}

/// Calls `listener` at the end of every transaction and subtransaction.
///
/// # Safety
/// Call from `_PG_init` (a listener runs inside PostgreSQL's transaction callbacks: it must
/// not raise an ERROR).
pub unsafe fn at_end(listener: Listener) {
    LISTENERS.with_borrow_mut(|l| l.push(listener));
    // SAFETY: the caller's promise.
    unsafe { register() };
}

/// Calls `listener` when a subtransaction starts, inside it, before it runs anything. Unlike an
/// end listener it may raise an ERROR (the subtransaction's start then fails with it).
///
/// # Safety
/// Call from `_PG_init`.
pub unsafe fn at_subtransaction_start(listener: fn()) {
    SUBTRANSACTION_STARTS.with_borrow_mut(|l| l.push(listener));
    // SAFETY: the caller's promise.
    unsafe { register() };
}

/// Registers the callbacks, once per process.
///
/// # Safety
/// From `_PG_init`.
unsafe fn register() {
    thread_local! {
        static REGISTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if !REGISTERED.replace(true) {
        // SAFETY: static functions, registered once per process; PostgreSQL never unloads
        // a library, so they outlive every transaction.
        unsafe {
            pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
        }
    }
}

extern "C-unwind" {
    #[link_name = "GetCurrentTransactionNestLevel"]
    fn server_nest_level() -> std::ffi::c_int;
}

/// The current (sub)transaction's nesting level (1 at the top level, 0 outside a
/// transaction). The server's own function, not pgrx's binding, whose guard (a `sigsetjmp`)
/// costs more than the call: it only reads a field and cannot fail, and is asked for every
/// subtransaction of every backend and every captured statement.
pub fn nest_level() -> i32 {
    // SAFETY: reads the backend's transaction state; raises no ERROR.
    unsafe { server_nest_level() }
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

/// Guarded: a start listener may write WAL (its ERROR then reaches PostgreSQL as one).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _mine: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent as E;
    if event == E::SUBXACT_EVENT_START_SUB {
        SUBTRANSACTION_STARTS.with_borrow(|l| l.iter().for_each(|listener| listener()));
    } else if event == E::SUBXACT_EVENT_ABORT_SUB || event == E::SUBXACT_EVENT_COMMIT_SUB {
        // The callback runs inside the ending subtransaction, whose level this is.
        let level = nest_level();
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

impl From<&pg_sys::panic::CaughtError> for CaughtError {
    fn from(error: &pg_sys::panic::CaughtError) -> CaughtError {
        match error {
            pg_sys::panic::CaughtError::PostgresError(e)
            | pg_sys::panic::CaughtError::ErrorReport(e)
            | pg_sys::panic::CaughtError::RustPanic { ereport: e, .. } => CaughtError {
                sqlstate: e.sql_error_code() as i32,
                message: e.message().to_string(),
            },
        }
    }
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
            let caught = CaughtError::from(&error);
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

/// Parses `text` with PostgreSQL's raw parser (`RAW_PARSE_DEFAULT`): its list of RawStmts, in
/// the current memory context, or the ERROR it raised (a syntax error, a statement of a newer
/// server's grammar, too deep a nesting), caught by [`catching_parser_error`].
pub fn raw_parse(text: &std::ffi::CStr) -> Result<*mut pg_sys::List, CaughtError> {
    catching_parser_error(|| {
        // SAFETY: a NUL-terminated text, parsed in the caller's transaction.
        unsafe { pg_sys::raw_parser(text.as_ptr(), pg_sys::RawParseMode::RAW_PARSE_DEFAULT) }
    })
}

/// Runs `f`, which only reads text with PostgreSQL's scanner or raw parser, and returns the
/// ERROR it raised instead of raising it.
///
/// Caught without a subtransaction, unlike any other ERROR: the scanner and the raw parser
/// are pure functions of the text and the settings they read. They open no relation, take no
/// lock, pin no buffer, look nothing up in the catalogs and keep no state between calls; their
/// state is pallocs of the current memory context. An ERROR inside them leaves nothing to undo
/// but that memory, which goes with the context, and the error stack, which pgrx flushes when
/// the handler returns; the interrupt holdoff counts, which every ERROR zeroes before it
/// jumps, are put back here. A subtransaction would cost more than the parse (its end walks
/// the whole relation cache once a transaction has made more than 32 relations), for every
/// replayed statement.
pub fn catching_parser_error<T>(f: impl FnOnce() -> T) -> Result<T, CaughtError> {
    let f = std::panic::AssertUnwindSafe(f);
    // SAFETY: reads and restores the backend's counters and memory context; `f` runs in the
    // caller's transaction, and its ERROR is caught before anything else runs.
    unsafe {
        let memory = pg_sys::CurrentMemoryContext;
        let holdoff = (
            pg_sys::InterruptHoldoffCount,
            pg_sys::QueryCancelHoldoffCount,
        );
        PgTryBuilder::new(|| Ok(f()))
            .catch_others(|error| {
                pg_sys::MemoryContextSwitchTo(memory);
                (
                    pg_sys::InterruptHoldoffCount,
                    pg_sys::QueryCancelHoldoffCount,
                ) = holdoff;
                Err(CaughtError::from(&error))
            })
            .execute()
    }
}
