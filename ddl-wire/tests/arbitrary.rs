//! No input may make a parser panic. Random buffers, and random mutations (bit flips, cuts,
//! inserted, deleted and overwritten bytes) of valid messages and files of every kind, go
//! through `Message::parse`, `Message::parse_prefix`, `StreamDecoder`, `RecvlogicalReader` and
//! `FramedReader` in every protocol context.
//!
//! Beyond "does not panic", what is accepted must be exact: every accepted message encodes back
//! to exactly the bytes it was parsed from, every strict prefix of a valid message is
//! `Incomplete`, and error offsets stay inside the input.

mod common;

use common::{contexts, framed_file, recvlogical_file, session, walk, Model, Rng, ALL_TAGS};
use ddl_wire::{FramedReader, Message, ProtocolContext, RecvlogicalReader, StreamDecoder};

/// Parses `buf` both ways and checks what comes out.
fn check_parse(buf: &[u8], ctx: &ProtocolContext) -> bool {
    let whole = match Message::parse(buf, ctx) {
        Ok(message) => {
            walk(&message);
            let mut again = Vec::new();
            message.encode(&mut again);
            assert_eq!(
                again, buf,
                "accepted bytes must encode back exactly ({ctx:?})"
            );
            true
        }
        Err(e) => {
            assert!(
                e.offset() <= buf.len(),
                "{e} past the end of {} bytes",
                buf.len()
            );
            assert!(!e.to_string().is_empty());
            false
        }
    };
    match Message::parse_prefix(buf, ctx) {
        Ok((message, used)) => {
            assert!(used <= buf.len());
            let mut again = Vec::new();
            message.encode(&mut again);
            assert_eq!(again, &buf[..used]);
            assert_eq!(whole, used == buf.len());
        }
        Err(e) => {
            assert!(!whole);
            assert!(e.offset() <= buf.len());
        }
    }
    whole
}

fn random_buffer(rng: &mut Rng) -> Vec<u8> {
    let mut buf = rng.bytes(48);
    // Half the time start with a real message type, so parsing goes past the first byte.
    if rng.coin() {
        let tag = rng.pick(&ALL_TAGS);
        match buf.first_mut() {
            Some(first) => *first = tag,
            None => buf.push(tag),
        }
    }
    buf
}

fn mutate(rng: &mut Rng, buf: &mut Vec<u8>) {
    for _ in 0..rng.below(3) + 1 {
        let len = buf.len();
        match rng.below(6) {
            0 if len > 0 => {
                let at = rng.below(len);
                buf[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => buf.truncate(rng.below(len)),
            2 => {
                let at = rng.below(len + 1);
                buf.insert(at, rng.next_u64() as u8);
            }
            3 if len > 0 => {
                buf.remove(rng.below(len));
            }
            4 if len > 0 => {
                let at = rng.below(len);
                buf[at] = rng.pick(&[0, 0xFF, b'\n', b'n', b't', b'N', b'K', b'O', 0x7F]);
            }
            _ => buf.extend_from_slice(&rng.bytes(6)),
        }
    }
}

#[test]
fn random_buffers_never_panic_and_what_is_accepted_is_exact() {
    let mut rng = Rng::new(11);
    let contexts = contexts();
    let mut accepted = 0;
    for _ in 0..60_000 {
        let buf = random_buffer(&mut rng);
        for ctx in &contexts {
            accepted += usize::from(check_parse(&buf, ctx));
        }
    }
    // Short fixed-size messages (Stream Stop, Stream Abort, ...) do turn up at random.
    assert!(accepted > 0);
}

#[test]
fn every_strict_prefix_of_a_valid_message_is_incomplete() {
    let mut rng = Rng::new(12);
    for ctx in contexts() {
        for _ in 0..200 {
            let bytes = Model::random(&mut rng, &ctx).bytes();
            for cut in 0..bytes.len() {
                let e = Message::parse(&bytes[..cut], &ctx).unwrap_err();
                assert!(
                    e.is_incomplete(),
                    "{e} for a {cut}-byte prefix of {bytes:?}"
                );
            }
            assert!(check_parse(&bytes, &ctx));
        }
    }
}

#[test]
fn mutated_messages_never_panic() {
    let mut rng = Rng::new(13);
    let contexts = contexts();
    for round in 0..120_000 {
        let ctx = contexts[round % contexts.len()];
        let mut bytes = Model::random(&mut rng, &ctx).bytes();
        mutate(&mut rng, &mut bytes);
        // The mutated bytes in their own context, and in another one.
        check_parse(&bytes, &ctx);
        check_parse(&bytes, &contexts[rng.below(contexts.len())]);
        let mut decoder = StreamDecoder::new(ctx);
        if let Ok(message) = decoder.decode(&bytes) {
            walk(&message);
        }
    }
}

/// Reads a whole file with `reader`; checks offsets grow, messages lie where the reader says
/// and encode back to those bytes, and the reader ends after an error.
fn check_reader<'a>(
    file: &'a [u8],
    mut reader: impl Iterator<Item = Result<(usize, Message<'a>), ddl_wire::Error>>,
) -> bool {
    let mut last = None;
    let mut ok = true;
    for item in reader.by_ref() {
        match item {
            Ok((offset, message)) => {
                assert!(last.is_none_or(|l| offset > l), "offsets grow");
                last = Some(offset);
                walk(&message);
                let mut again = Vec::new();
                message.encode(&mut again);
                assert_eq!(&file[offset..offset + again.len()], &again[..]);
            }
            Err(e) => {
                assert!(e.offset() <= file.len());
                assert!(e.message_number().is_some());
                ok = false;
                break;
            }
        }
    }
    assert!(reader.next().is_none(), "nothing after the end or an error");
    ok
}

#[test]
fn mutated_files_never_panic() {
    let mut rng = Rng::new(14);
    let contexts: Vec<ProtocolContext> =
        contexts().into_iter().filter(|c| !c.in_stream()).collect();
    for round in 0..8_000 {
        let ctx = contexts[round % contexts.len()];
        let messages: Vec<Vec<u8>> = session(&mut rng, &ctx).iter().map(Model::bytes).collect();

        let mut file = recvlogical_file(&messages);
        assert!(check_reader(&file, RecvlogicalReader::new(&file, ctx)));
        mutate(&mut rng, &mut file);
        check_reader(&file, RecvlogicalReader::new(&file, ctx));

        let mut file = framed_file(&messages);
        assert!(check_reader(&file, FramedReader::new(&file, ctx)));
        mutate(&mut rng, &mut file);
        check_reader(&file, FramedReader::new(&file, ctx));

        // Random bytes as a whole file.
        let noise = rng.bytes(64);
        check_reader(&noise, RecvlogicalReader::new(&noise, ctx));
        check_reader(&noise, FramedReader::new(&noise, ctx));
    }
}

#[test]
fn messages_out_of_order_never_panic_the_decoder() {
    let mut rng = Rng::new(15);
    let contexts = contexts();
    for _ in 0..2_000 {
        let base = contexts[rng.below(contexts.len())].with_in_stream(false);
        let mut decoder = StreamDecoder::new(base);
        for _ in 0..20 {
            // A valid message for a random stream state, whatever state the decoder is in.
            let state = base.with_in_stream(rng.coin());
            let bytes = Model::random(&mut rng, &state).bytes();
            let before = decoder.clone();
            match decoder.decode(&bytes) {
                Ok(message) => {
                    let mut again = Vec::new();
                    message.encode(&mut again);
                    assert_eq!(again, bytes);
                }
                Err(_) => assert_eq!(decoder, before, "a failed message changes no state"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The DDL record and the DDL event view

use common::{Col, Val};
use ddl_wire::{
    event_columns, DdlRecord, EventsRelation, RecordErrorKind, RecordFlags, RecordOrigin, Value,
    RECORD_FORMAT_VERSION,
};

/// Whether `s` lies inside `buf`: the views borrow, they never copy.
fn borrowed_from(s: &str, buf: &[u8]) -> bool {
    let (start, end) = (buf.as_ptr() as usize, buf.as_ptr() as usize + buf.len());
    let at = s.as_ptr() as usize;
    s.is_empty() || (start <= at && at + s.len() <= end)
}

/// A random UTF-8 string: ASCII, quotes, newlines, multi-byte characters.
fn utf8(rng: &mut Rng, max_chars: usize) -> String {
    let alphabet = [
        'a', 'Z', '0', ' ', '"', '\'', '\n', '\0', ';', 'é', '€', '𝄞', '$',
    ];
    (0..rng.below(max_chars + 1))
        .map(|_| rng.pick(&alphabet))
        .collect()
}

/// The strings of a record, owned, so a record can borrow them.
struct RecordStrings([String; 16]);

impl RecordStrings {
    fn random(rng: &mut Rng) -> RecordStrings {
        RecordStrings(std::array::from_fn(|_| utf8(rng, 24)))
    }

    fn record(&self, rng: &mut Rng) -> DdlRecord<'_> {
        let [dialect, command_tag, kind, schema, object_identity, sql, search_path, role, session_user, database, tables, settings, role_rights, bindings, renamed_from, description] =
            &self.0;
        DdlRecord {
            flags: RecordFlags::from_bits(rng.below(16) as u8).unwrap(),
            xid: rng.u32(),
            class_id: rng.u32(),
            object_id: rng.u32(),
            namespace_id: rng.u32(),
            origin: RecordOrigin {
                capturing_sysid: rng.u64(),
                original_sysid: rng.u64(),
                original_lsn: rng.u64(),
            },
            dialect,
            command_tag,
            kind,
            schema,
            object_identity,
            sql,
            search_path,
            role,
            session_user,
            database,
            tables,
            settings,
            role_rights,
            bindings: Some(bindings),
            renamed_from,
            description,
            tag: std::array::from_fn(|_| rng.u32() as u8),
        }
    }
}

/// Parses `payload` as a record: what is accepted encodes back exactly and borrows from the
/// payload; errors stay inside it.
fn check_record(payload: &[u8]) -> bool {
    match DdlRecord::parse(payload) {
        Ok(record) => {
            let mut again = Vec::new();
            record.encode(&mut again);
            if payload[0] == RECORD_FORMAT_VERSION {
                assert_eq!(again, payload, "accepted records encode back exactly");
            } else {
                // An older version is written back in the current one, meaning the same (with
                // no bindings where they were not known).
                assert_eq!(
                    DdlRecord::parse(&again),
                    Ok(DdlRecord {
                        bindings: Some(""),
                        ..record
                    })
                );
            }
            for s in [
                record.dialect,
                record.command_tag,
                record.kind,
                record.schema,
                record.object_identity,
                record.sql,
                record.search_path,
                record.role,
                record.session_user,
                record.database,
                record.tables,
                record.settings,
                record.role_rights,
                record.bindings.unwrap_or(""),
                record.renamed_from,
                record.description,
            ] {
                assert!(borrowed_from(s, payload));
            }
            if let Some(bindings) = record.bindings {
                // Any text is read or refused, never a panic; what is read writes back the same
                // when it was written in order.
                if let Ok(identities) = ddl_wire::parse_name_set(bindings) {
                    let again = ddl_wire::encode_name_set(&identities);
                    assert_eq!(ddl_wire::parse_name_set(&again), Ok(identities));
                }
            }
            true
        }
        Err(e) => {
            assert!(
                e.offset() <= payload.len(),
                "{e} past {} bytes",
                payload.len()
            );
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

#[test]
fn random_bytes_never_panic_the_record_parser() {
    let mut rng = Rng::new(21);
    for _ in 0..100_000 {
        let mut payload = rng.bytes(120);
        // Often a plausible start: version 1 and known flags, so parsing gets to the strings.
        if rng.coin() && payload.len() >= 2 {
            payload[0] = 1;
            payload[1] &= 0x07;
        }
        check_record(&payload);
    }
}

#[test]
fn mutated_records_never_panic_and_prefixes_are_truncated() {
    let mut rng = Rng::new(22);
    let mut accepted = 0;
    for round in 0..40_000 {
        let strings = RecordStrings::random(&mut rng);
        let record = strings.record(&mut rng);
        let mut payload = Vec::new();
        record.encode(&mut payload);
        assert_eq!(DdlRecord::parse(&payload), Ok(record));
        if round % 50 == 0 {
            for cut in 0..payload.len() {
                let e = DdlRecord::parse(&payload[..cut]).unwrap_err();
                assert!(matches!(e.kind(), RecordErrorKind::Truncated(_)), "{e}");
            }
        }
        mutate(&mut rng, &mut payload);
        // Four bytes replaced by an edge value: string lengths made huge must not allocate
        // or panic.
        if rng.below(4) == 0 && payload.len() >= 4 {
            let at = rng.below(payload.len() - 3);
            payload[at..at + 4].copy_from_slice(&rng.u32().to_be_bytes());
        }
        accepted += usize::from(check_record(&payload));
    }
    // Mutations inside the strings or numbers still give records.
    assert!(accepted > 0);
}

/// How the events relation and its rows may be built: each event column with its SQL type,
/// in the order the view reads them.
fn event_types() -> Vec<(&'static str, &'static str)> {
    event_columns().collect()
}

fn type_oid(sql_type: &str) -> u32 {
    match sql_type {
        "boolean" => 16,
        "bigint" => 20,
        "text" => 25,
        "pg_lsn" => 3220,
        other => panic!("event column type {other}"),
    }
}

/// A valid value of `sql_type`, in text or binary format.
fn event_value(rng: &mut Rng, sql_type: &str, binary: bool) -> Val {
    let v = match (sql_type, binary) {
        ("boolean", false) => Val::Text(rng.pick(&[&b"t"[..], b"f"]).to_vec()),
        ("boolean", true) => Val::Binary(vec![rng.below(2) as u8]),
        ("bigint", false) => Val::Text(rng.i64().to_string().into_bytes()),
        ("pg_lsn", false) => {
            let lsn = rng.u64();
            Val::Text(format!("{:X}/{:X}", lsn >> 32, lsn as u32).into_bytes())
        }
        ("bigint" | "pg_lsn", true) => Val::Binary(rng.u64().to_be_bytes().to_vec()),
        (_, false) => Val::Text(utf8(rng, 40).into_bytes()),
        (_, true) => Val::Binary(utf8(rng, 40).into_bytes()),
    };
    v
}

/// A valid `ddl_sync.events` Relation and Insert: the event columns in a random order among
/// columns the view ignores, values in text or binary format, in a random context.
fn event_pair(rng: &mut Rng, ctx: &ProtocolContext) -> (Model, Model) {
    let mut columns: Vec<(Col, Val)> = Vec::new();
    let binary = rng.coin();
    for (name, ty) in event_types() {
        let value = event_value(rng, ty, binary);
        columns.push((
            Col {
                flags: 0,
                name: name.as_bytes().to_vec(),
                type_oid: type_oid(ty),
                type_modifier: -1,
            },
            value,
        ));
    }
    for extra in 0..rng.below(4) {
        let value = if rng.coin() {
            Val::Null
        } else {
            Val::Text(rng.bytes(8))
        };
        columns.push((
            Col {
                flags: rng.below(2) as u8,
                name: format!("extra_{extra}").into_bytes(),
                type_oid: rng.u32(),
                type_modifier: rng.i32(),
            },
            value,
        ));
    }
    // Shuffle.
    for i in (1..columns.len()).rev() {
        columns.swap(i, rng.below(i + 1));
    }
    let xid = ctx.in_stream().then(|| rng.xid());
    let rel_id = rng.u32();
    let relation = Model::Relation {
        xid,
        rel_id,
        namespace: b"ddl_sync".to_vec(),
        name: b"events".to_vec(),
        replica_identity: rng.pick(b"dnfi"),
        columns: columns.iter().map(|(c, _)| c.clone()).collect(),
    };
    let insert = Model::Insert {
        xid,
        rel_id,
        new: columns.into_iter().map(|(_, v)| v).collect(),
    };
    (relation, insert)
}

/// Runs the view over a Relation and an Insert (as bytes, which may not even parse): no
/// panic, and an event borrows from the Insert.
fn check_event(relation: &[u8], insert: &[u8], ctx: &ProtocolContext) -> Option<bool> {
    let Ok(Message::Relation(rel)) = Message::parse(relation, ctx) else {
        return None;
    };
    let events = match EventsRelation::from_relation(&rel) {
        Ok(Some(events)) => events,
        Ok(None) => return None,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return Some(false);
        }
    };
    assert_eq!(events.rel_id(), rel.rel_id());
    let Ok(Message::Insert(row)) = Message::parse(insert, ctx) else {
        return None;
    };
    match events.event(&row) {
        Ok(event) => {
            // Every text the event holds, required or not.
            for s in event.values().into_iter().filter_map(|v| match v {
                Some(Value::Text(s)) => Some(s),
                _ => None,
            }) {
                assert!(
                    borrowed_from(s, insert),
                    "event strings borrow from the Insert"
                );
            }
            Some(true)
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            Some(false)
        }
    }
}

#[test]
fn valid_event_pairs_read_back_their_values() {
    let mut rng = Rng::new(23);
    let contexts = contexts();
    for round in 0..3_000 {
        let ctx = contexts[round % contexts.len()];
        let (relation, insert) = event_pair(&mut rng, &ctx);
        let (rel_bytes, ins_bytes) = (relation.bytes(), insert.bytes());
        assert_eq!(check_event(&rel_bytes, &ins_bytes, &ctx), Some(true));
        // The sql column's value is the event's sql.
        let (Model::Relation { columns, .. }, Model::Insert { new, .. }) = (&relation, &insert)
        else {
            unreachable!()
        };
        let at = columns.iter().position(|c| c.name == b"sql").unwrap();
        let (Val::Text(sql) | Val::Binary(sql)) = &new[at] else {
            unreachable!()
        };
        let Ok(Message::Relation(rel)) = Message::parse(&rel_bytes, &ctx) else {
            unreachable!()
        };
        let Ok(Message::Insert(row)) = Message::parse(&ins_bytes, &ctx) else {
            unreachable!()
        };
        let event = EventsRelation::from_relation(&rel)
            .unwrap()
            .unwrap()
            .event(&row)
            .unwrap();
        assert_eq!(event.sql.as_bytes(), &sql[..]);
    }
}

#[test]
fn mutated_event_pairs_never_panic() {
    let mut rng = Rng::new(24);
    let contexts = contexts();
    let (mut refused, mut read) = (0, 0);
    for round in 0..30_000 {
        let ctx = contexts[round % contexts.len()];
        let (mut relation, mut insert) = event_pair(&mut rng, &ctx);
        // A change the view must survive, at the level of columns and values...
        let (
            Model::Relation {
                columns, rel_id, ..
            },
            Model::Insert {
                new,
                rel_id: ins_rel,
                ..
            },
        ) = (&mut relation, &mut insert)
        else {
            unreachable!()
        };
        let i = rng.below(columns.len());
        match rng.below(9) {
            0 => new[i] = Val::Null,
            1 => new[i] = Val::Unchanged,
            2 => new[i] = Val::Text(rng.bytes(12)),
            3 => new[i] = Val::Binary(rng.bytes(12)),
            4 => {
                let any = rng.u32();
                columns[i].type_oid = rng.pick(&[16, 20, 25, 3220, any]);
            }
            5 => {
                columns.remove(i);
            }
            6 => {
                new.remove(i);
            }
            7 => {
                let other = rng.below(columns.len());
                columns[i].name = columns[other].name.clone();
            }
            _ => *ins_rel = rel_id.wrapping_add(1),
        }
        let (mut rel_bytes, mut ins_bytes) = (relation.bytes(), insert.bytes());
        // ...and at the level of bytes.
        if rng.coin() {
            mutate(&mut rng, &mut rel_bytes);
        }
        if rng.coin() {
            mutate(&mut rng, &mut ins_bytes);
        }
        match check_event(&rel_bytes, &ins_bytes, &ctx) {
            Some(true) => read += 1,
            Some(false) => refused += 1,
            None => {}
        }
    }
    assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
}
