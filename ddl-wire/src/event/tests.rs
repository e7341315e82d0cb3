//! The event schema and its pgoutput reader, on messages written by ddl-wire's own writers.

use super::*;
use crate::{
    write_insert, write_relation, Column, Message, PgStr, ProtocolContext, Streaming, TupleValue,
};

const REL_ID: u32 = 16_400;

/// A relation with the event columns shuffled among apply-status columns, as a later
/// version of the table might have them.
fn relation_bytes(skip: Option<&str>, retype: Option<&str>) -> (Vec<u8>, Vec<&'static str>) {
    let mut names: Vec<&'static str> = vec!["status"];
    let (required, nullable): (Vec<&EventColumn>, Vec<&EventColumn>) =
        EVENT_COLUMNS.iter().partition(|c| !c.nullable);
    names.extend(required.iter().rev().map(|c| c.name));
    names.push("applied_at");
    names.extend(nullable.iter().map(|c| c.name));
    names.retain(|n| Some(*n) != skip);
    let columns: Vec<Column<'_>> = names
        .iter()
        .map(|n| {
            let oid = EVENT_COLUMNS
                .iter()
                .find(|c| c.name == *n)
                .map_or(25, |c| c.ty.oid());
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
        "capturing_sysid" => b"7",
        "sent_generated_columns" => b"b\n",
        "description" => br#"{"version":1,"objects":[]}"#,
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
    assert_eq!(ev.lsn, Lsn(0x16B_3748));
    assert_eq!(ev.origin_sysid, (-42i64) as u64);
    assert_eq!(ev.origin_lsn, Lsn(1 << 32));
    assert_eq!(ev.xid, 731);
    assert!(ev.top_level && !ev.forwarded);
    assert_eq!((ev.kind, ev.command_tag), ("table", "ALTER TABLE"));
    assert_eq!(ev.sql, "ALTER TABLE t ADD COLUMN c int");
    assert_eq!(ev.tables, Some("CREATE TABLE public.t (c integer);"));
    assert_eq!(ev.settings, Some("DateStyle=ISO, MDY"));
    assert_eq!(ev.capturing_sysid, Some(7));
    assert_eq!(ev.sent_generated_columns, Some("b\n"));
    assert_eq!(ev.description, Some(r#"{"version":1,"objects":[]}"#));
}

#[test]
fn nullable_columns_may_be_missing_or_null() {
    let (rel, names) = relation_bytes(Some("tables"), None);
    let rel = parse_relation(&rel).unwrap().unwrap();
    let values = text_values(&names);
    let mut insert = Vec::new();
    write_insert(None, REL_ID, &values, &mut insert).unwrap();
    assert_eq!(event_from(&rel, &insert).unwrap().tables, None);

    let (rel, names) = relation_bytes(None, None);
    let rel = parse_relation(&rel).unwrap().unwrap();
    let values: Vec<TupleValue<'_>> = names
        .iter()
        .map(|n| match *n {
            "bindings" | "capturing_sysid" | "sent_generated_columns" | "description" => {
                TupleValue::Null
            }
            other => TupleValue::Text(text_value(other)),
        })
        .collect();
    let mut insert = Vec::new();
    write_insert(None, REL_ID, &values, &mut insert).unwrap();
    let ev = event_from(&rel, &insert).unwrap();
    assert_eq!((ev.bindings, ev.capturing_sysid), (None, None));
    assert_eq!(ev.sent_generated_columns, None);

    let (rel, _) = relation_bytes(None, Some("tables"));
    let err = parse_relation(&rel).unwrap_err();
    assert_eq!(err.column(), "tables");
}

#[test]
fn reads_binary_values() {
    let (rel, names) = relation_bytes(None, None);
    let rel = parse_relation(&rel).unwrap().unwrap();
    let lsn = 0x0000_0002_0000_00FFu64.to_be_bytes();
    let values: Vec<TupleValue<'_>> = names
        .iter()
        .map(|n| match *n {
            "lsn" | "origin_lsn" | "origin_sysid" | "xid" | "capturing_sysid" => {
                TupleValue::Binary(&lsn)
            }
            "top_level" => TupleValue::Binary(&[0]),
            "forwarded" => TupleValue::Binary(&[1]),
            other => TupleValue::Binary(text_value(other)),
        })
        .collect();
    let mut insert = Vec::new();
    write_insert(None, REL_ID, &values, &mut insert).unwrap();
    let ev = event_from(&rel, &insert).unwrap();
    assert_eq!((ev.lsn, ev.xid), (Lsn(0x2_0000_00FF), 0x2_0000_00FF));
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
    assert_eq!(cols.len(), 23);
    assert_eq!(cols[0], ("lsn", "pg_lsn"));
    assert!(cols.contains(&("sql", "text")));
    assert!(cols.contains(&("capturing_sysid", "bigint")));
    assert_eq!(cols[21], ("sent_generated_columns", "text"));
    assert_eq!(cols[22], ("description", "text"));
    // Only fields added after the first version may be NULL, and they come last.
    let first_nullable = EVENT_COLUMNS.iter().position(|c| c.nullable).unwrap();
    assert!(EVENT_COLUMNS[first_nullable..].iter().all(|c| c.nullable));
    assert_eq!(EVENT_COLUMNS[first_nullable].name, "tables");
}

#[test]
fn an_event_is_its_values_and_back() {
    let (rel, names) = relation_bytes(None, None);
    let rel = parse_relation(&rel).unwrap().unwrap();
    let mut insert = Vec::new();
    write_insert(None, REL_ID, &text_values(&names), &mut insert).unwrap();
    let ev = event_from(&rel, &insert).unwrap();
    let values = ev.values();
    let again = DdlEvent::from_values(|at, _| Ok(values[at])).unwrap();
    assert_eq!(again, ev);
    // A value of another type, or NULL where the column may not be, names the column.
    let err = DdlEvent::from_values(|at, c| {
        Ok(if c.name == "xid" {
            Some(Value::Bool(true))
        } else {
            values[at]
        })
    })
    .unwrap_err();
    assert_eq!(
        (err.column(), err.kind()),
        ("xid", &EventErrorKind::InvalidValue("bigint"))
    );
    let err = DdlEvent::from_values(|at, c| Ok(if c.name == "sql" { None } else { values[at] }))
        .unwrap_err();
    assert_eq!((err.column(), err.kind()), ("sql", &EventErrorKind::Null));
}

#[test]
fn lsns_read_as_postgresql_prints_them() {
    assert_eq!(Lsn::parse(b"16/B374D848"), Some(Lsn(0x16_B374_D848)));
    assert_eq!(Lsn::parse(b"0/0163F2B8"), Some(Lsn(0x163_F2B8)));
    for bad in [
        &b"16B374D848"[..],
        b"/1",
        b"1/",
        b"+1/0",
        b"1/-0",
        b"123456789/0",
        b"x/0",
    ] {
        assert_eq!(Lsn::parse(bad), None, "{}", String::from_utf8_lossy(bad));
    }
    assert_eq!(Lsn(0x16_B374_D848).to_string(), "16/B374D848");
}

#[test]
fn the_event_of_a_record() {
    use crate::{DdlRecord, RecordFlags, RecordOrigin, RECORD_TAG_LEN};
    let record = DdlRecord {
        flags: RecordFlags::TOP_LEVEL | RecordFlags::TRANSACTIONAL,
        xid: 731,
        kind: "table",
        class_id: 1259,
        object_id: 16_384,
        namespace_id: 2200,
        origin: RecordOrigin {
            capturing_sysid: 9,
            original_sysid: 8,
            original_lsn: 0,
        },
        dialect: "postgres",
        command_tag: "ALTER TABLE",
        schema: "public",
        object_identity: "public.orders",
        sql: "ALTER TABLE orders ADD COLUMN note text",
        search_path: "public",
        role: "app",
        session_user: "app",
        database: "shop",
        tables: "",
        settings: "",
        role_rights: "",
        bindings: None,
        renamed_from: "",
        description: "",
        tag: [7; RECORD_TAG_LEN],
    };
    let ev = DdlEvent::from_record(&record, Lsn(0x10));
    // Captured here: the statement's LSN is the message's.
    assert_eq!(
        (ev.lsn, ev.origin_sysid, ev.origin_lsn),
        (Lsn(0x10), 8, Lsn(0x10))
    );
    assert!(ev.top_level && !ev.forwarded);
    assert_eq!((ev.role, ev.database, ev.xid), ("app", "shop", 731));
    // Sent as empty text; NULL where a record of an older format knows nothing.
    assert_eq!((ev.tables, ev.settings), (Some(""), Some("")));
    assert_eq!((ev.role_rights, ev.bindings), (None, None));
    assert_eq!(ev.capturing_sysid, Some(9));

    let forwarded = DdlRecord {
        flags: RecordFlags::FORWARDED,
        origin: RecordOrigin {
            original_lsn: 0x99,
            ..record.origin
        },
        ..record
    };
    let ev = DdlEvent::from_record(&forwarded, Lsn(0x10));
    assert_eq!(ev.origin_lsn, Lsn(0x99));
    assert!(ev.forwarded && !ev.top_level);
}
