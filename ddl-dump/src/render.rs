//! One output line per message, in text or JSON, and what the stream taught so far: relation
//! and column names, type names, and which relation is `ddl_sync.events`.
//!
//! Each message becomes a list of named fields ([`V`]); the two formats write the same list.
//! DDL statements (an Insert on `ddl_sync.events`, or a `ddl_sync` logical message holding a
//! [`DdlRecord`]) get a line of their own in text.

use std::collections::HashMap;
use std::fmt::Write;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use ddl_wire::{
    message_type_name, DdlEvent, DdlRecord, EventError, EventsRelation, Message, PreparedTxn,
    RecordFlags, RelationBody, TupleData, TupleValue, Value, EVENT_COLUMNS, RECORD_PREFIX,
};

use crate::show;

/// The output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One compact line per message for a human reader.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where a message is in the input.
#[derive(Clone, Copy, Debug)]
pub struct At {
    /// The file offset of its first byte.
    pub offset: u64,
    /// Its number, counting from 1.
    pub number: u64,
}

/// What the stream said about one relation in its latest Relation message.
struct Relation {
    /// `schema.table` (just `table` for pg_catalog, which pgoutput sends as an empty schema).
    name: String,
    columns: Vec<String>,
    /// `Some` when the relation is `ddl_sync.events`: how to read its rows, or why they cannot
    /// be read.
    events: Option<Result<EventsRelation, EventError>>,
}

/// Turns messages into lines, remembering what earlier messages said.
pub struct Printer {
    format: Format,
    relations: HashMap<u32, Relation>,
    /// Type names from Type messages.
    types: HashMap<u32, String>,
}

/// The line for one message, and what a reader must be warned about.
pub struct Rendered {
    /// The line, without its `'\n'`.
    pub line: String,
    /// A DDL that could not be read, or the like: the line shows the message as it is.
    pub warning: Option<String>,
}

/// A field value.
enum V<'a> {
    /// SQL's NULL: left out of the text line, JSON's null.
    Null,
    Num(u64),
    Lsn(u64),
    Time(i64),
    /// Text: the key alone when true, nothing when false. JSON: a boolean.
    Flag(bool),
    /// An identifier: unquoted in text.
    Name(String),
    /// An identifier shown without its key in text (the relation of a change).
    Bare(String),
    /// User data: quoted (or `\x` hex when not UTF-8) in text; a JSON string, or a
    /// `KEY_hex` string when not UTF-8.
    Data(&'a [u8]),
    Char(u8),
    Columns(Vec<ColumnView>),
    Tuple(Vec<(String, TupleValue<'a>)>),
    Names(Vec<String>),
    /// Left out of the text line.
    JsonOnly(Box<V<'a>>),
    /// Left out of JSON.
    TextOnly(Box<V<'a>>),
    /// What a statement made (an event's `description`): a JSON object, as the publisher wrote
    /// it (members a newer publisher adds are kept).
    Description(Box<serde_json::value::RawValue>),
}

/// A column of a Relation message; in JSON an object with these members, in this order.
#[derive(Serialize)]
struct ColumnView {
    name: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    type_name: Option<String>,
    type_oid: u32,
    type_modifier: i32,
    key: bool,
}

type Fields<'a> = Vec<(&'static str, V<'a>)>;

/// The DDL a message carries.
enum Ddl<'a> {
    Event(DdlEvent<'a>),
    /// A record and the format version it was written in.
    Record(DdlRecord<'a>, u8),
}

impl Printer {
    pub fn new(format: Format) -> Printer {
        Printer {
            format,
            relations: HashMap::new(),
            types: HashMap::new(),
        }
    }

    /// The line for `message`, updating what the printer knows.
    pub fn message(&mut self, at: At, message: &Message<'_>) -> Rendered {
        let mut warning = None;
        let mut ddl = None;
        let mut fields: Fields<'_> = Vec::new();
        match message {
            Message::Begin(b) => {
                fields.push(("xid", V::Num(b.xid().into())));
                fields.push(("final_lsn", V::Lsn(b.final_lsn())));
                fields.push(("commit_time", V::Time(b.commit_time())));
            }
            Message::Commit(c) => {
                fields.push(("commit_lsn", V::Lsn(c.commit_lsn())));
                fields.push(("end_lsn", V::Lsn(c.end_lsn())));
                fields.push(("commit_time", V::Time(c.commit_time())));
            }
            Message::Origin(o) => {
                fields.push(("name", V::Name(o.name().to_string())));
                fields.push(("origin_lsn", V::Lsn(o.origin_lsn())));
            }
            Message::Relation(r) => {
                stream_xid(&mut fields, r.xid());
                warning = self.relation(r, &mut fields);
            }
            Message::Type(t) => {
                stream_xid(&mut fields, t.xid());
                let name = qualified(&t.namespace().to_string(), &t.name().to_string());
                self.types.insert(t.type_oid(), name.clone());
                fields.push(("type_oid", V::Num(t.type_oid().into())));
                fields.push(("name", V::Name(name)));
            }
            Message::Insert(i) => {
                stream_xid(&mut fields, i.xid());
                self.rel(i.rel_id(), &mut fields);
                match self.relations.get(&i.rel_id()).and_then(|r| r.events.as_ref()) {
                    Some(Ok(events)) => match events.event(i) {
                        Ok(event) => ddl = Some(Ddl::Event(event)),
                        Err(e) => {
                            warning = Some(format!(
                                "Insert on ddl_sync.events is not a valid DDL event, shown as a row: {e}"
                            ))
                        }
                    },
                    Some(Err(e)) => {
                        warning = Some(format!(
                            "Insert on a ddl_sync.events whose Relation message was refused, \
                             shown as a row: {e}"
                        ))
                    }
                    None => {}
                }
                if ddl.is_none() {
                    self.tuple("new", i.rel_id(), i.tuple(), &mut fields, &mut warning);
                }
            }
            Message::Update(u) => {
                stream_xid(&mut fields, u.xid());
                self.rel(u.rel_id(), &mut fields);
                if let Some(key) = u.key_tuple() {
                    self.tuple("key", u.rel_id(), key, &mut fields, &mut warning);
                }
                if let Some(old) = u.old_tuple() {
                    self.tuple("old", u.rel_id(), old, &mut fields, &mut warning);
                }
                self.tuple("new", u.rel_id(), u.new_tuple(), &mut fields, &mut warning);
            }
            Message::Delete(d) => {
                stream_xid(&mut fields, d.xid());
                self.rel(d.rel_id(), &mut fields);
                if let Some(key) = d.key_tuple() {
                    self.tuple("key", d.rel_id(), key, &mut fields, &mut warning);
                }
                if let Some(old) = d.old_tuple() {
                    self.tuple("old", d.rel_id(), old, &mut fields, &mut warning);
                }
            }
            Message::Truncate(t) => {
                stream_xid(&mut fields, t.xid());
                let ids: Vec<u32> = t.rel_ids().collect();
                let names = ids.iter().map(|id| self.rel_name(*id)).collect();
                fields.push(("relations", V::Names(names)));
                fields.push((
                    "rel_ids",
                    V::JsonOnly(Box::new(V::Names(ids.iter().map(u32::to_string).collect()))),
                ));
                fields.push(("cascade", V::Flag(t.cascade())));
                fields.push(("restart_identity", V::Flag(t.restart_identity())));
            }
            Message::LogicalMessage(m) => {
                stream_xid(&mut fields, m.xid());
                let transactional = if m.transactional() {
                    "transactional"
                } else {
                    "non-transactional"
                };
                fields.push((
                    "transactional",
                    V::TextOnly(Box::new(V::Bare(transactional.to_owned()))),
                ));
                fields.push((
                    "transactional",
                    V::JsonOnly(Box::new(V::Flag(m.transactional()))),
                ));
                fields.push(("lsn", V::Lsn(m.lsn())));
                fields.push(("prefix", V::Name(m.prefix().to_string())));
                // An empty one is the capture's padding (see the record format), not a record.
                if m.prefix().as_bytes() == RECORD_PREFIX.as_bytes() && !m.content().is_empty() {
                    match DdlRecord::parse(m.content()) {
                        Ok(record) => ddl = Some(Ddl::Record(record, m.content()[0])),
                        Err(e) => {
                            warning = Some(format!(
                                "{RECORD_PREFIX} message is not a valid DDL record, shown as it is: {e}"
                            ))
                        }
                    }
                }
                if ddl.is_none() {
                    fields.push(("content", V::Data(m.content())));
                }
            }
            Message::StreamStart(s) => {
                fields.push(("xid", V::Num(s.xid().into())));
                fields.push(("first_segment", V::Flag(s.first_segment())));
            }
            Message::StreamStop => {}
            Message::StreamCommit(c) => {
                fields.push(("xid", V::Num(c.xid().into())));
                fields.push(("commit_lsn", V::Lsn(c.commit_lsn())));
                fields.push(("end_lsn", V::Lsn(c.end_lsn())));
                fields.push(("commit_time", V::Time(c.commit_time())));
            }
            Message::StreamAbort(a) => {
                fields.push(("xid", V::Num(a.xid().into())));
                fields.push(("subxid", V::Num(a.subxid().into())));
                if let Some(lsn) = a.abort_lsn() {
                    fields.push(("abort_lsn", V::Lsn(lsn)));
                }
                if let Some(time) = a.abort_time() {
                    fields.push(("abort_time", V::Time(time)));
                }
            }
            Message::BeginPrepare(p) => prepared(&mut fields, p.txn()),
            Message::Prepare(p) => prepared(&mut fields, p.txn()),
            Message::StreamPrepare(p) => prepared(&mut fields, p.txn()),
            Message::CommitPrepared(c) => {
                fields.push(("xid", V::Num(c.xid().into())));
                fields.push(("gid", V::Data(c.gid().as_bytes())));
                fields.push(("commit_lsn", V::Lsn(c.commit_lsn())));
                fields.push(("end_lsn", V::Lsn(c.end_lsn())));
                fields.push(("commit_time", V::Time(c.commit_time())));
            }
            Message::RollbackPrepared(r) => {
                fields.push(("xid", V::Num(r.xid().into())));
                fields.push(("gid", V::Data(r.gid().as_bytes())));
                fields.push(("prepare_end_lsn", V::Lsn(r.prepare_end_lsn())));
                fields.push(("rollback_end_lsn", V::Lsn(r.rollback_end_lsn())));
                fields.push(("prepare_time", V::Time(r.prepare_time())));
                fields.push(("rollback_time", V::Time(r.rollback_time())));
            }
            // A message type added to the crate later: its tag and name still show.
            _ => {}
        }
        let tag = message.tag();
        let name = message_type_name(tag).unwrap_or("Unknown");
        let line = match self.format {
            Format::Text => text_line(at, tag, name, &fields, ddl.as_ref(), warning.as_deref()),
            Format::Json => json_line(at, tag, name, &fields, ddl.as_ref(), warning.as_deref()),
        };
        Rendered { line, warning }
    }

    /// Remembers a Relation message and describes it.
    fn relation(&mut self, r: &RelationBody<'_>, fields: &mut Fields<'_>) -> Option<String> {
        let mut warning = None;
        let mut columns = Vec::new();
        for column in r.columns() {
            match column {
                Ok(c) => columns.push(ColumnView {
                    name: c.name().to_string(),
                    type_name: self.type_name(c.type_oid()),
                    type_oid: c.type_oid(),
                    type_modifier: c.type_modifier(),
                    key: c.is_key(),
                }),
                // Cannot happen for a parsed message (parsing read every column already).
                Err(e) => {
                    warning = Some(format!("unreadable column: {e}"));
                    break;
                }
            }
        }
        let events = EventsRelation::from_relation(r).transpose();
        if let Some(Err(e)) = &events {
            warning = Some(format!(
                "this ddl_sync.events cannot carry DDL events, its rows will show as rows: {e}"
            ));
        }
        let name = qualified(&r.namespace().to_string(), &r.name().to_string());
        fields.push(("relation", V::Bare(name.clone())));
        fields.push(("rel_id", V::Num(r.rel_id().into())));
        fields.push(("replica_identity", V::Char(r.replica_identity())));
        if matches!(events, Some(Ok(_))) {
            fields.push(("ddl_events", V::Flag(true)));
        }
        let names = columns.iter().map(|c| c.name.clone()).collect();
        fields.push(("columns", V::Columns(columns)));
        self.relations.insert(
            r.rel_id(),
            Relation {
                name,
                columns: names,
                events,
            },
        );
        warning
    }

    /// The relation of a change: its name when a Relation message gave it, else its OID.
    fn rel(&self, rel_id: u32, fields: &mut Fields<'_>) {
        match self.relations.get(&rel_id) {
            Some(r) => {
                fields.push(("relation", V::Bare(r.name.clone())));
                fields.push(("rel_id", V::JsonOnly(Box::new(V::Num(rel_id.into())))));
            }
            None => fields.push(("rel_id", V::Num(rel_id.into()))),
        }
    }

    fn rel_name(&self, rel_id: u32) -> String {
        match self.relations.get(&rel_id) {
            Some(r) => r.name.clone(),
            None => rel_id.to_string(),
        }
    }

    /// A tuple's values with their column names (`#N`, from 1, when the name is not known).
    fn tuple<'a>(
        &self,
        key: &'static str,
        rel_id: u32,
        tuple: TupleData<'a>,
        fields: &mut Fields<'a>,
        warning: &mut Option<String>,
    ) {
        let names = self.relations.get(&rel_id).map(|r| &r.columns[..]);
        let mut values = Vec::with_capacity(tuple.len());
        for (i, value) in tuple.enumerate() {
            match value {
                Ok(value) => {
                    let name = names
                        .and_then(|n| n.get(i))
                        .cloned()
                        .unwrap_or_else(|| format!("#{}", i + 1));
                    values.push((name, value));
                }
                // Cannot happen for a parsed message (parsing read every value already).
                Err(e) => {
                    *warning = Some(format!("unreadable value: {e}"));
                    break;
                }
            }
        }
        fields.push((key, V::Tuple(values)));
    }

    fn type_name(&self, oid: u32) -> Option<String> {
        match self.types.get(&oid) {
            Some(name) => Some(name.clone()),
            None => builtin_type(oid).map(str::to_owned),
        }
    }
}

/// `schema.name`, or `name` for the empty schema (pgoutput's pg_catalog).
fn qualified(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}.{name}")
    }
}

/// The transaction id that changes carry inside a streamed block.
fn stream_xid(fields: &mut Fields<'_>, xid: Option<u32>) {
    if let Some(xid) = xid {
        fields.push(("xid", V::Num(xid.into())));
    }
}

/// The fields of Begin Prepare, Prepare and Stream Prepare.
fn prepared<'a>(fields: &mut Fields<'a>, txn: &PreparedTxn<'a>) {
    fields.push(("xid", V::Num(txn.xid.into())));
    fields.push(("gid", V::Data(txn.gid.as_bytes())));
    fields.push(("prepare_lsn", V::Lsn(txn.prepare_lsn)));
    fields.push(("end_lsn", V::Lsn(txn.end_lsn)));
    fields.push(("prepare_time", V::Time(txn.prepare_time)));
}

/// Names of the built-in types pgoutput's Relation messages most often refer to (OIDs from
/// PostgreSQL's pg_type.dat, which never change). Other types show as their OID unless a Type
/// message named them.
fn builtin_type(oid: u32) -> Option<&'static str> {
    Some(match oid {
        16 => "bool",
        17 => "bytea",
        18 => "char",
        19 => "name",
        20 => "int8",
        21 => "int2",
        23 => "int4",
        25 => "text",
        26 => "oid",
        28 => "xid",
        114 => "json",
        142 => "xml",
        199 => "_json",
        650 => "cidr",
        700 => "float4",
        701 => "float8",
        790 => "money",
        869 => "inet",
        1000 => "_bool",
        1001 => "_bytea",
        1002 => "_char",
        1003 => "_name",
        1005 => "_int2",
        1007 => "_int4",
        1009 => "_text",
        1014 => "_bpchar",
        1015 => "_varchar",
        1016 => "_int8",
        1021 => "_float4",
        1022 => "_float8",
        1028 => "_oid",
        1042 => "bpchar",
        1043 => "varchar",
        1082 => "date",
        1083 => "time",
        1114 => "timestamp",
        1115 => "_timestamp",
        1182 => "_date",
        1183 => "_time",
        1184 => "timestamptz",
        1185 => "_timestamptz",
        1186 => "interval",
        1187 => "_interval",
        1231 => "_numeric",
        1266 => "timetz",
        1560 => "bit",
        1562 => "varbit",
        1700 => "numeric",
        2950 => "uuid",
        2951 => "_uuid",
        3220 => "pg_lsn",
        3802 => "jsonb",
        3807 => "_jsonb",
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Text

fn text_line(
    at: At,
    tag: u8,
    name: &str,
    fields: &Fields<'_>,
    ddl: Option<&Ddl<'_>>,
    warning: Option<&str>,
) -> String {
    let mut out = String::with_capacity(128);
    let _ = write!(out, "{} {} ", at.offset, at.number);
    show::push_escaped(&mut out, &[tag], false);
    match ddl {
        None => {
            out.push(' ');
            out.push_str(name);
            for (key, value) in fields {
                text_field(&mut out, key, value);
            }
        }
        Some(ddl) => {
            out.push_str(" DDL");
            // Only the stream's xid, if any: the rest is the DDL's.
            for (key, value) in fields.iter().filter(|(k, _)| *k == "xid") {
                text_field(&mut out, key, value);
            }
            text_ddl(&mut out, ddl);
        }
    }
    if let Some(warning) = warning {
        out.push_str(" (warning: ");
        show::push_escaped(&mut out, warning.as_bytes(), false);
        out.push(')');
    }
    out
}

fn text_field(out: &mut String, key: &str, value: &V<'_>) {
    match value {
        V::Flag(false) | V::JsonOnly(_) | V::Null => return,
        V::TextOnly(v) => return text_field(out, key, v),
        V::Flag(true) => {
            out.push(' ');
            out.push_str(key);
            return;
        }
        V::Bare(name) => {
            out.push(' ');
            show::push_escaped(out, name.as_bytes(), false);
            return;
        }
        _ => {}
    }
    out.push(' ');
    out.push_str(key);
    out.push('=');
    match value {
        V::Num(n) => {
            let _ = write!(out, "{n}");
        }
        V::Null => {}
        V::Lsn(lsn) => out.push_str(&show::lsn(*lsn)),
        V::Time(t) => out.push_str(&show::timestamp(*t)),
        V::Name(name) => show::push_escaped(out, name.as_bytes(), false),
        V::Data(bytes) => text_data(out, bytes),
        V::Char(c) => show::push_escaped(out, &[*c], false),
        V::Columns(columns) => {
            out.push('(');
            for (i, c) in columns.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                show::push_escaped(out, c.name.as_bytes(), false);
                out.push(' ');
                match &c.type_name {
                    Some(name) => show::push_escaped(out, name.as_bytes(), false),
                    None => {
                        let _ = write!(out, "{}", c.type_oid);
                    }
                }
                if c.type_modifier != -1 {
                    let _ = write!(out, " typmod={}", c.type_modifier);
                }
                if c.key {
                    out.push_str(" key");
                }
            }
            out.push(')');
        }
        V::Tuple(values) => {
            out.push('(');
            for (i, (name, value)) in values.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                show::push_escaped(out, name.as_bytes(), false);
                out.push('=');
                match value {
                    TupleValue::Null => out.push_str("NULL"),
                    TupleValue::UnchangedToast => out.push_str("(unchanged toast)"),
                    TupleValue::Text(bytes) => show::push_escaped(out, bytes, true),
                    TupleValue::Binary(bytes) => show::push_hex(out, bytes),
                }
            }
            out.push(')');
        }
        V::Names(names) => {
            out.push('(');
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                show::push_escaped(out, name.as_bytes(), false);
            }
            out.push(')');
        }
        V::Flag(_) | V::Bare(_) | V::JsonOnly(_) | V::TextOnly(_) | V::Description(_) => {}
    }
}

/// User data: quoted text when UTF-8, else `\x` hex.
fn text_data(out: &mut String, bytes: &[u8]) {
    if std::str::from_utf8(bytes).is_ok() {
        show::push_escaped(out, bytes, true);
    } else {
        show::push_hex(out, bytes);
    }
}

/// `KIND COMMAND_TAG OBJECT (schema S, role R, search_path P[, ...]): SQL`.
fn text_ddl(out: &mut String, ddl: &Ddl<'_>) {
    struct Common<'a> {
        kind: String,
        dialect: &'a str,
        command_tag: &'a str,
        schema: &'a str,
        object_identity: &'a str,
        sql: &'a str,
        search_path: &'a str,
        role: &'a str,
        top_level: bool,
        forwarded: Option<(u64, u64)>,
    }
    let c = match ddl {
        Ddl::Event(e) => Common {
            kind: e.kind.to_owned(),
            dialect: e.dialect,
            command_tag: e.command_tag,
            schema: e.schema,
            object_identity: e.object_identity,
            sql: e.sql,
            search_path: e.search_path,
            role: e.role,
            top_level: e.top_level,
            forwarded: e.forwarded.then_some((e.origin_sysid, e.origin_lsn.0)),
        },
        Ddl::Record(r, _) => Common {
            kind: r.kind.to_owned(),
            dialect: r.dialect,
            command_tag: r.command_tag,
            schema: r.schema,
            object_identity: r.object_identity,
            sql: r.sql,
            search_path: r.search_path,
            role: r.role,
            top_level: r.flags.contains(RecordFlags::TOP_LEVEL),
            forwarded: r
                .flags
                .contains(RecordFlags::FORWARDED)
                .then_some((r.origin.original_sysid, r.origin.original_lsn)),
        },
    };
    for part in [c.kind.as_str(), c.command_tag, c.object_identity] {
        out.push(' ');
        show::push_escaped(out, part.as_bytes(), false);
    }
    out.push_str(" (");
    let mut details: Vec<(&str, String)> = Vec::new();
    if !c.schema.is_empty() {
        details.push(("schema", c.schema.to_owned()));
    }
    details.push(("role", c.role.to_owned()));
    details.push(("search_path", c.search_path.to_owned()));
    if c.dialect != "postgres" {
        details.push(("dialect", c.dialect.to_owned()));
    }
    if !c.top_level {
        details.push(("nested", String::new()));
    }
    if let Some((sysid, lsn)) = c.forwarded {
        details.push(("forwarded from", format!("{sysid} at {}", show::lsn(lsn))));
    }
    for (i, (key, value)) in details.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(key);
        if !value.is_empty() {
            out.push(' ');
            show::push_escaped(out, value.as_bytes(), false);
        }
    }
    out.push_str("): ");
    show::push_escaped(out, c.sql.as_bytes(), false);
}

// ---------------------------------------------------------------------------------------------
// JSON

/// One message as a JSON object: where it is, its type, its fields in order, its DDL.
struct JsonLine<'r, 'a> {
    at: At,
    tag: u8,
    name: &'r str,
    fields: &'r Fields<'a>,
    ddl: Option<&'r Ddl<'a>>,
    warning: Option<&'r str>,
}

impl Serialize for JsonLine<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("offset", &self.at.offset)?;
        map.serialize_entry("number", &self.at.number)?;
        map.serialize_entry("tag", &char::from(self.tag))?;
        map.serialize_entry("type", self.name)?;
        for (key, value) in self.fields {
            member(&mut map, key, value)?;
        }
        if let Some(ddl) = self.ddl {
            map.serialize_entry("ddl", &Members(&ddl_fields(ddl)))?;
        }
        if let Some(warning) = self.warning {
            map.serialize_entry("warning", warning)?;
        }
        map.end()
    }
}

/// Fields as the members of a JSON object, in order.
struct Members<'f, 'a>(&'f [(&'static str, V<'a>)]);

impl Serialize for Members<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0 {
            member(&mut map, key, value)?;
        }
        map.end()
    }
}

/// One field as a member, if JSON shows it: data that is not UTF-8 goes in `KEY_hex`.
fn member<M: SerializeMap>(map: &mut M, key: &str, value: &V<'_>) -> Result<(), M::Error> {
    match value {
        V::TextOnly(_) => Ok(()),
        V::JsonOnly(v) => member(map, key, v),
        V::Data(bytes) => match std::str::from_utf8(bytes) {
            Ok(s) => map.serialize_entry(key, s),
            Err(_) => map.serialize_entry(&format!("{key}_hex"), &show::hex(bytes)),
        },
        v => map.serialize_entry(key, v),
    }
}

/// A field's value (see [`member`] for the fields that change their key or are left out).
impl Serialize for V<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            V::Null => serializer.serialize_none(),
            V::Num(n) => serializer.serialize_u64(*n),
            V::Lsn(lsn) => serializer.serialize_str(&show::lsn(*lsn)),
            V::Time(t) => serializer.serialize_str(&show::timestamp(*t)),
            V::Flag(b) => serializer.serialize_bool(*b),
            V::Name(s) | V::Bare(s) => serializer.serialize_str(s),
            V::Data(bytes) => serializer.serialize_str(&String::from_utf8_lossy(bytes)),
            V::Char(c) => serializer.serialize_str(&String::from_utf8_lossy(&[*c])),
            V::Columns(columns) => columns.serialize(serializer),
            V::Tuple(values) => {
                serializer.collect_map(values.iter().map(|(name, value)| (name, JsonValue(value))))
            }
            V::Names(names) => names.serialize(serializer),
            V::JsonOnly(v) => v.serialize(serializer),
            V::TextOnly(_) => serializer.serialize_unit(),
            V::Description(d) => d.serialize(serializer),
        }
    }
}

/// A tuple value: a string, `null`, or an object saying what else it is.
struct JsonValue<'v, 'a>(&'v TupleValue<'a>);

impl Serialize for JsonValue<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            TupleValue::Null => serializer.serialize_none(),
            TupleValue::Text(bytes) => match std::str::from_utf8(bytes) {
                Ok(s) => serializer.serialize_str(s),
                Err(_) => single(serializer, "text_hex", &show::hex(bytes)),
            },
            TupleValue::Binary(bytes) => single(serializer, "binary", &show::hex(bytes)),
            TupleValue::UnchangedToast => single(serializer, "unchanged_toast", &true),
        }
    }
}

/// `{"KEY": VALUE}`.
fn single<S: Serializer, T: Serialize + ?Sized>(
    serializer: S,
    key: &str,
    value: &T,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(key, value)?;
    map.end()
}

fn json_line(
    at: At,
    tag: u8,
    name: &str,
    fields: &Fields<'_>,
    ddl: Option<&Ddl<'_>>,
    warning: Option<&str>,
) -> String {
    let line = JsonLine {
        at,
        tag,
        name,
        fields,
        ddl,
        warning,
    };
    // Only map keys that are not strings fail, and every key here is a string.
    serde_json::to_string(&line).expect("a message always serializes to JSON")
}

/// Every field of the DDL, for JSON.
fn ddl_fields<'a>(ddl: &Ddl<'a>) -> Fields<'a> {
    let s = |s: &'a str| V::Data(s.as_bytes());
    match ddl {
        // Every column of the event schema, by its field's name: a NULL (a column an older
        // publisher does not fill) is JSON's null.
        Ddl::Event(e) => EVENT_COLUMNS
            .iter()
            .zip(e.values())
            .map(|(column, value)| {
                let value = match value {
                    None => V::Null,
                    Some(Value::Bool(b)) => V::Flag(b),
                    Some(Value::Int8(n)) => V::Num(n as u64),
                    Some(Value::Lsn(lsn)) => V::Lsn(lsn.0),
                    // The description as the object it is, not as a string of JSON; text that
                    // is not a description stays the string it is.
                    Some(Value::Text(text)) if column.field == "description" => {
                        match ddl_wire::Description::from_json(text).ok().and_then(|_| {
                            serde_json::value::RawValue::from_string(text.to_string()).ok()
                        }) {
                            Some(object) => V::Description(object),
                            None => s(text),
                        }
                    }
                    Some(Value::Text(text)) => s(text),
                };
                (column.field, value)
            })
            .collect(),
        Ddl::Record(r, version) => vec![
            ("format_version", V::Num((*version).into())),
            (
                "top_level",
                V::Flag(r.flags.contains(RecordFlags::TOP_LEVEL)),
            ),
            (
                "transactional",
                V::Flag(r.flags.contains(RecordFlags::TRANSACTIONAL)),
            ),
            (
                "forwarded",
                V::Flag(r.flags.contains(RecordFlags::FORWARDED)),
            ),
            (
                "defaults_left_out",
                V::Flag(r.flags.contains(RecordFlags::DEFAULTS_LEFT_OUT)),
            ),
            ("xid", V::Num(r.xid.into())),
            ("kind", s(r.kind)),
            ("class_id", V::Num(r.class_id.into())),
            ("object_id", V::Num(r.object_id.into())),
            ("namespace_id", V::Num(r.namespace_id.into())),
            ("capturing_sysid", V::Num(r.origin.capturing_sysid)),
            ("original_sysid", V::Num(r.origin.original_sysid)),
            ("original_lsn", V::Lsn(r.origin.original_lsn)),
            ("dialect", s(r.dialect)),
            ("command_tag", s(r.command_tag)),
            ("schema", s(r.schema)),
            ("object_identity", s(r.object_identity)),
            ("sql", s(r.sql)),
            ("search_path", s(r.search_path)),
            ("role", s(r.role)),
            ("session_user", s(r.session_user)),
            ("database", s(r.database)),
            ("tables", s(r.tables)),
            ("settings", s(r.settings)),
            ("role_rights", s(r.role_rights)),
            ("bindings", s(r.bindings.unwrap_or(""))),
            ("renamed_from", s(r.renamed_from)),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON that ddl-dump has always written: compact, members in order, strings with only
    /// the escapes RFC 8259 requires (plus `\b` and `\f`, `\u00XX` in lowercase), data that is
    /// not UTF-8 as `KEY_hex`, and a tuple value that is not text as an object saying what it is.
    #[test]
    fn json_members_keep_their_order_and_escapes() {
        let fields: Fields<'_> = vec![
            ("s", V::Name("a\"b\\c\n\u{1}\u{8}\u{c}\u{7f}é".into())),
            ("n", V::Num(u64::MAX)),
            ("b", V::Data(b"\xff")),
            ("text", V::TextOnly(Box::new(V::Num(2)))),
            ("json", V::JsonOnly(Box::new(V::Flag(false)))),
            (
                "columns",
                V::Columns(vec![ColumnView {
                    name: "v".into(),
                    type_name: None,
                    type_oid: 16_385,
                    type_modifier: -1,
                    key: false,
                }]),
            ),
            (
                "new",
                V::Tuple(vec![
                    ("x".into(), TupleValue::Null),
                    ("y".into(), TupleValue::Text(b"\xfe")),
                    ("a".into(), TupleValue::Binary(b"\x01")),
                    ("w".into(), TupleValue::UnchangedToast),
                ]),
            ),
        ];
        assert_eq!(
            serde_json::to_string(&Members(&fields)).unwrap(),
            concat!(
                r#"{"s":"a\"b\\c\n\u0001\b\f"#,
                "\u{7f}é\",",
                r#""n":18446744073709551615,"b_hex":"\\xff","json":false,"#,
                r#""columns":[{"name":"v","type_oid":16385,"type_modifier":-1,"key":false}],"#,
                r#""new":{"x":null,"y":{"text_hex":"\\xfe"},"a":{"binary":"\\x01"},"#,
                r#""w":{"unchanged_toast":true}}}"#
            )
        );
    }
}
