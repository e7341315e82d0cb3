//! The DDL event view (`EventsRelation::from_relation`, then `event`) on a Relation and an
//! Insert. The first byte picks the protocol context; the top two bits of the second byte pick
//! how the messages are made:
//! - `0x`: the input holds both messages, Relation then Insert (`parse_prefix` splits them);
//! - `10`: the target writes a valid `ddl_sync.events` Relation itself (the low bits rotate its
//!   columns and add columns the view ignores) for the Insert's relation, and the rest of the
//!   input is the Insert;
//! - `11`: the target writes that Relation and the Insert too, from the rest of the input split
//!   at `0xFF` bytes, one piece per column: its first byte picks NULL (`n`), unchanged TOAST
//!   (`u`), text (even) or binary (odd), the other bytes are the value; columns without a piece
//!   get a valid text value. The fuzzer then spends its time on the values themselves.
//!
//! Nothing may panic, and an event's strings must borrow from the Insert.
#![no_main]

use ddl_wire::{
    event_columns, write_insert, write_relation, Column, EventsRelation, Message, PgStr, TupleValue,
};
use libfuzzer_sys::fuzz_target;

#[path = "context.rs"]
#[allow(dead_code)] // assert_reencodes is for the other targets
mod context;

/// The OID of an event column's SQL type.
fn type_oid(sql_type: &str) -> u32 {
    match sql_type {
        "boolean" => 16,
        "bigint" => 20,
        "pg_lsn" => 3220,
        _ => 25,
    }
}

/// A valid value of an event column's SQL type, in text format.
fn valid_text(sql_type: &str) -> &'static [u8] {
    match sql_type {
        "boolean" => b"t",
        "bigint" => b"-42",
        "pg_lsn" => b"16/B374D848",
        _ => b"CREATE TABLE t (a int)",
    }
}

/// The columns of a valid events Relation: the low bits of `shape` rotate the event columns,
/// the next two add columns the view ignores.
fn events_columns(shape: u8) -> Vec<Column<'static>> {
    let mut columns: Vec<Column<'static>> = event_columns()
        .map(|(name, ty)| Column::new(0, PgStr::new(name.as_bytes()).unwrap(), type_oid(ty), -1))
        .collect();
    let turn = usize::from(shape & 0x0F) % columns.len();
    columns.rotate_left(turn);
    for _ in 0..(shape >> 4) & 0x03 {
        columns.push(Column::new(0, PgStr::from(c"applied"), 16, -1));
    }
    columns
}

/// The value for column `column` from the input's piece for it, if any.
fn value_of<'a>(column: &Column<'_>, piece: Option<&'a [u8]>) -> TupleValue<'a> {
    match piece {
        None => {
            let ty = event_columns()
                .find(|(name, _)| name.as_bytes() == column.name().as_bytes())
                .map_or("boolean", |(_, ty)| ty);
            TupleValue::Text(valid_text(ty))
        }
        Some([b'n', ..]) => TupleValue::Null,
        Some([b'u', ..]) => TupleValue::UnchangedToast,
        Some([kind, value @ ..]) if kind % 2 == 0 => TupleValue::Text(value),
        Some([_, value @ ..]) => TupleValue::Binary(value),
        Some([]) => TupleValue::Text(b""),
    }
}

/// A valid events Relation for `rel_id`, in the context's streamed-block state.
fn events_relation(xid: Option<u32>, rel_id: u32, shape: u8) -> Vec<u8> {
    let columns = events_columns(shape);
    let mut out = Vec::new();
    write_relation(
        xid,
        rel_id,
        PgStr::from(c"ddl_sync"),
        PgStr::from(c"events"),
        b'd',
        &columns,
        &mut out,
    )
    .unwrap();
    out
}

fuzz_target!(|data: &[u8]| {
    let [first, mode, rest @ ..] = data else {
        return;
    };
    let ctx = context::context(*first);
    let (built, written);
    let (relation, insert) = if mode & 0xC0 == 0xC0 {
        let xid = ctx.in_stream().then_some(7);
        built = events_relation(xid, 16_400, *mode);
        let mut pieces = rest.split(|&b| b == 0xFF);
        let values: Vec<TupleValue<'_>> = events_columns(*mode)
            .iter()
            .map(|column| value_of(column, pieces.next()))
            .collect();
        let mut out = Vec::new();
        write_insert(xid, 16_400, &values, &mut out).unwrap();
        written = out;
        let Ok(Message::Relation(relation)) = Message::parse(&built, &ctx) else {
            unreachable!("the events relation parses in its own context");
        };
        (relation, &written[..])
    } else if mode & 0x80 == 0 {
        let Ok((Message::Relation(relation), used)) = Message::parse_prefix(rest, &ctx) else {
            return;
        };
        (relation, &rest[used..])
    } else {
        let Ok(Message::Insert(insert)) = Message::parse(rest, &ctx) else {
            return;
        };
        built = events_relation(insert.xid(), insert.rel_id(), *mode);
        let Ok(Message::Relation(relation)) = Message::parse(&built, &ctx) else {
            unreachable!("the events relation parses in its own context");
        };
        (relation, rest)
    };
    let events = match EventsRelation::from_relation(&relation) {
        Ok(Some(events)) => events,
        Ok(None) => return,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let Ok(Message::Insert(row)) = Message::parse(insert, &ctx) else {
        return;
    };
    match events.event(&row) {
        Ok(event) => {
            let range = insert.as_ptr_range();
            for s in [
                event.kind,
                event.dialect,
                event.command_tag,
                event.schema,
                event.object_identity,
                event.sql,
                event.search_path,
                event.role,
                event.session_user,
                event.database,
                event.tables,
                event.settings,
            ] {
                assert!(s.is_empty() || range.contains(&s.as_ptr()));
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
