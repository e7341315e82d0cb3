//! DDL events: what `ddl_pgoutput` sends for each captured statement, as a row of
//! `ddl_sync.events` (an ordinary INSERT on the wire, so every pgoutput consumer receives it).
//!
//! - [`schema`]: the one definition of the event's fields, [`DdlEvent`] and [`EVENT_COLUMNS`];
//! - [`value`]: the columns' SQL types and values, and [`Lsn`];
//! - [`relation`]: [`EventsRelation`], the event read from pgoutput's Relation and Insert
//!   messages, in text or binary format;
//! - [`error`]: [`EventError`], which names the column concerned.

mod error;
mod relation;
mod schema;
mod value;

#[cfg(test)]
mod tests;

pub use error::{EventError, EventErrorKind};
pub use relation::EventsRelation;
pub use schema::{event_columns, DdlEvent, EVENT_COLUMNS};
pub use value::{Lsn, SqlType, Value};

/// The schema of the events relation.
pub const EVENTS_SCHEMA: &str = "ddl_sync";
/// The name of the events relation.
pub const EVENTS_TABLE: &str = "events";

/// One column of `ddl_sync.events` that carries a field of [`DdlEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventColumn {
    /// The column's name.
    pub name: &'static str,
    /// The [`DdlEvent`] field's name (also its key in ddl-dump's JSON).
    pub field: &'static str,
    /// The column's type.
    pub ty: SqlType,
    /// Whether the column may be NULL, or missing from the table (a field added after the
    /// first version: a publisher of an older version sends no value).
    pub nullable: bool,
}
