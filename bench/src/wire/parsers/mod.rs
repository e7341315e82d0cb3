//! The parsers compared, each in its own module with the same shape: one pass over a capture,
//! decoding every message and reaching every column value of every Insert, Update and Delete, with
//! each value (and each decoded message) passed through `std::hint::black_box` so none of the work
//! can be optimised away.

mod elefant;
mod walstream;
mod wire;

pub use wire::framed_messages;

use crate::wire::capture::{Capture, Protocol};
use crate::wire::work::Work;

/// A parser under test.
pub struct Parser {
    /// The crate and version, as printed in tables.
    pub name: &'static str,
    /// The captures it can read.
    pub protocols: &'static [Protocol],
    /// One pass over a capture.
    pub parse: fn(&Capture) -> Result<Work, String>,
}

/// ddl-wire first: ratios are ddl-wire's speed over each of the others.
pub const PARSERS: [Parser; 3] = [
    Parser {
        name: "ddl-wire",
        protocols: &[Protocol::V1, Protocol::V2Streaming],
        parse: wire::parse,
    },
    Parser {
        name: "elefant-client 0.1.0",
        protocols: &[Protocol::V1],
        parse: elefant::parse,
    },
    Parser {
        name: "pg_walstream 0.10.0",
        protocols: &[Protocol::V1, Protocol::V2Streaming],
        parse: walstream::parse,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use ddl_wire::{
        write_begin, write_commit, write_delete, write_frame, write_insert, write_relation,
        write_stream_commit, write_stream_start, write_stream_stop, write_update, Column,
        OldTupleKind, PgStr, TupleValue,
    };
    use TupleValue::{Null, Text, UnchangedToast};

    const REL: u32 = 16384;

    /// One message, as `write` writes it.
    fn message(write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out);
        out
    }

    /// A capture file of `messages`, each in its own frame.
    fn file(messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            write_frame(m, &mut out).unwrap();
        }
        out
    }

    /// Relation, Insert, Update (whole old row, an unchanged TOAST value) and Delete (key only),
    /// of streamed transaction `xid` when there is one.
    fn changes(xid: Option<u32>) -> Vec<Vec<u8>> {
        let columns = [
            Column::new(1, PgStr::from(c"id"), 23, -1),
            Column::new(0, PgStr::from(c"note"), 25, -1),
            Column::new(0, PgStr::from(c"body"), 25, -1),
        ];
        let old = [Text(b"1"), Null, Text(b"x")];
        let new = [Text(b"1"), UnchangedToast, Text(b"yz")];
        vec![
            message(|o| {
                write_relation(xid, REL, c"public".into(), c"t".into(), b'f', &columns, o).unwrap()
            }),
            message(|o| write_insert(xid, REL, &old, o).unwrap()),
            message(|o| write_update(xid, REL, Some((OldTupleKind::Full, &old)), &new, o).unwrap()),
            message(|o| {
                write_delete(xid, REL, OldTupleKind::Key, &[Text(b"1"), Null, Null], o).unwrap()
            }),
        ]
    }

    /// What every parser must count for one `changes` block.
    fn changes_work() -> Work {
        Work {
            messages: 4,
            changes: 3,
            values: 12,
            markers: 5,
            value_bytes: 8,
        }
    }

    fn counts(capture: &Capture) -> Vec<(&'static str, Work)> {
        PARSERS
            .iter()
            .filter(|p| p.protocols.contains(&capture.protocol))
            .map(|p| (p.name, (p.parse)(capture).unwrap()))
            .collect()
    }

    #[test]
    fn every_parser_locates_every_value_of_a_v1_stream() {
        let mut messages = vec![message(|o| write_begin(0x100, 1, 700, o))];
        messages.extend(changes(None));
        messages.push(message(|o| write_commit(0x100, 0x108, 1, o)));
        let capture = Capture::from_bytes(file(&messages), "v1", Protocol::V1).unwrap();

        let counted = counts(&capture);
        assert_eq!(counted.len(), 3);
        for (name, work) in counted {
            assert_eq!(
                work,
                Work {
                    messages: 6,
                    ..changes_work()
                },
                "{name}"
            );
        }
        assert_eq!(framed_messages(&capture).unwrap(), 6);
    }

    #[test]
    fn streamed_changes_are_read_with_their_transaction_id() {
        let mut messages = vec![message(|o| write_stream_start(701, true, o))];
        messages.extend(changes(Some(701)));
        messages.push(message(write_stream_stop));
        messages.push(message(|o| write_stream_commit(701, 0x200, 0x208, 2, o)));
        let capture = Capture::from_bytes(file(&messages), "v2", Protocol::V2Streaming).unwrap();

        let counted = counts(&capture);
        let names: Vec<_> = counted.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["ddl-wire", "pg_walstream 0.10.0"]);
        for (name, work) in counted {
            assert_eq!(
                work,
                Work {
                    messages: 7,
                    ..changes_work()
                },
                "{name}"
            );
        }
        assert_eq!(framed_messages(&capture).unwrap(), 7);
        // elefant-client would read the transaction id as the relation id.
        assert!((PARSERS[1].parse)(&capture)
            .unwrap_err()
            .contains("protocol 1 only"));
    }
}
