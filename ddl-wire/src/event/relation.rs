//! The event read from pgoutput's messages: a Relation message of `ddl_sync.events` (once)
//! and an Insert per event.
//!
//! [`EventsRelation`] recognises the Relation and remembers where each column of
//! [`EVENT_COLUMNS`] is; [`EventsRelation::event`] turns an Insert into a [`DdlEvent`] that
//! borrows from the message. Columns are found by name, so the table may have more columns
//! (the subscriber's apply-status columns are ignored here) in any order, and may lack the
//! nullable ones (a publisher of an older version).
//!
//! Values are read in either format pgoutput may use: text, or binary with `binary = on`.

use super::{
    DdlEvent, EventColumn, EventError, EventErrorKind, Lsn, SqlType, Value, EVENTS_SCHEMA,
    EVENTS_TABLE, EVENT_COLUMNS,
};
use crate::{InsertBody, RelationBody, TupleValue};

/// Where the event columns are in one Relation message of `ddl_sync.events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventsRelation {
    rel_id: u32,
    /// For each entry of [`EVENT_COLUMNS`], its position in the relation, if it has it.
    positions: [Option<usize>; EVENT_COLUMNS.len()],
    /// How many columns the relation has, to check each Insert against.
    width: usize,
}

impl EventsRelation {
    /// `Ok(None)` for any relation other than `ddl_sync.events`; an error when it is that
    /// relation but lacks a column that may not be NULL, or has one of the wrong type.
    pub fn from_relation(rel: &RelationBody<'_>) -> Result<Option<EventsRelation>, EventError> {
        if rel.namespace().as_bytes() != EVENTS_SCHEMA.as_bytes()
            || rel.name().as_bytes() != EVENTS_TABLE.as_bytes()
        {
            return Ok(None);
        }
        let mut positions = [None; EVENT_COLUMNS.len()];
        let mut width = 0;
        for (at, column) in rel.columns().enumerate() {
            let column = column.map_err(EventError::wire)?;
            width = at + 1;
            let Some(i) = EVENT_COLUMNS
                .iter()
                .position(|c| c.name.as_bytes() == column.name().as_bytes())
            else {
                continue;
            };
            let ty = EVENT_COLUMNS[i].ty;
            if column.type_oid() != ty.oid() {
                return Err(EventError::new(
                    EVENT_COLUMNS[i].name,
                    EventErrorKind::WrongType {
                        expected: ty.sql_name(),
                        found_oid: column.type_oid(),
                    },
                ));
            }
            positions[i] = Some(at);
        }
        if let Some(missing) = EVENT_COLUMNS
            .iter()
            .zip(&positions)
            .find(|(c, at)| !c.nullable && at.is_none())
        {
            return Err(EventError::new(
                missing.0.name,
                EventErrorKind::MissingColumn,
            ));
        }
        Ok(Some(EventsRelation {
            rel_id: rel.rel_id(),
            positions,
            width,
        }))
    }

    /// The relation OID the Inserts of events refer to.
    pub fn rel_id(&self) -> u32 {
        self.rel_id
    }

    /// The event carried by `insert`, which must be an Insert on this relation.
    pub fn event<'a>(&self, insert: &InsertBody<'a>) -> Result<DdlEvent<'a>, EventError> {
        if insert.rel_id() != self.rel_id {
            return Err(EventError::new(
                "",
                EventErrorKind::OtherRelation(insert.rel_id()),
            ));
        }
        let mut values = [TupleValue::Null; EVENT_COLUMNS.len()];
        let mut count = 0;
        for (at, value) in insert.tuple().enumerate() {
            let value = value.map_err(EventError::wire)?;
            count = at + 1;
            if let Some(i) = self.positions.iter().position(|&p| p == Some(at)) {
                values[i] = value;
            }
        }
        if count != self.width {
            return Err(EventError::new(
                "",
                EventErrorKind::ColumnCount {
                    relation: self.width,
                    insert: count,
                },
            ));
        }
        DdlEvent::from_values(|at, column| decode(column, values[at]))
    }
}

/// The value of `column` that pgoutput sent as `value`: `None` for NULL.
fn decode<'a>(
    column: &EventColumn,
    value: TupleValue<'a>,
) -> Result<Option<Value<'a>>, EventError> {
    let (bytes, binary) = match value {
        TupleValue::Null => return Ok(None),
        TupleValue::UnchangedToast => {
            return Err(EventError::new(column.name, EventErrorKind::UnchangedToast))
        }
        TupleValue::Text(b) => (b, false),
        TupleValue::Binary(b) => (b, true),
    };
    let invalid = || {
        EventError::new(
            column.name,
            EventErrorKind::InvalidValue(column.ty.sql_name()),
        )
    };
    let eight = || <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes);
    let value = match (column.ty, binary) {
        // textsend is the text itself, so both formats carry the same bytes.
        (SqlType::Text, _) => Value::Text(
            std::str::from_utf8(bytes)
                .map_err(|_| EventError::new(column.name, EventErrorKind::NotUtf8))?,
        ),
        // boolout writes t/f; boolsend one byte 1/0.
        (SqlType::Bool, _) => match (bytes, binary) {
            (b"t", false) | ([1], true) => Value::Bool(true),
            (b"f", false) | ([0], true) => Value::Bool(false),
            _ => return Err(invalid()),
        },
        // int8send / pg_lsn_send: 8 bytes big-endian.
        (SqlType::Int8, true) => Value::Int8(eight().ok_or_else(invalid)? as i64),
        (SqlType::PgLsn, true) => Value::Lsn(Lsn(eight().ok_or_else(invalid)?)),
        (SqlType::Int8, false) => Value::Int8(
            std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(invalid)?,
        ),
        (SqlType::PgLsn, false) => Value::Lsn(Lsn::parse(bytes).ok_or_else(invalid)?),
    };
    Ok(Some(value))
}
