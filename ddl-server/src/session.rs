//! What code can leave in a session beyond the statement that ran it, besides settings (those
//! end with the statement's GUC level, `guc.rs`): session-level advisory locks, which are held
//! until the session ends, and LISTEN, which lasts as long. In the apply worker that would be
//! for the worker's life: a replayed statement's code (a `USING` expression, a materialized
//! view's query, a function it calls) taking `pg_advisory_lock(42)` would hold every other
//! session of the subscriber waiting on that lock until the worker exits.

use pgrx::pg_sys;

unsafe extern "C-unwind" {
    // commands/async.h, which pgrx's bindings leave out: what `UNLISTEN *` does.
    fn Async_UnlistenAll();
}

/// In a background worker (the apply worker, which takes no advisory lock and listens to no
/// channel of its own), releases every session-level advisory lock and ends every LISTEN, so
/// that none outlives the code that took it; nothing elsewhere.
pub fn release_in_background_worker() {
    // SAFETY: the backend's type, set at its start.
    if unsafe { pg_sys::MyBackendType } != pg_sys::BackendType::B_BG_WORKER {
        return;
    }
    // SAFETY: what `pg_advisory_unlock_all()` and `UNLISTEN *` do, in this backend's
    // transaction; an ERROR either raises comes through the guard.
    unsafe {
        pg_sys::ffi::pg_guard_ffi_boundary(|| {
            pg_sys::LockReleaseSession(pg_sys::USER_LOCKMETHOD as pg_sys::LOCKMETHODID);
            Async_UnlistenAll();
        })
    }
}
