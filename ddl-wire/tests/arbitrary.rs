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
