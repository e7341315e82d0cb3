//! Where the statement being replayed first ran, told by `ddl_sync.so` while it replays one.
//!
//! The capture records a replayed statement as forwarded, keyed by the node where it first ran,
//! so every node of a cascade names it alike. That key was once a setting
//! (`ddl_sync.replay_origin`), which any code running in the apply worker (a replayed function
//! body, a default expression) could change and so make the next node drop a real statement as
//! a duplicate. It is now backend memory that only `ddl_sync.so` writes, through the exported C
//! function below (not declared in SQL), and that is cleared at the end of every transaction.

use pgrx::pg_sys;
use std::cell::Cell;

thread_local! {
    static ORIGIN: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
    static CALLBACK_REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// `(system identifier, LSN)` of the node where the statement being replayed first ran.
pub fn get() -> Option<(u64, u64)> {
    ORIGIN.get()
}

/// Called by `ddl_sync.so` (looked up with `load_external_function`): `active` false clears.
///
/// # Safety
/// Call from a backend, inside a transaction.
#[no_mangle]
pub unsafe extern "C-unwind" fn ddl_sync_set_replay_origin(active: bool, sysid: u64, lsn: u64) {
    if !CALLBACK_REGISTERED.get() {
        // SAFETY: registers a function that lives as long as the library (never unloaded).
        unsafe { pg_sys::RegisterXactCallback(Some(clear_at_end), std::ptr::null_mut()) };
        CALLBACK_REGISTERED.set(true);
    }
    ORIGIN.set(active.then_some((sysid, lsn)));
}

/// An ERROR between set and clear must not leave the origin to the next transaction.
unsafe extern "C-unwind" fn clear_at_end(
    _event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    ORIGIN.set(None);
}
