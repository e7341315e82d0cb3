//! Stream Prepare ('p'): a streamed two-phase transaction was prepared.

use nom::combinator::map;
use nom::sequence::preceded;

use crate::prepare::{parse_prepared_txn, PreparedTxn};
use crate::primitive::{put_u8, zero_flags, PResult};
use crate::tags::STREAM_PREPARE_TAG;

/// Stream Prepare: everything streamed for [`xid`](StreamPrepareBody::xid) is prepared
/// (streaming and `two_phase = true`, protocol 3 and up). Same fields as Prepare; sent outside
/// any streamed block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamPrepareBody<'a>(PreparedTxn<'a>);

impl<'a> StreamPrepareBody<'a> {
    /// Its fields.
    pub fn txn(&self) -> &PreparedTxn<'a> {
        &self.0
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, STREAM_PREPARE_TAG);
        put_u8(out, 0);
        self.0.put(out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, StreamPrepareBody<'_>> {
    map(preceded(zero_flags, parse_prepared_txn), StreamPrepareBody)(i)
}

/// Writes a Stream Prepare message (`logicalrep_write_stream_prepare`); its flags byte is
/// always 0.
pub fn write_stream_prepare(txn: &PreparedTxn<'_>, out: &mut Vec<u8>) {
    StreamPrepareBody(*txn).encode(out);
}
