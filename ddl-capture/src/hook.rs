//! The ProcessUtility hook: remembers each utility statement while it runs (for the event
//! triggers that capture it) and takes the `ddl` option of CREATE/ALTER PUBLICATION.
//!
//! The statement itself runs outside any pgrx guard (see `ddl_server::utility`): its ERROR
//! reaches the client exactly as PostgreSQL raised it, position and CONTEXT included.

use crate::statement::{self, Statement};
use crate::{early, publication, volatile};
use ddl_server::utility::{Before, UtilityCall};
use pgrx::pg_sys;
use pgrx::prelude::*;

/// Installs the hook, chaining to the one loaded before us, with the setting and the
/// transaction-end cleanups it needs.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn install() {
    volatile::define_setting();
    statement::forget_aborted_statements();
    crate::replay_origin::clear_at_transaction_end();
    install_hook();
}

/// Whether `node` is a `DROP ... CASCADE` (needed to rewrite a partly temporary DROP).
unsafe fn is_drop_cascade(node: *mut pg_sys::Node) -> bool {
    !node.is_null()
        && (*node).type_ == pg_sys::NodeTag::T_DropStmt
        && (*(node as *mut pg_sys::DropStmt)).behavior == pg_sys::DropBehavior::DROP_CASCADE
}

ddl_server::process_utility_hook!(fn install_hook, before, after);

/// Pushes the statement (with the `ddl` option it may carry) and captures what must be
/// captured before it runs.
#[pg_guard]
unsafe extern "C-unwind" fn before(call: *mut UtilityCall) -> Before {
    let call = &mut *call;
    let request = publication::take_ddl_option(call.pstmt, call.read_only_tree);
    if let Some(r) = &request {
        call.pstmt = r.pstmt;
        // We own the tree now: a copy, or one that was never read-only.
        call.read_only_tree = false;
    }
    let run = request.as_ref().is_none_or(|r| r.run_statement);
    let depth = statement::push(Statement {
        query: call.query_string,
        location: (*call.pstmt).stmt_location,
        len: (*call.pstmt).stmt_len,
        top_level: call.top_level(),
        cascade: is_drop_cascade((*call.pstmt).utilityStmt),
        dropped: Vec::new(),
        captured: false,
        refills: Vec::new(),
        pstmt: call.pstmt,
        request,
    });
    if early::capture(call.pstmt) {
        statement::with_innermost(|s| s.captured = true);
    }
    Before { depth, run }
}

/// After the statement: its refills (so that the rows follow its record in WAL), and the
/// `ddl` option stored, or the publication checked.
#[pg_guard]
unsafe extern "C-unwind" fn after(depth: usize) {
    let Some(mut s) = statement::take(depth) else {
        return;
    };
    volatile::run_refills(std::mem::take(&mut s.refills));
    match s.request.take() {
        Some(request) => publication::store(&request),
        None => publication::check_after(s.pstmt),
    }
}
