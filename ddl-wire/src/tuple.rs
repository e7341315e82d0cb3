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

/// How many bytes start a column value, by its kind byte: the kind and an Int32 length for
/// text and binary, the kind alone for NULL and unchanged TOAST, 0 for a byte that is no kind.
/// One load instead of a four-way branch on the kind, for every value of every change.
static HEADER_LEN: [u8; 256] = {
    let mut len = [0; 256];
    len[b't' as usize] = 5;
    len[b'b' as usize] = 5;
    len[b'n' as usize] = 1;
    len[b'u' as usize] = 1;
    len
};

impl<'a> Item<'a> for TupleValue<'a> {
    #[inline(always)]
    fn read(i: &'a [u8]) -> Option<(&'a [u8], Self)> {
        let (&kind, rest) = i.split_first()?;
        match HEADER_LEN[usize::from(kind)] {
            5 => {
                let (len, rest) = rest.split_first_chunk::<4>()?;
                let len = usize::try_from(i32::from_be_bytes(*len)).ok()?;
                let (bytes, rest) = rest.split_at_checked(len)?;
                let value = if kind == b't' {
                    TupleValue::Text(bytes)
                } else {
                    TupleValue::Binary(bytes)
                };
                Some((rest, value))
            }
            1 => {
                let value = if kind == b'n' {
                    TupleValue::Null
                } else {
                    TupleValue::UnchangedToast
                };
                Some((rest, value))
            }
            _ => None,
        }
    }

    /// Every value of every change is stepped over here while the message is parsed, so this
    /// only moves a position. Where five bytes are left, one bounds check covers a kind and a
    /// length; a value that runs past the end moves the position past it, where `get` finds
    /// nothing. The last values, in fewer than five bytes (NULLs that end a row), go through
    /// `read`.
    #[inline(always)]
    fn skip(i: &'a [u8], count: u16) -> Option<usize> {
        let mut at = 0usize;
        let mut left = count;
        // `at < five_left` is `at + 5 <= i.len()`, without an overflow to think about.
        let five_left = i.len().saturating_sub(4);
        while left > 0 && at < five_left {
            let Some(&[kind, l0, l1, l2, l3]) = i.get(at..at + 5) else {
                break;
            };
            match HEADER_LEN[usize::from(kind)] {
                5 => {
                    let len = usize::try_from(i32::from_be_bytes([l0, l1, l2, l3])).ok()?;
                    at = (at + 5).checked_add(len)?;
                }
                1 => at += 1,
                _ => return None,
            }
            left -= 1;
        }
        let mut rest = i.get(at..)?;
        for _ in 0..left {
            rest = Self::read(rest)?.0;
        }
        Some(i.len() - rest.len())
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

    /// [`parse`](TupleData::parse) without nom: `None` where `parse` fails.
    #[inline(always)]
    pub(crate) fn read(i: &'a [u8], total: usize, tag: u8) -> Option<(&'a [u8], TupleData<'a>)> {
        let (rest, values) = Sequence::read(i, total, tag)?;
        Some((rest, TupleData(values)))
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
    }
}

impl<'a> Iterator for TupleData<'a> {
    type Item = Result<TupleValue<'a>, Error>;

    #[inline]
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
