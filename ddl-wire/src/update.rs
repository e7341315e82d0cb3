//! Update ('U'): a changed row, with its old key or old row when the replica identity asks.

use crate::primitive::{be_u32, be_u8, fail, put_message, put_stream_xid, put_u32, put_u8};
use crate::primitive::{read_stream_xid, read_u32, read_u8, stream_xid, PResult};
use crate::tags::UPDATE_TAG;
use crate::tuple::{put_tuple, NEW_TUPLE};
use crate::{Error, ErrorKind, OldTupleKind, ProtocolContext, TupleData, TupleValue};

/// Update: one row of [`rel_id`](UpdateBody::rel_id) changed.
///
/// The old values come first, if at all: the key columns (`K`) when the update changed the
/// replica identity key, or the whole old row (`O`) under REPLICA IDENTITY FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateBody<'a> {
    xid: Option<u32>,
    rel_id: u32,
    old: Option<(OldTupleKind, TupleData<'a>)>,
    new_tuple: TupleData<'a>,
}

impl<'a> UpdateBody<'a> {
    /// The (sub)transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// The table's OID, as in its Relation message.
    pub fn rel_id(&self) -> u32 {
        self.rel_id
    }

    /// The old key (`K`), if sent.
    pub fn key_tuple(&self) -> Option<TupleData<'a>> {
        self.old_of(OldTupleKind::Key)
    }

    /// The whole old row (`O`), if sent.
    pub fn old_tuple(&self) -> Option<TupleData<'a>> {
        self.old_of(OldTupleKind::Full)
    }

    /// Which old tuple was sent, if any.
    pub fn old_tuple_kind(&self) -> Option<OldTupleKind> {
        self.old.as_ref().map(|(kind, _)| *kind)
    }

    /// The new row. Unchanged TOASTed columns come as
    /// [`TupleValue::UnchangedToast`].
    pub fn new_tuple(&self) -> TupleData<'a> {
        self.new_tuple.clone()
    }

    fn old_of(&self, wanted: OldTupleKind) -> Option<TupleData<'a>> {
        match &self.old {
            Some((kind, tuple)) if *kind == wanted => Some(tuple.clone()),
            _ => None,
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, UPDATE_TAG);
        put_stream_xid(out, self.xid);
        put_u32(out, self.rel_id);
        if let Some((kind, tuple)) = &self.old {
            put_u8(out, kind.marker());
            tuple.encode(out);
        }
        put_u8(out, NEW_TUPLE);
        self.new_tuple.encode(out);
    }
}

pub(crate) fn parse<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> PResult<'a, UpdateBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    let (i, rel_id) = be_u32(i)?;
    let (mut rest, mut marker) = be_u8(i)?;
    let mut marker_at = i;
    let mut old = None;
    if let Some(kind) = OldTupleKind::from_marker(marker) {
        let (after_old, tuple) = TupleData::parse(rest, total, UPDATE_TAG)?;
        old = Some((kind, tuple));
        marker_at = after_old;
        (rest, marker) = be_u8(after_old)?;
    }
    if marker != NEW_TUPLE {
        return fail(marker_at, ErrorKind::InvalidTupleMarker(marker));
    }
    let (rest, new_tuple) = TupleData::parse(rest, total, UPDATE_TAG)?;
    Ok((
        rest,
        UpdateBody {
            xid,
            rel_id,
            old,
            new_tuple,
        },
    ))
}

/// [`parse`] without nom, for the common case: `None` where `parse` fails.
#[inline(always)]
pub(crate) fn read<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> Option<(&'a [u8], UpdateBody<'a>)> {
    let (i, xid) = read_stream_xid(i, ctx)?;
    let (i, rel_id) = read_u32(i)?;
    let (mut i, mut marker) = read_u8(i)?;
    let mut old = None;
    if let Some(kind) = OldTupleKind::from_marker(marker) {
        let (after_old, tuple) = TupleData::read(i, total, UPDATE_TAG)?;
        old = Some((kind, tuple));
        (i, marker) = read_u8(after_old)?;
    }
    if marker != NEW_TUPLE {
        return None;
    }
    let (rest, new_tuple) = TupleData::read(i, total, UPDATE_TAG)?;
    Some((
        rest,
        UpdateBody {
            xid,
            rel_id,
            old,
            new_tuple,
        },
    ))
}

/// Writes an Update message (`logicalrep_write_update`). `xid` is for streamed blocks only;
/// `old` is the old key or old row, when there is one to send.
///
/// Fails, leaving `out` as it was, on more than 65535 values or a value of 2 GiB or more.
pub fn write_update(
    xid: Option<u32>,
    rel_id: u32,
    old: Option<(OldTupleKind, &[TupleValue<'_>])>,
    new_tuple: &[TupleValue<'_>],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    put_message(out, UPDATE_TAG, |out| {
        put_stream_xid(out, xid);
        put_u32(out, rel_id);
        if let Some((kind, values)) = old {
            put_u8(out, kind.marker());
            put_tuple(out, values)?;
        }
        put_u8(out, NEW_TUPLE);
        put_tuple(out, new_tuple)
    })
}
