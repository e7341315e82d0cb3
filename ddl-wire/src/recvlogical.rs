//! [`RecvlogicalReader`]: the messages of a file written by pg_recvlogical.

use std::iter::FusedIterator;

use crate::{Error, ErrorKind, Message, ProtocolContext, StreamDecoder};

/// Reads a file written by `pg_recvlogical --plugin=pgoutput -f FILE`: an iterator of
/// `Result<(offset, Message), Error>`, where `offset` is where the message starts in the file.
///
/// pg_recvlogical writes each message's bytes and then one `'\n'`, with no length. pgoutput
/// messages may contain `'\n'` anywhere, so the reader finds each message's end by parsing it,
/// with a [`StreamDecoder`] to know when changes carry a transaction id. The byte after each
/// message must be that `'\n'`.
///
/// Errors give the file offset and the message number (from 1). A file cut short ends with an
/// [`is_incomplete`](Error::is_incomplete) error, and [`position`](RecvlogicalReader::position)
/// is then where the last whole message ended. After an error the iterator ends.
#[derive(Debug, Clone)]
pub struct RecvlogicalReader<'a> {
    buf: &'a [u8],
    position: usize,
    number: u64,
    decoder: StreamDecoder,
    failed: bool,
}

impl<'a> RecvlogicalReader<'a> {
    /// A reader of the file contents `buf`, whose stream was started with the options in
    /// `ctx`.
    pub fn new(buf: &'a [u8], ctx: ProtocolContext) -> RecvlogicalReader<'a> {
        RecvlogicalReader {
            buf,
            position: 0,
            number: 0,
            decoder: StreamDecoder::new(ctx),
            failed: false,
        }
    }

    /// The offset of the next message: after the last one read, and its `'\n'`.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The decoder's state, e.g. to see whether the file ended inside a streamed block.
    pub fn decoder(&self) -> &StreamDecoder {
        &self.decoder
    }

    fn read(&mut self, rest: &'a [u8]) -> Result<(usize, Message<'a>), Error> {
        let start = self.position;
        let (message, used) = self
            .decoder
            .decode_prefix(rest)
            .map_err(|e| e.shifted(start))?;
        let separator_at = start.saturating_add(used);
        match rest.get(used) {
            Some(b'\n') => {
                self.position = separator_at.saturating_add(1);
                Ok((start, message))
            }
            Some(&other) => Err(Error::new(
                ErrorKind::ExpectedNewline(other),
                separator_at,
                Some(message.tag()),
            )),
            None => Err(Error::new(
                ErrorKind::Incomplete,
                separator_at,
                Some(message.tag()),
            )),
        }
    }
}

impl<'a> Iterator for RecvlogicalReader<'a> {
    type Item = Result<(usize, Message<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.buf.get(self.position..).filter(|r| !r.is_empty())?;
        self.number = self.number.saturating_add(1);
        let result = self.read(rest);
        if result.is_err() {
            self.failed = true;
        }
        Some(result.map_err(|e| e.in_message(self.number)))
    }
}

impl FusedIterator for RecvlogicalReader<'_> {}
