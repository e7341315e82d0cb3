//! DDL events as rows: a synthetic INSERT on `ddl_sync.events`, handed to pgoutput.
//!
//! pgoutput writes BEGIN lazily on a transaction's first change and drops transactions with
//! none, and only its own code knows its relation cache, row filters and streaming state. So
//! instead of writing protocol bytes ourselves, we build the change that decode.c would have
//! queued for a real INSERT on `ddl_sync.events` and give it to pgoutput's change callback:
//! BEGIN, RELATION, the xid prefix of streamed blocks and the INSERT are then all pgoutput's,
//! and a DDL-only transaction arrives as BEGIN/RELATION/INSERT/COMMIT like any other.

use crate::pgoutput;
use ddl_wire::{DdlRecord, RecordFlags};
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
    let nsp = pg_sys::get_namespace_oid(c"ddl_sync".as_ptr(), true);
    let relid = if nsp == pg_sys::InvalidOid {
        pg_sys::InvalidOid
    } else {
        pg_sys::get_relname_relid(c"events".as_ptr(), nsp)
    };
    if relid == pg_sys::InvalidOid {
        warning!(
            "ddl_pgoutput: ddl_sync.events does not exist at {}; DDL event not sent",
            fmt_lsn(lsn)
        );
        return false;
    }
    let rel = pg_sys::RelationIdGetRelation(relid);
    if rel.is_null() {
        return false;
    }
    let old = pg_sys::MemoryContextSwitchTo(scratch);
    let tuple = form_tuple(rel, lsn, record);
    let rb = (*ctx).reorder;
    let change = pg_sys::ReorderBufferGetChange(rb);
    (*change).action = pg_sys::ReorderBufferChangeType::REORDER_BUFFER_CHANGE_INSERT;
    (*change).lsn = lsn;
    // pgoutput writes change->txn->xid inside streamed blocks, and the subscriber uses it to
    // throw away the changes of a subtransaction that is rolled back after being streamed: the
    // event must belong to the subtransaction that ran the statement, not to the top level.
    (*change).txn = emitting;
    (*change).origin_id = (*txn).origin_id;
    (*change).data.tp = pg_sys::ReorderBufferChange__bindgen_ty_1__bindgen_ty_1 {
        relnode: (*rel).rd_node,
        clear_toast_afterwards: true,
        oldtuple: std::ptr::null_mut(),
        newtuple: tuple_buf(rb, tuple),
    };
    pg_sys::MemoryContextSwitchTo(old);

    let callbacks = pgoutput::callbacks();
    let change_cb = if streaming {
        callbacks.stream_change_cb
    } else {
        callbacks.change_cb
    };
    if let Some(change_cb) = change_cb {
        pg_guard_ffi_boundary(|| change_cb(ctx, txn, rel, change));
    }
    // The change was never counted in the reorder buffer's memory; this also frees newtuple.
    pg_sys::ReorderBufferReturnChange(rb, change, false);
    pg_sys::RelationClose(rel);
    pg_sys::MemoryContextReset(scratch);
    true
}

/// The row: each column of `ddl_sync.events` that ddl-wire's event view reads, by name; the
/// subscriber's apply-status columns stay NULL.
unsafe fn form_tuple(
    rel: pg_sys::Relation,
    lsn: pg_sys::XLogRecPtr,
    record: &DdlRecord<'_>,
) -> pg_sys::HeapTuple {
    let desc = (*rel).rd_att;
    let natts = (*desc).natts as usize;
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    let origin_lsn = if record.origin.original_lsn == 0 {
        lsn
    } else {
        record.origin.original_lsn
    };
    for (i, attr) in (*desc).attrs.as_slice(natts).iter().enumerate() {
        if attr.attisdropped {
            continue;
        }
        let text = |s: &str| server_text(s);
        let value = match CStr::from_ptr(attr.attname.data.as_ptr()).to_bytes() {
            b"lsn" => pg_sys::Datum::from(lsn),
            b"origin_sysid" => pg_sys::Datum::from(record.origin.original_sysid as i64),
            b"origin_lsn" => pg_sys::Datum::from(origin_lsn),
            b"xid" => pg_sys::Datum::from(i64::from(record.xid)),
            b"top_level" => pg_sys::Datum::from(record.flags.contains(RecordFlags::TOP_LEVEL)),
            b"forwarded" => pg_sys::Datum::from(record.flags.contains(RecordFlags::FORWARDED)),
            b"kind" => text(record.kind),
            b"dialect" => text(record.dialect),
            b"command_tag" => text(record.command_tag),
            b"schema_name" => text(record.schema),
            b"object_identity" => text(record.object_identity),
            b"sql" => text(record.sql),
            b"search_path" => text(record.search_path),
            b"role_name" => text(record.role),
            b"session_user_name" => text(record.session_user),
            b"database_name" => text(record.database),
            b"tables" => text(record.tables),
            b"settings" => text(record.settings),
            _ => continue,
        };
        values[i] = value;
        nulls[i] = false;
    }
    pg_sys::heap_form_tuple(desc, values.as_mut_ptr(), nulls.as_mut_ptr())
}

/// A `text` datum of `s` (UTF-8, as records are) in the database's encoding: pgoutput sends
/// text columns from the server encoding to the client's, so UTF-8 bytes left as they are in a
/// LATIN1 database would reach a UTF-8 subscriber encoded twice (`café` as `cafÃ©`).
unsafe fn server_text(s: &str) -> pg_sys::Datum {
    let (text, len) = ddl_server::text::in_server_encoding(s);
    pg_sys::Datum::from(pg_sys::cstring_to_text_with_len(text, len as i32))
}

/// Copies `tuple` into a reorder buffer tuple, as DecodeXLogTuple() would have made it.
unsafe fn tuple_buf(
    rb: *mut pg_sys::ReorderBuffer,
    tuple: pg_sys::HeapTuple,
) -> *mut pg_sys::ReorderBufferTupleBuf {
    let header = offset_of!(pg_sys::HeapTupleHeaderData, t_bits); // SizeofHeapTupleHeader
    let len = (*tuple).t_len as usize;
    let buf = pg_sys::ReorderBufferGetTupleBuf(rb, len - header);
    std::ptr::copy_nonoverlapping(
        (*tuple).t_data as *const u8,
        (*buf).tuple.t_data as *mut u8,
        len,
    );
    (*buf).tuple.t_len = len as u32;
    // ItemPointerSetInvalid, and no table OID, as for a decoded tuple.
    (*buf).tuple.t_self.ip_blkid.bi_hi = 0xFFFF;
    (*buf).tuple.t_self.ip_blkid.bi_lo = 0xFFFF;
    (*buf).tuple.t_self.ip_posid = 0;
    (*buf).tuple.t_tableOid = pg_sys::InvalidOid;
    buf
}

/// Whether `relation` is `ddl_sync.events`. Its real rows are node-local (a subscriber's apply
/// log; on a publisher, only rows inserted by hand): were they sent, a role that may insert
/// there would send DDL no capture sealed, and a cascade would send every event twice.
///
/// # Safety
/// `relation` is a change callback's open relation.
pub unsafe fn is_events_relation(relation: pg_sys::Relation) -> bool {
    let class = (*relation).rd_rel;
    // Every change of every table passes here: compare the name's first bytes in place
    // (NameData is NUL-padded) before anything costs more.
    const EVENTS: &[u8; 7] = b"events\0";
    let name = &(*class).relname.data;
    if name.iter().zip(EVENTS).any(|(&a, &b)| a as u8 != b) {
        return false;
    }
    let nsp = pg_sys::get_namespace_oid(c"ddl_sync".as_ptr(), true);
    if nsp != (*class).relnamespace {
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
    if (*txn).xid == pg_sys::TransactionId::from(xid) {
        return Some(txn);
    }
    let head: *mut pg_sys::dlist_node = &mut (*txn).subtxns.head;
    let mut node = (*head).next; // NULL: a list never initialised, i.e. empty
    while !node.is_null() && node != head {
        let sub = (node as *mut u8).sub(offset_of!(pg_sys::ReorderBufferTXN, node))
            as *mut pg_sys::ReorderBufferTXN;
        if (*sub).xid == pg_sys::TransactionId::from(xid) {
            return Some(sub);
        }
        node = (*node).next;
    }
    None
}

/// An LSN as PostgreSQL prints it.
pub fn fmt_lsn(lsn: pg_sys::XLogRecPtr) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}
