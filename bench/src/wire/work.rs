//! What a parser did in one pass, counted the same way for every parser.
//!
//! The counts are the sanity check of the comparison: parsers that agree on every count decoded
//! the same messages and reached the same column values, so their times measure the same work.

use std::fmt;

/// Counts of one pass over a capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Messages decoded, of any kind.
    pub messages: u64,
    /// Insert, Update and Delete messages.
    pub changes: u64,
    /// Column values located in their tuples (an Update with an old tuple has two), including
    /// NULL and unchanged-TOAST markers.
    pub values: u64,
    /// Of those, the NULL and unchanged-TOAST markers (values without bytes).
    pub markers: u64,
    /// Bytes of all text and binary values together.
    pub value_bytes: u64,
}

impl Work {
    /// Counts a text or binary value.
    #[inline(always)]
    pub fn value(&mut self, bytes: &[u8]) {
        self.values += 1;
        self.value_bytes += bytes.len() as u64;
    }

    /// Counts a NULL or unchanged-TOAST value.
    #[inline(always)]
    pub fn marker(&mut self) {
        self.values += 1;
        self.markers += 1;
    }
}

impl fmt::Display for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} messages, {} changes, {} values ({} NULL/unchanged), {} value bytes",
            self.messages, self.changes, self.values, self.markers, self.value_bytes
        )
    }
}
