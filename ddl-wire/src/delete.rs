//! Delete ('D'): a removed row, identified by its key or its whole old row.

use crate::primitive::{be_u32, be_u8, fail, put_message, put_stream_xid, put_u32, put_u8};
use crate::primitive::{read_stream_xid, read_u32, read_u8, stream_xid, PResult};
use crate::tags::DELETE_TAG;
use crate::tuple::put_tuple;
use crate::{Error, ErrorKind, OldTupleKind, ProtocolContext, TupleData, TupleValue};

/// Delete: one row of [`rel_id`](DeleteBody::rel_id) removed. Exactly one of
/// [`key_tuple`](DeleteBody::key_tuple) and [`old_tuple`](DeleteBody::old_tuple) is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteBody<'a> {
    xid: Option<u32>,
    rel_id: u32,
    kind: OldTupleKind,
    tuple: TupleData<'a>,
}

impl<'a> DeleteBody<'a> {
    /// The (sub)transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// The table's OID, as in its Relation message.
    pub fn rel_id(&self) -> u32 {
        self.rel_id
    }

    /// The key columns (`K`; other columns are NULL), unless the table has REPLICA IDENTITY
    /// FULL.
    pub fn key_tuple(&self) -> Option<TupleData<'a>> {
        (self.kind == OldTupleKind::Key).then(|| self.tuple.clone())
    }

    /// The whole old row (`O`), under REPLICA IDENTITY FULL.
    pub fn old_tuple(&self) -> Option<TupleData<'a>> {
        (self.kind == OldTupleKind::Full).then(|| self.tuple.clone())
    }

    /// Which of the two was sent.
    pub fn old_tuple_kind(&self) -> OldTupleKind {
        self.kind
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, DELETE_TAG);
        put_stream_xid(out, self.xid);
        put_u32(out, self.rel_id);
        put_u8(out, self.kind.marker());
        self.tuple.encode(out);
    }
}

pub(crate) fn parse<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> PResult<'a, DeleteBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    let (i, rel_id) = be_u32(i)?;
    let (rest, marker) = be_u8(i)?;
    let Some(kind) = OldTupleKind::from_marker(marker) else {
        return fail(i, ErrorKind::InvalidTupleMarker(marker));
    };
    let (rest, tuple) = TupleData::parse(rest, total, DELETE_TAG)?;
    Ok((
        rest,
        DeleteBody {
            xid,
            rel_id,
            kind,
            tuple,
        },
    ))
}

/// [`parse`] without nom, for the common case: `None` where `parse` fails.
#[inline(always)]
pub(crate) fn read<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> Option<(&'a [u8], DeleteBody<'a>)> {
    let (i, xid) = read_stream_xid(i, ctx)?;
    let (i, rel_id) = read_u32(i)?;
    let (i, marker) = read_u8(i)?;
    let kind = OldTupleKind::from_marker(marker)?;
    let (rest, tuple) = TupleData::read(i, total, DELETE_TAG)?;
    Some((
        rest,
        DeleteBody {
            xid,
            rel_id,
            kind,
            tuple,
        },
    ))
}

/// Writes a Delete message (`logicalrep_write_delete`). `xid` is for streamed blocks only.
///
/// Fails, leaving `out` as it was, on more than 65535 values or a value of 2 GiB or more.
pub fn write_delete(
    xid: Option<u32>,
    rel_id: u32,
    kind: OldTupleKind,
    old_tuple: &[TupleValue<'_>],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    put_message(out, DELETE_TAG, |out| {
        put_stream_xid(out, xid);
        put_u32(out, rel_id);
        put_u8(out, kind.marker());
        put_tuple(out, old_tuple)
    })
}
