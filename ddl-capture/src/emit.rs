//! Writing records to WAL.

use crate::seal;
use ddl_wire::{DdlRecord, RECORD_PREFIX};
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use std::ffi::CStr;

/// [`RECORD_PREFIX`], NUL-terminated.
const PREFIX: &CStr = c"ddl_sync";
const _: () = {
    let (ours, wire) = (PREFIX.to_bytes(), RECORD_PREFIX.as_bytes());
    assert!(ours.len() == wire.len());
    let mut i = 0;
    while i < ours.len() {
        assert!(ours[i] == wire[i]);
        i += 1;
    }
};

/// Writes `record`, sealed (see [`seal`]), as a transactional `ddl_sync` message, followed by an
/// empty one.
///
/// Why the empty one: a message's change is queued at the END of its WAL record, a row change at
/// the START of its own. A DDL message written last in a subtransaction (`SAVEPOINT; ALTER
/// TABLE ...; RELEASE`) would tie with the parent's next row change, and the reorder buffer may
/// then deliver the row first: the subscriber would see a row with a column it does not have
/// yet. The padding message moves the tie onto itself; the output plugin ignores it.
pub fn emit_record(record: &DdlRecord<'_>) {
    let mut payload = Vec::new();
    record.encode(&mut payload);
    seal::seal(&mut payload);
    log_message(&payload);
    log_message(&[]);
}

fn log_message(payload: &[u8]) {
    // SAFETY: both pointers are valid for the call; PostgreSQL copies the payload into WAL.
    unsafe {
        pg_guard_ffi_boundary(|| {
            ddl_server::versions::log_transactional_message(
                PREFIX.as_ptr(),
                payload.as_ptr().cast(),
                payload.len(),
            )
        });
    }
}
