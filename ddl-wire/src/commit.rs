//! Commit ('C'): the end of a transaction that began with Begin.

use nom::combinator::map;
use nom::sequence::{preceded, tuple};

use crate::primitive::{be_i64, be_u64, put_i64, put_u64, put_u8, zero_flags, PResult};
use crate::tags::COMMIT_TAG;

/// Commit: ends the transaction opened by the last Begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommitBody {
    commit_lsn: u64,
    end_lsn: u64,
    commit_time: i64,
}

impl CommitBody {
    /// The LSN of the commit record.
    pub fn commit_lsn(&self) -> u64 {
        self.commit_lsn
    }

    /// The LSN just after the commit record: where a subscriber's progress moves to.
    pub fn end_lsn(&self) -> u64 {
        self.end_lsn
    }

    /// Commit time, microseconds since 2000-01-01 00:00 UTC.
    pub fn commit_time(&self) -> i64 {
        self.commit_time
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_commit(self.commit_lsn, self.end_lsn, self.commit_time, out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, CommitBody> {
    map(
        preceded(zero_flags, tuple((be_u64, be_u64, be_i64))),
        |(commit_lsn, end_lsn, commit_time)| CommitBody {
            commit_lsn,
            end_lsn,
            commit_time,
        },
    )(i)
}

/// Writes a Commit message (`logicalrep_write_commit`); its flags byte is always 0.
pub fn write_commit(commit_lsn: u64, end_lsn: u64, commit_time: i64, out: &mut Vec<u8>) {
    put_u8(out, COMMIT_TAG);
    put_u8(out, 0);
    put_u64(out, commit_lsn);
    put_u64(out, end_lsn);
    put_i64(out, commit_time);
}
