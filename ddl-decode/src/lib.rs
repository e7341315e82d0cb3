//! `ddl_pgoutput`: a logical decoding output plugin that is PostgreSQL's own `pgoutput`, byte for
//! byte, and also carries each captured DDL statement as an INSERT on `ddl_sync.events`.
//!
//! The plugin does not reimplement pgoutput: it loads the server's `pgoutput` library, copies its
//! callbacks and delegates to them. Everything a consumer already relies on (protocol versions,
//! binary mode, streaming, two-phase, row filters, column lists, error messages) therefore stays
//! exactly as the server ships it. Only these callbacks are interposed:
//! - `startup_cb`: after pgoutput's startup, note the publications the client asked for;
//! - `change_cb` / `stream_change_cb` / `truncate_cb` / `stream_truncate_cb`: real changes of
//!   `ddl_sync.events` (a node's apply log, rows someone inserted by hand, a TRUNCATE) are not
//!   sent: only the plugin's own sealed events travel;
//! - `message_cb` / `stream_message_cb`: a transactional `ddl_sync` message (written by the
//!   capture hook, see `ddl-capture`) that one of those publications takes becomes a synthetic
//!   INSERT on `ddl_sync.events` (see [`events`]); then, like every message, it goes to
//!   pgoutput, which sends it only to clients that asked for `messages`.
//!
//! ```sql
//! SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');
//! SELECT * FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL,
//!        'proto_version', '1', 'publication_names', 'p');
//! ```

mod events;
mod generated;
mod pgoutput;
mod session;

use ddl_capture::{rules, stats};
use ddl_wire::{DdlRecord, RECORD_PREFIX};
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use std::ffi::{c_char, CStr};

::pgrx::pg_module_magic!(name, version);

// The capture's event trigger functions and the statistics functions, which the ddl_sync
// extension declares with `LANGUAGE c AS '$libdir/ddl_pgoutput'`.
pub use ddl_capture::stats::*;
pub use ddl_capture::{ddl_sync_capture_ddl_command_end, ddl_sync_capture_sql_drop};
// Called by ddl_sync.so while it replays a statement (see ddl_capture::replay_origin).
pub use ddl_capture::replay_origin::ddl_sync_set_replay_origin;

/// Loaded by `shared_preload_libraries` (or as a plugin by a walsender): install the capture
/// hook, and when preloaded, request the statistics' shared memory.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    ddl_server::releases::refuse_unfit_server("ddl_pgoutput");
    ddl_capture::forward_tracing();
    // SAFETY: _PG_init runs once per process.
    unsafe {
        ddl_capture::install_hook();
        stats::init();
    }
}

/// The output plugin entry point PostgreSQL looks up by name.
///
/// # Safety
/// Called by PostgreSQL with a valid, writable callback table.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn _PG_output_plugin_init(cb: *mut pg_sys::OutputPluginCallbacks) {
    let pgoutput = pgoutput::callbacks();
    // Start from pgoutput's table verbatim: every callback we do not interpose is pgoutput's own.
    // SAFETY: the caller's promise.
    unsafe {
        *cb = *pgoutput;
        (*cb).startup_cb = Some(startup_cb);
        (*cb).change_cb = Some(change_cb);
        (*cb).stream_change_cb = Some(stream_change_cb);
        (*cb).truncate_cb = Some(truncate_cb);
        (*cb).stream_truncate_cb = Some(stream_truncate_cb);
        (*cb).message_cb = Some(message_cb);
        (*cb).stream_message_cb = Some(stream_message_cb);
    }
}

/// pgoutput's startup, then the session's. Not guarded, like every callback that hands on to
/// pgoutput (see [`on_change`]): pgoutput's ERROR (an unknown publication, a protocol version
/// it refuses) reaches the client as pgoutput raised it.
///
/// # Safety
/// Called by PostgreSQL as the startup callback of a live decoding context.
unsafe extern "C-unwind" fn startup_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    options: *mut pg_sys::OutputPluginOptions,
    is_init: bool,
) {
    if let Some(startup) = pgoutput::loaded().startup_cb {
        // SAFETY: pgoutput's startup callback with PostgreSQL's arguments; this frame holds
        // nothing to drop.
        unsafe { startup(ctx, options, is_init) };
    }
    // SAFETY: the caller's promise.
    unsafe { session::begin(ctx) };
}

/// See [`on_change`].
///
/// # Safety
/// Called by PostgreSQL as a change callback.
unsafe extern "C-unwind" fn change_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    relation: pg_sys::Relation,
    change: *mut pg_sys::ReorderBufferChange,
) {
    // SAFETY: the caller's promise.
    unsafe { on_change(ctx, txn, relation, change, false) };
}

/// See [`on_change`].
///
/// # Safety
/// Called by PostgreSQL as a streamed change callback.
unsafe extern "C-unwind" fn stream_change_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    relation: pg_sys::Relation,
    change: *mut pg_sys::ReorderBufferChange,
) {
    // SAFETY: the caller's promise.
    unsafe { on_change(ctx, txn, relation, change, true) };
}

/// Both change callbacks: pgoutput's, unless the change is one of `ddl_sync.events`.
///
/// Every row change of every published table passes here, so nothing here is guarded by pgrx
/// (a guard costs more than the rest of this function, and would turn pgoutput's ERROR into
/// a panic and back, losing its CONTEXT): pgoutput's ERROR leaves through this frame as
/// pgoutput raised it, and the frame holds nothing that needs dropping. What may fail, the
/// catalog lookup in [`events::is_events_relation`], is guarded on its own.
///
/// # Safety
/// The arguments PostgreSQL gave a change callback (`streaming`: the streamed one).
unsafe fn on_change(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    relation: pg_sys::Relation,
    change: *mut pg_sys::ReorderBufferChange,
    streaming: bool,
) {
    // SAFETY: the caller's promise: the change's open relation.
    if unsafe { events::is_events_relation(relation) } {
        return;
    }
    let callbacks = pgoutput::loaded();
    let cb = if streaming {
        callbacks.stream_change_cb
    } else {
        callbacks.change_cb
    };
    if let Some(cb) = cb {
        // SAFETY: pgoutput's callback of the same kind, with PostgreSQL's arguments.
        unsafe { cb(ctx, txn, relation, change) };
    }
}

/// See [`on_truncate`].
///
/// # Safety
/// Called by PostgreSQL as a truncate callback.
#[pg_guard]
unsafe extern "C-unwind" fn truncate_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    nrelations: std::ffi::c_int,
    relations: *mut pg_sys::Relation,
    change: *mut pg_sys::ReorderBufferChange,
) {
    // SAFETY: the caller's promise.
    unsafe { on_truncate(ctx, txn, nrelations, relations, change, false) };
}

/// See [`on_truncate`].
///
/// # Safety
/// Called by PostgreSQL as a streamed truncate callback.
#[pg_guard]
unsafe extern "C-unwind" fn stream_truncate_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    nrelations: std::ffi::c_int,
    relations: *mut pg_sys::Relation,
    change: *mut pg_sys::ReorderBufferChange,
) {
    // SAFETY: the caller's promise.
    unsafe { on_truncate(ctx, txn, nrelations, relations, change, true) };
}

/// Both truncate callbacks: pgoutput's, for the relations other than `ddl_sync.events`.
///
/// # Safety
/// The arguments PostgreSQL gave a truncate callback (`streaming`: the streamed one).
unsafe fn on_truncate(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    nrelations: std::ffi::c_int,
    relations: *mut pg_sys::Relation,
    change: *mut pg_sys::ReorderBufferChange,
    streaming: bool,
) {
    let callbacks = pgoutput::callbacks();
    let Some(cb) = (if streaming {
        callbacks.stream_truncate_cb
    } else {
        callbacks.truncate_cb
    }) else {
        return;
    };
    // SAFETY: the caller's promise: `relations` is the reorder buffer's array of `nrelations`
    // open relations (palloc'd, so not NULL even when empty).
    let all =
        unsafe { std::slice::from_raw_parts(relations, usize::try_from(nrelations).unwrap_or(0)) };
    let mut kept: Vec<pg_sys::Relation> = all
        .iter()
        .copied()
        // SAFETY: an open relation of the change.
        .filter(|&r| !unsafe { events::is_events_relation(r) })
        .collect();
    if kept.is_empty() {
        return;
    }
    let n = kept.len() as std::ffi::c_int;
    // SAFETY: pgoutput's callback of the same kind, with PostgreSQL's arguments but fewer of
    // its relations; a raw C function pointer, so an ERROR inside becomes a Rust panic.
    unsafe { pg_guard_ffi_boundary(|| cb(ctx, txn, n, kept.as_mut_ptr(), change)) };
}

/// See [`on_message`].
///
/// # Safety
/// Called by PostgreSQL as a message callback.
unsafe extern "C-unwind" fn message_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    lsn: pg_sys::XLogRecPtr,
    transactional: bool,
    prefix: *const c_char,
    size: pg_sys::Size,
    message: *const c_char,
) {
    // SAFETY: the caller's promise.
    unsafe { on_message(ctx, txn, lsn, transactional, prefix, size, message, false) };
}

/// See [`on_message`].
///
/// # Safety
/// Called by PostgreSQL as a streamed message callback.
unsafe extern "C-unwind" fn stream_message_cb(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    lsn: pg_sys::XLogRecPtr,
    transactional: bool,
    prefix: *const c_char,
    size: pg_sys::Size,
    message: *const c_char,
) {
    // SAFETY: the caller's promise.
    unsafe { on_message(ctx, txn, lsn, transactional, prefix, size, message, true) };
}

/// Both message callbacks: the DDL event first (guarded, in [`ddl_event`]), then the message
/// itself to pgoutput's callback of the same kind, which forwards it to clients that asked for
/// `messages`; unguarded, as in [`on_change`].
///
/// # Safety
/// The arguments PostgreSQL gave a message callback (`streaming`: the streamed one).
#[allow(clippy::too_many_arguments)] // the message callback's own arguments
unsafe fn on_message(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    lsn: pg_sys::XLogRecPtr,
    transactional: bool,
    prefix: *const c_char,
    size: pg_sys::Size,
    message: *const c_char,
    streaming: bool,
) {
    if transactional {
        // SAFETY: the caller's promise.
        unsafe { ddl_event(ctx, txn, lsn, prefix, size, message, streaming) };
    }
    let callbacks = pgoutput::loaded();
    let pgoutput_cb = if streaming {
        callbacks.stream_message_cb
    } else {
        callbacks.message_cb
    };
    if let Some(cb) = pgoutput_cb {
        // SAFETY: pgoutput's callback of the same kind, with PostgreSQL's arguments.
        unsafe { cb(ctx, txn, lsn, transactional, prefix, size, message) };
    }
}

/// Whether the message belongs to a (sub)transaction that is known to have aborted.
///
/// While decoding an in-progress (streamed) or prepared transaction, PostgreSQL sets
/// `CheckXidAlive` to the (sub)transaction of each change, and any catalog access by the plugin
/// then fails if that transaction has aborted; the reorder buffer catches the failure and stops
/// streaming the transaction for now. pgoutput does no catalog access for a message, so to keep
/// the output identical we must not either: the DDL of an aborted subtransaction would be thrown
/// away by every consumer anyway.
fn in_aborted_transaction() -> bool {
    // SAFETY: a backend global, and status lookups (procarray, clog) of a transaction id.
    unsafe {
        let xid = pg_sys::CheckXidAlive;
        xid != pg_sys::InvalidTransactionId
            && !pg_sys::TransactionIdIsInProgress(xid)
            && !pg_sys::TransactionIdDidCommit(xid)
    }
}

/// Turns a `ddl_sync` message into a DDL event when one of the client's publications takes it.
/// An empty message is the capture's padding (see `ddl-capture`) and carries nothing. Anything
/// else under the prefix that is not a record the capture sealed in this very transaction
/// (malformed, forged, or genuine bytes emitted again elsewhere) is refused with a WARNING and
/// counted, never sent: nothing in a message may make the walsender ERROR, or every
/// subscription of the slot would stop on it.
///
/// # Safety
/// The arguments PostgreSQL gave a callback for a transactional message: `txn` its top-level
/// transaction, `prefix` NUL-terminated, `message` of `size` bytes.
#[pg_guard]
unsafe extern "C-unwind" fn ddl_event(
    ctx: *mut pg_sys::LogicalDecodingContext,
    txn: *mut pg_sys::ReorderBufferTXN,
    lsn: pg_sys::XLogRecPtr,
    prefix: *const c_char,
    size: pg_sys::Size,
    message: *const c_char,
    streaming: bool,
) {
    if txn.is_null()
        || size == 0
        // SAFETY: the caller's promise: a NUL-terminated prefix.
        || unsafe { CStr::from_ptr(prefix) }.to_bytes() != RECORD_PREFIX.as_bytes()
    {
        return;
    }
    if in_aborted_transaction() {
        return;
    }
    // SAFETY: the caller's promise: the message's bytes, valid during the callback.
    let payload = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), size) };
    // SAFETY: the caller's promise: the message's top-level transaction, not null (above).
    let (record, emitting) = match unsafe { authentic_record(txn, payload) } {
        Ok(found) => found,
        Err(why) => {
            // SAFETY: as above.
            let xid = unsafe { (*txn).xid };
            warning!(
                "ddl_pgoutput: ignoring ddl_sync message at {} in transaction {xid}: {why}",
                ddl_server::text::lsn(ddl_wire::Lsn(lsn)),
            );
            session::with(|s| {
                // SAFETY: in the decoding callback's transaction.
                for publication in unsafe { rules::publication_oids(&s.publications) } {
                    stats::count_rejected(publication, lsn);
                }
            });
            return;
        }
    };
    let Some((takers, scratch)) = session::with(|s| {
        // SAFETY: in the decoding callback's transaction, under its historic snapshot.
        let rules = unsafe {
            let pubids = rules::publication_oids(&s.publications);
            rules::PublicationRules::decoding(&s.rules, &pubids)
        };
        let takers: Vec<pg_sys::Oid> = rules
            .verdicts(&record)
            .into_iter()
            .filter(|(_, verdict)| *verdict == rules::Verdict::Takes)
            .map(|(publication, _)| publication)
            .collect();
        (takers, s.scratch)
    }) else {
        return;
    };
    if takers.is_empty()
        // SAFETY: the caller's promise: in the message callback, `txn` its transaction, and
        // `emitting` the (sub)transaction under it that wrote the record.
        || !unsafe { events::send(ctx, txn, emitting, lsn, &record, streaming, scratch) }
    {
        return;
    }
    debug1!(
        "ddl_pgoutput: sent {} {} at {}",
        record.command_tag,
        record.object_identity,
        ddl_server::text::lsn(ddl_wire::Lsn(lsn))
    );
    for publication in takers {
        stats::count_emitted(publication, lsn);
    }
}

/// The record in `payload` if the capture of this server wrote it in `txn`: well-formed, sealed
/// under this server's key, naming this server as the one that captured it, written by `txn`
/// or one of its subtransactions (returned with it), and holding nothing the events row cannot
/// carry.
///
/// # Safety
/// `txn` is the top-level transaction of a message callback.
unsafe fn authentic_record<'a>(
    txn: *mut pg_sys::ReorderBufferTXN,
    payload: &'a [u8],
) -> Result<(DdlRecord<'a>, *mut pg_sys::ReorderBufferTXN), String> {
    let record = DdlRecord::parse(payload).map_err(|e| format!("malformed: {e}"))?;
    if !ddl_capture::seal::verify(payload) {
        return Err("its authentication tag is wrong: not written by this server's capture".into());
    }
    // SAFETY: read from the control file at startup.
    let sysid = unsafe { pg_sys::GetSystemIdentifier() };
    if record.origin.capturing_sysid != sysid {
        return Err(format!(
            "it names system {} as its author, not this one ({sysid})",
            record.origin.capturing_sysid
        ));
    }
    // SAFETY: the caller's promise.
    let Some(emitting) = (unsafe { events::find_txn(txn, record.xid) }) else {
        return Err(format!(
            "it was sealed in transaction {}, not in this one: a copy of another transaction's record",
            record.xid
        ));
    };
    if let Some(field) = record.strings_with_nul() {
        return Err(format!("its field {field} holds a NUL byte"));
    }
    Ok((record, emitting))
}
