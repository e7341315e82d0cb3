//! Prepare ('P'): a two-phase transaction was prepared; and the fields it shares with
//! Begin Prepare and Stream Prepare (proto.c's `LogicalRepPreparedTxnData`).

use nom::combinator::map;
use nom::sequence::{preceded, tuple};

use crate::primitive::{be_i64, be_u32, be_u64, cstr, put_cstr, put_i64, put_u32, put_u64};
use crate::primitive::{put_u8, zero_flags, PResult};
use crate::tags::PREPARE_TAG;
use crate::PgStr;

/// The fields Begin Prepare, Prepare and Stream Prepare share (`LogicalRepPreparedTxnData`);
/// each body's [`txn`](PrepareBody::txn) returns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PreparedTxn<'a> {
    /// The LSN of the prepare record.
    pub prepare_lsn: u64,
    /// The LSN just after the prepare record.
    pub end_lsn: u64,
    /// Prepare time, microseconds since 2000-01-01 00:00 UTC.
    pub prepare_time: i64,
    /// The (top-level) transaction id.
    pub xid: u32,
    /// The global transaction identifier given to PREPARE TRANSACTION.
    pub gid: PgStr<'a>,
}

impl PreparedTxn<'_> {
    pub(crate) fn put(&self, out: &mut Vec<u8>) {
        put_u64(out, self.prepare_lsn);
        put_u64(out, self.end_lsn);
        put_i64(out, self.prepare_time);
        put_u32(out, self.xid);
        put_cstr(out, self.gid);
    }
}

pub(crate) fn parse_prepared_txn(i: &[u8]) -> PResult<'_, PreparedTxn<'_>> {
    map(
        tuple((be_u64, be_u64, be_i64, be_u32, cstr)),
        |(prepare_lsn, end_lsn, prepare_time, xid, gid)| PreparedTxn {
            prepare_lsn,
            end_lsn,
            prepare_time,
            xid,
            gid,
        },
    )(i)
}

/// Prepare: the transaction opened by Begin Prepare was prepared (PREPARE TRANSACTION), and
/// waits for Commit Prepared or Rollback Prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrepareBody<'a>(PreparedTxn<'a>);

impl<'a> PrepareBody<'a> {
    /// Its fields.
    pub fn txn(&self) -> &PreparedTxn<'a> {
        &self.0
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, PREPARE_TAG);
        put_u8(out, 0);
        self.0.put(out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, PrepareBody<'_>> {
    map(preceded(zero_flags, parse_prepared_txn), PrepareBody)(i)
}

/// Writes a Prepare message (`logicalrep_write_prepare`); its flags byte is always 0.
pub fn write_prepare(txn: &PreparedTxn<'_>, out: &mut Vec<u8>) {
    PrepareBody(*txn).encode(out);
}
