//! The lazy, borrowed list behind [`Columns`](crate::Columns) and
//! [`TupleData`](crate::TupleData): an Int16 count, then that many items.

use std::marker::PhantomData;

use crate::primitive::{be_u16, put_u16, read_u16, to_error, PResult};
use crate::Error;

/// One item of a counted list, read from the front of its input.
pub(crate) trait Item<'a>: Sized {
    fn parse(i: &'a [u8]) -> PResult<'a, Self>;

    /// Reads one item without nom's error plumbing; `None` where `parse` would fail (it is then
    /// run for the error).
    #[inline]
    fn read(i: &'a [u8]) -> Option<(&'a [u8], Self)> {
        Self::parse(i).ok()
    }

    /// Steps over `count` items at the start of `i` and returns how many bytes they take;
    /// `None` where `parse` would fail on one of them.
    #[inline]
    fn skip(i: &'a [u8], count: u16) -> Option<usize> {
        let mut rest = i;
        for _ in 0..count {
            rest = Self::read(rest)?.0;
        }
        Some(i.len() - rest.len())
    }
}

/// The bytes of a counted list, read again item by item on demand.
///
/// The items have no length prefix, so a parser must step over every one of them to find
/// where the list ends. [`Sequence::parse`] does exactly that once, which also validates them:
/// iterating a parsed sequence reads the same items from the same bytes, and cannot fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sequence<'a, T> {
    rest: &'a [u8],
    /// Offset, in the message, of the end of `rest`, for the error of an item that does not
    /// read. Parsing has read every item, so no such error comes from a parsed message; a u32
    /// keeps the sequence (and so every message holding one) 8 bytes smaller, and saturates on
    /// a buffer of 4 GiB or more, which no PostgreSQL sends (its messages stay under 1 GiB).
    end: u32,
    remaining: u16,
    tag: u8,
    item: PhantomData<T>,
}

impl<'a, T: Item<'a>> Sequence<'a, T> {
    /// Reads the count and steps over the items. `total` is the length of the buffer that `i`
    /// is a suffix of, and `tag` the message type, both for error reports.
    #[inline]
    pub(crate) fn parse(i: &'a [u8], total: usize, tag: u8) -> PResult<'a, Self> {
        match Sequence::read(i, total, tag) {
            Some(parsed) => Ok(parsed),
            None => Sequence::parse_for_error(i, total, tag),
        }
    }

    /// [`parse`](Sequence::parse) without nom: `None` where `parse` fails.
    #[inline(always)]
    pub(crate) fn read(i: &'a [u8], total: usize, tag: u8) -> Option<(&'a [u8], Self)> {
        let (start, count) = read_u16(i)?;
        let (bytes, after) = start.split_at_checked(T::skip(start, count)?)?;
        Some((after, Sequence::new(bytes, count, total, after, tag)))
    }

    /// Steps over the items with `T::parse`, which says where and why one is wrong.
    #[cold]
    #[inline(never)]
    fn parse_for_error(i: &'a [u8], total: usize, tag: u8) -> PResult<'a, Self> {
        let (start, count) = be_u16(i)?;
        let mut after = start;
        for _ in 0..count {
            after = T::parse(after)?.0;
        }
        let bytes = start
            .get(..start.len().saturating_sub(after.len()))
            .unwrap_or_default();
        Ok((after, Sequence::new(bytes, count, total, after, tag)))
    }

    #[inline(always)]
    fn new(bytes: &'a [u8], count: u16, total: usize, after: &[u8], tag: u8) -> Self {
        let end = total.saturating_sub(after.len());
        Sequence {
            rest: bytes,
            end: u32::try_from(end).unwrap_or(u32::MAX),
            remaining: count,
            tag,
            item: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn next_item(&mut self) -> Option<Result<T, Error>> {
        if self.remaining == 0 {
            return None;
        }
        match T::read(self.rest) {
            Some((rest, item)) => {
                self.rest = rest;
                self.remaining -= 1;
                Some(Ok(item))
            }
            None => Some(self.parse_item()),
        }
    }

    /// The next item by `T::parse`, for its error. Parsing read every item of the sequence, so
    /// for a parsed message this is never reached.
    #[cold]
    #[inline(never)]
    fn parse_item(&mut self) -> Result<T, Error> {
        match T::parse(self.rest) {
            Ok((rest, item)) => {
                self.rest = rest;
                self.remaining -= 1;
                Ok(item)
            }
            Err(e) => {
                // Nothing after a bad item can be found: stop there.
                self.remaining = 0;
                let end = usize::try_from(self.end).unwrap_or(usize::MAX);
                Err(to_error(e, end, Some(self.tag)))
            }
        }
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        usize::from(self.remaining)
    }

    /// Writes the count and the items as they came, byte for byte.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u16(out, self.remaining);
        out.extend_from_slice(self.rest);
    }
}
