//! Truncate ('T'): tables emptied by one TRUNCATE statement.

use std::iter::FusedIterator;

use nom::bytes::complete::take;

use crate::primitive::{be_u32, be_u8, fail, put_message, put_stream_xid, put_u32, put_u8};
use crate::primitive::{put_i32, stream_xid, Overflow, PResult};
use crate::tags::TRUNCATE_TAG;
use crate::{Error, ErrorKind, ProtocolContext};

/// `TRUNCATE_CASCADE`.
const CASCADE: u8 = 1 << 0;
/// `TRUNCATE_RESTART_SEQS`.
const RESTART_SEQS: u8 = 1 << 1;

/// Truncate: the tables [`rel_ids`](TruncateBody::rel_ids) were truncated together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TruncateBody<'a> {
    xid: Option<u32>,
    count: u32,
    options: u8,
    rel_ids: &'a [u8],
}

impl<'a> TruncateBody<'a> {
    /// The (sub)transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// TRUNCATE ... CASCADE.
    pub fn cascade(&self) -> bool {
        self.options & CASCADE != 0
    }

    /// TRUNCATE ... RESTART IDENTITY.
    pub fn restart_identity(&self) -> bool {
        self.options & RESTART_SEQS != 0
    }

    /// The truncated tables' OIDs, read from the message on demand.
    pub fn rel_ids(&self) -> RelIds<'a> {
        RelIds(self.rel_ids)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, TRUNCATE_TAG);
        put_stream_xid(out, self.xid);
        put_u32(out, self.count);
        put_u8(out, self.options);
        out.extend_from_slice(self.rel_ids);
    }
}

/// The relation OIDs of a [`TruncateBody`].
#[derive(Debug, Clone)]
pub struct RelIds<'a>(&'a [u8]);

impl Iterator for RelIds<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let (oid, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_be_bytes(*oid))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.len() / 4;
        (n, Some(n))
    }
}

impl ExactSizeIterator for RelIds<'_> {}

impl FusedIterator for RelIds<'_> {}

pub(crate) fn parse<'a>(i: &'a [u8], ctx: &ProtocolContext) -> PResult<'a, TruncateBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    let (i, count) = be_u32(i)?;
    let (rest, options) = be_u8(i)?;
    if options & !(CASCADE | RESTART_SEQS) != 0 {
        return fail(i, ErrorKind::InvalidFlags(options));
    }
    // A count too big for this machine's memory cannot be satisfied by any buffer: more
    // bytes are needed, as for any other short input.
    let Some(len) = usize::try_from(count).ok().and_then(|n| n.checked_mul(4)) else {
        return fail(rest, ErrorKind::Incomplete);
    };
    let (rest, rel_ids) = take(len)(rest)?;
    Ok((
        rest,
        TruncateBody {
            xid,
            count,
            options,
            rel_ids,
        },
    ))
}

/// Writes a Truncate message (`logicalrep_write_truncate`). `xid` is for streamed blocks only.
///
/// Fails, leaving `out` as it was, on more relations than an Int32 counts.
pub fn write_truncate(
    xid: Option<u32>,
    cascade: bool,
    restart_identity: bool,
    rel_ids: &[u32],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    put_message(out, TRUNCATE_TAG, |out| {
        put_stream_xid(out, xid);
        // PostgreSQL counts them in an `int`.
        let count = i32::try_from(rel_ids.len()).map_err(|_| Overflow { at: out.len() })?;
        put_i32(out, count);
        let mut options = 0;
        if cascade {
            options |= CASCADE;
        }
        if restart_identity {
            options |= RESTART_SEQS;
        }
        put_u8(out, options);
        for oid in rel_ids {
            put_u32(out, *oid);
        }
        Ok(())
    })
}
