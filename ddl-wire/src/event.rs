//! The typed view of a DDL event: an INSERT on `ddl_sync.events` as pgoutput sends it.
//!
//! `ddl_pgoutput` carries each captured statement to consumers as an ordinary row of
//! `ddl_sync.events`, so on the wire an event is a Relation message (once) and Insert messages.
//! [`EventsRelation`] recognises the Relation and remembers where each column of interest is;
//! [`EventsRelation::event`] turns an Insert into a [`DdlEvent`] that borrows from the message.
//! Columns are found by name, so the table may gain columns (the subscriber's apply-status
//! columns are ignored here) and may list them in any order.
//!
//! Values are read in either format pgoutput may use: text, or binary with `binary = on`.

use std::fmt;

use crate::{Error as WireError, InsertBody, RelationBody, TupleValue};

/// The schema of the events relation.
pub const EVENTS_SCHEMA: &str = "ddl_sync";
/// The name of the events relation.
pub const EVENTS_TABLE: &str = "events";

/// The PostgreSQL types of the event columns (OIDs from pg_type.dat; stable across versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnType {
    Bool,
    Int8,
    Text,
    PgLsn,
}

impl ColumnType {
    const fn oid(self) -> u32 {
        match self {
            ColumnType::Bool => 16,
            ColumnType::Int8 => 20,
            ColumnType::Text => 25,
            ColumnType::PgLsn => 3220,
        }
    }
    const fn sql_name(self) -> &'static str {
        match self {
            ColumnType::Bool => "boolean",
            ColumnType::Int8 => "bigint",
            ColumnType::Text => "text",
            ColumnType::PgLsn => "pg_lsn",
        }
    }
}

/// The columns a [`DdlEvent`] is read from, as `(name, SQL type)`, in [`DdlEvent`] field order.
/// The `ddl_sync` extension's definition of `ddl_sync.events` must provide each of them, and
/// [`TABLES_COLUMN`] after them.
pub fn event_columns() -> impl Iterator<Item = (&'static str, &'static str)> {
    COLUMNS.iter().map(|&(name, ty)| (name, ty.sql_name()))
}

const COLUMNS: [(&str, ColumnType); 16] = [
    ("lsn", ColumnType::PgLsn),
    ("origin_sysid", ColumnType::Int8),
    ("origin_lsn", ColumnType::PgLsn),
    ("xid", ColumnType::Int8),
    ("top_level", ColumnType::Bool),
    ("forwarded", ColumnType::Bool),
    ("kind", ColumnType::Text),
    ("dialect", ColumnType::Text),
    ("command_tag", ColumnType::Text),
    ("schema_name", ColumnType::Text),
    ("object_identity", ColumnType::Text),
    ("sql", ColumnType::Text),
    ("search_path", ColumnType::Text),
    ("role_name", ColumnType::Text),
    ("session_user_name", ColumnType::Text),
    ("database_name", ColumnType::Text),
];

/// The column of [`DdlEvent::tables`] (`text`). Optional: the `ddl_sync.events` of a publisher
/// still at extension version 0.3.0 lacks it, and its events have no tables.
pub const TABLES_COLUMN: &str = "tables";

/// The column of [`DdlEvent::settings`] (`text`), optional like [`TABLES_COLUMN`].
pub const SETTINGS_COLUMN: &str = "settings";

/// The column of [`DdlEvent::role_rights`] (`text`), optional like [`TABLES_COLUMN`] (added
/// in extension version 0.4.0).
pub const ROLE_RIGHTS_COLUMN: &str = "role_rights";

/// The column of [`DdlEvent::bindings`] (`text`), optional like [`TABLES_COLUMN`] (added in
/// extension version 0.4.0).
pub const BINDINGS_COLUMN: &str = "bindings";

/// The optional columns, in [`DdlEvent`] field order.
const OPTIONAL: [&str; 4] = [
    TABLES_COLUMN,
    SETTINGS_COLUMN,
    ROLE_RIGHTS_COLUMN,
    BINDINGS_COLUMN,
];

/// One DDL statement as a consumer of a `ddl_pgoutput` stream sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DdlEvent<'a> {
    /// The LSN of the statement's message on the node that sent it.
    pub lsn: u64,
    /// The system identifier of the node where the statement first ran.
    pub origin_sysid: u64,
    /// The statement's LSN on that node: `(origin_sysid, origin_lsn)` names it everywhere.
    pub origin_lsn: u64,
    /// The xid of the (sub)transaction that ran it.
    pub xid: u64,
    /// Sent by the client, not run from inside a function or DO block.
    pub top_level: bool,
    /// Replayed from another node and passed on.
    pub forwarded: bool,
    /// The kind token (`table`, `index`, ...).
    pub kind: &'a str,
    /// The SQL dialect (`postgres`, `tsql`, ...).
    pub dialect: &'a str,
    /// The command tag (`CREATE TABLE`, ...).
    pub command_tag: &'a str,
    /// The object's schema, empty when it has none.
    pub schema: &'a str,
    /// The schema-qualified object identity.
    pub object_identity: &'a str,
    /// The statement.
    pub sql: &'a str,
    /// The search_path it ran with.
    pub search_path: &'a str,
    /// The role it ran as.
    pub role: &'a str,
    /// The session user.
    pub session_user: &'a str,
    /// The database it ran in.
    pub database: &'a str,
    /// The tables the statement created or changed, as `CREATE TABLE` statements of the columns
    /// a row has (see ddl-wire's record format); empty when none, or when the publisher's
    /// `ddl_sync.events` has no such column.
    pub tables: &'a str,
    /// The session's settings that change what the statement means, one `name=value` per
    /// line; empty when none, or when the publisher's `ddl_sync.events` has no such column.
    pub settings: &'a str,
    /// What the statement's role could do on the node that ran it (see
    /// [`crate::describe_role_rights`]); empty when not known (an older publisher).
    pub role_rights: &'a str,
    /// What the statement bound by name on the node that ran it ([`crate::parse_bindings`]
    /// reads it); empty when nothing, or not known (an older publisher).
    pub bindings: &'a str,
}

/// Where the event columns are in one Relation message of `ddl_sync.events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventsRelation {
    rel_id: u32,
    /// For each entry of [`COLUMNS`], its position in the relation.
    positions: [usize; COLUMNS.len()],
    /// The positions of the [`OPTIONAL`] columns the relation has.
    optional: [Option<usize>; OPTIONAL.len()],
    /// How many columns the relation has, to check each Insert against.
    width: usize,
}

impl EventsRelation {
    /// `Ok(None)` for any relation other than `ddl_sync.events`; an error when it is that
    /// relation but lacks a column or has one of the wrong type.
    pub fn from_relation(rel: &RelationBody<'_>) -> Result<Option<EventsRelation>, EventError> {
        if rel.namespace().as_bytes() != EVENTS_SCHEMA.as_bytes()
            || rel.name().as_bytes() != EVENTS_TABLE.as_bytes()
        {
            return Ok(None);
        }
        let mut positions = [usize::MAX; COLUMNS.len()];
        let mut optional = [None; OPTIONAL.len()];
        let mut width = 0;
        for (at, column) in rel.columns().enumerate() {
            let column = column.map_err(EventError::wire)?;
            width = at + 1;
            if let Some(i) = OPTIONAL
                .iter()
                .position(|name| name.as_bytes() == column.name().as_bytes())
            {
                if column.type_oid() != ColumnType::Text.oid() {
                    return Err(EventError::new(
                        OPTIONAL[i],
                        EventErrorKind::WrongType {
                            expected: ColumnType::Text.sql_name(),
                            found_oid: column.type_oid(),
                        },
                    ));
                }
                optional[i] = Some(at);
                continue;
            }
            let Some(i) = COLUMNS
                .iter()
                .position(|(name, _)| name.as_bytes() == column.name().as_bytes())
            else {
                continue;
            };
            let (name, ty) = COLUMNS[i];
            if column.type_oid() != ty.oid() {
                return Err(EventError::new(
                    name,
                    EventErrorKind::WrongType {
                        expected: ty.sql_name(),
                        found_oid: column.type_oid(),
                    },
                ));
            }
            positions[i] = at;
        }
        if let Some(i) = positions.iter().position(|&p| p == usize::MAX) {
            return Err(EventError::new(COLUMNS[i].0, EventErrorKind::MissingColumn));
        }
        Ok(Some(EventsRelation {
            rel_id: rel.rel_id(),
            positions,
            optional,
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
        let mut values = [TupleValue::Null; COLUMNS.len()];
        let mut optional = [TupleValue::Null; OPTIONAL.len()];
        let mut count = 0;
        for (at, value) in insert.tuple().enumerate() {
            let value = value.map_err(EventError::wire)?;
            count = at + 1;
            if let Some(i) = self.positions.iter().position(|&p| p == at) {
                values[i] = value;
            } else if let Some(i) = self.optional.iter().position(|&p| p == Some(at)) {
                optional[i] = value;
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
        let mut fields = Fields {
            values: &values,
            next: 0,
        };
        Ok(DdlEvent {
            lsn: fields.u64()?,
            origin_sysid: fields.u64()?,
            origin_lsn: fields.u64()?,
            xid: fields.u64()?,
            top_level: fields.bool()?,
            forwarded: fields.bool()?,
            kind: fields.text()?,
            dialect: fields.text()?,
            command_tag: fields.text()?,
            schema: fields.text()?,
            object_identity: fields.text()?,
            sql: fields.text()?,
            search_path: fields.text()?,
            role: fields.text()?,
            session_user: fields.text()?,
            database: fields.text()?,
            tables: optional_text(TABLES_COLUMN, optional[0])?,
            settings: optional_text(SETTINGS_COLUMN, optional[1])?,
            role_rights: optional_text(ROLE_RIGHTS_COLUMN, optional[2])?,
            bindings: optional_text(BINDINGS_COLUMN, optional[3])?,
        })
    }
}

/// The value of an [`OPTIONAL`] column: NULL (a plugin older than the column fills only what
/// it knows) is empty.
fn optional_text<'a>(column: &'static str, value: TupleValue<'a>) -> Result<&'a str, EventError> {
    match value {
        TupleValue::Null => Ok(""),
        TupleValue::Text(b) | TupleValue::Binary(b) => {
            std::str::from_utf8(b).map_err(|_| EventError::new(column, EventErrorKind::NotUtf8))
        }
        TupleValue::UnchangedToast => Err(EventError::new(column, EventErrorKind::UnchangedToast)),
    }
}

/// Reads the event's values in [`COLUMNS`] order, converting each by its column type.
struct Fields<'v, 'a> {
    values: &'v [TupleValue<'a>; COLUMNS.len()],
    next: usize,
}

impl<'a> Fields<'_, 'a> {
    /// The next value with its column name and type; NULL and unchanged TOAST are errors: the
    /// plugin fills every column, and an Insert never has unchanged values.
    /// The value's bytes come with whether they are in binary format.
    fn next(&mut self) -> Result<(&'static str, ColumnType, &'a [u8], bool), EventError> {
        let (name, ty) = COLUMNS[self.next];
        let value = self.values[self.next];
        self.next += 1;
        match value {
            TupleValue::Text(b) => Ok((name, ty, b, false)),
            TupleValue::Binary(b) => Ok((name, ty, b, true)),
            TupleValue::Null => Err(EventError::new(name, EventErrorKind::Null)),
            TupleValue::UnchangedToast => {
                Err(EventError::new(name, EventErrorKind::UnchangedToast))
            }
        }
    }

    fn u64(&mut self) -> Result<u64, EventError> {
        let (name, ty, bytes, binary) = self.next()?;
        let parsed = match (ty, binary) {
            // int8send / pg_lsn_send: 8 bytes big-endian.
            (_, true) => <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes),
            // A system identifier is stored in a bigint, so it may print negative.
            (ColumnType::Int8, false) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .map(|v| v as u64),
            (_, false) => parse_lsn(bytes),
        };
        parsed.ok_or_else(|| EventError::new(name, EventErrorKind::InvalidValue(ty.sql_name())))
    }

    fn bool(&mut self) -> Result<bool, EventError> {
        let (name, ty, bytes, binary) = self.next()?;
        // boolout writes t/f; boolsend one byte 1/0.
        match (bytes, binary) {
            (b"t", false) | ([1], true) => Ok(true),
            (b"f", false) | ([0], true) => Ok(false),
            _ => Err(EventError::new(
                name,
                EventErrorKind::InvalidValue(ty.sql_name()),
            )),
        }
    }

    fn text(&mut self) -> Result<&'a str, EventError> {
        // textsend is the text itself, so both formats carry the same bytes.
        let (name, _, bytes, _) = self.next()?;
        std::str::from_utf8(bytes).map_err(|_| EventError::new(name, EventErrorKind::NotUtf8))
    }
}

/// pg_lsn's text form: two hex numbers, `X/Y`, the high and low 32 bits.
fn parse_lsn(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    let (hi, lo) = text.split_once('/')?;
    let hi = u32::from_str_radix(hi, 16).ok()?;
    let lo = u32::from_str_radix(lo, 16).ok()?;
    Some((u64::from(hi) << 32) | u64::from(lo))
}

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
    fn new(column: &'static str, kind: EventErrorKind) -> EventError {
        EventError { column, kind }
    }
    fn wire(e: WireError) -> EventError {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_insert, write_relation, Column, Message, PgStr, ProtocolContext, Streaming};

    const REL_ID: u32 = 16_400;

    /// A relation with the event columns shuffled among apply-status columns, as a later
    /// version of the table might have them.
    fn relation_bytes(skip: Option<&str>, retype: Option<&str>) -> (Vec<u8>, Vec<&'static str>) {
        let mut names: Vec<&'static str> = vec!["status"];
        names.extend(COLUMNS.iter().rev().map(|(n, _)| *n));
        names.push("applied_at");
        names.push(TABLES_COLUMN);
        names.push(SETTINGS_COLUMN);
        names.push(ROLE_RIGHTS_COLUMN);
        names.push(BINDINGS_COLUMN);
        names.retain(|n| Some(*n) != skip);
        let columns: Vec<Column<'_>> = names
            .iter()
            .map(|n| {
                let oid = COLUMNS
                    .iter()
                    .find(|(c, _)| c == n)
                    .map_or(25, |(_, t)| t.oid());
                let oid = if Some(*n) == retype { 23 } else { oid };
                Column::new(0, PgStr::new(n.as_bytes()).unwrap(), oid, -1)
            })
            .collect();
        let mut out = Vec::new();
        write_relation(
            None,
            REL_ID,
            PgStr::from(c"ddl_sync"),
            PgStr::from(c"events"),
            b'd',
            &columns,
            &mut out,
        )
        .unwrap();
        (out, names)
    }

    fn text_value(name: &str) -> &'static [u8] {
        match name {
            "lsn" => b"0/16B3748",
            "origin_sysid" => b"-42",
            "origin_lsn" => b"1/0",
            "xid" => b"731",
            "top_level" => b"t",
            "forwarded" => b"f",
            "kind" => b"table",
            "sql" => b"ALTER TABLE t ADD COLUMN c int",
            "command_tag" => b"ALTER TABLE",
            "tables" => b"CREATE TABLE public.t (c integer);",
            "settings" => b"DateStyle=ISO, MDY",
            _ => b"x",
        }
    }

    /// Each column's [`text_value`], in text format.
    fn text_values(names: &[&str]) -> Vec<TupleValue<'static>> {
        names
            .iter()
            .map(|n| TupleValue::Text(text_value(n)))
            .collect()
    }

    fn parse_relation(bytes: &[u8]) -> Result<Option<EventsRelation>, EventError> {
        let ctx = ProtocolContext::new(1, Streaming::Off).unwrap();
        let Ok(Message::Relation(rel)) = Message::parse(bytes, &ctx) else {
            panic!("not a relation")
        };
        EventsRelation::from_relation(&rel)
    }

    fn event_from<'a>(rel: &EventsRelation, insert: &'a [u8]) -> Result<DdlEvent<'a>, EventError> {
        let ctx = ProtocolContext::new(1, Streaming::Off).unwrap();
        let Ok(Message::Insert(ins)) = Message::parse(insert, &ctx) else {
            panic!("not an insert")
        };
        rel.event(&ins)
    }

    #[test]
    fn reads_text_values_by_column_name() {
        let (rel, names) = relation_bytes(None, None);
        let rel = parse_relation(&rel)
            .unwrap()
            .expect("is the events relation");
        let values = text_values(&names);
        let mut insert = Vec::new();
        write_insert(None, REL_ID, &values, &mut insert).unwrap();
        let ev = event_from(&rel, &insert).unwrap();
        assert_eq!(ev.lsn, 0x16B_3748);
        assert_eq!(ev.origin_sysid, (-42i64) as u64);
        assert_eq!(ev.origin_lsn, 1 << 32);
        assert_eq!(ev.xid, 731);
        assert!(ev.top_level && !ev.forwarded);
        assert_eq!((ev.kind, ev.command_tag), ("table", "ALTER TABLE"));
        assert_eq!(ev.sql, "ALTER TABLE t ADD COLUMN c int");
        assert_eq!(ev.tables, "CREATE TABLE public.t (c integer);");
        assert_eq!(ev.settings, "DateStyle=ISO, MDY");
    }

    #[test]
    fn the_tables_column_is_optional() {
        let (rel, names) = relation_bytes(Some(TABLES_COLUMN), None);
        let rel = parse_relation(&rel).unwrap().unwrap();
        let values = text_values(&names);
        let mut insert = Vec::new();
        write_insert(None, REL_ID, &values, &mut insert).unwrap();
        assert_eq!(event_from(&rel, &insert).unwrap().tables, "");

        let (rel, _) = relation_bytes(None, Some(TABLES_COLUMN));
        let err = parse_relation(&rel).unwrap_err();
        assert_eq!(err.column(), TABLES_COLUMN);
    }

    #[test]
    fn reads_binary_values() {
        let (rel, names) = relation_bytes(None, None);
        let rel = parse_relation(&rel).unwrap().unwrap();
        let lsn = 0x0000_0002_0000_00FFu64.to_be_bytes();
        let values: Vec<TupleValue<'_>> = names
            .iter()
            .map(|n| match *n {
                "lsn" | "origin_lsn" | "origin_sysid" | "xid" => TupleValue::Binary(&lsn),
                "top_level" => TupleValue::Binary(&[0]),
                "forwarded" => TupleValue::Binary(&[1]),
                other => TupleValue::Binary(text_value(other)),
            })
            .collect();
        let mut insert = Vec::new();
        write_insert(None, REL_ID, &values, &mut insert).unwrap();
        let ev = event_from(&rel, &insert).unwrap();
        assert_eq!((ev.lsn, ev.xid), (0x2_0000_00FF, 0x2_0000_00FF));
        assert!(!ev.top_level && ev.forwarded);
        assert_eq!(ev.kind, "table");
    }

    #[test]
    fn other_relations_are_not_events() {
        let mut out = Vec::new();
        let cols = [Column::new(1, PgStr::from(c"id"), 23, -1)];
        write_relation(
            None,
            1,
            c"public".into(),
            c"events".into(),
            b'd',
            &cols,
            &mut out,
        )
        .unwrap();
        assert_eq!(parse_relation(&out), Ok(None));
    }

    #[test]
    fn missing_or_mistyped_columns_are_named() {
        let (rel, _) = relation_bytes(Some("sql"), None);
        let err = parse_relation(&rel).unwrap_err();
        assert_eq!(
            (err.column(), err.kind()),
            ("sql", &EventErrorKind::MissingColumn)
        );
        assert_eq!(err.to_string(), "ddl_sync.events has no column \"sql\"");

        let (rel, _) = relation_bytes(None, Some("xid"));
        let err = parse_relation(&rel).unwrap_err();
        assert_eq!(err.column(), "xid");
        assert!(err.to_string().contains("expected bigint"), "{err}");
    }

    #[test]
    fn bad_values_name_their_column() {
        let (rel, names) = relation_bytes(None, None);
        let rel = parse_relation(&rel).unwrap().unwrap();
        for (broken, value, expect) in [
            (
                "lsn",
                TupleValue::Text(b"16B3748"),
                EventErrorKind::InvalidValue("pg_lsn"),
            ),
            (
                "xid",
                TupleValue::Text(b"7x"),
                EventErrorKind::InvalidValue("bigint"),
            ),
            (
                "top_level",
                TupleValue::Text(b"true"),
                EventErrorKind::InvalidValue("boolean"),
            ),
            (
                "origin_lsn",
                TupleValue::Binary(&[1, 2]),
                EventErrorKind::InvalidValue("pg_lsn"),
            ),
            ("sql", TupleValue::Null, EventErrorKind::Null),
            (
                "dialect",
                TupleValue::UnchangedToast,
                EventErrorKind::UnchangedToast,
            ),
            (
                "role_name",
                TupleValue::Text(&[0xff]),
                EventErrorKind::NotUtf8,
            ),
        ] {
            let values: Vec<TupleValue<'_>> = names
                .iter()
                .map(|n| {
                    if *n == broken {
                        value
                    } else {
                        TupleValue::Text(text_value(n))
                    }
                })
                .collect();
            let mut insert = Vec::new();
            write_insert(None, REL_ID, &values, &mut insert).unwrap();
            let err = event_from(&rel, &insert).unwrap_err();
            assert_eq!((err.column(), err.kind()), (broken, &expect), "{err}");
        }
    }

    #[test]
    fn inserts_that_do_not_match_the_relation_are_refused() {
        let (rel, names) = relation_bytes(None, None);
        let rel = parse_relation(&rel).unwrap().unwrap();
        let values = text_values(&names);
        let mut insert = Vec::new();
        write_insert(None, REL_ID + 1, &values, &mut insert).unwrap();
        assert_eq!(
            event_from(&rel, &insert).unwrap_err().kind(),
            &EventErrorKind::OtherRelation(REL_ID + 1)
        );
        let mut insert = Vec::new();
        write_insert(None, REL_ID, &values[1..], &mut insert).unwrap();
        assert!(matches!(
            event_from(&rel, &insert).unwrap_err().kind(),
            EventErrorKind::ColumnCount { .. }
        ));
    }

    #[test]
    fn event_columns_lists_every_field_with_its_type() {
        let cols: Vec<_> = event_columns().collect();
        assert_eq!(cols.len(), 16);
        assert_eq!(cols[0], ("lsn", "pg_lsn"));
        assert!(cols.contains(&("sql", "text")));
    }
}
