//! Stream Start ('S'): the start of a block of changes of an in-progress transaction.

use crate::primitive::{be_u32, be_u8, fail, put_u32, put_u8, PResult};
use crate::tags::STREAM_START_TAG;
use crate::ErrorKind;

/// Stream Start: the changes up to Stream Stop belong to the in-progress transaction
/// [`xid`](StreamStartBody::xid), and each carries the id of its (sub)transaction. A streamed
/// transaction may be sent in many blocks, interleaved with other transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamStartBody {
    xid: u32,
    first_segment: bool,
}

impl StreamStartBody {
    /// The top-level transaction id.
    pub fn xid(&self) -> u32 {
        self.xid
    }

    /// True for the transaction's first block.
    pub fn first_segment(&self) -> bool {
        self.first_segment
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_stream_start(self.xid, self.first_segment, out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, StreamStartBody> {
    let (flag_at, xid) = be_u32(i)?;
    let (rest, first) = be_u8(flag_at)?;
    // pgoutput writes 1 or 0; proto.c reads "== 1", so anything else would silently mean
    // "not first".
    let first_segment = match first {
        0 => false,
        1 => true,
        other => return fail(flag_at, ErrorKind::InvalidFlags(other)),
    };
    Ok((rest, StreamStartBody { xid, first_segment }))
}

/// Writes a Stream Start message (`logicalrep_write_stream_start`).
pub fn write_stream_start(xid: u32, first_segment: bool, out: &mut Vec<u8>) {
    put_u8(out, STREAM_START_TAG);
    put_u32(out, xid);
    put_u8(out, u8::from(first_segment));
}
