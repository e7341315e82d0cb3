//! Begin ('B'): the start of a transaction sent at commit.

use nom::combinator::map;
use nom::sequence::tuple;

use crate::primitive::{be_i64, be_u32, be_u64, put_i64, put_u32, put_u64, put_u8, PResult};
use crate::tags::BEGIN_TAG;

/// Begin: a decoded transaction follows, up to Commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BeginBody {
    final_lsn: u64,
    commit_time: i64,
    xid: u32,
}

impl BeginBody {
    /// The LSN of the transaction's commit record.
    pub fn final_lsn(&self) -> u64 {
        self.final_lsn
    }

    /// Commit time, microseconds since 2000-01-01 00:00 UTC (`TimestampTz`).
    pub fn commit_time(&self) -> i64 {
        self.commit_time
    }

    /// The transaction id.
    pub fn xid(&self) -> u32 {
        self.xid
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_begin(self.final_lsn, self.commit_time, self.xid, out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, BeginBody> {
    map(
        tuple((be_u64, be_i64, be_u32)),
        |(final_lsn, commit_time, xid)| BeginBody {
            final_lsn,
            commit_time,
            xid,
        },
    )(i)
}

/// Writes a Begin message (`logicalrep_write_begin`).
pub fn write_begin(final_lsn: u64, commit_time: i64, xid: u32, out: &mut Vec<u8>) {
    put_u8(out, BEGIN_TAG);
    put_u64(out, final_lsn);
    put_i64(out, commit_time);
    put_u32(out, xid);
}
