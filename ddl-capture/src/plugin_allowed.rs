//! Whether this server lets `ddl_pgoutput` be an output plugin.
//!
//! PostgreSQL 15.19, 16.15, 17.11, 18.6 and later load only the output plugins that
//! `output_plugin_libraries` lists (default `'pgoutput, test_decoding'`); a slot of any other
//! fails with `library "ddl_pgoutput" may not be used as an output plugin`. That failure shows
//! only where a subscriber decodes, long after the publisher was set up, so the publisher says
//! it at the two statements that set it up: `CREATE EXTENSION ddl_sync` and a publication that
//! takes DDL. Older servers have no such parameter and nothing is said there.

use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use std::ffi::CStr;

/// The output plugin a subscriber's slot uses.
const PLUGIN: &CStr = c"ddl_pgoutput";

/// A WARNING when `output_plugin_libraries` exists and does not list `ddl_pgoutput`. The
/// parameter's value is not shown: it is readable by superusers only, as in PostgreSQL's own
/// refusal.
pub fn warn_unless_listed() {
    if listed() != Some(false) {
        return;
    }
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_WARNING,
        "output_plugin_libraries does not list \"ddl_pgoutput\": no client can decode this \
         server's DDL",
        "ddl_sync",
    )
    .set_detail(
        "A slot with plugin ddl_pgoutput fails with: library \"ddl_pgoutput\" may not be used \
         as an output plugin.",
    )
    .set_hint(
        "Add ddl_pgoutput to output_plugin_libraries, keeping the plugins it lists (by default \
         'pgoutput, test_decoding'), and reload the configuration.",
    )
    .report(PgLogLevel::WARNING);
}

/// After `CREATE EXTENSION ddl_sync`: [`warn_unless_listed`].
///
/// # Safety
/// `node` is the utility statement that just ran.
pub unsafe fn after_create_extension(node: *mut pg_sys::Node) {
    // SAFETY: the caller's promise: a node, whose tag says which statement it is.
    if node.is_null() || unsafe { (*node).type_ } != pg_sys::NodeTag::T_CreateExtensionStmt {
        return;
    }
    // SAFETY: a CreateExtensionStmt, whose `extname` the parser always sets.
    let name = unsafe { CStr::from_ptr((*node.cast::<pg_sys::CreateExtensionStmt>()).extname) };
    if name == c"ddl_sync" {
        warn_unless_listed();
    }
}

/// `None`: this server has no `output_plugin_libraries`; else whether it lists `ddl_pgoutput`,
/// split and compared as PostgreSQL's own check does (a malformed list lists nothing).
fn listed() -> Option<bool> {
    // SAFETY: a lookup of a setting by name, `missing_ok`; the result is the setting's own
    // string (not ours to change), or null when the server has no such setting.
    let value =
        unsafe { pg_sys::GetConfigOption(c"output_plugin_libraries".as_ptr(), true, false) };
    if value.is_null() {
        return None;
    }
    // SAFETY: a copy of the NUL-terminated value, which SplitGUCList cuts in place into a List
    // of pointers into it; both stay in the current memory context for the loop.
    unsafe {
        let copy = pg_sys::pstrdup(value);
        let mut names: *mut pg_sys::List = std::ptr::null_mut();
        if !pg_sys::SplitGUCList(copy, b',' as std::ffi::c_char, &mut names) {
            return Some(false);
        }
        let found = pgrx::PgList::<std::ffi::c_char>::from_pg(names)
            .iter_ptr()
            .any(|name| CStr::from_ptr(name) == PLUGIN);
        Some(found)
    }
}
