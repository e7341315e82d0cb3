//! TupleData: the column values of Insert, Update and Delete.

use std::iter::FusedIterator;

use nom::combinator::map;

use crate::primitive::{be_u8, counted_bytes, fail, put_counted_bytes, put_u16, put_u8};
use crate::primitive::{Overflow, PResult};
use crate::sequence::{Item, Sequence};
use crate::{Error, ErrorKind};

/// One column value of a tuple.
///
/// Text and binary values are borrowed from the message. Text is in the server encoding and
/// binary is the type's send format (`binary = on`, types that have a send function).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TupleValue<'a> {
    /// `n`: SQL NULL.
    Null,
    /// `u`: a TOASTed value that did not change, so was not sent (pgoutput's cheap check,
    /// not a promise to detect every unchanged value).
    UnchangedToast,
    /// `t`: the value in text format.
    Text(&'a [u8]),
    /// `b`: the value in binary format.
    Binary(&'a [u8]),
}

impl<'a> Item<'a> for TupleValue<'a> {
    #[inline(always)]
    fn read(i: &'a [u8]) -> Option<(&'a [u8], Self)> {
        let (&kind, rest) = i.split_first()?;
        match kind {
            b'n' => Some((rest, TupleValue::Null)),
            b'u' => Some((rest, TupleValue::UnchangedToast)),
            b't' | b'b' => {
                let (len, rest) = rest.split_first_chunk::<4>()?;
                let len = usize::try_from(i32::from_be_bytes(*len)).ok()?;
                if rest.len() < len {
                    return None;
                }
                let (bytes, rest) = rest.split_at(len);
                let value = if kind == b't' {
                    TupleValue::Text(bytes)
                } else {
                    TupleValue::Binary(bytes)
                };
                Some((rest, value))
            }
            _ => None,
        }
    }

    fn parse(i: &'a [u8]) -> PResult<'a, Self> {
        let (rest, kind) = be_u8(i)?;
        match kind {
            b'n' => Ok((rest, TupleValue::Null)),
            b'u' => Ok((rest, TupleValue::UnchangedToast)),
            b't' => map(counted_bytes, TupleValue::Text)(rest),
            b'b' => map(counted_bytes, TupleValue::Binary)(rest),
            other => fail(i, ErrorKind::InvalidColumnKind(other)),
        }
    }
}

/// The column values of one tuple, read lazily from the message: an iterator of
/// `Result<TupleValue, Error>`, one item per column, in column order.
///
/// The values have no lengths in front of them as a whole, so parsing the message already
/// stepped over every one to find where the tuple ends: for a parsed message every item is `Ok`.
/// Items are still `Result`s because the iterator decodes the bytes again rather than keep what
/// parsing found (which would allocate). Clone it to walk the values again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TupleData<'a>(Sequence<'a, TupleValue<'a>>);

impl<'a> TupleData<'a> {
    pub(crate) fn parse(i: &'a [u8], total: usize, tag: u8) -> PResult<'a, TupleData<'a>> {
        map(|i| Sequence::parse(i, total, tag), TupleData)(i)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
    }
}

impl<'a> Iterator for TupleData<'a> {
    type Item = Result<TupleValue<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_item()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0.remaining(), Some(self.0.remaining()))
    }
}

impl ExactSizeIterator for TupleData<'_> {}

impl FusedIterator for TupleData<'_> {}

/// Writes a TupleData from values: the column count, then each value with its kind byte.
pub(crate) fn put_tuple(out: &mut Vec<u8>, values: &[TupleValue<'_>]) -> Result<(), Overflow> {
    let count = u16::try_from(values.len()).map_err(|_| Overflow { at: out.len() })?;
    put_u16(out, count);
    for value in values {
        match value {
            TupleValue::Null => put_u8(out, b'n'),
            TupleValue::UnchangedToast => put_u8(out, b'u'),
            TupleValue::Text(bytes) => {
                put_u8(out, b't');
                put_counted_bytes(out, bytes)?;
            }
            TupleValue::Binary(bytes) => {
                put_u8(out, b'b');
                put_counted_bytes(out, bytes)?;
            }
        }
    }
    Ok(())
}

/// Which old tuple an Update or Delete carries, by the byte that introduces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OldTupleKind {
    /// `K`: the replica identity key columns only (REPLICA IDENTITY DEFAULT or USING INDEX);
    /// the other columns are sent as NULL.
    Key,
    /// `O`: the whole old row (REPLICA IDENTITY FULL).
    Full,
}

impl OldTupleKind {
    pub(crate) fn from_marker(marker: u8) -> Option<OldTupleKind> {
        match marker {
            b'K' => Some(OldTupleKind::Key),
            b'O' => Some(OldTupleKind::Full),
            _ => None,
        }
    }

    pub(crate) fn marker(self) -> u8 {
        match self {
            OldTupleKind::Key => b'K',
            OldTupleKind::Full => b'O',
        }
    }
}

/// The byte that introduces the new tuple.
pub(crate) const NEW_TUPLE: u8 = b'N';
