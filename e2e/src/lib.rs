//! Shared pieces of the end-to-end tests: they run against real PostgreSQL 15 clusters made by
//! `ddl-testkit`, with `ddl_pgoutput` and `ddl_sync` installed in the server's directories
//! (`cargo xtask install --debug`, which `cargo xtask test` runs first).
#![deny(missing_docs)]

use ddl_testkit::{Cluster, ClusterBuilder};

/// A publisher-ready cluster: logical WAL, prepared transactions, and a small
/// `logical_decoding_work_mem` so that modest transactions already stream.
pub fn publisher(name: &str) -> Cluster {
    ClusterBuilder::new()
        .name(name)
        .conf("logical_decoding_work_mem", "64kB")
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"))
}

/// The `data` of every change of `slot` as hex, one message per line, without consuming them.
pub fn peek_hex(pg: &Cluster, slot: &str, options: &[(&str, &str)]) -> Result<String, String> {
    let opts: String = options
        .iter()
        .map(|(k, v)| format!(", '{k}', '{v}'"))
        .collect();
    pg.psql(
        "postgres",
        &format!(
            "SELECT encode(data, 'hex') FROM pg_logical_slot_peek_binary_changes('{slot}', NULL, NULL{opts})"
        ),
    )
    .map_err(|e| e.to_string())
}

/// A publisher with `ddl_pgoutput` preloaded (the capture hook) and the `ddl_sync` extension.
pub fn ddl_publisher(name: &str) -> Cluster {
    let pg = ClusterBuilder::new()
        .name(name)
        .conf("logical_decoding_work_mem", "64kB")
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"));
    pg.psql("postgres", "CREATE EXTENSION ddl_sync")
        .expect("CREATE EXTENSION ddl_sync");
    pg
}

/// A decoded change, reduced to what the tests look at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// BEGIN (or Stream Start).
    Begin,
    /// COMMIT (or Stream Commit).
    Commit,
    /// A row inserted into `table` (schema-qualified), with its text values.
    Insert {
        /// `schema.table`.
        table: String,
        /// Column values in text form, `None` for NULL.
        values: Vec<Option<String>>,
    },
    /// A DDL event.
    Ddl(Ddl),
    /// A logical decoding message with this prefix.
    Message(String),
}

/// The fields of a DDL event the tests check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ddl {
    /// The command tag.
    pub tag: String,
    /// The kind token.
    pub kind: String,
    /// The statement.
    pub sql: String,
    /// The object identity.
    pub identity: String,
    /// Sent by the client.
    pub top_level: bool,
    /// The search_path.
    pub search_path: String,
    /// The role.
    pub role: String,
}

/// Decodes the changes of `slot` (peeked, not consumed) with protocol version 1, turning
/// inserts on `ddl_sync.events` into [`Change::Ddl`].
pub fn changes(
    pg: &Cluster,
    slot: &str,
    publications: &str,
    extra: &[(&str, &str)],
) -> Vec<Change> {
    use ddl_wire::{
        EventsRelation, Message, ProtocolContext, StreamDecoder, Streaming, TupleValue,
    };
    use std::collections::HashMap;

    let mut options = vec![("proto_version", "1"), ("publication_names", publications)];
    options.extend_from_slice(extra);
    let hex = peek_hex(pg, slot, &options).unwrap_or_else(|e| panic!("peek {slot}: {e}"));
    let mut decoder = StreamDecoder::new(ProtocolContext::new(1, Streaming::Off).expect("v1"));
    let mut tables: HashMap<u32, String> = HashMap::new();
    let mut events: HashMap<u32, EventsRelation> = HashMap::new();
    let mut out = Vec::new();
    for line in hex.lines().filter(|l| !l.is_empty()) {
        let bytes = from_hex(line);
        let message = decoder
            .decode(&bytes)
            .unwrap_or_else(|e| panic!("undecodable message {line}: {e}"));
        match message {
            Message::Begin(_) => out.push(Change::Begin),
            Message::Commit(_) => out.push(Change::Commit),
            Message::Relation(rel) => {
                tables.insert(rel.rel_id(), format!("{}.{}", rel.namespace(), rel.name()));
                if let Some(ev) = EventsRelation::from_relation(&rel).expect("events relation") {
                    events.insert(rel.rel_id(), ev);
                }
            }
            Message::Insert(ins) => match events.get(&ins.rel_id()) {
                Some(ev) => {
                    let e = ev.event(&ins).expect("a valid event");
                    out.push(Change::Ddl(Ddl {
                        tag: e.command_tag.into(),
                        kind: e.kind.into(),
                        sql: e.sql.into(),
                        identity: e.object_identity.into(),
                        top_level: e.top_level,
                        search_path: e.search_path.into(),
                        role: e.role.into(),
                    }));
                }
                None => out.push(Change::Insert {
                    table: tables.get(&ins.rel_id()).cloned().unwrap_or_default(),
                    values: ins
                        .tuple()
                        .map(|v| match v.expect("value") {
                            TupleValue::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                            _ => None,
                        })
                        .collect(),
                }),
            },
            Message::LogicalMessage(m) => out.push(Change::Message(m.prefix().to_string())),
            _ => {}
        }
    }
    out
}

/// The DDL statements among `changes`, in order.
pub fn ddl_sql(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Ddl(d) => Some(d.sql.clone()),
            _ => None,
        })
        .collect()
}

fn from_hex(line: &str) -> Vec<u8> {
    (0..line.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("hex"))
        .collect()
}
