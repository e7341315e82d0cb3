//! [`FramedReader`]: messages stored each behind a length, and [`write_frame`].

use std::iter::FusedIterator;

use nom::bytes::complete::take;

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
pub struct FramedReader<'a> {
    buf: &'a [u8],
    position: usize,
    number: u64,
    decoder: StreamDecoder,
    failed: bool,
}

impl<'a> FramedReader<'a> {
    /// A reader of the file contents `buf`, whose stream was started with the options in
    /// `ctx`.
    pub fn new(buf: &'a [u8], ctx: ProtocolContext) -> FramedReader<'a> {
        FramedReader {
            buf,
            position: 0,
            number: 0,
            decoder: StreamDecoder::new(ctx),
            failed: false,
        }
    }

    /// The offset of the next frame.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The decoder's state.
    pub fn decoder(&self) -> &StreamDecoder {
        &self.decoder
    }

    fn read(&mut self, rest: &'a [u8]) -> Result<(usize, Message<'a>), Error> {
        let (after, payload) =
            frame(rest).map_err(|e| to_error(e, rest.len(), None).shifted(self.position))?;
        let payload_at = self.position.saturating_add(4);
        let message = self.decoder.decode(payload).map_err(|e| {
            let e = if e.is_incomplete() {
                // The frame is whole: more bytes cannot help.
                Error::new(ErrorKind::ShortFrame, e.offset(), e.message_tag())
            } else {
                e
            };
            e.shifted(payload_at)
        })?;
        self.position = self
            .position
            .saturating_add(rest.len().saturating_sub(after.len()));
        Ok((payload_at, message))
    }
}

fn frame(i: &[u8]) -> PResult<'_, &[u8]> {
    let (i, len) = be_u32(i)?;
    take(len)(i)
}

impl<'a> Iterator for FramedReader<'a> {
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
