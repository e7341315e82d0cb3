//! [`FramedReader`]: messages stored each behind a length, and [`write_frame`].

use std::iter::FusedIterator;

use nom::bytes::complete::take;

use crate::file_reader::{Cut, FileReader};
use crate::primitive::{be_u32, put_u32, to_error, PResult};
use crate::{Error, ErrorKind, Message, ProtocolContext, StreamDecoder};

/// Reads messages stored as frames: a big-endian u32 length, then that many bytes holding one
/// message. This is how this crate's test fixtures keep the rows of
/// `pg_logical_slot_peek_binary_changes` (one message per row); [`write_frame`] writes it.
///
/// An iterator of `Result<(offset, Message), Error>`, where `offset` is where the message
/// (after its length) starts. Each frame must hold exactly one message: one that runs past its
/// frame is [`ErrorKind::ShortFrame`], bytes left in it are [`ErrorKind::TrailingBytes`]. A file
/// cut inside a frame gives an [`is_incomplete`](Error::is_incomplete) error, with
/// [`position`](FramedReader::position) at the start of that frame. After an error the
/// iterator ends.
#[derive(Debug, Clone)]
pub struct FramedReader<'a>(FileReader<'a>);

impl<'a> FramedReader<'a> {
    /// A reader of the file contents `buf`, whose stream was started with the options in
    /// `ctx`.
    pub fn new(buf: &'a [u8], ctx: ProtocolContext) -> FramedReader<'a> {
        FramedReader(FileReader::new(buf, ctx))
    }

    /// The offset of the next frame.
    pub fn position(&self) -> usize {
        self.0.position
    }

    /// The decoder's state.
    pub fn decoder(&self) -> &StreamDecoder {
        &self.0.decoder
    }
}

/// One frame's message, the frame starting at file offset `at`.
fn read<'a>(decoder: &mut StreamDecoder, at: usize, rest: &'a [u8]) -> Cut<'a> {
    let (after, payload) = frame(rest).map_err(|e| to_error(e, rest.len(), None).shifted(at))?;
    let payload_at = at.saturating_add(4);
    let message = decoder.decode(payload).map_err(|e| {
        let e = if e.is_incomplete() {
            // The frame is whole: more bytes cannot help.
            Error::new(ErrorKind::ShortFrame, e.offset(), e.message_tag())
        } else {
            e
        };
        e.shifted(payload_at)
    })?;
    let end = at.saturating_add(rest.len().saturating_sub(after.len()));
    Ok((payload_at, message, end))
}

fn frame(i: &[u8]) -> PResult<'_, &[u8]> {
    let (i, len) = be_u32(i)?;
    take(len)(i)
}

impl<'a> Iterator for FramedReader<'a> {
    type Item = Result<(usize, Message<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with(read)
    }
}

impl FusedIterator for FramedReader<'_> {}

/// Appends one frame holding `message` (a whole encoded message) to `out`.
///
/// Fails on a message of 4 GiB or more, leaving `out` as it was.
pub fn write_frame(message: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let len = u32::try_from(message.len())
        .map_err(|_| Error::new(ErrorKind::Overflow, 0, message.first().copied()))?;
    put_u32(out, len);
    out.extend_from_slice(message);
    Ok(())
}
