//! Writing records to WAL.

use crate::seal;
use ddl_wire::{DdlRecord, RECORD_PREFIX};
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use std::cell::Cell;
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

thread_local! {
    /// Where the last record's message ended, when no padding followed it (see [`emit_record`]).
    static UNPADDED_END: Cell<pg_sys::XLogRecPtr> = const { Cell::new(0) };
}

/// Writes `record`, sealed (see [`seal`]), as a transactional `ddl_sync` message, followed by an
/// empty one when the transaction has another queue of changes that could come next.
///
/// Why the empty one: a message's change is queued at the END of its WAL record, a row change at
/// the START of its own. When the next record is a row change of another (sub)transaction of
/// the same transaction (`SAVEPOINT; ALTER TABLE ...; RELEASE` then a row of the parent, or the
/// first row of a later subtransaction), the two changes tie, and the reorder buffer, which
/// merges a transaction's queues by LSN, may deliver the row first: the subscriber would see a
/// row with a column it does not have yet. A padding message moves the tie onto itself; the
/// output plugin ignores it. Within one queue changes keep their order, so a message written at
/// the top level needs no padding unless a subtransaction starts right after it: then
/// [`pad_before_subtransaction`] writes one. (The padding cost a WAL record per captured
/// statement, 3 % of the capture's instructions.)
pub fn emit_record(record: &DdlRecord<'_>) {
    let mut payload = Vec::new();
    record.encode(&mut payload);
    seal::seal(&mut payload);
    let end = log_message(&payload, true);
    if ddl_server::xact::nest_level() > 1 {
        log_message(&[], true);
    } else {
        UNPADDED_END.set(end);
    }
}

/// At the start of a subtransaction: when the last WAL record this backend wrote is a record's
/// message that no padding followed, the subtransaction's first row would tie with it. The
/// padding written here is not transactional: the subtransaction has no xid yet (giving it one
/// would cost more), and the record only has to take the place after the message. The plugin
/// passes it to pgoutput like any message; it carries nothing. (Called as a subtransaction
/// starts, inside it.)
pub fn pad_before_subtransaction() {
    let end = UNPADDED_END.replace(0);
    // SAFETY: this backend's WAL position, read in it.
    if end != 0 && end == unsafe { pg_sys::XactLastRecEnd } {
        log_message(&[], false);
    }
}

/// Writes a `ddl_sync` message, transactional or not; where its WAL record ends.
fn log_message(payload: &[u8], transactional: bool) -> pg_sys::XLogRecPtr {
    // SAFETY: both pointers are valid for the call; PostgreSQL copies the payload into WAL.
    unsafe {
        pg_guard_ffi_boundary(|| {
            ddl_server::versions::log_message(
                PREFIX.as_ptr(),
                payload.as_ptr().cast(),
                payload.len(),
                transactional,
            )
        })
    }
}
