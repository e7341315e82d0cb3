//! The ProcessUtility hook: remembers each utility statement while it runs (for the event
//! triggers that capture it) and takes the `ddl` option of CREATE/ALTER PUBLICATION.

use crate::statement::{self, Statement};
use crate::{early, publication, volatile};
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;

static mut PREVIOUS: pg_sys::ProcessUtility_hook_type = None;

/// Installs the hook, chaining to the one loaded before us.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn install() {
    volatile::define_setting();
    PREVIOUS = pg_sys::ProcessUtility_hook;
    pg_sys::ProcessUtility_hook = Some(process_utility);
}

/// Whether `node` is a `DROP ... CASCADE` (needed to rewrite a partly temporary DROP).
unsafe fn is_drop_cascade(node: *mut pg_sys::Node) -> bool {
    !node.is_null()
        && (*node).type_ == pg_sys::NodeTag::T_DropStmt
        && (*(node as *mut pg_sys::DropStmt)).behavior == pg_sys::DropBehavior::DROP_CASCADE
}

#[allow(clippy::too_many_arguments)] // ProcessUtility_hook_type
#[pg_guard]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    let request = publication::take_ddl_option(pstmt, read_only_tree);
    let pstmt = request.as_ref().map_or(pstmt, |r| r.pstmt);
    let _running = statement::enter(Statement {
        query: query_string,
        location: (*pstmt).stmt_location,
        len: (*pstmt).stmt_len,
        top_level: context == pg_sys::ProcessUtilityContext::PROCESS_UTILITY_TOPLEVEL,
        cascade: is_drop_cascade((*pstmt).utilityStmt),
        dropped: Vec::new(),
        captured: false,
        refills: Vec::new(),
    });
    if early::capture(pstmt) {
        statement::with_innermost(|s| s.captured = true);
    }
    if request.as_ref().is_none_or(|r| r.run_statement) {
        // We own the tree when we changed it (a copy, or one that was never read-only).
        let read_only_tree = read_only_tree && request.is_none();
        match PREVIOUS {
            // A raw C function pointer: guard it, so an ERROR becomes a Rust panic that
            // unwinds our frames (popping the statement) before pgrx re-raises it.
            Some(hook) => pg_guard_ffi_boundary(|| {
                hook(
                    pstmt,
                    query_string,
                    read_only_tree,
                    context,
                    params,
                    query_env,
                    dest,
                    qc,
                )
            }),
            // pgrx's bindings are guarded already; a second guard would abort on ERROR.
            None => pg_sys::standard_ProcessUtility(
                pstmt,
                query_string,
                read_only_tree,
                context,
                params,
                query_env,
                dest,
                qc,
            ),
        }
    }
    // After the statement, so that the rows follow its record in WAL.
    let refills = statement::with_innermost(|s| std::mem::take(&mut s.refills));
    volatile::run_refills(refills.unwrap_or_default());
    match request {
        Some(request) => publication::store(&request),
        None => publication::check_after(pstmt),
    }
}
