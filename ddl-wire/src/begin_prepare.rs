//! Begin Prepare ('b'): the start of a two-phase transaction sent at PREPARE TRANSACTION.

use nom::combinator::map;

use crate::prepare::{parse_prepared_txn, PreparedTxn};
use crate::primitive::{put_u8, PResult};
use crate::tags::BEGIN_PREPARE_TAG;

/// Begin Prepare: a transaction that will end in Prepare follows (`two_phase = true`,
/// protocol 3 and up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BeginPrepareBody<'a>(PreparedTxn<'a>);

impl<'a> BeginPrepareBody<'a> {
    /// Its fields.
    pub fn txn(&self) -> &PreparedTxn<'a> {
        &self.0
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
pub fn write_begin_prepare(txn: &PreparedTxn<'_>, out: &mut Vec<u8>) {
    BeginPrepareBody(*txn).encode(out);
}
