//! pg_dump's archive primitives (`ReadInt`, `ReadStr`, `ReadOffset`), bounds-checked.

use crate::Error;

/// A cursor over the archive's bytes, with the integer and offset sizes its header gave.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    int_size: usize,
    offset_size: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader {
            bytes,
            at: 0,
            // Until the header says otherwise: what pg_dump writes (sizeof(int)).
            int_size: 4,
            offset_size: 8,
        }
    }

    pub(crate) fn error(&self, what: impl Into<String>) -> Error {
        Error {
            offset: self.at,
            what: what.into(),
        }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.error(format!("it ends inside a field of {n} bytes")))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub(crate) fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.bytes(1)?[0])
    }

    /// pg_dump's integers are at most as wide as the C `int` it was built with; a dump
    /// written with wider ones is still read when each value fits 32 bits.
    pub(crate) fn set_int_size(&mut self, size: u8) -> Result<(), Error> {
        if !(1..=8).contains(&size) {
            return Err(self.error(format!("integer size {size}")));
        }
        self.int_size = usize::from(size);
        Ok(())
    }

    pub(crate) fn set_offset_size(&mut self, size: u8) -> Result<(), Error> {
        if !(1..=16).contains(&size) {
            return Err(self.error(format!("file offset size {size}")));
        }
        self.offset_size = usize::from(size);
        Ok(())
    }

    /// `ReadInt`: a sign byte (non-zero: negative), then the magnitude, least significant
    /// byte first.
    pub(crate) fn int(&mut self) -> Result<i32, Error> {
        let start = self.at;
        let negative = self.byte()? != 0;
        let mut magnitude: u64 = 0;
        for (i, &b) in self.bytes(self.int_size)?.iter().enumerate() {
            magnitude |= u64::from(b) << (8 * i);
        }
        let value = i64::try_from(magnitude)
            .ok()
            .map(|m| if negative { -m } else { m })
            .and_then(|v| i32::try_from(v).ok());
        value.ok_or(Error {
            offset: start,
            what: format!("integer of magnitude {magnitude} does not fit 32 bits"),
        })
    }

    /// A count of things that follow, each at least one byte long: never more than the bytes
    /// left, so no count makes a reader allocate beyond its input.
    pub(crate) fn count(&mut self) -> Result<usize, Error> {
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len() - self.at)
            .ok_or_else(|| self.error(format!("count {n} out of range")))
    }

    /// `ReadStr`: a length (-1 for NULL), then that many bytes, which must be UTF-8 here
    /// (pg_dump writes them in the encoding it was asked for).
    pub(crate) fn string(&mut self) -> Result<Option<&'a str>, Error> {
        let start = self.at;
        let len = self.int()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| self.error(format!("string length {len}")))?;
        let bytes = self.bytes(len)?;
        std::str::from_utf8(bytes).map(Some).map_err(|_| Error {
            offset: start,
            what: "a string that is not UTF-8".into(),
        })
    }

    /// A string that may not be NULL (`what` names it for the error).
    pub(crate) fn required_string(&mut self, what: &str) -> Result<&'a str, Error> {
        self.string()?
            .ok_or_else(|| self.error(format!("an entry without a {what}")))
    }

    /// `ReadOffset` (archives 1.7 and later): a flag byte saying whether the entry has data
    /// and where, then the offset, least significant byte first.
    pub(crate) fn offset(&mut self) -> Result<(), Error> {
        const NOT_SET: u8 = 1;
        const SET: u8 = 2;
        const NO_DATA: u8 = 3;
        match self.byte()? {
            NOT_SET | SET | NO_DATA => {}
            flag => return Err(self.error(format!("data offset flag {flag}"))),
        }
        self.bytes(self.offset_size)?;
        Ok(())
    }
}
