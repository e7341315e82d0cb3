//! Insert ('I'): a new row.

use crate::primitive::{be_u32, be_u8, fail, put_message, put_stream_xid, put_u32, put_u8};
use crate::primitive::{read_stream_xid, read_u32, read_u8, stream_xid, PResult};
use crate::tags::INSERT_TAG;
use crate::tuple::{put_tuple, NEW_TUPLE};
use crate::{Error, ErrorKind, ProtocolContext, TupleData, TupleValue};

/// Insert: one row added to the table [`rel_id`](InsertBody::rel_id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertBody<'a> {
    xid: Option<u32>,
    rel_id: u32,
    tuple: TupleData<'a>,
}

impl<'a> InsertBody<'a> {
    /// The (sub)transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// The table's OID, as in its Relation message.
    pub fn rel_id(&self) -> u32 {
        self.rel_id
    }

    /// The new row's values, one per column of the Relation message.
    pub fn tuple(&self) -> TupleData<'a> {
        self.tuple.clone()
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, INSERT_TAG);
        put_stream_xid(out, self.xid);
        put_u32(out, self.rel_id);
        put_u8(out, NEW_TUPLE);
        self.tuple.encode(out);
    }
}

pub(crate) fn parse<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> PResult<'a, InsertBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    let (i, rel_id) = be_u32(i)?;
    let (rest, marker) = be_u8(i)?;
    if marker != NEW_TUPLE {
        return fail(i, ErrorKind::InvalidTupleMarker(marker));
    }
    let (rest, tuple) = TupleData::parse(rest, total, INSERT_TAG)?;
    Ok((rest, InsertBody { xid, rel_id, tuple }))
}

/// [`parse`] without nom, for the common case: `None` where `parse` fails.
#[inline(always)]
pub(crate) fn read<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> Option<(&'a [u8], InsertBody<'a>)> {
    let (i, xid) = read_stream_xid(i, ctx)?;
    let (i, rel_id) = read_u32(i)?;
    let (i, marker) = read_u8(i)?;
    if marker != NEW_TUPLE {
        return None;
    }
    let (rest, tuple) = TupleData::read(i, total, INSERT_TAG)?;
    Some((rest, InsertBody { xid, rel_id, tuple }))
}

/// Writes an Insert message (`logicalrep_write_insert`). `xid` is for streamed blocks only.
///
/// Fails, leaving `out` as it was, on more than 65535 values or a value of 2 GiB or more.
pub fn write_insert(
    xid: Option<u32>,
    rel_id: u32,
    new_tuple: &[TupleValue<'_>],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    put_message(out, INSERT_TAG, |out| {
        put_stream_xid(out, xid);
        put_u32(out, rel_id);
        put_u8(out, NEW_TUPLE);
        put_tuple(out, new_tuple)
    })
}
