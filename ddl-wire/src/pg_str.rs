//! Borrowed NUL-terminated strings.

use std::ffi::CStr;
use std::fmt;

use crate::{Error, ErrorKind};

/// A string that PostgreSQL sends NUL-terminated (names, message prefixes, GIDs), borrowed
/// from the message without its terminator.
///
/// The bytes are in the server encoding, which need not be UTF-8, so this is a byte string with
/// a fallible [`to_str`](PgStr::to_str); it never contains a NUL.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PgStr<'a>(&'a [u8]);

impl<'a> PgStr<'a> {
    /// Wraps `bytes` for writing, refusing a NUL inside (it would end the string early on the
    /// wire); the error's offset is where that NUL is.
    pub fn new(bytes: &'a [u8]) -> Result<PgStr<'a>, Error> {
        match memchr::memchr(0, bytes) {
            Some(at) => Err(Error::new(ErrorKind::InteriorNul, at, None)),
            None => Ok(PgStr(bytes)),
        }
    }

    /// For bytes that a parser cut at the first NUL.
    pub(crate) fn from_parsed(bytes: &'a [u8]) -> PgStr<'a> {
        PgStr(bytes)
    }

    /// The bytes, without the terminator.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The string, if it is UTF-8.
    pub fn to_str(&self) -> Result<&'a str, std::str::Utf8Error> {
        std::str::from_utf8(self.0)
    }

    /// Length in bytes, without the terminator.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty string (which Relation and Type use for `pg_catalog`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A C string literal is a valid `PgStr`: `PgStr::from(c"public")`.
impl<'a> From<&'a CStr> for PgStr<'a> {
    fn from(s: &'a CStr) -> PgStr<'a> {
        PgStr(s.to_bytes())
    }
}

impl AsRef<[u8]> for PgStr<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0
    }
}

impl PartialEq<str> for PgStr<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for PgStr<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<[u8]> for PgStr<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        self.0 == other
    }
}

/// Escaped like a byte string literal, so non-UTF-8 names stay readable.
impl fmt::Debug for PgStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

/// Lossy: invalid UTF-8 shows as U+FFFD, without allocating.
impl fmt::Display for PgStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }
}
