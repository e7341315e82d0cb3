//! The lazy, borrowed list behind [`Columns`](crate::Columns) and
//! [`TupleData`](crate::TupleData): an Int16 count, then that many items.

use std::marker::PhantomData;

use nom::bytes::complete::take;

use crate::primitive::{be_u16, put_u16, to_error, PResult};
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
}

/// The bytes of a counted list, read again item by item on demand.
///
/// The items have no length prefix, so a parser must step over every one of them to find
/// where the list ends. [`Sequence::parse`] does exactly that once, which also validates them:
/// iterating a parsed sequence runs the same item parser over the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sequence<'a, T> {
    remaining: u16,
    rest: &'a [u8],
    /// Offset, in the message, of the end of `rest`: error offsets are computed from it.
    end: usize,
    tag: u8,
    item: PhantomData<T>,
}

impl<'a, T: Item<'a>> Sequence<'a, T> {
    /// Reads the count and steps over the items. `total` is the length of the buffer that `i`
    /// is a suffix of, and `tag` the message type, both for error reports.
    #[inline]
    pub(crate) fn parse(i: &'a [u8], total: usize, tag: u8) -> PResult<'a, Self> {
        let (start, count) = be_u16(i)?;
        let mut after = start;
        for _ in 0..count {
            after = match T::read(after) {
                Some((rest, _)) => rest,
                None => T::parse(after)?.0,
            };
        }
        let (after, bytes) = take(start.len().saturating_sub(after.len()))(start)?;
        Ok((
            after,
            Sequence {
                remaining: count,
                rest: bytes,
                end: total.saturating_sub(after.len()),
                tag,
                item: PhantomData,
            },
        ))
    }

    #[inline]
    pub(crate) fn next_item(&mut self) -> Option<Result<T, Error>> {
        if self.remaining == 0 {
            return None;
        }
        if let Some((rest, item)) = T::read(self.rest) {
            self.rest = rest;
            self.remaining -= 1;
            return Some(Ok(item));
        }
        match T::parse(self.rest) {
            Ok((rest, item)) => {
                self.rest = rest;
                self.remaining -= 1;
                Some(Ok(item))
            }
            Err(e) => {
                // Nothing after a bad item can be found: stop there.
                self.remaining = 0;
                Some(Err(to_error(e, self.end, Some(self.tag))))
            }
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        usize::from(self.remaining)
    }

    /// Writes the count and the items as they came, byte for byte.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u16(out, self.remaining);
        out.extend_from_slice(self.rest);
    }
}
