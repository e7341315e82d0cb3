//! Field readers (nom parsers) and writers shared by every message module.
//!
//! The readers work on suffixes of the buffer handed to [`Message::parse`](crate::Message::parse),
//! so the length of the input left when one fails is enough to compute the byte offset of the
//! failure: `buffer length - remaining`. That is all [`Failure`] records.

use memchr::memchr;
use nom::bytes::complete::take;
use nom::number::complete as number;

use crate::{Error, ErrorKind, PgStr, ProtocolContext};

/// Why a parser stopped, and how much input was left where it did.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: ErrorKind,
    remaining: usize,
}

impl<'a> nom::error::ParseError<&'a [u8]> for Failure {
    /// The only nom parsers used here count bytes (`take`, `be_u32`, ...), and running out of
    /// input is their only way to fail: so whatever nom reports means "incomplete".
    fn from_error_kind(input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        Failure {
            kind: ErrorKind::Incomplete,
            remaining: input.len(),
        }
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

/// What every parser here returns.
pub(crate) type PResult<'a, T> = nom::IResult<&'a [u8], T, Failure>;

/// Fails with `kind` at the start of `at`.
pub(crate) fn fail<T>(at: &[u8], kind: ErrorKind) -> PResult<'_, T> {
    Err(nom::Err::Failure(Failure {
        kind,
        remaining: at.len(),
    }))
}

/// Turns a parser failure into an [`Error`]. `end` is the offset, in the caller's buffer, of the
/// end of the input the parser was given.
pub(crate) fn to_error(err: nom::Err<Failure>, end: usize, tag: Option<u8>) -> Error {
    match err {
        nom::Err::Error(f) | nom::Err::Failure(f) => {
            Error::new(f.kind, end.saturating_sub(f.remaining), tag)
        }
        // Only nom's streaming parsers say `Incomplete`; none is used, but the match must be
        // total: the input ran out at its end.
        nom::Err::Incomplete(_) => Error::new(ErrorKind::Incomplete, end, tag),
    }
}

/// Int8.
pub(crate) fn be_u8(i: &[u8]) -> PResult<'_, u8> {
    number::be_u8(i)
}

/// Int16 (a column count).
pub(crate) fn be_u16(i: &[u8]) -> PResult<'_, u16> {
    number::be_u16(i)
}

/// Int32 read as an unsigned number (an OID, a transaction id, a count).
pub(crate) fn be_u32(i: &[u8]) -> PResult<'_, u32> {
    number::be_u32(i)
}

/// Int32 read as a signed number (a type modifier, a length).
pub(crate) fn be_i32(i: &[u8]) -> PResult<'_, i32> {
    number::be_i32(i)
}

/// Int64 read as an unsigned number (an LSN).
pub(crate) fn be_u64(i: &[u8]) -> PResult<'_, u64> {
    number::be_u64(i)
}

/// Int64 read as a signed number (a `TimestampTz`).
pub(crate) fn be_i64(i: &[u8]) -> PResult<'_, i64> {
    number::be_i64(i)
}

/// String: bytes up to a NUL, which is consumed but not returned.
pub(crate) fn cstr(i: &[u8]) -> PResult<'_, PgStr<'_>> {
    match memchr(0, i) {
        Some(len) => {
            let (rest, bytes) = take(len)(i)?;
            let (rest, _nul) = take(1usize)(rest)?;
            Ok((rest, PgStr::from_parsed(bytes)))
        }
        None => fail(i, ErrorKind::Incomplete),
    }
}

/// Int32 length then that many bytes (tuple column values, logical message content).
///
/// PostgreSQL reads the length as a signed `int`; a negative one cannot come from a server.
pub(crate) fn counted_bytes(i: &[u8]) -> PResult<'_, &[u8]> {
    let (rest, len) = be_i32(i)?;
    match usize::try_from(len) {
        Ok(len) => take(len)(rest),
        Err(_) => fail(i, ErrorKind::InvalidLength(len)),
    }
}

/// An Int8 flags field that PostgreSQL defines but always sends as 0 ("unused for now" in
/// proto.c, whose readers reject anything else).
pub(crate) fn zero_flags(i: &[u8]) -> PResult<'_, ()> {
    let (rest, flags) = be_u8(i)?;
    if flags != 0 {
        return fail(i, ErrorKind::InvalidFlags(flags));
    }
    Ok((rest, ()))
}

/// The transaction id that pgoutput puts in front of changes between Stream Start and Stream
/// Stop, and only there ("if not valid, we're not streaming").
pub(crate) fn stream_xid<'a>(i: &'a [u8], ctx: &ProtocolContext) -> PResult<'a, Option<u32>> {
    if ctx.in_stream() {
        let (rest, xid) = be_u32(i)?;
        Ok((rest, Some(xid)))
    } else {
        Ok((i, None))
    }
}

/// The readers below are the nom readers above without nom: `Some` exactly where those
/// succeed, with the same value and rest. Insert, Update and Delete, most of any stream, are
/// read with them first (`None` then runs the nom reader for the error): their few fixed fields
/// cost more through nom's `Result`s, which carry an error kind and offset, than to read.
#[inline(always)]
pub(crate) fn read_u8(i: &[u8]) -> Option<(&[u8], u8)> {
    let (&v, rest) = i.split_first()?;
    Some((rest, v))
}

#[inline(always)]
pub(crate) fn read_u16(i: &[u8]) -> Option<(&[u8], u16)> {
    let (v, rest) = i.split_first_chunk()?;
    Some((rest, u16::from_be_bytes(*v)))
}

#[inline(always)]
pub(crate) fn read_u32(i: &[u8]) -> Option<(&[u8], u32)> {
    let (v, rest) = i.split_first_chunk()?;
    Some((rest, u32::from_be_bytes(*v)))
}

/// [`stream_xid`] without nom.
#[inline(always)]
pub(crate) fn read_stream_xid<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
) -> Option<(&'a [u8], Option<u32>)> {
    if ctx.in_stream() {
        let (rest, xid) = read_u32(i)?;
        Some((rest, Some(xid)))
    } else {
        Some((i, None))
    }
}

pub(crate) fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// A [`PgStr`] cannot hold a NUL, so the terminator written here is the only one.
pub(crate) fn put_cstr(out: &mut Vec<u8>, s: PgStr<'_>) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

pub(crate) fn put_stream_xid(out: &mut Vec<u8>, xid: Option<u32>) {
    if let Some(xid) = xid {
        put_u32(out, xid);
    }
}

/// Int32 length then the bytes; fails when the length does not fit PostgreSQL's `int`.
pub(crate) fn put_counted_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), Overflow> {
    let len = i32::try_from(bytes.len()).map_err(|_| Overflow { at: out.len() })?;
    put_i32(out, len);
    out.extend_from_slice(bytes);
    Ok(())
}

/// A count or length that does not fit its wire field, at byte `at` of the output buffer.
pub(crate) struct Overflow {
    pub(crate) at: usize,
}

/// Appends one message, the tag and then what `body` writes. If `body` fails, `out` is put back
/// as it was, so a caller never sees half a message.
pub(crate) fn put_message(
    out: &mut Vec<u8>,
    tag: u8,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), Overflow>,
) -> Result<(), Error> {
    let start = out.len();
    out.push(tag);
    body(out).map_err(|e| {
        out.truncate(start);
        Error::new(ErrorKind::Overflow, e.at.saturating_sub(start), Some(tag))
    })
}
