//! Why a row could not be read as a DDL event: the error names the column.

use std::fmt;

use super::{EVENTS_SCHEMA, EVENTS_TABLE};
use crate::Error as WireError;

/// Why an Insert could not be read as a DDL event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventError {
    column: &'static str,
    kind: EventErrorKind,
}

/// The kinds of [`EventError`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventErrorKind {
    /// `ddl_sync.events` has no column of this name.
    MissingColumn,
    /// The column has another type.
    WrongType {
        /// The SQL type the event needs.
        expected: &'static str,
        /// The type OID the Relation message gives.
        found_oid: u32,
    },
    /// The Insert is on another relation (its OID).
    OtherRelation(u32),
    /// The Insert has a different number of columns than the Relation message.
    ColumnCount {
        /// Columns of the Relation message.
        relation: usize,
        /// Values of the Insert.
        insert: usize,
    },
    /// The column is NULL.
    Null,
    /// The column is an unchanged-TOAST placeholder, which an Insert never carries.
    UnchangedToast,
    /// The value is not a valid value of the named type.
    InvalidValue(&'static str),
    /// The text is not UTF-8 (the view is for UTF-8 databases and client encodings).
    NotUtf8,
    /// The message itself is malformed.
    Wire(WireError),
}

impl EventError {
    pub(crate) fn new(column: &'static str, kind: EventErrorKind) -> EventError {
        EventError { column, kind }
    }
    pub(crate) fn wire(e: WireError) -> EventError {
        EventError::new("", EventErrorKind::Wire(e))
    }
    /// The column concerned, empty when the error is not about one column.
    pub fn column(&self) -> &'static str {
        self.column
    }
    /// What went wrong.
    pub fn kind(&self) -> &EventErrorKind {
        &self.kind
    }
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let col = self.column;
        match &self.kind {
            EventErrorKind::MissingColumn => write!(f, "{EVENTS_SCHEMA}.{EVENTS_TABLE} has no column \"{col}\""),
            EventErrorKind::WrongType { expected, found_oid } => write!(
                f,
                "{EVENTS_SCHEMA}.{EVENTS_TABLE}.{col} has type OID {found_oid}, expected {expected}"
            ),
            EventErrorKind::OtherRelation(oid) => {
                write!(f, "Insert on relation {oid} is not on {EVENTS_SCHEMA}.{EVENTS_TABLE}")
            }
            EventErrorKind::ColumnCount { relation, insert } => write!(
                f,
                "Insert on {EVENTS_SCHEMA}.{EVENTS_TABLE} has {insert} values, its Relation message {relation} columns"
            ),
            EventErrorKind::Null => write!(f, "event column \"{col}\" is NULL"),
            EventErrorKind::UnchangedToast => {
                write!(f, "event column \"{col}\" is an unchanged-TOAST placeholder")
            }
            EventErrorKind::InvalidValue(ty) => write!(f, "event column \"{col}\" is not a valid {ty}"),
            EventErrorKind::NotUtf8 => write!(f, "event column \"{col}\" is not UTF-8"),
            EventErrorKind::Wire(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for EventError {}
