//! [`RecvlogicalReader`]: the messages of a file written by pg_recvlogical.

use std::iter::FusedIterator;

use crate::file_reader::{Cut, FileReader};
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
pub struct RecvlogicalReader<'a>(FileReader<'a>);

impl<'a> RecvlogicalReader<'a> {
    /// A reader of the file contents `buf`, whose stream was started with the options in
    /// `ctx`.
    pub fn new(buf: &'a [u8], ctx: ProtocolContext) -> RecvlogicalReader<'a> {
        RecvlogicalReader(FileReader::new(buf, ctx))
    }

    /// The offset of the next message: after the last one read, and its `'\n'`.
    pub fn position(&self) -> usize {
        self.0.position
    }

    /// The decoder's state, e.g. to see whether the file ended inside a streamed block.
    pub fn decoder(&self) -> &StreamDecoder {
        &self.0.decoder
    }
}

/// The message at file offset `at`, and the `'\n'` after it.
fn read<'a>(decoder: &mut StreamDecoder, at: usize, rest: &'a [u8]) -> Cut<'a> {
    let (message, used) = decoder.decode_prefix(rest).map_err(|e| e.shifted(at))?;
    let separator_at = at.saturating_add(used);
    match rest.get(used) {
        Some(b'\n') => Ok((at, message, separator_at.saturating_add(1))),
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

impl<'a> Iterator for RecvlogicalReader<'a> {
    type Item = Result<(usize, Message<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with(read)
    }
}

impl FusedIterator for RecvlogicalReader<'_> {}
