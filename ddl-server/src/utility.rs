//! The ProcessUtility hook, chained so that a statement's ERROR passes through untouched.
//!
//! pgrx's guard (`#[pg_guard]`, `pg_guard_ffi_boundary`, and every function of its `pg_sys`
//! bindings) catches an ERROR, turns it into a Rust panic and raises it again at the next
//! boundary with its message, detail, hint and SQLSTATE only: the cursor position (`LINE 1:`
//! and the caret), internal query and position, CONTEXT lines and the schema, table, column,
//! data type and constraint fields are gone. A hook that every utility statement passes
//! through must not do that to the errors of statements it only looks at.
//!
//! So a hook is written in three parts, which [`process_utility_hook!`] puts together: a
//! guarded (`#[pg_guard]`) `before` doing the hook's own work (its own errors are raised as
//! usual), the statement run unguarded ([`UtilityCall::run`]: its ERROR leaves through the
//! hook's frame as raised), and a guarded `after`:
//!
//! ```ignore
//! ddl_server::process_utility_hook!(pub(crate) fn install_hook, before, after);
//! ```
//!
//! The hook's own frame then must hold nothing that needs dropping while the statement runs
//! (an ERROR skips it), and whatever state it keeps for `after` lives in a
//! [`StatementStack`], which forgets the entries of an aborted (sub)transaction.

use crate::xact::End;
use pgrx::pg_sys;
use std::ffi::c_char;

extern "C-unwind" {
    /// The server's own, not pgrx's binding of it, which would catch the statement's ERROR.
    #[link_name = "standard_ProcessUtility"]
    fn standard_process_utility(
        pstmt: *mut pg_sys::PlannedStmt,
        query_string: *const c_char,
        read_only_tree: bool,
        context: pg_sys::ProcessUtilityContext::Type,
        params: pg_sys::ParamListInfo,
        query_env: *mut pg_sys::QueryEnvironment,
        dest: *mut pg_sys::DestReceiver,
        qc: *mut pg_sys::QueryCompletion,
    );
}

/// The arguments of one ProcessUtility call.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct UtilityCall {
    pub pstmt: *mut pg_sys::PlannedStmt,
    pub query_string: *const c_char,
    pub read_only_tree: bool,
    pub context: pg_sys::ProcessUtilityContext::Type,
    pub params: pg_sys::ParamListInfo,
    pub query_env: *mut pg_sys::QueryEnvironment,
    pub dest: *mut pg_sys::DestReceiver,
    pub qc: *mut pg_sys::QueryCompletion,
}

impl UtilityCall {
    /// Whether the client sent the statement (not a function, DO block or extension script).
    pub fn top_level(&self) -> bool {
        self.context == pg_sys::ProcessUtilityContext::PROCESS_UTILITY_TOPLEVEL
    }

    /// Runs the statement: through `previous`, the hook installed before ours, or the server's
    /// own. Its ERROR is not caught.
    ///
    /// # Safety
    /// The arguments are those PostgreSQL gave the hook (`pstmt` possibly replaced by a tree
    /// the hook owns). The caller's frame holds nothing that must be dropped, and is not
    /// guarded by pgrx: an ERROR longjmps through it to the server's handler.
    pub unsafe fn run(&self, previous: pg_sys::ProcessUtility_hook_type) {
        let f = previous.unwrap_or(standard_process_utility);
        // SAFETY: PostgreSQL's own arguments, handed on as the hook API expects; the caller
        // promised a frame that an ERROR may skip.
        unsafe {
            f(
                self.pstmt,
                self.query_string,
                self.read_only_tree,
                self.context,
                self.params,
                self.query_env,
                self.dest,
                self.qc,
            )
        };
    }
}

/// Defines `unsafe fn $install()`, which installs a ProcessUtility hook chained to the one
/// installed before it (call it once per process, from `_PG_init`). The hook runs the guarded
/// `$before` (`unsafe extern "C-unwind" fn(*mut UtilityCall) -> Before`), then the statement
/// through the previous hook (or PostgreSQL's own) unguarded, then the guarded `$after`
/// (`unsafe extern "C-unwind" fn(usize)`) with the depth `$before` gave. One per module.
#[macro_export]
macro_rules! process_utility_hook {
    ($vis:vis fn $install:ident, $before:path, $after:path) => {
        /// The hook that was installed before ours.
        static mut PREVIOUS_PROCESS_UTILITY: ::pgrx::pg_sys::ProcessUtility_hook_type = None;

        /// Installs the ProcessUtility hook, chained to the one installed before.
        ///
        /// # Safety
        /// Call once per process, from `_PG_init`.
        $vis unsafe fn $install() {
            // SAFETY: `_PG_init` runs before any statement, in one thread.
            unsafe {
                PREVIOUS_PROCESS_UTILITY = ::pgrx::pg_sys::ProcessUtility_hook;
                ::pgrx::pg_sys::ProcessUtility_hook = Some(process_utility);
            }
        }

        /// Not guarded, and holding nothing to drop: an ERROR of the statement passes through
        /// untouched (see `ddl_server::utility`).
        #[allow(clippy::too_many_arguments)] // ProcessUtility_hook_type
        unsafe extern "C-unwind" fn process_utility(
            pstmt: *mut ::pgrx::pg_sys::PlannedStmt,
            query_string: *const ::std::ffi::c_char,
            read_only_tree: bool,
            context: ::pgrx::pg_sys::ProcessUtilityContext::Type,
            params: ::pgrx::pg_sys::ParamListInfo,
            query_env: *mut ::pgrx::pg_sys::QueryEnvironment,
            dest: *mut ::pgrx::pg_sys::DestReceiver,
            qc: *mut ::pgrx::pg_sys::QueryCompletion,
        ) {
            let mut call = $crate::utility::UtilityCall {
                pstmt,
                query_string,
                read_only_tree,
                context,
                params,
                query_env,
                dest,
                qc,
            };
            // SAFETY: PostgreSQL's hook contract; `$before` and `$after` are guarded.
            let before = unsafe { $before(&mut call) };
            if before.run {
                // SAFETY: set once by the install function, before any statement.
                call.run(unsafe { PREVIOUS_PROCESS_UTILITY });
            }
            // SAFETY: as for `$before`.
            unsafe { $after(before.depth) };
        }
    };
}

/// What a hook's guarded `before` part tells its unguarded middle.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Before {
    /// The statement's depth on the hook's [`StatementStack`], for `after`.
    pub depth: usize,
    /// Whether anything is left to run (a statement whose only option was ours may have
    /// nothing left for PostgreSQL, e.g. `ALTER PUBLICATION p SET (ddl = '...')`).
    pub run: bool,
}

/// Per-statement state a hook keeps from before a statement runs until after it: entries are
/// pushed by `before`, taken back by `after`, and those of statements that ended in an ERROR
/// are forgotten when their (sub)transaction aborts (see [`StatementStack::forget`]).
pub struct StatementStack<T> {
    /// Each entry with the transaction nesting level it was pushed at.
    entries: Vec<(i32, T)>,
}

impl<T> StatementStack<T> {
    pub const fn new() -> StatementStack<T> {
        StatementStack {
            entries: Vec::new(),
        }
    }

    /// Pushes the state of a statement about to run; returns its depth, for [`Self::take`].
    pub fn push(&mut self, value: T) -> usize {
        let level = crate::xact::nest_level();
        self.entries.push((level, value));
        self.entries.len() - 1
    }

    /// The state pushed at `depth`, once its statement has run; anything above it belonged to
    /// statements inside it and is dropped too.
    pub fn take(&mut self, depth: usize) -> Option<T> {
        self.entries.truncate(depth + 1);
        if self.entries.len() == depth + 1 {
            self.entries.pop().map(|(_, value)| value)
        } else {
            None
        }
    }

    /// The innermost statement's state.
    pub fn innermost(&mut self) -> Option<&mut T> {
        self.entries.last_mut().map(|(_, value)| value)
    }

    /// Forgets what statements of an aborted (sub)transaction pushed: they ended in an ERROR
    /// and their `after` never ran. Give it every [`End`] (see [`crate::xact::at_end`]).
    ///
    /// Why a transaction's abort forgets everything even though a procedure's `ROLLBACK` aborts
    /// one while its `CALL` still runs: the `CALL`'s own `after` then finds nothing, which is
    /// right for it (it has no state of its own), and nothing stale can be mistaken for the
    /// statement an event trigger asks about. A commit forgets nothing: a procedure's `COMMIT`
    /// ends a transaction while its `CALL` still runs.
    pub fn forget(&mut self, end: End) {
        match end {
            End::SubAborted { level } => self.entries.retain(|(pushed, _)| *pushed < level),
            End::Aborted => self.entries.clear(),
            End::Committing | End::Committed | End::SubCommitted { .. } => {}
        }
    }
}

impl<T> Default for StatementStack<T> {
    fn default() -> Self {
        Self::new()
    }
}
