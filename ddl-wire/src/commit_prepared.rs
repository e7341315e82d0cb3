//! Commit Prepared ('K'): COMMIT PREPARED of a transaction sent earlier.

use nom::combinator::map;
use nom::sequence::{preceded, tuple};

use crate::primitive::{be_i64, be_u32, be_u64, cstr, put_cstr, put_i64, put_u32, put_u64};
use crate::primitive::{put_u8, zero_flags, PResult};
use crate::tags::COMMIT_PREPARED_TAG;
use crate::PgStr;

/// Commit Prepared: the prepared transaction [`gid`](CommitPreparedBody::gid) committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommitPreparedBody<'a> {
    commit_lsn: u64,
    end_lsn: u64,
    commit_time: i64,
    xid: u32,
    gid: PgStr<'a>,
}

impl<'a> CommitPreparedBody<'a> {
    /// The LSN of the commit-prepared record.
    pub fn commit_lsn(&self) -> u64 {
        self.commit_lsn
    }

    /// The LSN just after the commit-prepared record.
    pub fn end_lsn(&self) -> u64 {
        self.end_lsn
    }

    /// Commit time, microseconds since 2000-01-01 00:00 UTC.
    pub fn commit_time(&self) -> i64 {
        self.commit_time
    }

    /// The transaction id.
    pub fn xid(&self) -> u32 {
        self.xid
    }

    /// The global transaction identifier.
    pub fn gid(&self) -> PgStr<'a> {
        self.gid
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_commit_prepared(
            self.commit_lsn,
            self.end_lsn,
            self.commit_time,
            self.xid,
            self.gid,
            out,
        );
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, CommitPreparedBody<'_>> {
    map(
        preceded(zero_flags, tuple((be_u64, be_u64, be_i64, be_u32, cstr))),
        |(commit_lsn, end_lsn, commit_time, xid, gid)| CommitPreparedBody {
            commit_lsn,
            end_lsn,
            commit_time,
            xid,
            gid,
        },
    )(i)
}

/// Writes a Commit Prepared message (`logicalrep_write_commit_prepared`); its flags byte is
/// always 0.
pub fn write_commit_prepared(
    commit_lsn: u64,
    end_lsn: u64,
    commit_time: i64,
    xid: u32,
    gid: PgStr<'_>,
    out: &mut Vec<u8>,
) {
    put_u8(out, COMMIT_PREPARED_TAG);
    put_u8(out, 0);
    put_u64(out, commit_lsn);
    put_u64(out, end_lsn);
    put_i64(out, commit_time);
    put_u32(out, xid);
    put_cstr(out, gid);
}
