//! The server's own pgoutput, loaded once per process.

use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use std::sync::OnceLock;

/// pgoutput's callbacks: plain function pointers into pgoutput.so, identical in every backend.
struct Callbacks(pg_sys::OutputPluginCallbacks);

// SAFETY: a table of `extern "C"` function pointers, written once and only read after.
unsafe impl Sync for Callbacks {}
unsafe impl Send for Callbacks {}

static PGOUTPUT: OnceLock<Callbacks> = OnceLock::new();

/// pgoutput's callback table, loading pgoutput.so on first use.
///
/// # Safety
/// Must be called in a backend (loading a library may ereport).
pub unsafe fn callbacks() -> &'static pg_sys::OutputPluginCallbacks {
    &PGOUTPUT.get_or_init(|| Callbacks(load())).0
}

unsafe fn load() -> pg_sys::OutputPluginCallbacks {
    let init = pg_sys::load_external_function(
        c"pgoutput".as_ptr(),
        c"_PG_output_plugin_init".as_ptr(),
        true,
        std::ptr::null_mut(),
    );
    // SAFETY: `_PG_output_plugin_init` has this signature (LogicalOutputPluginInit).
    let init: unsafe extern "C-unwind" fn(*mut pg_sys::OutputPluginCallbacks) =
        std::mem::transmute(init);
    let mut callbacks: pg_sys::OutputPluginCallbacks = std::mem::zeroed();
    pg_guard_ffi_boundary(|| init(&mut callbacks));
    callbacks
}
