//! Origin ('O'): where a transaction was first written, for replication chains.

use nom::combinator::map;
use nom::sequence::tuple;

use crate::primitive::{be_u64, cstr, put_cstr, put_u64, put_u8, PResult};
use crate::tags::ORIGIN_TAG;
use crate::PgStr;

/// Origin: the transaction being sent was replicated here from another node. It follows
/// Begin, Begin Prepare, or the first Stream Start of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OriginBody<'a> {
    origin_lsn: u64,
    name: PgStr<'a>,
}

impl<'a> OriginBody<'a> {
    /// The commit LSN on the origin node (0 after a Stream Start, where it is not known yet).
    pub fn origin_lsn(&self) -> u64 {
        self.origin_lsn
    }

    /// The replication origin's name.
    pub fn name(&self) -> PgStr<'a> {
        self.name
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_origin(self.origin_lsn, self.name, out);
    }
}

pub(crate) fn parse(i: &[u8]) -> PResult<'_, OriginBody<'_>> {
    map(tuple((be_u64, cstr)), |(origin_lsn, name)| OriginBody {
        origin_lsn,
        name,
    })(i)
}

/// Writes an Origin message (`logicalrep_write_origin`).
pub fn write_origin(origin_lsn: u64, name: PgStr<'_>, out: &mut Vec<u8>) {
    put_u8(out, ORIGIN_TAG);
    put_u64(out, origin_lsn);
    put_cstr(out, name);
}
