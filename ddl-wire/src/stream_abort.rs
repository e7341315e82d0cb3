//! Stream Abort ('A'): a streamed transaction or subtransaction rolled back.

use nom::sequence::tuple;

use crate::primitive::{be_i64, be_u32, be_u64, put_i64, put_u32, put_u64, put_u8, PResult};
use crate::tags::STREAM_ABORT_TAG;
use crate::{ProtocolContext, Streaming};

/// Stream Abort: discard what was streamed for [`subxid`](StreamAbortBody::subxid) (the whole
/// transaction when it equals [`xid`](StreamAbortBody::xid)). Sent outside any streamed block.
///
/// Under `streaming = parallel` (protocol 4) it also says where and when the abort happened,
/// which a parallel apply worker needs to advance its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamAbortBody {
    xid: u32,
    subxid: u32,
    abort_info: Option<(u64, i64)>,
}

impl StreamAbortBody {
    /// The top-level transaction id.
    pub fn xid(&self) -> u32 {
        self.xid
    }

    /// The aborted (sub)transaction id; equal to `xid` when the whole transaction aborted.
    pub fn subxid(&self) -> u32 {
        self.subxid
    }

    /// The abort record's LSN, under `streaming = parallel` only.
    pub fn abort_lsn(&self) -> Option<u64> {
        self.abort_info.map(|(lsn, _)| lsn)
    }

    /// Abort time (microseconds since 2000-01-01 00:00 UTC), under `streaming = parallel` only.
    pub fn abort_time(&self) -> Option<i64> {
        self.abort_info.map(|(_, time)| time)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_stream_abort(self.xid, self.subxid, self.abort_info, out);
    }
}

pub(crate) fn parse<'a>(i: &'a [u8], ctx: &ProtocolContext) -> PResult<'a, StreamAbortBody> {
    let (i, (xid, subxid)) = tuple((be_u32, be_u32))(i)?;
    let (i, abort_info) = if ctx.streaming() == Streaming::Parallel {
        let (i, info) = tuple((be_u64, be_i64))(i)?;
        (i, Some(info))
    } else {
        (i, None)
    };
    Ok((
        i,
        StreamAbortBody {
            xid,
            subxid,
            abort_info,
        },
    ))
}

/// Writes a Stream Abort message (`logicalrep_write_stream_abort`). Give `abort_info`
/// (abort LSN, abort time) exactly when the stream uses `streaming = parallel`.
pub fn write_stream_abort(
    xid: u32,
    subxid: u32,
    abort_info: Option<(u64, i64)>,
    out: &mut Vec<u8>,
) {
    put_u8(out, STREAM_ABORT_TAG);
    put_u32(out, xid);
    put_u32(out, subxid);
    if let Some((abort_lsn, abort_time)) = abort_info {
        put_u64(out, abort_lsn);
        put_i64(out, abort_time);
    }
}
