//! The ProcessUtility hook: remembers each utility statement while it runs (for the event
//! triggers that capture it) and takes the `ddl` option of CREATE/ALTER PUBLICATION.
//!
//! The statement itself runs outside any pgrx guard (see `ddl_server::utility`): its ERROR
//! reaches the client exactly as PostgreSQL raised it, position and CONTEXT included.

use crate::statement::{self, Statement};
use crate::{early, forget, keyless, plugin_allowed, publication, volatile};
use ddl_server::utility::{Before, UtilityCall};
use pgrx::prelude::*;

/// Installs the hook, chaining to the one loaded before us, with the setting and the
/// transaction-end cleanups it needs.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn install() {
    volatile::define_setting();
    keyless::define_setting();
    // SAFETY: the caller's promise: once per process, from `_PG_init`.
    unsafe {
        statement::forget_aborted_statements();
        crate::replay_origin::clear_at_transaction_end();
        ddl_server::xact::at_subtransaction_start(crate::emit::pad_before_subtransaction);
        install_hook();
        crate::objects::install();
    }
}

ddl_server::process_utility_hook!(fn install_hook, before, after);

/// Pushes the statement (with the `ddl` option it may carry) and captures what must be
/// captured before it runs.
///
/// # Safety
/// Called by the hook (see `ddl_server::process_utility_hook!`) with its own `UtilityCall`,
/// holding the arguments PostgreSQL gave it.
#[pg_guard]
unsafe extern "C-unwind" fn before(call: *mut UtilityCall) -> Before {
    // SAFETY: the caller's promise: the hook's own, alive and unshared for the call.
    let call = unsafe { &mut *call };
    // SAFETY: PostgreSQL's PlannedStmt of a utility statement, and whether we may change it.
    let request = unsafe { publication::take_ddl_option(call.pstmt, call.read_only_tree) };
    if let Some(r) = &request {
        call.pstmt = r.pstmt;
        // We own the tree now: a copy, or one that was never read-only.
        call.read_only_tree = false;
    }
    let run = request.as_ref().is_none_or(|r| r.run_statement);
    // SAFETY: the statement's PlannedStmt (PostgreSQL's, or our copy), its tree a node.
    let (location, len) = unsafe { ((*call.pstmt).stmt_location, (*call.pstmt).stmt_len) };
    let depth = statement::push(Statement {
        query: call.query_string,
        location,
        len,
        top_level: call.top_level(),
        dropped: Vec::new(),
        created_relations: Vec::new(),
        holders: Vec::new(),
        ran: Vec::new(),
        watch: None,
        captured: false,
        refills: Vec::new(),
        keyless: keyless::Candidates::default(),
        pstmt: call.pstmt,
        request,
        // SAFETY: the statement's PlannedStmt, about to run in its transaction.
        renamed_from: unsafe { crate::renamed::old_identity(call.pstmt) },
    });
    // SAFETY: in the hook, inside the statement's transaction, the statement just pushed.
    if unsafe { early::capture(call.pstmt) } {
        statement::with_innermost(|s| s.captured = true);
    }
    Before { depth, run }
}

/// After the statement: its refills (so that the rows follow its record in WAL), the replica
/// identity of the tables it left without a key, and the `ddl` option stored, or the
/// publication checked.
///
/// # Safety
/// Called by the hook (see `ddl_server::process_utility_hook!`) once the statement has run,
/// with the depth `before` gave.
#[pg_guard]
unsafe extern "C-unwind" fn after(depth: usize) {
    let Some(mut s) = statement::take(depth) else {
        return;
    };
    // What a statement run by another bound, the other bound: the subscriber replays the
    // outer one whole (CREATE SCHEMA's elements, a CREATE TABLE's indexes).
    let (holders, ran) = (std::mem::take(&mut s.holders), std::mem::take(&mut s.ran));
    statement::with_innermost(|outer| {
        outer.holders.extend(holders);
        for function in ran {
            if !outer.ran.contains(&function) {
                outer.ran.push(function);
            }
        }
    });
    // SAFETY: in the hook after the statement, inside its transaction.
    unsafe { volatile::run_refills(std::mem::take(&mut s.refills)) };
    // SAFETY: as above; the tree that ran, and what it made.
    unsafe {
        keyless::follow(
            std::mem::take(&mut s.keyless),
            s.pstmt,
            &s.created_relations,
        )
    };
    forget::refresh_event_triggers();
    match s.request.take() {
        Some(request) => publication::store(&request),
        // SAFETY: the tree that ran, PostgreSQL's or our copy: both outlive the hook's call.
        None => unsafe {
            publication::check_after(s.pstmt);
            plugin_allowed::after_create_extension((*s.pstmt).utilityStmt);
        },
    }
}
