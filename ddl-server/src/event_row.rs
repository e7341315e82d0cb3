//! A row of `ddl_sync.events`, handed to a function as a whole (`ddl_sync.replay(NEW)`) or to
//! the apply trigger, read as ddl-wire's [`DdlEvent`] through the event schema: each column
//! found by name and checked against the schema's type, text converted from the database
//! encoding to UTF-8 (see [`crate::text`]). The row is the one the plugin formed by the same
//! schema on the publisher (ddl-decode's `events.rs`), so neither side lists the columns.

use crate::text;
use ddl_wire::{DdlEvent, EventError, Lsn, SqlType, Value, EVENT_COLUMNS};
use pgrx::pg_sys;
use std::ffi::CStr;

/// The values of a row of `ddl_sync.events`, one per column of [`EVENT_COLUMNS`] (`None`:
/// NULL, or a column the row does not have); [`EventRow::event`] borrows the event from it.
pub struct EventRow {
    values: Vec<Option<Owned>>,
}

/// A column value that outlives the row's memory.
enum Owned {
    Bool(bool),
    Int8(i64),
    Lsn(Lsn),
    Text(String),
}

impl Owned {
    fn value(&self) -> Value<'_> {
        match self {
            Owned::Bool(b) => Value::Bool(*b),
            Owned::Int8(n) => Value::Int8(*n),
            Owned::Lsn(lsn) => Value::Lsn(*lsn),
            Owned::Text(s) => Value::Text(s),
        }
    }
}

impl EventRow {
    /// The values of `tuple`, a row of a row type (that of `ddl_sync.events`), read by the
    /// names and types of [`EVENT_COLUMNS`]. A column of that name but another type is an error
    /// naming it: the table is not the one the schema describes.
    ///
    /// # Safety
    /// `tuple` is a formed row whose header carries its row type (a composite datum's); in a
    /// transaction.
    pub unsafe fn read(tuple: *mut pg_sys::HeapTupleData) -> Result<EventRow, String> {
        // SAFETY: the caller's promise: a composite row names its type, which the typcache
        // describes (pinned until released below).
        let desc = unsafe {
            let header = (*tuple).t_data;
            pg_sys::lookup_rowtype_tupdesc(
                pgrx::heap_tuple_header_get_type_id(header),
                pgrx::heap_tuple_header_get_typmod(header),
            )
        };
        // SAFETY: `tuple` is a row of `desc`, alive until released below.
        let row = unsafe { EventRow::read_row(tuple, desc) };
        // ReleaseTupleDesc: the reference lookup_rowtype_tupdesc took, given back once (a
        // descriptor that is not reference-counted has none).
        // SAFETY: `desc` is alive until then.
        unsafe {
            if (*desc).tdrefcount >= 0 {
                pg_sys::DecrTupleDescRefCount(desc);
            }
        }
        row
    }

    /// The values of `tuple`, a row of descriptor `desc` (a trigger's row of the table), read
    /// as [`EventRow::read`] reads them.
    ///
    /// # Safety
    /// `tuple` is a row of `desc`; in a transaction.
    pub unsafe fn read_row(
        tuple: *mut pg_sys::HeapTupleData,
        desc: pg_sys::TupleDesc,
    ) -> Result<EventRow, String> {
        // SAFETY: the caller's promise.
        let attrs = unsafe { crate::versions::attributes(desc) };
        let mut datums = vec![pg_sys::Datum::from(0usize); attrs.len()];
        let mut nulls = vec![true; attrs.len()];
        // SAFETY: `tuple` is a row of `desc`; the arrays have an entry per attribute.
        unsafe { pg_sys::heap_deform_tuple(tuple, desc, datums.as_mut_ptr(), nulls.as_mut_ptr()) };
        let mut values: Vec<Option<Owned>> = EVENT_COLUMNS.iter().map(|_| None).collect();
        let mut result = Ok(());
        for (i, attr) in attrs.iter().enumerate() {
            if attr.attisdropped || nulls[i] {
                continue;
            }
            // SAFETY: a NameData is NUL-terminated.
            let name = unsafe { CStr::from_ptr(attr.attname.data.as_ptr()) }.to_bytes();
            let Some(at) = EVENT_COLUMNS.iter().position(|c| c.name.as_bytes() == name) else {
                continue;
            };
            let column = &EVENT_COLUMNS[at];
            if attr.atttypid.to_u32() != column.ty.oid() {
                result = Err(format!(
                    "column \"{}\" of ddl_sync.events has type OID {}, not {}",
                    column.name,
                    attr.atttypid.to_u32(),
                    column.ty.sql_name()
                ));
                break;
            }
            let datum = datums[i];
            values[at] = Some(match column.ty {
                SqlType::Bool => Owned::Bool(datum.value() != 0),
                // int8 and pg_lsn are passed by value on every platform PostgreSQL 15 and
                // later build for with 64-bit Datums.
                SqlType::Int8 => Owned::Int8(datum.value() as i64),
                SqlType::PgLsn => Owned::Lsn(Lsn(datum.value() as u64)),
                // SAFETY: a text datum of the row, converted in the current memory context.
                SqlType::Text => Owned::Text(unsafe { text::utf8_text(datum) }),
            });
        }
        result.map(|()| EventRow { values })
    }

    /// The event the row holds; an error names a column that is NULL where the schema does not
    /// allow it.
    pub fn event(&self) -> Result<DdlEvent<'_>, EventError> {
        DdlEvent::from_values(|at, _| Ok(self.values[at].as_ref().map(Owned::value)))
    }
}
