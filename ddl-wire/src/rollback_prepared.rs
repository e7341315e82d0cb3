//! Rollback Prepared ('r'): ROLLBACK PREPARED of a transaction sent earlier.

use nom::combinator::map;
use nom::sequence::{preceded, tuple};

use crate::primitive::{be_i64, be_u32, be_u64, cstr, put_cstr, put_i64, put_u32, put_u64};
use crate::primitive::{put_u8, zero_flags, PResult};
use crate::tags::ROLLBACK_PREPARED_TAG;
use crate::PgStr;

/// Rollback Prepared: the prepared transaction [`gid`](RollbackPreparedBody::gid) was rolled
/// back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RollbackPreparedBody<'a> {
    prepare_end_lsn: u64,
    rollback_end_lsn: u64,
    prepare_time: i64,
    rollback_time: i64,
    xid: u32,
    gid: PgStr<'a>,
}

impl<'a> RollbackPreparedBody<'a> {
    /// The LSN just after the prepare record, which tells a subscriber whether it ever saw the
    /// prepare.
    pub fn prepare_end_lsn(&self) -> u64 {
        self.prepare_end_lsn
    }

    /// The LSN just after the rollback-prepared record.
    pub fn rollback_end_lsn(&self) -> u64 {
        self.rollback_end_lsn
    }

    /// Prepare time, microseconds since 2000-01-01 00:00 UTC.
    pub fn prepare_time(&self) -> i64 {
        self.prepare_time
    }

    /// Rollback time, microseconds since 2000-01-01 00:00 UTC.
    pub fn rollback_time(&self) -> i64 {
        self.rollback_time
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
        write_rollback_prepared(
            self.prepare_end_lsn,
            self.rollback_end_lsn,
            self.prepare_time,
            self.rollback_time,
            self.xid,
            self.gid,
            out,
        );
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, RollbackPreparedBody<'_>> {
    map(
        preceded(
            zero_flags,
            tuple((be_u64, be_u64, be_i64, be_i64, be_u32, cstr)),
        ),
        |(prepare_end_lsn, rollback_end_lsn, prepare_time, rollback_time, xid, gid)| {
            RollbackPreparedBody {
                prepare_end_lsn,
                rollback_end_lsn,
                prepare_time,
                rollback_time,
                xid,
                gid,
            }
        },
    )(i)
}

/// Writes a Rollback Prepared message (`logicalrep_write_rollback_prepared`); its flags byte
/// is always 0.
pub fn write_rollback_prepared(
    prepare_end_lsn: u64,
    rollback_end_lsn: u64,
    prepare_time: i64,
    rollback_time: i64,
    xid: u32,
    gid: PgStr<'_>,
    out: &mut Vec<u8>,
) {
    put_u8(out, ROLLBACK_PREPARED_TAG);
    put_u8(out, 0);
    put_u64(out, prepare_end_lsn);
    put_u64(out, rollback_end_lsn);
    put_i64(out, prepare_time);
    put_i64(out, rollback_time);
    put_u32(out, xid);
    put_cstr(out, gid);
}
