//! What the readers of stored streams share: the file, where they are in it, the decoder and
//! the iteration that stops at the first error.

use crate::{Error, Message, ProtocolContext, StreamDecoder};

/// A stored stream being read. Each format says how one message is cut from the rest of the
/// file (`read`, given the decoder, the file offset of the rest and the rest); this numbers
/// the messages from 1, puts the number in errors, and ends the iteration after an error.
#[derive(Debug, Clone)]
pub(crate) struct FileReader<'a> {
    buf: &'a [u8],
    /// The offset of the next message, or of the frame or line that holds it.
    pub(crate) position: usize,
    number: u64,
    pub(crate) decoder: StreamDecoder,
    failed: bool,
}

/// How a format cuts one message from `rest`, which starts at file offset `at`: the message's
/// offset, the message, and the offset after it (and after its frame or separator).
pub(crate) type Cut<'a> = Result<(usize, Message<'a>, usize), Error>;

impl<'a> FileReader<'a> {
    pub(crate) fn new(buf: &'a [u8], ctx: ProtocolContext) -> FileReader<'a> {
        FileReader {
            buf,
            position: 0,
            number: 0,
            decoder: StreamDecoder::new(ctx),
            failed: false,
        }
    }

    /// The next message, cut by `read`; `None` at the end of the file or after an error.
    pub(crate) fn next_with(
        &mut self,
        read: impl FnOnce(&mut StreamDecoder, usize, &'a [u8]) -> Cut<'a>,
    ) -> Option<Result<(usize, Message<'a>), Error>> {
        if self.failed {
            return None;
        }
        let rest = self.buf.get(self.position..).filter(|r| !r.is_empty())?;
        self.number = self.number.saturating_add(1);
        match read(&mut self.decoder, self.position, rest) {
            Ok((offset, message, after)) => {
                self.position = after;
                Some(Ok((offset, message)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e.in_message(self.number)))
            }
        }
    }
}
