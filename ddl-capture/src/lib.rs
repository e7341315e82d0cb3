//! Capture of DDL statements on the publisher, inside the backend that runs them.
//!
//! Each captured statement becomes one transactional logical decoding message with prefix
//! [`RECORD_PREFIX`] whose payload is a [`DdlRecord`] (see `ddl-wire`). Being transactional, the
//! message is decoded only if its (sub)transaction commits, in commit order with the rows around
//! it, and a rolled-back statement leaves nothing behind.

use ddl_wire::{DdlRecord, RECORD_PREFIX};
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use std::ffi::CString;

extern "C-unwind" {
    // replication/message.h; not in pgrx's pg_sys bindings.
    fn LogLogicalMessage(
        prefix: *const std::ffi::c_char,
        message: *const std::ffi::c_char,
        size: pg_sys::Size,
        transactional: bool,
    ) -> pg_sys::XLogRecPtr;
}

/// Writes `record` to WAL as a transactional `ddl_sync` message and returns the record's end LSN.
///
/// Must run inside a transaction in a backend (LogLogicalMessage assigns an xid if needed).
pub fn emit_record(record: &DdlRecord<'_>) -> pg_sys::XLogRecPtr {
    let mut payload = Vec::new();
    record.encode(&mut payload);
    let prefix = CString::new(RECORD_PREFIX).expect("the prefix has no NUL byte");
    // SAFETY: both pointers are valid for the call; PostgreSQL copies the payload into WAL.
    unsafe {
        pg_guard_ffi_boundary(|| {
            LogLogicalMessage(
                prefix.as_ptr(),
                payload.as_ptr().cast(),
                payload.len(),
                true,
            )
        })
    }
}
