//! Stream Commit ('c'): a streamed transaction committed.

use nom::combinator::map;
use nom::sequence::tuple;

use crate::primitive::PResult;
use crate::primitive::{be_i64, be_u32, be_u64, put_i64, put_u32, put_u64, put_u8, zero_flags};
use crate::tags::STREAM_COMMIT_TAG;

/// Stream Commit: apply everything streamed for [`xid`](StreamCommitBody::xid). Sent outside
/// any streamed block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamCommitBody {
    xid: u32,
    commit_lsn: u64,
    end_lsn: u64,
    commit_time: i64,
}

impl StreamCommitBody {
    /// The top-level transaction id.
    pub fn xid(&self) -> u32 {
        self.xid
    }

    /// The LSN of the commit record.
    pub fn commit_lsn(&self) -> u64 {
        self.commit_lsn
    }

    /// The LSN just after the commit record.
    pub fn end_lsn(&self) -> u64 {
        self.end_lsn
    }

    /// Commit time, microseconds since 2000-01-01 00:00 UTC.
    pub fn commit_time(&self) -> i64 {
        self.commit_time
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_stream_commit(
            self.xid,
            self.commit_lsn,
            self.end_lsn,
            self.commit_time,
            out,
        );
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, StreamCommitBody> {
    let (i, xid) = be_u32(i)?;
    let (i, ()) = zero_flags(i)?;
    map(
        tuple((be_u64, be_u64, be_i64)),
        move |(commit_lsn, end_lsn, commit_time)| StreamCommitBody {
            xid,
            commit_lsn,
            end_lsn,
            commit_time,
        },
    )(i)
}

/// Writes a Stream Commit message (`logicalrep_write_stream_commit`); its flags byte is
/// always 0.
pub fn write_stream_commit(
    xid: u32,
    commit_lsn: u64,
    end_lsn: u64,
    commit_time: i64,
    out: &mut Vec<u8>,
) {
    put_u8(out, STREAM_COMMIT_TAG);
    put_u32(out, xid);
    put_u8(out, 0);
    put_u64(out, commit_lsn);
    put_u64(out, end_lsn);
    put_i64(out, commit_time);
}
