//! The values of an event's columns: their SQL types, an LSN, and how each Rust field type of
//! [`super::DdlEvent`] maps to a column value and back.

use std::fmt;

use super::{EventColumn, EventError, EventErrorKind};

/// The SQL types of the event columns (OIDs from pg_type.dat; stable across versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    /// `boolean`.
    Bool,
    /// `bigint`.
    Int8,
    /// `text`.
    Text,
    /// `pg_lsn`.
    PgLsn,
}

impl SqlType {
    /// The type's OID.
    pub const fn oid(self) -> u32 {
        match self {
            SqlType::Bool => 16,
            SqlType::Int8 => 20,
            SqlType::Text => 25,
            SqlType::PgLsn => 3220,
        }
    }

    /// The type's name, as `format_type` prints it.
    pub const fn sql_name(self) -> &'static str {
        match self {
            SqlType::Bool => "boolean",
            SqlType::Int8 => "bigint",
            SqlType::Text => "text",
            SqlType::PgLsn => "pg_lsn",
        }
    }
}

/// A position in a node's write-ahead log (PostgreSQL's `XLogRecPtr`, SQL `pg_lsn`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn(pub u64);

impl Lsn {
    /// pg_lsn's text form, `X/Y` (the high and low 32 bits in hex, either zero-padded or not).
    pub fn parse(text: &[u8]) -> Option<Lsn> {
        let text = std::str::from_utf8(text).ok()?;
        let (hi, lo) = text.split_once('/')?;
        // from_str_radix takes a sign: pg_lsn does not.
        if [hi, lo]
            .iter()
            .any(|p| p.is_empty() || p.len() > 8 || !p.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return None;
        }
        let hi = u32::from_str_radix(hi, 16).ok()?;
        let lo = u32::from_str_radix(lo, 16).ok()?;
        Some(Lsn((u64::from(hi) << 32) | u64::from(lo)))
    }
}

impl From<u64> for Lsn {
    fn from(lsn: u64) -> Lsn {
        Lsn(lsn)
    }
}

impl fmt::Display for Lsn {
    /// `X/Y`, as PostgreSQL 15 to 18 print an LSN.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

/// The value of one event column that is not NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// A `boolean`.
    Bool(bool),
    /// A `bigint`.
    Int8(i64),
    /// A `pg_lsn`.
    Lsn(Lsn),
    /// A `text`.
    Text(&'a str),
}

/// A Rust type of a [`super::DdlEvent`] field: the column's SQL type and whether it may be
/// NULL follow from it (`Option<T>` is a nullable column of `T`'s type).
pub(super) trait FieldType<'a>: Sized {
    const SQL: SqlType;
    const NULLABLE: bool = false;
    /// The field from the column's value (`None`: NULL).
    fn from_value(column: &EventColumn, value: Option<Value<'a>>) -> Result<Self, EventError>;
    /// The column's value of the field (`None`: NULL).
    fn to_value(&self) -> Option<Value<'a>>;
}

/// The error for `value`, which is NULL or not of `column`'s type.
fn mistyped(column: &EventColumn, value: Option<Value<'_>>) -> EventError {
    let kind = match value {
        None => EventErrorKind::Null,
        Some(_) => EventErrorKind::InvalidValue(column.ty.sql_name()),
    };
    EventError::new(column.name, kind)
}

impl<'a> FieldType<'a> for bool {
    const SQL: SqlType = SqlType::Bool;
    fn from_value(column: &EventColumn, value: Option<Value<'a>>) -> Result<Self, EventError> {
        match value {
            Some(Value::Bool(b)) => Ok(b),
            other => Err(mistyped(column, other)),
        }
    }
    fn to_value(&self) -> Option<Value<'a>> {
        Some(Value::Bool(*self))
    }
}

/// A `bigint` read as the unsigned number it holds: a system identifier or an xid (a system
/// identifier is stored in a bigint, so it may print negative).
impl<'a> FieldType<'a> for u64 {
    const SQL: SqlType = SqlType::Int8;
    fn from_value(column: &EventColumn, value: Option<Value<'a>>) -> Result<Self, EventError> {
        match value {
            Some(Value::Int8(n)) => Ok(n as u64),
            other => Err(mistyped(column, other)),
        }
    }
    fn to_value(&self) -> Option<Value<'a>> {
        Some(Value::Int8(*self as i64))
    }
}

impl<'a> FieldType<'a> for Lsn {
    const SQL: SqlType = SqlType::PgLsn;
    fn from_value(column: &EventColumn, value: Option<Value<'a>>) -> Result<Self, EventError> {
        match value {
            Some(Value::Lsn(lsn)) => Ok(lsn),
            other => Err(mistyped(column, other)),
        }
    }
    fn to_value(&self) -> Option<Value<'a>> {
        Some(Value::Lsn(*self))
    }
}

impl<'a> FieldType<'a> for &'a str {
    const SQL: SqlType = SqlType::Text;
    fn from_value(column: &EventColumn, value: Option<Value<'a>>) -> Result<Self, EventError> {
        match value {
            Some(Value::Text(s)) => Ok(s),
            other => Err(mistyped(column, other)),
        }
    }
    fn to_value(&self) -> Option<Value<'a>> {
        Some(Value::Text(self))
    }
}

impl<'a, T: FieldType<'a>> FieldType<'a> for Option<T> {
    const SQL: SqlType = T::SQL;
    const NULLABLE: bool = true;
    fn from_value(column: &EventColumn, value: Option<Value<'a>>) -> Result<Self, EventError> {
        value.map(|v| T::from_value(column, Some(v))).transpose()
    }
    fn to_value(&self) -> Option<Value<'a>> {
        self.as_ref().and_then(T::to_value)
    }
}
