//! The server's own pgoutput, loaded once per process.

use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use std::sync::OnceLock;

/// pgoutput's callbacks: plain function pointers into pgoutput.so, identical in every backend.
struct Callbacks(pg_sys::OutputPluginCallbacks);

// SAFETY: a table of `extern "C"` function pointers, written once and only read after.
unsafe impl Sync for Callbacks {}
// SAFETY: as above: nothing in it belongs to a thread.
unsafe impl Send for Callbacks {}

static PGOUTPUT: OnceLock<Callbacks> = OnceLock::new();

/// pgoutput's callback table, loading pgoutput.so on first use (in a backend: loading a library
/// may raise an ERROR).
pub fn callbacks() -> &'static pg_sys::OutputPluginCallbacks {
    &PGOUTPUT.get_or_init(|| Callbacks(load())).0
}

/// pgoutput's callback table for the callbacks that are not guarded: `_PG_output_plugin_init`
/// loaded it (with [`callbacks`]) before PostgreSQL calls any other callback, so this finds it
/// without anything that could raise an ERROR or panic.
pub fn loaded() -> &'static pg_sys::OutputPluginCallbacks {
    match PGOUTPUT.get() {
        Some(loaded) => &loaded.0,
        None => load_guarded(),
    }
}

/// [`callbacks`], guarded: for [`loaded`], should it ever be called first.
#[pg_guard]
extern "C-unwind" fn load_guarded() -> &'static pg_sys::OutputPluginCallbacks {
    callbacks()
}

fn load() -> pg_sys::OutputPluginCallbacks {
    // SAFETY: NUL-terminated names; signalNotFound: an ERROR, never NULL, when pgoutput or its
    // entry point is missing.
    let init = unsafe {
        pg_sys::load_external_function(
            c"pgoutput".as_ptr(),
            c"_PG_output_plugin_init".as_ptr(),
            true,
            std::ptr::null_mut(),
        )
    };
    // SAFETY: not NULL (above), and `_PG_output_plugin_init` has this signature
    // (LogicalOutputPluginInit).
    let init: unsafe extern "C-unwind" fn(*mut pg_sys::OutputPluginCallbacks) =
        unsafe { std::mem::transmute(init) };
    // SAFETY: a table of nullable function pointers: all zeroes is "no callback".
    let mut callbacks: pg_sys::OutputPluginCallbacks = unsafe { std::mem::zeroed() };
    // SAFETY: pgoutput fills the table it is given, as for any plugin PostgreSQL loads; a raw C
    // function pointer, so an ERROR inside becomes a Rust panic.
    unsafe { pg_guard_ffi_boundary(|| init(&mut callbacks)) };
    callbacks
}
