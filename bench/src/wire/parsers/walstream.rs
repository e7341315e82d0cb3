//! pg_walstream 0.10.0: `LogicalReplicationParser::parse_wal_message_bytes`.
//!
//! That is the crate's zero-copy entry point: it takes the message as a `bytes::Bytes` and every
//! column value comes back as a `Bytes` slice of it (a reference count, no copy). The parser keeps
//! the Stream Start/Stop state itself, so a streamed capture needs nothing more than the protocol
//! version. Values are reached through `TupleData::columns` (`ColumnData::data_type` and
//! `as_bytes`). Its higher layer (`PgOutputDecoder`, events with column names) is not timed: that
//! is more than parsing, and the other two have no such layer.

use crate::wire::capture::Capture;
use crate::wire::work::Work;
use pg_walstream::{LogicalReplicationMessage, LogicalReplicationParser, TupleData};
use std::hint::black_box;

/// One pass over `capture`.
pub fn parse(capture: &Capture) -> Result<Work, String> {
    let mut parser = LogicalReplicationParser::with_protocol_version(capture.protocol.version());
    let mut work = Work::default();
    for range in &capture.frames {
        let message = parser
            .parse_wal_message_bytes(capture.bytes.slice(range.clone()))
            .map_err(|e| format!("pg_walstream: message at byte {}: {e}", range.start))?;
        match &message.message {
            LogicalReplicationMessage::Insert { tuple, .. } => {
                work.changes += 1;
                tuple_values(tuple, &mut work);
            }
            LogicalReplicationMessage::Update {
                old_tuple,
                new_tuple,
                ..
            } => {
                work.changes += 1;
                if let Some(old) = old_tuple {
                    tuple_values(old, &mut work);
                }
                tuple_values(new_tuple, &mut work);
            }
            LogicalReplicationMessage::Delete { old_tuple, .. } => {
                work.changes += 1;
                tuple_values(old_tuple, &mut work);
            }
            _ => {}
        }
        work.messages += 1;
        black_box(message);
    }
    Ok(work)
}

#[inline(always)]
fn tuple_values(tuple: &TupleData, work: &mut Work) {
    for column in &tuple.columns {
        if column.is_text() || column.is_binary() {
            work.value(black_box(column.as_bytes()));
        } else {
            // 'n' (NULL) or 'u' (unchanged TOAST): the parser refuses any other kind.
            work.marker();
        }
    }
}
