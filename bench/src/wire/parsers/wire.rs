//! ddl-wire (this workspace): `StreamDecoder::decode`.
//!
//! The decoder is what a consumer of a whole stream uses: it parses each message with
//! `Message::parse` under a `ProtocolContext` and keeps that context's in-stream state from the
//! Stream Start/Stop messages it sees. Values are reached by iterating the tuples' `TupleData`
//! (`InsertBody::tuple`, `UpdateBody::{key_tuple, old_tuple, new_tuple}`,
//! `DeleteBody::{key_tuple, old_tuple}`), which yield `TupleValue`s borrowed from the message.

use crate::wire::capture::{Capture, Protocol};
use crate::wire::work::Work;
use ddl_wire::{
    FramedReader, Message, ProtocolContext, StreamDecoder, Streaming, TupleData, TupleValue,
};
use std::hint::black_box;

/// The context a capture was made with.
pub fn context(protocol: Protocol) -> ProtocolContext {
    let ctx = match protocol {
        Protocol::V1 => ProtocolContext::new(1, Streaming::Off),
        Protocol::V2Streaming => ProtocolContext::new(2, Streaming::On),
    };
    ctx.expect("a valid protocol version and streaming mode")
}

/// One pass over `capture`.
pub fn parse(capture: &Capture) -> Result<Work, String> {
    let mut decoder = StreamDecoder::new(context(capture.protocol));
    let mut work = Work::default();
    for range in &capture.frames {
        let message = decoder
            .decode(&capture.bytes[range.clone()])
            .map_err(|e| format!("ddl-wire: message at byte {}: {e}", range.start))?;
        match &message {
            Message::Insert(insert) => {
                work.changes += 1;
                tuple_values(insert.tuple(), &mut work)?;
            }
            Message::Update(update) => {
                work.changes += 1;
                if let Some(old) = update.key_tuple().or_else(|| update.old_tuple()) {
                    tuple_values(old, &mut work)?;
                }
                tuple_values(update.new_tuple(), &mut work)?;
            }
            Message::Delete(delete) => {
                work.changes += 1;
                if let Some(old) = delete.key_tuple().or_else(|| delete.old_tuple()) {
                    tuple_values(old, &mut work)?;
                }
            }
            _ => {}
        }
        work.messages += 1;
        black_box(message);
    }
    Ok(work)
}

#[inline(always)]
fn tuple_values(tuple: TupleData<'_>, work: &mut Work) -> Result<(), String> {
    for value in tuple {
        match value.map_err(|e| format!("ddl-wire: {e}"))? {
            TupleValue::Text(bytes) | TupleValue::Binary(bytes) => work.value(black_box(bytes)),
            TupleValue::Null | TupleValue::UnchangedToast => work.marker(),
        }
    }
    Ok(())
}

/// How many messages ddl-wire's own reader of the fixture framing finds in the whole file: the
/// check that the capture is the format ddl-wire reads, and that the frames the benchmark split
/// off are the messages.
pub fn framed_messages(capture: &Capture) -> Result<usize, String> {
    let mut count = 0;
    for item in FramedReader::new(&capture.bytes, context(capture.protocol)) {
        item.map_err(|e| format!("ddl-wire FramedReader on {}: {e}", capture.name))?;
        count += 1;
    }
    Ok(count)
}
