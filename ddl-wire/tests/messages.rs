//! Each message type against bytes laid out by hand from protocol.sgml ("Logical Replication
//! Message Formats"), independently of the crate's writers: the parser must read the documented
//! fields, and both `encode` and the `write_*` function must produce those very bytes. Then the
//! errors: kind, offset, message type and wording.

use ddl_wire::*;

/// Builds a message field by field, the way protocol.sgml lists them.
struct Spec(Vec<u8>);

impl Spec {
    fn new(tag: u8) -> Spec {
        Spec(vec![tag])
    }
    fn int8(mut self, v: u8) -> Spec {
        self.0.push(v);
        self
    }
    fn int16(mut self, v: u16) -> Spec {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn int32(mut self, v: u32) -> Spec {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn int64(mut self, v: u64) -> Spec {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn string(mut self, s: &[u8]) -> Spec {
        self.0.extend_from_slice(s);
        self.0.push(0);
        self
    }
    fn bytes(mut self, b: &[u8]) -> Spec {
        self.0.extend_from_slice(b);
        self
    }
}

fn ctx(version: u32, streaming: Streaming) -> ProtocolContext {
    ProtocolContext::new(version, streaming).unwrap()
}

fn v1() -> ProtocolContext {
    ctx(1, Streaming::Off)
}

fn streamed() -> ProtocolContext {
    ctx(2, Streaming::On).with_in_stream(true)
}

/// `bytes` parses in `ctx`, encodes back to itself, and `write` writes the same bytes.
fn pinned<'a>(bytes: &'a [u8], ctx: &ProtocolContext, write: impl Fn(&mut Vec<u8>)) -> Message<'a> {
    let message = Message::parse(bytes, ctx).unwrap_or_else(|e| panic!("{e}"));
    let mut encoded = Vec::new();
    message.encode(&mut encoded);
    assert_eq!(encoded, bytes, "encode");
    let mut written = Vec::new();
    write(&mut written);
    assert_eq!(written, bytes, "write_*");
    message
}

fn values(t: TupleData<'_>) -> Vec<TupleValue<'_>> {
    t.map(Result::unwrap).collect()
}

const LSN: u64 = 0x0000_0016_B374_D848;
const LSN2: u64 = 0x0000_0016_B374_D8F0;
const TS: u64 = 0x0002_B1F4_2A8E_1C33;

#[test]
fn begin() {
    let bytes = Spec::new(b'B').int64(LSN).int64(TS).int32(742).0;
    let Message::Begin(b) = pinned(&bytes, &v1(), |o| write_begin(LSN, TS as i64, 742, o)) else {
        panic!()
    };
    assert_eq!(
        (b.final_lsn(), b.commit_time(), b.xid()),
        (LSN, TS as i64, 742)
    );
}

#[test]
fn commit() {
    let bytes = Spec::new(b'C').int8(0).int64(LSN).int64(LSN2).int64(TS).0;
    let Message::Commit(c) = pinned(&bytes, &v1(), |o| write_commit(LSN, LSN2, TS as i64, o))
    else {
        panic!()
    };
    assert_eq!(
        (c.commit_lsn(), c.end_lsn(), c.commit_time()),
        (LSN, LSN2, TS as i64)
    );
}

#[test]
fn origin() {
    let bytes = Spec::new(b'O').int64(LSN).string(b"pg_16390").0;
    let Message::Origin(o) = pinned(&bytes, &v1(), |o| write_origin(LSN, c"pg_16390".into(), o))
    else {
        panic!()
    };
    assert_eq!(o.origin_lsn(), LSN);
    assert_eq!(o.name(), "pg_16390");
}

#[test]
fn relation_outside_and_inside_a_streamed_block() {
    let columns = [
        Column::new(1, c"id".into(), 23, -1),
        Column::new(0, c"name".into(), 1043, 36),
    ];
    let body = |s: Spec| {
        s.int32(16_385)
            .string(b"public")
            .string(b"accounts")
            .int8(b'd')
            .int16(2)
            .int8(1)
            .string(b"id")
            .int32(23)
            .int32(u32::MAX) // typmod -1
            .int8(0)
            .string(b"name")
            .int32(1043)
            .int32(36)
            .0
    };
    let plain = body(Spec::new(b'R'));
    let streamed_bytes = body(Spec::new(b'R').int32(901));
    for (bytes, ctx, xid) in [
        (&plain, v1(), None),
        (&streamed_bytes, streamed(), Some(901)),
    ] {
        let Message::Relation(r) = pinned(bytes, &ctx, |o| {
            write_relation(
                xid,
                16_385,
                c"public".into(),
                c"accounts".into(),
                b'd',
                &columns,
                o,
            )
            .unwrap()
        }) else {
            panic!()
        };
        assert_eq!(r.xid(), xid);
        assert_eq!(r.rel_id(), 16_385);
        assert_eq!(
            (r.namespace(), r.name()),
            (PgStr::from(c"public"), PgStr::from(c"accounts"))
        );
        assert_eq!(r.replica_identity(), b'd');
        let cols: Vec<Column<'_>> = r.columns().map(Result::unwrap).collect();
        assert_eq!(cols, columns);
        assert!(cols[0].is_key() && !cols[1].is_key());
        assert_eq!((cols[0].type_modifier(), cols[1].type_modifier()), (-1, 36));
        assert_eq!(r.columns().len(), 2);
    }
}

#[test]
fn type_message() {
    let bytes = Spec::new(b'Y')
        .int32(901)
        .int32(16_400)
        .string(b"public")
        .string(b"mood")
        .0;
    let Message::Type(t) = pinned(&bytes, &streamed(), |o| {
        write_type(Some(901), 16_400, c"public".into(), c"mood".into(), o)
    }) else {
        panic!()
    };
    assert_eq!((t.xid(), t.type_oid()), (Some(901), 16_400));
    assert_eq!(
        (t.namespace(), t.name()),
        (PgStr::from(c"public"), PgStr::from(c"mood"))
    );
}

#[test]
fn insert_with_every_column_kind() {
    // A text value may hold '\n' and NUL: lengths, not terminators, delimit it.
    let bytes = Spec::new(b'I')
        .int32(16_385)
        .int8(b'N')
        .int16(4)
        .int8(b'n')
        .int8(b'u')
        .int8(b't')
        .int32(4)
        .bytes(b"a\nb\0")
        .int8(b'b')
        .int32(4)
        .bytes(&[0, 0, 0, 42])
        .0;
    let row = [
        TupleValue::Null,
        TupleValue::UnchangedToast,
        TupleValue::Text(b"a\nb\0"),
        TupleValue::Binary(&[0, 0, 0, 42]),
    ];
    let Message::Insert(i) = pinned(&bytes, &v1(), |o| {
        write_insert(None, 16_385, &row, o).unwrap()
    }) else {
        panic!()
    };
    assert_eq!((i.xid(), i.rel_id()), (None, 16_385));
    assert_eq!(values(i.tuple()), row);
    assert_eq!(i.tuple().len(), 4);
}

#[test]
fn insert_in_a_streamed_block_carries_the_xid_first() {
    let bytes = Spec::new(b'I')
        .int32(77)
        .int32(16_385)
        .int8(b'N')
        .int16(0)
        .0;
    let Message::Insert(i) = pinned(&bytes, &streamed(), |o| {
        write_insert(Some(77), 16_385, &[], o).unwrap()
    }) else {
        panic!()
    };
    assert_eq!(
        (i.xid(), i.rel_id(), i.tuple().len()),
        (Some(77), 16_385, 0)
    );
}

#[test]
fn update_without_with_key_and_with_old_row() {
    let new = [TupleValue::Text(b"2")];
    let old = [TupleValue::Text(b"1")];
    let plain = Spec::new(b'U')
        .int32(5)
        .int8(b'N')
        .int16(1)
        .int8(b't')
        .int32(1)
        .bytes(b"2")
        .0;
    let Message::Update(u) = pinned(&plain, &v1(), |o| {
        write_update(None, 5, None, &new, o).unwrap()
    }) else {
        panic!()
    };
    assert!(u.key_tuple().is_none() && u.old_tuple().is_none() && u.old_tuple_kind().is_none());
    assert_eq!(values(u.new_tuple()), new);

    for (marker, kind) in [(b'K', OldTupleKind::Key), (b'O', OldTupleKind::Full)] {
        let bytes = Spec::new(b'U')
            .int32(5)
            .int8(marker)
            .int16(1)
            .int8(b't')
            .int32(1)
            .bytes(b"1")
            .int8(b'N')
            .int16(1)
            .int8(b't')
            .int32(1)
            .bytes(b"2")
            .0;
        let Message::Update(u) = pinned(&bytes, &v1(), |o| {
            write_update(None, 5, Some((kind, &old)), &new, o).unwrap()
        }) else {
            panic!()
        };
        assert_eq!(u.old_tuple_kind(), Some(kind));
        let sent = if kind == OldTupleKind::Key {
            u.key_tuple()
        } else {
            u.old_tuple()
        };
        assert_eq!(values(sent.unwrap()), old);
        assert_eq!(values(u.new_tuple()), new);
    }
}

#[test]
fn delete_with_key_or_old_row() {
    let key = [TupleValue::Text(b"1"), TupleValue::Null];
    for (marker, kind) in [(b'K', OldTupleKind::Key), (b'O', OldTupleKind::Full)] {
        let bytes = Spec::new(b'D')
            .int32(5)
            .int8(marker)
            .int16(2)
            .int8(b't')
            .int32(1)
            .bytes(b"1")
            .int8(b'n')
            .0;
        let Message::Delete(d) = pinned(&bytes, &v1(), |o| {
            write_delete(None, 5, kind, &key, o).unwrap()
        }) else {
            panic!()
        };
        assert_eq!(d.old_tuple_kind(), kind);
        assert_eq!(d.key_tuple().is_some(), kind == OldTupleKind::Key);
        assert_eq!(d.old_tuple().is_some(), kind == OldTupleKind::Full);
        let sent = d.key_tuple().or(d.old_tuple()).unwrap();
        assert_eq!(values(sent), key);
    }
}

#[test]
fn truncate_options_and_relations() {
    for (options, cascade, restart) in [
        (0, false, false),
        (1, true, false),
        (2, false, true),
        (3, true, true),
    ] {
        let bytes = Spec::new(b'T')
            .int32(3)
            .int8(options)
            .int32(10)
            .int32(11)
            .int32(u32::MAX)
            .0;
        let Message::Truncate(t) = pinned(&bytes, &v1(), |o| {
            write_truncate(None, cascade, restart, &[10, 11, u32::MAX], o).unwrap()
        }) else {
            panic!()
        };
        assert_eq!((t.cascade(), t.restart_identity()), (cascade, restart));
        assert_eq!(t.rel_ids().collect::<Vec<_>>(), [10, 11, u32::MAX]);
        assert_eq!(t.rel_ids().len(), 3);
    }
}

#[test]
fn logical_message_transactional_and_not() {
    for (flags, transactional) in [(0, false), (1, true)] {
        let bytes = Spec::new(b'M')
            .int8(flags)
            .int64(LSN)
            .string(b"ddl_sync")
            .int32(3)
            .bytes(b"x\0y")
            .0;
        let Message::LogicalMessage(m) = pinned(&bytes, &v1(), |o| {
            write_logical_message(None, transactional, LSN, c"ddl_sync".into(), b"x\0y", o).unwrap()
        }) else {
            panic!()
        };
        assert_eq!(m.transactional(), transactional);
        assert_eq!((m.xid(), m.lsn(), m.content()), (None, LSN, &b"x\0y"[..]));
        assert_eq!(m.prefix(), "ddl_sync");
    }
}

#[test]
fn stream_start_stop_commit() {
    let v2 = ctx(2, Streaming::On);
    for (byte, first) in [(1, true), (0, false)] {
        let bytes = Spec::new(b'S').int32(901).int8(byte).0;
        let Message::StreamStart(s) = pinned(&bytes, &v2, |o| write_stream_start(901, first, o))
        else {
            panic!()
        };
        assert_eq!((s.xid(), s.first_segment()), (901, first));
    }
    let stop = [b'E'];
    assert_eq!(pinned(&stop, &v2, write_stream_stop), Message::StreamStop);

    let bytes = Spec::new(b'c')
        .int32(901)
        .int8(0)
        .int64(LSN)
        .int64(LSN2)
        .int64(TS)
        .0;
    let Message::StreamCommit(c) = pinned(&bytes, &v2, |o| {
        write_stream_commit(901, LSN, LSN2, TS as i64, o)
    }) else {
        panic!()
    };
    assert_eq!(
        (c.xid(), c.commit_lsn(), c.end_lsn(), c.commit_time()),
        (901, LSN, LSN2, TS as i64)
    );
}

#[test]
fn stream_abort_grows_under_streaming_parallel() {
    let short = Spec::new(b'A').int32(901).int32(902).0;
    let long = Spec::new(b'A').int32(901).int32(902).int64(LSN).int64(TS).0;
    for on in [ctx(2, Streaming::On), ctx(4, Streaming::On)] {
        let Message::StreamAbort(a) =
            pinned(&short, &on, |o| write_stream_abort(901, 902, None, o))
        else {
            panic!()
        };
        assert_eq!(
            (a.xid(), a.subxid(), a.abort_lsn(), a.abort_time()),
            (901, 902, None, None)
        );
        // The parallel form read without `parallel`: 16 bytes too many.
        let e = Message::parse(&long, &on).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TrailingBytes(16));
        assert_eq!(e.offset(), 9);
    }
    let parallel = ctx(4, Streaming::Parallel);
    let Message::StreamAbort(a) = pinned(&long, &parallel, |o| {
        write_stream_abort(901, 902, Some((LSN, TS as i64)), o)
    }) else {
        panic!()
    };
    assert_eq!(
        (a.abort_lsn(), a.abort_time()),
        (Some(LSN), Some(TS as i64))
    );
    assert!(Message::parse(&short, &parallel)
        .unwrap_err()
        .is_incomplete());
}

#[test]
fn two_phase_messages() {
    let v3 = ctx(3, Streaming::On);
    let fields = |s: Spec| {
        s.int64(LSN)
            .int64(LSN2)
            .int64(TS)
            .int32(901)
            .string(b"gid-1")
            .0
    };

    let txn = PreparedTxn {
        prepare_lsn: LSN,
        end_lsn: LSN2,
        prepare_time: TS as i64,
        xid: 901,
        gid: PgStr::from(c"gid-1"),
    };
    let bytes = fields(Spec::new(b'b'));
    let Message::BeginPrepare(b) = pinned(&bytes, &v3, |o| write_begin_prepare(&txn, o)) else {
        panic!()
    };
    assert_eq!(*b.txn(), txn);

    // Prepare and Stream Prepare have a flags byte that Begin Prepare has not.
    let bytes = fields(Spec::new(b'P').int8(0));
    let Message::Prepare(p) = pinned(&bytes, &v3, |o| write_prepare(&txn, o)) else {
        panic!()
    };
    assert_eq!(*p.txn(), txn);

    let bytes = fields(Spec::new(b'p').int8(0));
    let Message::StreamPrepare(p) = pinned(&bytes, &v3, |o| write_stream_prepare(&txn, o)) else {
        panic!()
    };
    assert_eq!(*p.txn(), txn);

    let bytes = fields(Spec::new(b'K').int8(0));
    let Message::CommitPrepared(c) = pinned(&bytes, &v3, |o| {
        write_commit_prepared(LSN, LSN2, TS as i64, 901, c"gid-1".into(), o)
    }) else {
        panic!()
    };
    assert_eq!(
        (
            c.commit_lsn(),
            c.end_lsn(),
            c.commit_time(),
            c.xid(),
            c.gid()
        ),
        (LSN, LSN2, TS as i64, 901, PgStr::from(c"gid-1"))
    );

    let bytes = Spec::new(b'r')
        .int8(0)
        .int64(LSN)
        .int64(LSN2)
        .int64(TS)
        .int64(TS + 1)
        .int32(901)
        .string(b"gid-1")
        .0;
    let Message::RollbackPrepared(r) = pinned(&bytes, &v3, |o| {
        write_rollback_prepared(LSN, LSN2, TS as i64, TS as i64 + 1, 901, c"gid-1".into(), o)
    }) else {
        panic!()
    };
    assert_eq!(
        (
            r.prepare_end_lsn(),
            r.rollback_end_lsn(),
            r.prepare_time(),
            r.rollback_time()
        ),
        (LSN, LSN2, TS as i64, TS as i64 + 1)
    );
    assert_eq!((r.xid(), r.gid()), (901, PgStr::from(c"gid-1")));
}

/// Parses `bytes` in `ctx` and returns the error, checking the offset and message type.
fn error_at(bytes: &[u8], ctx: &ProtocolContext, offset: usize) -> Error {
    let e = Message::parse(bytes, ctx).unwrap_err();
    assert_eq!(e.offset(), offset, "{e}");
    assert_eq!(e.message_tag(), bytes.first().copied(), "{e}");
    e
}

#[test]
fn unknown_type_and_empty_input() {
    let e = error_at(b"Zxyz", &v1(), 0);
    assert_eq!(e.kind(), ErrorKind::UnknownMessageType);
    assert_eq!(e.to_string(), "unknown message type 'Z' at byte 0");
    let e = error_at(&[7], &v1(), 0);
    assert_eq!(e.to_string(), "unknown message type 0x07 at byte 0");

    let e = Message::parse(b"", &v1()).unwrap_err();
    assert!(e.is_incomplete());
    assert_eq!((e.offset(), e.message_tag()), (0, None));
}

#[test]
fn message_types_newer_than_the_protocol_version() {
    let start = Spec::new(b'S').int32(1).int8(1).0;
    let e = error_at(&start, &v1(), 0);
    assert_eq!(
        e.kind(),
        ErrorKind::RequiresProtocolVersion {
            required: 2,
            negotiated: 1
        }
    );
    assert_eq!(
        e.to_string(),
        "Stream Start ('S'): needs proto_version 2 or higher, but the stream uses 1 at byte 0"
    );
    let begin_prepare = Spec::new(b'b')
        .int64(1)
        .int64(2)
        .int64(3)
        .int32(4)
        .string(b"g")
        .0;
    let e = error_at(&begin_prepare, &ctx(2, Streaming::On), 0);
    assert_eq!(
        e.kind(),
        ErrorKind::RequiresProtocolVersion {
            required: 3,
            negotiated: 2
        }
    );
    assert!(Message::parse(&begin_prepare, &ctx(3, Streaming::Off)).is_ok());
}

#[test]
fn nonzero_flags_are_refused_where_postgresql_refuses_them() {
    let commit = Spec::new(b'C').int8(1).int64(1).int64(2).int64(3).0;
    let e = error_at(&commit, &v1(), 1);
    assert_eq!(e.kind(), ErrorKind::InvalidFlags(1));
    assert_eq!(
        e.to_string(),
        "Commit ('C'): unrecognized flags 0x01 at byte 1"
    );

    let v3 = ctx(3, Streaming::On);
    for tag in [b'P', b'K', b'p'] {
        let bytes = Spec::new(tag)
            .int8(2)
            .int64(1)
            .int64(2)
            .int64(3)
            .int32(4)
            .string(b"g")
            .0;
        assert_eq!(error_at(&bytes, &v3, 1).kind(), ErrorKind::InvalidFlags(2));
    }
    let stream_commit = Spec::new(b'c')
        .int32(9)
        .int8(4)
        .int64(1)
        .int64(2)
        .int64(3)
        .0;
    assert_eq!(
        error_at(&stream_commit, &v3, 5).kind(),
        ErrorKind::InvalidFlags(4)
    );
    let stream_start = Spec::new(b'S').int32(9).int8(2).0;
    assert_eq!(
        error_at(&stream_start, &v3, 5).kind(),
        ErrorKind::InvalidFlags(2)
    );
    let truncate = Spec::new(b'T').int32(0).int8(4).0;
    assert_eq!(
        error_at(&truncate, &v1(), 5).kind(),
        ErrorKind::InvalidFlags(4)
    );
    let message = Spec::new(b'M').int8(3).int64(1).string(b"p").int32(0).0;
    assert_eq!(
        error_at(&message, &v1(), 1).kind(),
        ErrorKind::InvalidFlags(3)
    );
}

#[test]
fn bad_tuple_markers_and_column_kinds() {
    let insert = Spec::new(b'I').int32(5).int8(b'K').int16(0).0;
    let e = error_at(&insert, &v1(), 5);
    assert_eq!(e.kind(), ErrorKind::InvalidTupleMarker(b'K'));
    assert_eq!(
        e.to_string(),
        "Insert ('I'): unexpected tuple marker 'K' at byte 5"
    );

    // After an old key, only 'N' may follow.
    let update = Spec::new(b'U')
        .int32(5)
        .int8(b'K')
        .int16(1)
        .int8(b'n')
        .int8(b'O')
        .int16(0)
        .0;
    assert_eq!(
        error_at(&update, &v1(), 9).kind(),
        ErrorKind::InvalidTupleMarker(b'O')
    );
    let update = Spec::new(b'U').int32(5).int8(b'X').int16(0).0;
    assert_eq!(
        error_at(&update, &v1(), 5).kind(),
        ErrorKind::InvalidTupleMarker(b'X')
    );
    let delete = Spec::new(b'D').int32(5).int8(b'N').int16(0).0;
    assert_eq!(
        error_at(&delete, &v1(), 5).kind(),
        ErrorKind::InvalidTupleMarker(b'N')
    );

    let insert = Spec::new(b'I')
        .int32(5)
        .int8(b'N')
        .int16(2)
        .int8(b'n')
        .int8(b'x')
        .0;
    let e = error_at(&insert, &v1(), 9);
    assert_eq!(e.kind(), ErrorKind::InvalidColumnKind(b'x'));
    assert_eq!(
        e.to_string(),
        "Insert ('I'): unrecognized column data kind 'x' (expected n, u, t or b) at byte 9"
    );

    let insert = Spec::new(b'I')
        .int32(5)
        .int8(b'N')
        .int16(1)
        .int8(b't')
        .int32(u32::MAX)
        .0;
    let e = error_at(&insert, &v1(), 9);
    assert_eq!(e.kind(), ErrorKind::InvalidLength(-1));
    assert!(!e.is_incomplete());
}

#[test]
fn bad_replica_identity() {
    let relation = Spec::new(b'R')
        .int32(5)
        .string(b"s")
        .string(b"t")
        .int8(b'x')
        .int16(0)
        .0;
    let e = error_at(&relation, &v1(), 9);
    assert_eq!(e.kind(), ErrorKind::InvalidReplicaIdentity(b'x'));
}

#[test]
fn truncated_input_is_incomplete_at_the_field_that_does_not_fit() {
    let insert = Spec::new(b'I')
        .int32(5)
        .int8(b'N')
        .int16(1)
        .int8(b't')
        .int32(3)
        .bytes(b"abc")
        .0;
    // Cut inside the value: the value starts at byte 13.
    let e = error_at(&insert[..14], &v1(), 13);
    assert!(e.is_incomplete());
    assert_eq!(
        e.to_string(),
        "Insert ('I'): input ends before the message does at byte 13"
    );
    // Cut inside the relation OID.
    assert_eq!(
        error_at(&insert[..3], &v1(), 1).kind(),
        ErrorKind::Incomplete
    );
    // A string without its NUL: incomplete from where the string starts.
    let origin = Spec::new(b'O').int64(1).bytes(b"no-terminator").0;
    assert!(error_at(&origin, &v1(), 9).is_incomplete());
    // A truncate naming more relations than there are bytes.
    let truncate = Spec::new(b'T').int32(u32::MAX).int8(0).int32(1).0;
    assert!(error_at(&truncate, &v1(), 6).is_incomplete());
}

#[test]
fn leftover_bytes_are_an_error_naming_the_message() {
    let mut begin = Spec::new(b'B').int64(1).int64(2).int32(3).0;
    begin.extend_from_slice(b"\n\n");
    let e = error_at(&begin, &v1(), 21);
    assert_eq!(e.kind(), ErrorKind::TrailingBytes(2));
    assert_eq!(
        e.to_string(),
        "Begin ('B'): 2 bytes left over after the message at byte 21"
    );
    // parse_prefix stops where the message does.
    let (_, used) = Message::parse_prefix(&begin, &v1()).unwrap();
    assert_eq!(used, 21);
}

#[test]
fn a_change_read_in_the_wrong_stream_state_fails() {
    // Written inside a streamed block (xid 0x49000000 first), read as if outside: the xid
    // becomes the relation id and the relation id's first byte the tuple marker.
    let streamed_insert = Spec::new(b'I')
        .int32(0x4900_0000)
        .int32(5)
        .int8(b'N')
        .int16(0)
        .0;
    assert_eq!(
        Message::parse(&streamed_insert, &v1()).unwrap_err().kind(),
        ErrorKind::InvalidTupleMarker(0)
    );
    // And the other way round: a plain insert read as streamed runs out of bytes.
    let plain_insert = Spec::new(b'I').int32(5).int8(b'N').int16(0).0;
    assert!(Message::parse(&plain_insert, &streamed())
        .unwrap_err()
        .is_incomplete());
}

#[test]
fn protocol_context_refuses_what_pgoutput_refuses() {
    for v in [0, 5] {
        let e = ProtocolContext::new(v, Streaming::Off).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnsupportedProtocolVersion(v));
    }
    assert_eq!(
        ProtocolContext::new(5, Streaming::Off)
            .unwrap_err()
            .to_string(),
        "proto_version=5 is not supported; pgoutput has versions 1 to 4"
    );
    let e = ProtocolContext::new(1, Streaming::On).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::UnsupportedStreaming {
            streaming: Streaming::On,
            proto_version: 1
        }
    );
    let e = ProtocolContext::new(3, Streaming::Parallel).unwrap_err();
    assert_eq!(
        e.to_string(),
        "proto_version=3 does not support streaming = parallel, need 4 or higher"
    );
    let c = ProtocolContext::new(4, Streaming::Parallel).unwrap();
    assert_eq!(
        (c.proto_version(), c.streaming(), c.in_stream()),
        (4, Streaming::Parallel, false)
    );
    assert!(c.with_in_stream(true).in_stream());
}

#[test]
fn writers_refuse_what_does_not_fit_and_leave_the_buffer_alone() {
    let mut out = b"keep".to_vec();
    let too_many = vec![TupleValue::Null; 65_536];
    let e = write_insert(None, 1, &too_many, &mut out).unwrap_err();
    assert_eq!(
        (e.kind(), e.offset(), e.message_tag()),
        (ErrorKind::Overflow, 6, Some(b'I'))
    );
    assert_eq!(out, b"keep");
    // 65535 values is the most an Int16 counts.
    write_insert(None, 1, &too_many[1..], &mut out).unwrap();
    assert_eq!(out.len(), 4 + 1 + 4 + 1 + 2 + 65_535);

    let mut out = Vec::new();
    let e =
        write_relation(Some(7), 1, c"s".into(), c"tab".into(), b'x', &[], &mut out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidReplicaIdentity(b'x'));
    // Tag, xid, OID, "s\0", "tab\0": the byte would have been the 15th.
    assert_eq!(e.offset(), 15);
    assert!(out.is_empty());

    let e = PgStr::new(b"bad\0name").unwrap_err();
    assert_eq!((e.kind(), e.offset()), (ErrorKind::InteriorNul, 3));
}

#[test]
fn pg_str_shows_names_that_are_not_utf8() {
    let raw = b"caf\xe9";
    let s = PgStr::new(raw).unwrap();
    assert!(s.to_str().is_err());
    assert_eq!(s.to_string(), "caf\u{FFFD}");
    assert_eq!(format!("{s:?}"), "\"caf\\xe9\"");
    assert_eq!((s.len(), s.as_bytes()), (4, &raw[..]));
    assert!(PgStr::default().is_empty());
    assert_eq!(PgStr::from(c"public").to_str(), Ok("public"));
}
