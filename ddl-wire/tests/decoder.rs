//! The stream decoder's state checks, and the pg_recvlogical and framed file readers on good,
//! cut and corrupt files.

use ddl_wire::*;

/// The fields of every prepare message here.
fn prepared() -> PreparedTxn<'static> {
    PreparedTxn {
        prepare_lsn: 1,
        end_lsn: 2,
        prepare_time: 3,
        xid: 4,
        gid: c"g".into(),
    }
}

fn ctx(version: u32, streaming: Streaming) -> ProtocolContext {
    ProtocolContext::new(version, streaming).unwrap()
}

fn msg(write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out);
    out
}

fn stream_start(xid: u32) -> Vec<u8> {
    msg(|o| write_stream_start(xid, true, o))
}

fn stop() -> Vec<u8> {
    msg(write_stream_stop)
}

fn begin() -> Vec<u8> {
    msg(|o| write_begin(1, 2, 3, o))
}

fn insert(xid: Option<u32>, text: &[u8]) -> Vec<u8> {
    msg(|o| write_insert(xid, 16_385, &[TupleValue::Text(text)], o).unwrap())
}

#[test]
fn stream_blocks_switch_the_xid_prefix_on_and_off() {
    let mut d = StreamDecoder::new(ctx(2, Streaming::On));
    assert!(!d.in_stream());
    assert!(matches!(
        d.decode(&stream_start(901)).unwrap(),
        Message::StreamStart(_)
    ));
    assert!(d.in_stream() && d.context().in_stream());
    assert_eq!(d.stream_xid(), Some(901));

    let streamed = insert(Some(902), b"x");
    let Message::Insert(i) = d.decode(&streamed).unwrap() else {
        panic!()
    };
    assert_eq!((i.xid(), i.rel_id()), (Some(902), 16_385));

    assert_eq!(d.decode(&stop()).unwrap(), Message::StreamStop);
    assert!(!d.in_stream());
    assert_eq!(d.stream_xid(), None);
    let plain = insert(None, b"x");
    let Message::Insert(i) = d.decode(&plain).unwrap() else {
        panic!()
    };
    assert_eq!(i.xid(), None);
}

#[test]
fn stream_start_inside_a_block_and_stream_stop_outside_one() {
    let mut d = StreamDecoder::new(ctx(2, Streaming::On));
    let e = d.decode(&stop()).unwrap_err();
    assert_eq!(
        (e.kind(), e.offset(), e.message_tag()),
        (ErrorKind::StreamStopOutsideStream, 0, Some(b'E'))
    );
    assert_eq!(
        e.to_string(),
        "Stream Stop ('E'): Stream Stop outside a streamed block at byte 0"
    );

    d.decode(&stream_start(1)).unwrap();
    let e = d.decode(&stream_start(2)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StreamStartInStream);
    // The failed message changed nothing: still in the first block.
    assert_eq!(d.stream_xid(), Some(1));
}

#[test]
fn transaction_boundaries_never_come_inside_a_block() {
    let v3 = ctx(3, Streaming::On);
    let refused = [
        begin(),
        msg(|o| write_commit(1, 2, 3, o)),
        msg(|o| write_stream_commit(1, 2, 3, 4, o)),
        msg(|o| write_stream_abort(1, 1, None, o)),
        msg(|o| write_begin_prepare(&prepared(), o)),
        msg(|o| write_prepare(&prepared(), o)),
        msg(|o| write_commit_prepared(1, 2, 3, 4, c"g".into(), o)),
        msg(|o| write_rollback_prepared(1, 2, 3, 4, 5, c"g".into(), o)),
        msg(|o| write_stream_prepare(&prepared(), o)),
    ];
    for bytes in &refused {
        let mut d = StreamDecoder::new(v3.with_in_stream(true));
        let e = d.decode(bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotAllowedInStream, "{e}");
        assert_eq!(e.message_tag(), bytes.first().copied());
        // Outside a block they are fine.
        StreamDecoder::new(v3).decode(bytes).unwrap();
    }
    // What may come inside, with its xid; Origin has none.
    let allowed = [
        msg(|o| write_relation(Some(1), 2, c"s".into(), c"t".into(), b'f', &[], o).unwrap()),
        msg(|o| write_type(Some(1), 2, c"s".into(), c"t".into(), o)),
        insert(Some(1), b"v"),
        msg(|o| write_update(Some(1), 2, None, &[], o).unwrap()),
        msg(|o| write_delete(Some(1), 2, OldTupleKind::Key, &[], o).unwrap()),
        msg(|o| write_truncate(Some(1), false, false, &[2], o).unwrap()),
        msg(|o| write_logical_message(Some(1), true, 2, c"p".into(), b"", o).unwrap()),
        msg(|o| write_origin(0, c"pg_1".into(), o)),
    ];
    for bytes in &allowed {
        StreamDecoder::new(v3.with_in_stream(true))
            .decode(bytes)
            .unwrap();
    }
    // An unknown type is reported as unknown, wherever it is.
    let e = StreamDecoder::new(v3.with_in_stream(true))
        .decode(b"Z")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnknownMessageType);
}

#[test]
fn streaming_messages_need_streaming_and_the_version() {
    let mut d = StreamDecoder::new(ctx(4, Streaming::Off));
    for bytes in [
        stream_start(1),
        stop(),
        msg(|o| write_stream_abort(1, 1, None, o)),
    ] {
        assert_eq!(
            d.decode(&bytes).unwrap_err().kind(),
            ErrorKind::StreamingOff
        );
    }
    assert_eq!(
        d.decode(&stream_start(1)).unwrap_err().to_string(),
        "Stream Start ('S'): streaming message, but the stream has streaming = off at byte 0"
    );
    let prepare = msg(|o| write_prepare(&prepared(), o));
    let e = StreamDecoder::new(ctx(2, Streaming::On))
        .decode(&prepare)
        .unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::RequiresProtocolVersion {
            required: 3,
            negotiated: 2
        }
    );
}

#[test]
fn a_message_that_fails_to_parse_leaves_the_state_alone() {
    let mut d = StreamDecoder::new(ctx(2, Streaming::On));
    let start = stream_start(5);
    assert!(d.decode(&start[..3]).unwrap_err().is_incomplete());
    assert!(!d.in_stream());
    let longer = [&start[..], b"\nmore"].concat();
    let (message, used) = d.decode_prefix(&longer).unwrap();
    assert_eq!((message.tag(), used), (b'S', start.len()));
    assert!(d.in_stream());
}

fn recvlogical(messages: &[&[u8]]) -> Vec<u8> {
    messages
        .iter()
        .flat_map(|m| m.iter().copied().chain([b'\n']))
        .collect()
}

#[test]
fn recvlogical_files_are_split_by_parsing_not_by_newlines() {
    let v2 = ctx(2, Streaming::On);
    // Values full of '\n': a reader that split on newlines would fail here.
    let messages = [
        begin(),
        insert(None, b"\n\n"),
        stream_start(7),
        insert(Some(7), b"a\nb"),
        stop(),
        msg(|o| write_commit(1, 2, 3, o)),
    ];
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let file = recvlogical(&refs);
    let mut reader = RecvlogicalReader::new(&file, v2);
    let mut at = 0;
    for m in &messages {
        let (offset, message) = reader.next().unwrap().unwrap();
        assert_eq!(offset, at);
        let mut again = Vec::new();
        message.encode(&mut again);
        assert_eq!(&again, m);
        at += m.len() + 1;
    }
    assert!(reader.next().is_none());
    assert_eq!(reader.position(), file.len());
    assert!(!reader.decoder().in_stream());

    assert!(RecvlogicalReader::new(b"", v2).next().is_none());
}

#[test]
fn recvlogical_errors_give_the_file_offset_and_message_number() {
    let v1 = ctx(1, Streaming::Off);
    let good = begin();
    let bad_insert = msg(|o| write_insert(None, 1, &[TupleValue::Null], o).unwrap());

    // A byte other than '\n' after the second message.
    let mut file = recvlogical(&[&good]);
    file.extend_from_slice(&bad_insert);
    file.push(b'\r');
    let mut reader = RecvlogicalReader::new(&file, v1);
    assert!(reader.next().unwrap().is_ok());
    let e = reader.next().unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ExpectedNewline(b'\r'));
    assert_eq!(
        (e.offset(), e.message_number(), e.message_tag()),
        (file.len() - 1, Some(2), Some(b'I'))
    );
    assert_eq!(
        e.to_string(),
        format!(
            "message 2: Insert ('I'): expected the '\\n' pg_recvlogical writes after each \
             message, found 0x0d at byte {}",
            file.len() - 1
        )
    );
    assert!(reader.next().is_none(), "the reader stops after an error");
    assert_eq!(reader.position(), good.len() + 1);

    // The file ends right after a message, before its '\n': cut short.
    let file = [&recvlogical(&[&good])[..], &good[..]].concat();
    let e = RecvlogicalReader::new(&file, v1)
        .nth(1)
        .unwrap()
        .unwrap_err();
    assert!(e.is_incomplete());
    assert_eq!((e.offset(), e.message_number()), (file.len(), Some(2)));

    // The file ends inside a message: the offset is within the file, past the first message.
    let file = [&recvlogical(&[&good])[..], &bad_insert[..5]].concat();
    let mut reader = RecvlogicalReader::new(&file, v1);
    reader.next().unwrap().unwrap();
    let e = reader.next().unwrap().unwrap_err();
    assert!(e.is_incomplete());
    assert_eq!(e.offset(), good.len() + 1 + 5);
    assert_eq!(
        reader.position(),
        good.len() + 1,
        "where the last whole message ended"
    );

    // A corrupt message: the offset points into the file.
    let mut corrupt = bad_insert.clone();
    corrupt[5] = b'Q';
    let file = recvlogical(&[&good, &corrupt]);
    let e = RecvlogicalReader::new(&file, v1)
        .nth(1)
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidTupleMarker(b'Q'));
    assert_eq!(e.offset(), good.len() + 1 + 5);
}

#[test]
fn framed_files() {
    let v2 = ctx(2, Streaming::On);
    let messages = [
        begin(),
        insert(None, b"1"),
        msg(|o| write_commit(1, 2, 3, o)),
    ];
    let mut file = Vec::new();
    for m in &messages {
        write_frame(m, &mut file).unwrap();
    }
    let items: Vec<(usize, Message<'_>)> =
        FramedReader::new(&file, v2).map(Result::unwrap).collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].0, 4);
    assert_eq!(items[1].0, 4 + messages[0].len() + 4);
    assert_eq!(items[2].1.tag(), b'C');

    // A frame shorter than its message: invalid, not incomplete.
    let mut short = Vec::new();
    write_frame(&messages[1][..6], &mut short).unwrap();
    let e = FramedReader::new(&short, v2).next().unwrap().unwrap_err();
    assert_eq!(
        (e.kind(), e.message_number()),
        (ErrorKind::ShortFrame, Some(1))
    );
    // The payload holds tag, OID and 'N': the column count, at payload byte 6, is missing.
    assert_eq!(e.offset(), 4 + 6);

    // A frame longer than its message.
    let mut long = Vec::new();
    write_frame(&[&messages[0][..], b"xx"].concat(), &mut long).unwrap();
    let e = FramedReader::new(&long, v2).next().unwrap().unwrap_err();
    assert_eq!(
        (e.kind(), e.offset()),
        (ErrorKind::TrailingBytes(2), 4 + messages[0].len())
    );

    // Cut inside a length and inside a payload: incomplete, the position at that frame.
    for cut in [file.len() - 2, messages[0].len() + 4 + 2] {
        let mut reader = FramedReader::new(&file[..cut], v2);
        let first_error = reader.by_ref().find_map(Result::err).unwrap();
        assert!(first_error.is_incomplete(), "{first_error}");
        assert!(reader.position() <= cut);
    }

    // An empty frame has no message type.
    let e = FramedReader::new(&[0, 0, 0, 0], v2)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShortFrame);
}
