//! DDL events as rows: a synthetic INSERT on `ddl_sync.events`, handed to pgoutput.
//!
//! pgoutput writes BEGIN lazily on a transaction's first change and drops transactions with
//! none, and only its own code knows its relation cache, row filters and streaming state. So
//! instead of writing protocol bytes ourselves, we build the change that decode.c would have
//! queued for a real INSERT on `ddl_sync.events` and give it to pgoutput's change callback:
//! BEGIN, RELATION, the xid prefix of streamed blocks and the INSERT are then all pgoutput's,
//! and a DDL-only transaction arrives as BEGIN/RELATION/INSERT/COMMIT like any other.

use crate::{generated, pgoutput};
use ddl_wire::{DdlEvent, DdlRecord, Lsn, Value, EVENT_COLUMNS};
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use std::ffi::CStr;
use std::mem::offset_of;

/// Sends `record`, decoded from the message at `lsn`, as an INSERT on `ddl_sync.events`.
/// Returns false (after a WARNING) when `ddl_sync.events` does not exist at that point of the
/// history.
///
/// # Safety
/// Runs inside a message callback of a live decoding context, `txn` being the callback's txn
/// and `emitting` the (sub)transaction under it that wrote the record (see [`find_txn`]).
#[allow(clippy::too_many_arguments)] // the callback's context, and what the record needs
pub unsafe fn send(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    emitting: *mut pg_sys::ReorderBufferTXN,
    lsn: pg_sys::XLogRecPtr,
    record: &DdlRecord<'_>,
    streaming: bool,
    scratch: pg_sys::MemoryContext,
) -> bool {
    // Catalog lookups see the historic snapshot ReorderBufferProcessTXN installed.
    // SAFETY: in the callback's transaction.
    let relid = unsafe { ddl_server::extension_tables::relid(c"events") };
    if relid == pg_sys::InvalidOid {
        warning!(
            "ddl_pgoutput: ddl_sync.events does not exist at {}; DDL event not sent",
            ddl_server::text::lsn(Lsn(lsn))
        );
        return false;
    }
    // SAFETY: a relcache lookup; NULL for a relation that is gone.
    let rel = unsafe { pg_sys::RelationIdGetRelation(relid) };
    if rel.is_null() {
        return false;
    }
    // SAFETY: `scratch` is the session's context, a child of the decoding context's, so alive
    // while this callback runs; switched back below (on an ERROR, the abort switches back).
    let old = unsafe { pg_sys::MemoryContextSwitchTo(scratch) };
    let mut event = DdlEvent::from_record(record, Lsn(lsn));
    let settings = record.full_settings();
    event.settings = Some(&settings);
    // SAFETY: in the callback's transaction; what it allocates goes with `scratch`.
    let sent = crate::session::with(|s| unsafe {
        generated::sent_generated_columns(&event, &s.publications)
    });
    event.sent_generated_columns = sent.as_deref();
    // SAFETY: `rel` is open; the tuple is made in `scratch`.
    let tuple = unsafe { form_tuple(rel, &event) };
    // SAFETY: the caller's promise: `ctx` is live, and its reorder buffer gives a zeroed change
    // of our own, filled as decode.c fills an INSERT's; `txn` and `emitting` are the caller's.
    let (rb, change) = unsafe {
        let rb = (*ctx).reorder;
        let change = ddl_server::versions::alloc_change(rb);
        (*change).action = pg_sys::ReorderBufferChangeType::REORDER_BUFFER_CHANGE_INSERT;
        (*change).lsn = lsn;
        // pgoutput writes change->txn->xid inside streamed blocks, and the subscriber uses it
        // to throw away the changes of a subtransaction that is rolled back after being
        // streamed: the event must belong to the subtransaction that ran the statement, not to
        // the top level.
        (*change).txn = emitting;
        (*change).origin_id = (*txn).origin_id;
        ddl_server::versions::set_insert(rb, change, rel, tuple);
        (rb, change)
    };
    // SAFETY: back to the caller's context.
    unsafe { pg_sys::MemoryContextSwitchTo(old) };

    let callbacks = pgoutput::callbacks();
    let change_cb = if streaming {
        callbacks.stream_change_cb
    } else {
        callbacks.change_cb
    };
    if let Some(change_cb) = change_cb {
        // SAFETY: pgoutput's change callback, with the callback's context and transaction and
        // a change of an open relation; a raw C function pointer, so an ERROR inside becomes a
        // Rust panic.
        unsafe { pg_guard_ffi_boundary(|| change_cb(ctx, txn, rel, change)) };
    }
    // The change was never counted in the reorder buffer's memory; this also frees newtuple.
    // SAFETY: the change taken from `rb` above and the relation opened above, each given back
    // once; nothing made in `scratch` is used after.
    unsafe {
        ddl_server::versions::free_change(rb, change);
        pg_sys::RelationClose(rel);
        pg_sys::MemoryContextReset(scratch);
    }
    true
}

/// The row: each column of `ddl_sync.events` that ddl-wire's event schema names gets the
/// event's value, found by name; the subscriber's apply-status columns, and a column of
/// another type than the schema's, stay NULL.
///
/// # Safety
/// `rel` is the open `ddl_sync.events`; in a transaction.
unsafe fn form_tuple(rel: pg_sys::Relation, event: &DdlEvent<'_>) -> pg_sys::HeapTuple {
    // SAFETY: the caller's promise: the open relation's descriptor, of `natts` attributes.
    let (desc, attrs) = unsafe {
        let desc = (*rel).rd_att;
        (desc, ddl_server::versions::attributes(desc))
    };
    let natts = attrs.len();
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    let event = event.values();
    for (i, attr) in attrs.iter().enumerate() {
        if attr.attisdropped {
            continue;
        }
        // SAFETY: a NameData is NUL-terminated.
        let name = unsafe { CStr::from_ptr(attr.attname.data.as_ptr()) }.to_bytes();
        let Some(at) = EVENT_COLUMNS
            .iter()
            .position(|c| c.name.as_bytes() == name && c.ty.oid() == attr.atttypid.to_u32())
        else {
            continue;
        };
        let Some(value) = event[at] else {
            continue;
        };
        values[i] = match value {
            Value::Bool(b) => pg_sys::Datum::from(b),
            Value::Int8(n) => pg_sys::Datum::from(n),
            Value::Lsn(lsn) => pg_sys::Datum::from(lsn.0),
            Value::Text(s) => server_text(s),
        };
        nulls[i] = false;
    }
    // SAFETY: `values` and `nulls` have an entry for each attribute of `desc`, each value of
    // its column's type (checked above); the tuple is made in the current memory context.
    unsafe { pg_sys::heap_form_tuple(desc, values.as_mut_ptr(), nulls.as_mut_ptr()) }
}

/// A `text` datum of `s` (UTF-8, as records are) in the database's encoding: pgoutput sends
/// text columns from the server encoding to the client's, so UTF-8 bytes left as they are in a
/// LATIN1 database would reach a UTF-8 subscriber encoded twice (`café` as `cafÃ©`). In a
/// transaction (a conversion may look up its function).
fn server_text(s: &str) -> pg_sys::Datum {
    // SAFETY: `len` bytes at `text` (`s` itself, or a conversion in the current memory
    // context), copied into a new text datum there.
    unsafe {
        let (text, len) = ddl_server::text::in_server_encoding(s);
        pg_sys::Datum::from(pg_sys::cstring_to_text_with_len(text, len as i32))
    }
}

/// Whether `relation` is `ddl_sync.events`. Its real rows are node-local (a subscriber's apply
/// log; on a publisher, only rows inserted by hand): were they sent, a role that may insert
/// there would send DDL no capture sealed, and a cascade would send every event twice.
///
/// Every change of every table passes here, from a callback that is not guarded: the name is
/// compared in place, which can neither fail nor panic, and only a relation named `events`
/// costs a (guarded) catalog lookup.
///
/// # Safety
/// `relation` is a change callback's open relation.
pub unsafe fn is_events_relation(relation: pg_sys::Relation) -> bool {
    // SAFETY: the caller's promise: an open relation's pg_class row.
    let class = unsafe { &*(*relation).rd_rel };
    // NameData is NUL-padded: the first seven bytes say whether the name is `events`.
    const EVENTS: &[u8; 7] = b"events\0";
    let name = &class.relname.data;
    if name.iter().zip(EVENTS).any(|(&a, &b)| a as u8 != b) {
        return false;
    }
    // SAFETY: in the change callback's transaction.
    unsafe { in_extension_schema(class.relnamespace) }
}

/// Whether `namespace` is the schema `ddl_sync`.
///
/// # Safety
/// In a transaction.
#[pg_guard]
unsafe extern "C-unwind" fn in_extension_schema(namespace: pg_sys::Oid) -> bool {
    // SAFETY: a syscache lookup (missing_ok), in the caller's transaction.
    let nsp = unsafe { pg_sys::get_namespace_oid(c"ddl_sync".as_ptr(), true) };
    if nsp != namespace {
        return false;
    }
    debug1!("ddl_pgoutput: a change of ddl_sync.events is node-local: not sent");
    true
}

/// The (sub)transaction with `xid` under the top-level `txn`, if it is one: a sealed record
/// names the (sub)transaction that wrote it.
///
/// # Safety
/// `txn` is the top-level transaction of a message callback.
pub unsafe fn find_txn(
    txn: *mut pg_sys::ReorderBufferTXN,
    xid: u32,
) -> Option<*mut pg_sys::ReorderBufferTXN> {
    // SAFETY: the caller's promise.
    if unsafe { (*txn).xid } == pg_sys::TransactionId::from(xid) {
        return Some(txn);
    }
    // SAFETY: the caller's promise: `subtxns` is the list of its subtransactions, linked by
    // their `node` (a list never initialised has a NULL `next`, and is empty).
    unsafe {
        let head: *mut pg_sys::dlist_node = &mut (*txn).subtxns.head;
        let mut node = (*head).next;
        while !node.is_null() && node != head {
            let sub = (node as *mut u8).sub(offset_of!(pg_sys::ReorderBufferTXN, node))
                as *mut pg_sys::ReorderBufferTXN;
            if (*sub).xid == pg_sys::TransactionId::from(xid) {
                return Some(sub);
            }
            node = (*node).next;
        }
    }
    None
}
