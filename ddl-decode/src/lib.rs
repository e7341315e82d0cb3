//! `ddl_pgoutput`: a logical decoding output plugin that is PostgreSQL's own `pgoutput`, byte for
//! byte, and (as the publisher issue lands) also carries captured DDL as ordinary INSERTs on
//! `ddl_sync.events`.
//!
//! The plugin does not reimplement pgoutput: it loads the server's `pgoutput` library, copies its
//! callbacks and delegates to them. Everything a consumer already relies on (protocol versions,
//! binary mode, streaming, two-phase, row filters, column lists, error messages) therefore stays
//! exactly as the server ships it, including future minor-release fixes.
//!
//! ```sql
//! SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');
//! SELECT * FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL,
//!        'proto_version', '1', 'publication_names', 'p');
//! ```

use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use std::sync::OnceLock;

::pgrx::pg_module_magic!(name, version);

/// pgoutput's callbacks. They are plain function pointers into pgoutput.so, identical in every
/// backend, so they are loaded once per process.
struct PgoutputCallbacks(pg_sys::OutputPluginCallbacks);

// SAFETY: a table of `extern "C"` function pointers that is written once and only read after.
unsafe impl Sync for PgoutputCallbacks {}
unsafe impl Send for PgoutputCallbacks {}

static PGOUTPUT: OnceLock<PgoutputCallbacks> = OnceLock::new();

/// Loads pgoutput's `_PG_output_plugin_init` and lets it fill a callback table.
///
/// # Safety
/// Must be called in a backend, where `load_external_function` may ereport.
unsafe fn load_pgoutput() -> pg_sys::OutputPluginCallbacks {
    let init = pg_sys::load_external_function(
        c"pgoutput".as_ptr(),
        c"_PG_output_plugin_init".as_ptr(),
        true,
        std::ptr::null_mut(),
    );
    // SAFETY: `_PG_output_plugin_init` has this signature (output_plugin.h, LogicalOutputPluginInit).
    let init: unsafe extern "C-unwind" fn(*mut pg_sys::OutputPluginCallbacks) =
        std::mem::transmute(init);
    let mut callbacks: pg_sys::OutputPluginCallbacks = std::mem::zeroed();
    pg_guard_ffi_boundary(|| init(&mut callbacks));
    callbacks
}

/// The output plugin entry point PostgreSQL looks up by name.
///
/// # Safety
/// Called by PostgreSQL with a valid, writable callback table.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn _PG_output_plugin_init(cb: *mut pg_sys::OutputPluginCallbacks) {
    let pgoutput = &PGOUTPUT
        .get_or_init(|| PgoutputCallbacks(load_pgoutput()))
        .0;
    // Start from pgoutput's table verbatim: every callback we do not interpose is pgoutput's own.
    *cb = *pgoutput;
}
