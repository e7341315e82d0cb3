//! Begin Prepare ('b'): the start of a two-phase transaction sent at PREPARE TRANSACTION.

use nom::combinator::map;

use crate::message::BEGIN_PREPARE_TAG;
use crate::prepare::{parse_prepared_txn, PreparedTxn};
use crate::primitive::{put_u8, PResult};
use crate::PgStr;

/// Begin Prepare: a transaction that will end in Prepare follows (`two_phase = true`,
/// protocol 3 and up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BeginPrepareBody<'a>(PreparedTxn<'a>);

impl<'a> BeginPrepareBody<'a> {
    /// The LSN of the prepare record.
    pub fn prepare_lsn(&self) -> u64 {
        self.0.prepare_lsn
    }

    /// The LSN just after the prepare record.
    pub fn end_lsn(&self) -> u64 {
        self.0.end_lsn
    }

    /// Prepare time, microseconds since 2000-01-01 00:00 UTC.
    pub fn prepare_time(&self) -> i64 {
        self.0.prepare_time
    }

    /// The transaction id.
    pub fn xid(&self) -> u32 {
        self.0.xid
    }

    /// The global transaction identifier given to PREPARE TRANSACTION.
    pub fn gid(&self) -> PgStr<'a> {
        self.0.gid
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, BEGIN_PREPARE_TAG);
        self.0.put(out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, BeginPrepareBody<'_>> {
    map(parse_prepared_txn, BeginPrepareBody)(i)
}

/// Writes a Begin Prepare message (`logicalrep_write_begin_prepare`). Unlike Prepare, it has
/// no flags byte.
pub fn write_begin_prepare(
    prepare_lsn: u64,
    end_lsn: u64,
    prepare_time: i64,
    xid: u32,
    gid: PgStr<'_>,
    out: &mut Vec<u8>,
) {
    BeginPrepareBody(PreparedTxn {
        prepare_lsn,
        end_lsn,
        prepare_time,
        xid,
        gid,
    })
    .encode(out);
}
