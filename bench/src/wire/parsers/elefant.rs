//! elefant-client 0.1.0: `replication::parse_pgoutput_message`.
//!
//! It borrows the message (`&[u8]` in, `PgOutputMessage<'_>` out) and collects each tuple into a
//! `Vec<TupleColumn>`; a text value is a `Cow<str>` made with `String::from_utf8_lossy`, so it is
//! checked as UTF-8 (and copied only when it is not). It knows protocol 1 only: inside a streamed
//! block it would read the transaction id as the relation id, so it is given v1 captures only.
//! A message it does not know comes back as `Unsupported`, which is an error here (the counts
//! would otherwise differ silently).

use crate::wire::capture::{Capture, Protocol};
use crate::wire::work::Work;
use elefant_client::replication::{
    parse_pgoutput_message, PgOutputMessage, TupleColumn, TupleData,
};
use std::hint::black_box;

/// One pass over `capture`, which must be a protocol 1 capture.
pub fn parse(capture: &Capture) -> Result<Work, String> {
    if capture.protocol != Protocol::V1 {
        return Err(format!(
            "elefant-client parses protocol 1 only, not {}",
            capture.name
        ));
    }
    let mut work = Work::default();
    for range in &capture.frames {
        let message = parse_pgoutput_message(&capture.bytes[range.clone()])
            .map_err(|e| format!("elefant-client: message at byte {}: {e:?}", range.start))?;
        match &message {
            PgOutputMessage::Insert(insert) => {
                work.changes += 1;
                tuple_values(&insert.tuple, &mut work);
            }
            PgOutputMessage::Update(update) => {
                work.changes += 1;
                if let Some(old) = &update.old_tuple {
                    tuple_values(old, &mut work);
                }
                tuple_values(&update.new_tuple, &mut work);
            }
            PgOutputMessage::Delete(delete) => {
                work.changes += 1;
                tuple_values(&delete.old_tuple, &mut work);
            }
            PgOutputMessage::Unsupported { msg_type, .. } => {
                return Err(format!(
                    "elefant-client: message at byte {} has a type it does not know ({:?})",
                    range.start, *msg_type as char
                ));
            }
            _ => {}
        }
        work.messages += 1;
        black_box(message);
    }
    Ok(work)
}

#[inline(always)]
fn tuple_values(tuple: &TupleData<'_>, work: &mut Work) {
    for column in &tuple.columns {
        match column {
            TupleColumn::Text(text) => work.value(black_box(text.as_bytes())),
            TupleColumn::Binary(bytes) => work.value(black_box(bytes)),
            TupleColumn::Null | TupleColumn::Unchanged => work.marker(),
        }
    }
}
