//! Round trip: random valid messages of every type, in every protocol context, are written with
//! the `write_*` functions, parsed back to the same field values, and encode to the same bytes.

mod common;

use std::collections::BTreeSet;

use common::{contexts, framed_file, recvlogical_file, session, tags_for, Model, Rng};
use ddl_wire::{FramedReader, Message, ProtocolContext, RecvlogicalReader, StreamDecoder};

#[test]
fn every_message_type_round_trips_in_every_context() {
    let mut rng = Rng::new(1);
    let mut seen = BTreeSet::new();
    for ctx in contexts() {
        for tag in tags_for(&ctx) {
            for _ in 0..120 {
                let model = Model::random_of(tag, &mut rng, &ctx);
                let bytes = model.bytes();
                let parsed = Message::parse(&bytes, &ctx)
                    .unwrap_or_else(|e| panic!("{e} for {model:?} in {ctx:?}"));
                assert_eq!(parsed.tag(), tag);
                assert_eq!(Model::from_message(&parsed), model, "in {ctx:?}");

                let mut again = Vec::new();
                parsed.encode(&mut again);
                assert_eq!(again, bytes, "{model:?} in {ctx:?}");

                // With more bytes after it, the message still ends where it did.
                let mut longer = bytes.clone();
                longer.extend_from_slice(b"\nnext");
                let (prefix, used) = Message::parse_prefix(&longer, &ctx).unwrap();
                assert_eq!(used, bytes.len());
                assert_eq!(prefix, parsed);
                seen.insert(tag);
            }
        }
    }
    assert_eq!(
        seen.len(),
        common::ALL_TAGS.len(),
        "every message type was generated"
    );
}

/// A session in every streaming context goes through the decoder, a pg_recvlogical file and a
/// framed file, and comes out as the same messages at the right offsets.
#[test]
fn sessions_round_trip_through_decoder_and_files() {
    let mut rng = Rng::new(2);
    for ctx in contexts().into_iter().filter(|c| !c.in_stream()) {
        for _ in 0..40 {
            let models = session(&mut rng, &ctx);
            let messages: Vec<Vec<u8>> = models.iter().map(Model::bytes).collect();

            let mut decoder = StreamDecoder::new(ctx);
            for (model, bytes) in models.iter().zip(&messages) {
                let parsed = decoder
                    .decode(bytes)
                    .unwrap_or_else(|e| panic!("{e} for {model:?} in {ctx:?}"));
                assert_eq!(&Model::from_message(&parsed), model);
            }
            assert!(!decoder.in_stream(), "sessions close every streamed block");

            // pg_recvlogical: each message then '\n'; framed: a 4-byte length then each message.
            let file = recvlogical_file(&messages);
            let offsets = starts(&messages, 0, 1);
            let reader = RecvlogicalReader::new(&file, ctx);
            check_file_reader(reader, &models, &offsets, &ctx);

            let file = framed_file(&messages);
            let offsets = starts(&messages, 4, 0);
            let reader = FramedReader::new(&file, ctx);
            check_file_reader(reader, &models, &offsets, &ctx);
        }
    }
}

/// Where each message starts when each has `before` bytes in front of it and `after` behind.
fn starts(messages: &[Vec<u8>], before: usize, after: usize) -> Vec<usize> {
    let mut at = 0;
    messages
        .iter()
        .map(|m| {
            let start = at + before;
            at = start + m.len() + after;
            start
        })
        .collect()
}

fn check_file_reader<'a>(
    reader: impl Iterator<Item = Result<(usize, Message<'a>), ddl_wire::Error>>,
    models: &[Model],
    offsets: &[usize],
    ctx: &ProtocolContext,
) {
    let mut count = 0;
    for (i, item) in reader.enumerate() {
        let (offset, message) = item.unwrap_or_else(|e| panic!("{e} in {ctx:?}"));
        assert_eq!(Model::from_message(&message), models[i]);
        assert_eq!(offset, offsets[i], "offset of message {i}");
        count += 1;
    }
    assert_eq!(count, models.len());
}
