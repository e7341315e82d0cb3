//! [`Message`]: one pgoutput message, parsed by dispatching on its type byte ([`crate::tags`]).

use crate::context::{STREAM_VERSION, TWO_PHASE_VERSION};
use crate::primitive::{to_error, PResult};
use crate::tags::*;
use crate::UpdateBody;
use crate::{
    begin, begin_prepare, commit, commit_prepared, delete, insert, logical_message, origin,
    prepare, relation, rollback_prepared, stream_abort, stream_commit, stream_prepare,
    stream_start, stream_stop, truncate, typ, update,
};
use crate::{BeginBody, BeginPrepareBody, CommitBody, CommitPreparedBody, DeleteBody};
use crate::{Error, ErrorKind, InsertBody, LogicalMessageBody, OriginBody, PrepareBody};
use crate::{ProtocolContext, RelationBody, RollbackPreparedBody, StreamAbortBody};
use crate::{StreamCommitBody, StreamPrepareBody, StreamStartBody, TruncateBody, TypeBody};

/// The lowest `proto_version` in which pgoutput sends this message type (1 for unknown types,
/// which parsing rejects anyway).
fn required_version(tag: u8) -> u32 {
    match tag {
        STREAM_START_TAG | STREAM_STOP_TAG | STREAM_COMMIT_TAG | STREAM_ABORT_TAG => STREAM_VERSION,
        BEGIN_PREPARE_TAG
        | PREPARE_TAG
        | COMMIT_PREPARED_TAG
        | ROLLBACK_PREPARED_TAG
        | STREAM_PREPARE_TAG => TWO_PHASE_VERSION,
        _ => ProtocolContext::MIN_PROTO_VERSION,
    }
}

/// One pgoutput message, borrowing from the bytes it was parsed from.
///
/// Each variant is named after the message in protocol.sgml and proto.c, and holds a body whose
/// getters return the fields; variable parts (columns, tuples, relation lists) are read lazily.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// `'B'`
    Begin(BeginBody),
    /// `'C'`
    Commit(CommitBody),
    /// `'O'`
    Origin(OriginBody<'a>),
    /// `'R'`
    Relation(RelationBody<'a>),
    /// `'Y'`
    Type(TypeBody<'a>),
    /// `'I'`
    Insert(InsertBody<'a>),
    /// `'U'`
    Update(UpdateBody<'a>),
    /// `'D'`
    Delete(DeleteBody<'a>),
    /// `'T'`
    Truncate(TruncateBody<'a>),
    /// `'M'`, a logical decoding message.
    LogicalMessage(LogicalMessageBody<'a>),
    /// `'S'`
    StreamStart(StreamStartBody),
    /// `'E'`: Stream Stop has no fields.
    StreamStop,
    /// `'c'`
    StreamCommit(StreamCommitBody),
    /// `'A'`
    StreamAbort(StreamAbortBody),
    /// `'b'`
    BeginPrepare(BeginPrepareBody<'a>),
    /// `'P'`
    Prepare(PrepareBody<'a>),
    /// `'K'`
    CommitPrepared(CommitPreparedBody<'a>),
    /// `'r'`
    RollbackPrepared(RollbackPreparedBody<'a>),
    /// `'p'`
    StreamPrepare(StreamPrepareBody<'a>),
}

impl<'a> Message<'a> {
    /// Parses `buf`, which must hold exactly one message (as a CopyData `XLogData` payload or a
    /// row of `pg_logical_slot_peek_binary_changes` does).
    ///
    /// Bytes left after the message are an error ([`ErrorKind::TrailingBytes`], at the first
    /// extra byte); a buffer that ends inside the message is [`ErrorKind::Incomplete`].
    #[inline]
    pub fn parse(buf: &'a [u8], ctx: &ProtocolContext) -> Result<Message<'a>, Error> {
        let (message, used) = Message::parse_prefix(buf, ctx)?;
        match buf.len().saturating_sub(used) {
            0 => Ok(message),
            extra => Err(Error::new(
                ErrorKind::TrailingBytes(extra),
                used,
                Some(message.tag()),
            )),
        }
    }

    /// Parses the message at the start of `buf` and returns it with the number of bytes it
    /// used, for input where messages are not length-delimited (pg_recvlogical files).
    ///
    /// Checks that the message type exists in the context's protocol version; it does not
    /// check where the message may appear in a stream ([`StreamDecoder`](crate::StreamDecoder)
    /// does).
    #[inline]
    pub fn parse_prefix(
        buf: &'a [u8],
        ctx: &ProtocolContext,
    ) -> Result<(Message<'a>, usize), Error> {
        let Some((&tag, body)) = buf.split_first() else {
            return Err(Error::new(ErrorKind::Incomplete, 0, None));
        };
        let total = buf.len();
        // Changes are most of any stream: they are read without nom first (see
        // `primitive::read_u8`), and only a change that does not read goes on to the parsers
        // below, for the error. Every protocol version has them, so there is no version to
        // check.
        let fast = match tag {
            INSERT_TAG => insert::read(body, ctx, total).map(|(r, b)| (r, Message::Insert(b))),
            UPDATE_TAG => update::read(body, ctx, total).map(|(r, b)| (r, Message::Update(b))),
            DELETE_TAG => delete::read(body, ctx, total).map(|(r, b)| (r, Message::Delete(b))),
            _ => None,
        };
        if let Some((rest, message)) = fast {
            return Ok((message, total.saturating_sub(rest.len())));
        }
        let required = required_version(tag);
        if ctx.proto_version() < required {
            let kind = ErrorKind::RequiresProtocolVersion {
                required,
                negotiated: ctx.proto_version(),
            };
            return Err(Error::new(kind, 0, Some(tag)));
        }
        let parsed: PResult<'a, Message<'a>> = match tag {
            BEGIN_TAG => begin::parse(body).map(|(r, b)| (r, Message::Begin(b))),
            COMMIT_TAG => commit::parse(body).map(|(r, b)| (r, Message::Commit(b))),
            ORIGIN_TAG => origin::parse(body).map(|(r, b)| (r, Message::Origin(b))),
            RELATION_TAG => {
                relation::parse(body, ctx, total).map(|(r, b)| (r, Message::Relation(b)))
            }
            TYPE_TAG => typ::parse(body, ctx).map(|(r, b)| (r, Message::Type(b))),
            INSERT_TAG => insert::parse(body, ctx, total).map(|(r, b)| (r, Message::Insert(b))),
            UPDATE_TAG => update::parse(body, ctx, total).map(|(r, b)| (r, Message::Update(b))),
            DELETE_TAG => delete::parse(body, ctx, total).map(|(r, b)| (r, Message::Delete(b))),
            TRUNCATE_TAG => truncate::parse(body, ctx).map(|(r, b)| (r, Message::Truncate(b))),
            MESSAGE_TAG => {
                logical_message::parse(body, ctx).map(|(r, b)| (r, Message::LogicalMessage(b)))
            }
            STREAM_START_TAG => {
                stream_start::parse(body).map(|(r, b)| (r, Message::StreamStart(b)))
            }
            STREAM_STOP_TAG => Ok((body, Message::StreamStop)),
            STREAM_COMMIT_TAG => {
                stream_commit::parse(body).map(|(r, b)| (r, Message::StreamCommit(b)))
            }
            STREAM_ABORT_TAG => {
                stream_abort::parse(body, ctx).map(|(r, b)| (r, Message::StreamAbort(b)))
            }
            BEGIN_PREPARE_TAG => {
                begin_prepare::parse(body).map(|(r, b)| (r, Message::BeginPrepare(b)))
            }
            PREPARE_TAG => prepare::parse(body).map(|(r, b)| (r, Message::Prepare(b))),
            COMMIT_PREPARED_TAG => {
                commit_prepared::parse(body).map(|(r, b)| (r, Message::CommitPrepared(b)))
            }
            ROLLBACK_PREPARED_TAG => {
                rollback_prepared::parse(body).map(|(r, b)| (r, Message::RollbackPrepared(b)))
            }
            STREAM_PREPARE_TAG => {
                stream_prepare::parse(body).map(|(r, b)| (r, Message::StreamPrepare(b)))
            }
            _ => return Err(Error::new(ErrorKind::UnknownMessageType, 0, Some(tag))),
        };
        match parsed {
            Ok((rest, message)) => Ok((message, total.saturating_sub(rest.len()))),
            Err(e) => Err(to_error(e, total, Some(tag))),
        }
    }

    /// The message type byte.
    pub fn tag(&self) -> u8 {
        match self {
            Message::Begin(_) => BEGIN_TAG,
            Message::Commit(_) => COMMIT_TAG,
            Message::Origin(_) => ORIGIN_TAG,
            Message::Relation(_) => RELATION_TAG,
            Message::Type(_) => TYPE_TAG,
            Message::Insert(_) => INSERT_TAG,
            Message::Update(_) => UPDATE_TAG,
            Message::Delete(_) => DELETE_TAG,
            Message::Truncate(_) => TRUNCATE_TAG,
            Message::LogicalMessage(_) => MESSAGE_TAG,
            Message::StreamStart(_) => STREAM_START_TAG,
            Message::StreamStop => STREAM_STOP_TAG,
            Message::StreamCommit(_) => STREAM_COMMIT_TAG,
            Message::StreamAbort(_) => STREAM_ABORT_TAG,
            Message::BeginPrepare(_) => BEGIN_PREPARE_TAG,
            Message::Prepare(_) => PREPARE_TAG,
            Message::CommitPrepared(_) => COMMIT_PREPARED_TAG,
            Message::RollbackPrepared(_) => ROLLBACK_PREPARED_TAG,
            Message::StreamPrepare(_) => STREAM_PREPARE_TAG,
        }
    }

    /// Appends the message's bytes to `out`: exactly the bytes it was parsed from.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Message::Begin(b) => b.encode(out),
            Message::Commit(b) => b.encode(out),
            Message::Origin(b) => b.encode(out),
            Message::Relation(b) => b.encode(out),
            Message::Type(b) => b.encode(out),
            Message::Insert(b) => b.encode(out),
            Message::Update(b) => b.encode(out),
            Message::Delete(b) => b.encode(out),
            Message::Truncate(b) => b.encode(out),
            Message::LogicalMessage(b) => b.encode(out),
            Message::StreamStart(b) => b.encode(out),
            Message::StreamStop => stream_stop::write_stream_stop(out),
            Message::StreamCommit(b) => b.encode(out),
            Message::StreamAbort(b) => b.encode(out),
            Message::BeginPrepare(b) => b.encode(out),
            Message::Prepare(b) => b.encode(out),
            Message::CommitPrepared(b) => b.encode(out),
            Message::RollbackPrepared(b) => b.encode(out),
            Message::StreamPrepare(b) => b.encode(out),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The readers of changes without nom (`insert::read`, `update::read`, `delete::read`, and
    //! below them `TupleValue::skip` and `TupleValue::read`) must accept exactly what the nom
    //! parsers accept, with the same result, or parsing would be less strict than it says:
    //! compared here on valid changes and on many mutations of them.

    use super::*;
    use crate::sequence::Item;
    use crate::{write_delete, write_insert, write_update, OldTupleKind, Streaming, TupleValue};

    /// xorshift64: deterministic, so a failure replays.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    const FILLER: [u8; 300] = [b'x'; 300];

    fn values(rng: &mut Rng) -> Vec<TupleValue<'static>> {
        (0..rng.below(12))
            .map(|_| match rng.below(5) {
                0 => TupleValue::Null,
                1 => TupleValue::UnchangedToast,
                2 => TupleValue::Binary(&FILLER[..rng.below(9)]),
                _ => TupleValue::Text(&FILLER[..rng.below(FILLER.len())]),
            })
            .collect()
    }

    fn change(rng: &mut Rng, xid: Option<u32>) -> Vec<u8> {
        let mut out = Vec::new();
        let (new, old) = (values(rng), values(rng));
        let kind = [OldTupleKind::Key, OldTupleKind::Full][rng.below(2)];
        match rng.below(3) {
            0 => write_insert(xid, 16384, &new, &mut out),
            1 => {
                let old = (rng.below(3) > 0).then_some((kind, &old[..]));
                write_update(xid, 16384, old, &new, &mut out)
            }
            _ => write_delete(xid, 16384, kind, &old, &mut out),
        }
        .unwrap();
        out
    }

    /// Bytes that mean something in a change, and lengths that are negative or huge.
    const BYTES: [u8; 10] = [b'n', b'u', b't', b'b', b'K', b'O', b'N', 0, 0x80, 0xff];
    const LENGTHS: [i32; 6] = [-1, i32::MIN, i32::MAX, 0, 1, 5];

    fn mutate(rng: &mut Rng, buf: &mut Vec<u8>) {
        for _ in 0..=rng.below(3) {
            let len = buf.len();
            if len == 0 {
                return;
            }
            let at = rng.below(len);
            match rng.below(5) {
                0 => buf[at] ^= 1 << rng.below(8),
                1 => buf.truncate(at),
                2 => buf.insert(at, BYTES[rng.below(BYTES.len())]),
                3 => buf[at] = BYTES[rng.below(BYTES.len())],
                _ => {
                    let bytes = LENGTHS[rng.below(LENGTHS.len())].to_be_bytes();
                    let end = (at + 4).min(len);
                    buf[at..end].copy_from_slice(&bytes[..end - at]);
                }
            }
        }
    }

    /// The fast reader and the nom parser of one change type agree on `buf`.
    fn agree(buf: &[u8], ctx: &ProtocolContext) {
        let Some((_, body)) = buf.split_first() else {
            return;
        };
        let total = buf.len();
        let rest = |r: &[u8]| r.len();
        assert_eq!(
            insert::read(body, ctx, total).map(|(r, b)| (rest(r), b)),
            insert::parse(body, ctx, total)
                .ok()
                .map(|(r, b)| (rest(r), b)),
            "Insert {buf:?}"
        );
        assert_eq!(
            update::read(body, ctx, total).map(|(r, b)| (rest(r), b)),
            update::parse(body, ctx, total)
                .ok()
                .map(|(r, b)| (rest(r), b)),
            "Update {buf:?}"
        );
        assert_eq!(
            delete::read(body, ctx, total).map(|(r, b)| (rest(r), b)),
            delete::parse(body, ctx, total)
                .ok()
                .map(|(r, b)| (rest(r), b)),
            "Delete {buf:?}"
        );
    }

    /// `skip` and `read` agree with `parse` on the values at the start of `i`.
    fn values_agree(i: &[u8]) {
        assert_eq!(
            TupleValue::read(i).map(|(r, v)| (r.len(), v)),
            TupleValue::parse(i).ok().map(|(r, v)| (r.len(), v)),
            "{i:?}"
        );
        for count in 0..6 {
            let mut rest = Some(i);
            for _ in 0..count {
                rest = rest.and_then(|r| TupleValue::parse(r).ok()).map(|(r, _)| r);
            }
            let parsed = rest.map(|r| i.len() - r.len());
            assert_eq!(
                TupleValue::skip(i, count),
                parsed,
                "{count} values of {i:?}"
            );
        }
    }

    #[test]
    fn changes_read_without_nom_exactly_as_with_it() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let streaming = ProtocolContext::new(2, Streaming::On).unwrap();
        for round in 0..20_000 {
            let in_stream = round % 2 == 1;
            let ctx = streaming.with_in_stream(in_stream);
            let mut buf = change(&mut rng, in_stream.then_some(round));
            agree(&buf, &ctx);
            mutate(&mut rng, &mut buf);
            agree(&buf, &ctx);
            agree(&buf, &ctx.with_in_stream(!in_stream));
            // The tuple data of a change starts after its tag, rel_id and marker.
            for start in [8, 12, rng.below(buf.len() + 1)] {
                values_agree(buf.get(start..).unwrap_or_default());
            }
        }
    }
}
