//! Message ('M'): a logical decoding message written by `pg_logical_emit_message`.

use crate::primitive::{be_u64, be_u8, counted_bytes, cstr, fail, put_counted_bytes, put_cstr};
use crate::primitive::{
    put_message, put_stream_xid, put_u32, put_u64, put_u8, stream_xid, PResult,
};
use crate::tags::MESSAGE_TAG;
use crate::{Error, ErrorKind, PgStr, ProtocolContext};

/// `MESSAGE_TRANSACTIONAL`.
const TRANSACTIONAL: u8 = 1 << 0;

/// Message: a logical decoding message (`pg_logical_emit_message`), sent when the client asked
/// for `messages = true`.
///
/// A transactional message comes inside its transaction and only if that commits; a
/// non-transactional one comes at once, outside any transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LogicalMessageBody<'a> {
    xid: Option<u32>,
    flags: u8,
    lsn: u64,
    prefix: PgStr<'a>,
    content: &'a [u8],
}

impl<'a> LogicalMessageBody<'a> {
    /// The (sub)transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// True for a transactional message.
    pub fn transactional(&self) -> bool {
        self.flags & TRANSACTIONAL != 0
    }

    /// The LSN of the message's WAL record.
    pub fn lsn(&self) -> u64 {
        self.lsn
    }

    /// The prefix the writer gave, which says who the content is for.
    pub fn prefix(&self) -> PgStr<'a> {
        self.prefix
    }

    /// The content, arbitrary bytes.
    pub fn content(&self) -> &'a [u8] {
        self.content
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, MESSAGE_TAG);
        put_head(out, self.xid, self.flags, self.lsn, self.prefix);
        // The length came from an Int32 no greater than i32::MAX, so the cast is exact (proto.c
        // casts the same way).
        put_u32(out, self.content.len() as u32);
        out.extend_from_slice(self.content);
    }
}

pub(crate) fn parse<'a>(i: &'a [u8], ctx: &ProtocolContext) -> PResult<'a, LogicalMessageBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    let (rest, flags) = be_u8(i)?;
    if flags & !TRANSACTIONAL != 0 {
        return fail(i, ErrorKind::InvalidFlags(flags));
    }
    let (rest, lsn) = be_u64(rest)?;
    let (rest, prefix) = cstr(rest)?;
    let (rest, content) = counted_bytes(rest)?;
    Ok((
        rest,
        LogicalMessageBody {
            xid,
            flags,
            lsn,
            prefix,
            content,
        },
    ))
}

fn put_head(out: &mut Vec<u8>, xid: Option<u32>, flags: u8, lsn: u64, prefix: PgStr<'_>) {
    put_stream_xid(out, xid);
    put_u8(out, flags);
    put_u64(out, lsn);
    put_cstr(out, prefix);
}

/// Writes a Message message (`logicalrep_write_message`). `xid` is for streamed blocks only.
///
/// Fails, leaving `out` as it was, on content of 2 GiB or more.
pub fn write_logical_message(
    xid: Option<u32>,
    transactional: bool,
    lsn: u64,
    prefix: PgStr<'_>,
    content: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let flags = if transactional { TRANSACTIONAL } else { 0 };
    put_message(out, MESSAGE_TAG, |out| {
        put_head(out, xid, flags, lsn, prefix);
        put_counted_bytes(out, content)
    })
}
