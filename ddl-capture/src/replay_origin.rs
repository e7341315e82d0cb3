//! Where the statement being replayed first ran, told by `ddl_sync.so` while it replays one.
//!
//! The capture records a replayed statement as forwarded, keyed by the node where it first ran,
//! so every node of a cascade names it alike. That key was once a setting
//! (`ddl_sync.replay_origin`), which any code running in the apply worker (a replayed function
//! body, a default expression) could change and so make the next node drop a real statement as
//! a duplicate. It is now backend memory that only `ddl_sync.so` writes, through the exported C
//! function below (not declared in SQL), and that is cleared at the end of every transaction.

use ddl_server::xact::{self, End};
use std::cell::Cell;

thread_local! {
    static ORIGIN: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
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
    ORIGIN.set(active.then_some((sysid, lsn)));
}

// The type ddl_sync.so calls it as (ddl_server::contract).
const _: ddl_server::contract::SetReplayOrigin = ddl_sync_set_replay_origin;

/// An ERROR between set and clear must not leave the origin to the next transaction. A
/// subtransaction's abort keeps it: the replay's own lookups and the `skip` policy use
/// subtransactions while the origin holds.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn clear_at_transaction_end() {
    // SAFETY: the caller's promise; the listener raises no ERROR.
    unsafe {
        xact::at_end(|end| {
            if matches!(end, End::Committed | End::Committing | End::Aborted) {
                ORIGIN.set(None);
            }
        })
    };
}
