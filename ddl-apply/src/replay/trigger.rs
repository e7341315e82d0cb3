//! The apply trigger, `ddl_sync.apply_event()`: BEFORE INSERT on `ddl_sync.events`, ENABLE
//! ALWAYS (the apply worker runs with `session_replication_role = replica`). A subscription's
//! apply worker inserts each DDL event like any other row; the trigger replays the statement in
//! the worker's own transaction, between the rows around it, and keeps the row as the
//! subscriber's apply log with the outcome, counted in `ddl_sync.subscription_counters`.
//!
//! Written in Rust, not PL/pgSQL, for what it costs at every event (#31): the PL/pgSQL trigger
//! ran five queries per event (the origin check, `pg_control_system()`, which reads
//! `pg_control` from disk, the duplicate check, `ddl_sync.replay(NEW)` as a set-returning
//! function and the counters' PL/pgSQL function), some 400,000 instructions beside the replay.

use super::{counters, replay_read};
use crate::subscriber::applying::applying_subscription;
use ddl_server::event_row::EventRow;
use ddl_server::extension_tables::{column_number, column_value};
use pgrx::prelude::*;
use pgrx::{pg_sys, IntoDatum, PgTupleDesc};
use std::convert::Infallible;
use std::ffi::CStr;
use std::time::Instant;

#[pg_trigger(sql = false)]
fn apply_event<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, Infallible> {
    let data = trigger.trigger_data();
    // SAFETY: PostgreSQL calls the trigger for each row of an INSERT on ddl_sync.events: the
    // row and its relation are valid for the call.
    let row = unsafe { Row::new(data.tg_trigtuple, data.tg_relation) };
    let Some(columns) = apply(&row) else {
        return Ok(None);
    };
    // SAFETY: the row's descriptor, and the new row formed from it in the trigger's context.
    Ok(Some(unsafe {
        PgHeapTuple::from_heap_tuple(PgTupleDesc::from_pg_unchecked(row.desc), row.with(&columns))
    }))
}

/// The apply columns a row gets, each `(column, value)` (`None`: NULL); `None` when the row is
/// not kept (a duplicate).
fn apply(row: &Row) -> Option<Vec<(&'static CStr, Option<pg_sys::Datum>)>> {
    // Only a subscription's apply worker replays: anything else inserting here (a restore, a
    // mistaken INSERT) must never run the statement.
    if ddl_server::versions::session_origin() == 0 {
        return Some(vec![
            (c"apply_status", "refused".into_datum()),
            (
                c"apply_detail",
                "not inserted by a subscription's apply worker: nothing replayed".into_datum(),
            ),
        ]);
    }
    let subid = applying_subscription();
    let lsn = row.int8(c"lsn").unwrap_or(0) as u64;
    // ddl_pgoutput sends only events it made itself, whose apply columns are empty. A row that
    // has them is a real row of another node's ddl_sync.events (its apply log, or a row
    // inserted there by hand) that reached us through plain pgoutput: not a DDL event.
    if row.get(c"apply_status").is_some() || row.get(c"applied_at").is_some() {
        let detail = "a row of the publisher's own ddl_sync.events, not an event of \
                      ddl_pgoutput (was the subscription's slot made with plugin pgoutput?): \
                      nothing replayed";
        counters::count(subid, "refused", Some(detail), lsn, false);
        return Some(vec![
            (c"subid", subid.into_datum()),
            (c"apply_status", "refused".into_datum()),
            (c"apply_detail", detail.into_datum()),
            (c"applied_at", now()),
        ]);
    }
    let started = Instant::now();
    // SAFETY: the trigger's row, of its relation's descriptor.
    let read = unsafe { EventRow::read_row(row.tuple, row.desc) };
    if let Some(key) = duplicate(row, &read) {
        debug1!("ddl_sync: {key} already applied here: not replayed again");
        counters::count(subid, "duplicate", None, lsn, false);
        return None;
    }
    let verdict = replay_read(read);
    counters::count(
        subid,
        verdict.status,
        verdict.detail.as_deref(),
        lsn,
        verdict.verified == Some(true),
    );
    let seconds = started.elapsed().as_secs_f64();
    Some(vec![
        (c"subid", subid.into_datum()),
        (c"apply_status", verdict.status.into_datum()),
        (c"apply_detail", verdict.detail.as_deref().into_datum()),
        (c"apply_adapter", verdict.adapter.as_deref().into_datum()),
        (c"applied_at", now()),
        (
            c"apply_duration",
            pgrx::datum::Interval::new(0, 0, (seconds * 1e6).round() as i64)
                .ok()
                .into_datum(),
        ),
        (c"apply_verified", verdict.verified.into_datum()),
    ])
}

/// Whether the row's event was applied here already, and then which it is, for the log: DDL
/// that started here and came back around a cycle (applied by its author), or the same DDL
/// through a second subscription (applied once).
#[inline(never)] // a phase of `cargo xtask bench apply-instructions`
fn duplicate(row: &Row, read: &Result<EventRow, String>) -> Option<String> {
    let (sysid, origin_lsn) = (row.int8(c"origin_sysid")?, row.int8(c"origin_lsn")?);
    // SAFETY: reads the control file's copy in shared memory.
    let here = unsafe { pg_sys::GetSystemIdentifier() } as i64;
    let logged = || {
        // SAFETY: the trigger's relation, ddl_sync.events, open; an index scan of its primary
        // key (origin_sysid, origin_lsn) with the statement's snapshot, which sees the rows of
        // the transaction's earlier events too.
        unsafe { row.has_key(sysid, origin_lsn) }
    };
    if sysid != here && !logged() {
        return None;
    }
    let origin = format!(
        "(origin {sysid} {})",
        ddl_server::text::lsn(ddl_wire::Lsn(origin_lsn as u64))
    );
    Some(match read.as_ref().ok().and_then(|r| r.event().ok()) {
        Some(event) => format!("{} {} {origin}", event.command_tag, event.object_identity),
        None => origin,
    })
}

/// `clock_timestamp()`, for `applied_at`.
fn now() -> Option<pg_sys::Datum> {
    // SAFETY: reads the clock.
    Some(pg_sys::Datum::from(unsafe {
        pg_sys::GetCurrentTimestamp()
    }))
}

/// The row being inserted, its table (ddl_sync.events) and the table's descriptor.
struct Row {
    tuple: pg_sys::HeapTuple,
    rel: pg_sys::Relation,
    desc: pg_sys::TupleDesc,
}

impl Row {
    /// # Safety
    /// `tuple` is a row of `rel`, an open relation, both valid while the `Row` is used.
    unsafe fn new(tuple: pg_sys::HeapTuple, rel: pg_sys::Relation) -> Row {
        // SAFETY: the caller's promise.
        let desc = unsafe { (*rel).rd_att };
        Row { tuple, rel, desc }
    }

    /// Whether the table has a row of primary key `(origin_sysid, origin_lsn)` that the
    /// statement's snapshot sees.
    ///
    /// # Safety
    /// The table is ddl_sync.events (its primary key those two columns); in the trigger.
    unsafe fn has_key(&self, sysid: i64, origin_lsn: i64) -> bool {
        // systable_beginscan takes the table's column numbers, and maps them to the index's.
        let (Some(sysid_column), Some(lsn_column)) =
            (self.column(c"origin_sysid"), self.column(c"origin_lsn"))
        else {
            return false;
        };
        // SAFETY: the caller's promise: an open relation with a primary key of an int8 and a
        // pg_lsn column, scanned with the active snapshot, the scan ended before returning.
        unsafe {
            let index = ddl_server::versions::primary_key_index(self.rel);
            if index == pg_sys::InvalidOid {
                return false;
            }
            let mut keys: [pg_sys::ScanKeyData; 2] = std::mem::zeroed();
            let equal = [
                (sysid_column, pg_sys::F_INT8EQ, sysid),
                (lsn_column, pg_sys::F_PG_LSN_EQ, origin_lsn),
            ];
            for (key, (column, proc, value)) in keys.iter_mut().zip(equal) {
                pg_sys::ScanKeyInit(
                    key,
                    column as pg_sys::AttrNumber,
                    pg_sys::BTEqualStrategyNumber as u16,
                    pg_sys::Oid::from(proc),
                    pg_sys::Datum::from(value),
                );
            }
            let scan = pg_sys::systable_beginscan(
                self.rel,
                index,
                true,
                pg_sys::GetActiveSnapshot(),
                2,
                keys.as_mut_ptr(),
            );
            let found = !pg_sys::systable_getnext(scan).is_null();
            pg_sys::systable_endscan(scan);
            found
        }
    }

    /// The number of column `name`; `None` when the table has none.
    fn column(&self, name: &CStr) -> Option<i32> {
        // SAFETY: a valid descriptor (see `new`).
        unsafe { column_number(self.desc, name) }
    }

    /// Column `name`'s value; `None` when NULL or missing.
    fn get(&self, name: &CStr) -> Option<pg_sys::Datum> {
        // SAFETY: a row of `desc` (see `new`).
        unsafe { column_value(self.tuple, self.desc, name) }
    }

    /// The value of an int8 or pg_lsn column (both 64-bit, passed by value).
    fn int8(&self, name: &CStr) -> Option<i64> {
        self.get(name).map(|d| d.value() as i64)
    }

    /// A copy of the row with `columns` set (those the table lacks left out).
    fn with(&self, columns: &[(&CStr, Option<pg_sys::Datum>)]) -> pg_sys::HeapTuple {
        let mut numbers = Vec::with_capacity(columns.len());
        let mut values = Vec::with_capacity(columns.len());
        let mut nulls = Vec::with_capacity(columns.len());
        for (name, value) in columns {
            if let Some(number) = self.column(name) {
                numbers.push(number);
                values.push(value.unwrap_or(pg_sys::Datum::from(0)));
                nulls.push(value.is_none());
            }
        }
        // SAFETY: a row of `desc`; the arrays have one entry per replaced column, each a
        // column of `desc` with a value of its type (or NULL). The copy is palloc'd in the
        // trigger's memory context, where PostgreSQL takes the returned row from.
        unsafe {
            pg_sys::heap_modify_tuple_by_cols(
                self.tuple,
                self.desc,
                numbers.len() as i32,
                numbers.as_mut_ptr(),
                values.as_mut_ptr(),
                nulls.as_mut_ptr(),
            )
        }
    }
}
