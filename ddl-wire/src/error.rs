//! The crate's one error type.

use std::fmt;

use crate::tags::message_type_name;
use crate::Streaming;

/// Why a message could not be parsed, decoded or written, and where.
///
/// [`offset`](Error::offset) counts bytes from the start of the buffer given to the function that
/// failed: the message for [`Message::parse`](crate::Message::parse) and for the column and tuple
/// iterators, the whole file for [`RecvlogicalReader`](crate::RecvlogicalReader) and
/// [`FramedReader`](crate::FramedReader), the message being written for the `write_*` functions.
///
/// [`is_incomplete`](Error::is_incomplete) tells input that ended too early (more bytes could
/// complete it) from input that can never be valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    offset: usize,
    message_tag: Option<u8>,
    message_number: Option<u64>,
}

/// What went wrong; see [`Error`] for where.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input ends before the message does: more bytes may complete it.
    Incomplete,
    /// The first byte is not a message type that pgoutput sends; it is the error's
    /// [`message_tag`](Error::message_tag).
    UnknownMessageType,
    /// The message type exists only from protocol version `required` on, and the context uses
    /// `negotiated`.
    RequiresProtocolVersion {
        /// The lowest `proto_version` that has this message type.
        required: u32,
        /// The `proto_version` of the [`ProtocolContext`](crate::ProtocolContext).
        negotiated: u32,
    },
    /// A flags or boolean byte holds a value PostgreSQL never writes.
    InvalidFlags(u8),
    /// The replica identity of a Relation message is not `d`, `n`, `f` or `i`.
    InvalidReplicaIdentity(u8),
    /// The byte before a tuple is not one this message allows (`N` for Insert; `K`, `O` or `N`
    /// for Update, then `N`; `K` or `O` for Delete).
    InvalidTupleMarker(u8),
    /// A tuple column kind is not `n`, `u`, `t` or `b`.
    InvalidColumnKind(u8),
    /// A length field is negative.
    InvalidLength(i32),
    /// This many bytes are left after a complete message.
    TrailingBytes(usize),
    /// A length-prefixed frame ends before the message in it does (see
    /// [`FramedReader`](crate::FramedReader)).
    ShortFrame,
    /// Stream Start while a streamed block is already open.
    StreamStartInStream,
    /// Stream Stop outside a streamed block.
    StreamStopOutsideStream,
    /// This message type never appears between Stream Start and Stream Stop.
    NotAllowedInStream,
    /// A streaming message, but the context says `streaming = off`.
    StreamingOff,
    /// The byte after a message in a pg_recvlogical file is not the `'\n'` pg_recvlogical
    /// writes there; it is this byte.
    ExpectedNewline(u8),
    /// This `proto_version` is outside 1 to 4.
    UnsupportedProtocolVersion(u32),
    /// This `streaming` mode needs a higher `proto_version` (as pgoutput's startup checks).
    UnsupportedStreaming {
        /// The requested mode.
        streaming: Streaming,
        /// The requested protocol version.
        proto_version: u32,
    },
    /// A count or length does not fit its wire field (more than 65535 columns, a value of
    /// 2 GiB or more, ...).
    Overflow,
    /// A string for a NUL-terminated field contains a NUL byte, at the error's offset.
    InteriorNul,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, offset: usize, message_tag: Option<u8>) -> Error {
        Error {
            kind,
            offset,
            message_tag,
            message_number: None,
        }
    }

    /// Moves the offset from a message-relative one to a file-relative one.
    pub(crate) fn shifted(mut self, base: usize) -> Error {
        self.offset = self.offset.saturating_add(base);
        self
    }

    pub(crate) fn in_message(mut self, number: u64) -> Error {
        self.message_number = Some(number);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Where: a byte offset from the start of the buffer given to the failing function.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The type byte of the message concerned, when known.
    pub fn message_tag(&self) -> Option<u8> {
        self.message_tag
    }

    /// Which message of a file, counting from 1, for errors from the file readers.
    pub fn message_number(&self) -> Option<u64> {
        self.message_number
    }

    /// True when the input ended too early and more bytes could complete it.
    pub fn is_incomplete(&self) -> bool {
        self.kind == ErrorKind::Incomplete
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = self.message_number {
            write!(f, "message {n}: ")?;
        }
        let name = self.message_tag.and_then(message_type_name);
        if let (Some(name), Some(tag)) = (name, self.message_tag) {
            write!(f, "{name} ({}): ", ByteLiteral(tag))?;
        }
        match self.kind {
            ErrorKind::Incomplete => f.write_str("input ends before the message does")?,
            ErrorKind::UnknownMessageType => match self.message_tag {
                Some(tag) => write!(f, "unknown message type {}", ByteLiteral(tag))?,
                None => f.write_str("unknown message type")?,
            },
            ErrorKind::RequiresProtocolVersion {
                required,
                negotiated,
            } => write!(
                f,
                "needs proto_version {required} or higher, but the stream uses {negotiated}"
            )?,
            ErrorKind::InvalidFlags(b) => write!(f, "unrecognized flags {b:#04x}")?,
            ErrorKind::InvalidReplicaIdentity(b) => {
                write!(f, "unrecognized replica identity {}", ByteLiteral(b))?
            }
            ErrorKind::InvalidTupleMarker(b) => {
                write!(f, "unexpected tuple marker {}", ByteLiteral(b))?
            }
            ErrorKind::InvalidColumnKind(b) => write!(
                f,
                "unrecognized column data kind {} (expected n, u, t or b)",
                ByteLiteral(b)
            )?,
            ErrorKind::InvalidLength(len) => write!(f, "negative length {len}")?,
            ErrorKind::TrailingBytes(n) => write!(f, "{n} bytes left over after the message")?,
            ErrorKind::ShortFrame => f.write_str("the message runs past the end of its frame")?,
            ErrorKind::StreamStartInStream => {
                f.write_str("Stream Start inside a streamed block that was never stopped")?
            }
            ErrorKind::StreamStopOutsideStream => {
                f.write_str("Stream Stop outside a streamed block")?
            }
            ErrorKind::NotAllowedInStream => {
                f.write_str("not allowed between Stream Start and Stream Stop")?
            }
            ErrorKind::StreamingOff => {
                f.write_str("streaming message, but the stream has streaming = off")?
            }
            ErrorKind::ExpectedNewline(b) => write!(
                f,
                "expected the '\\n' pg_recvlogical writes after each message, found {}",
                ByteLiteral(b)
            )?,
            ErrorKind::UnsupportedProtocolVersion(v) => {
                // Not about any byte: no offset to give.
                return write!(
                    f,
                    "proto_version={v} is not supported; pgoutput has versions 1 to 4"
                );
            }
            ErrorKind::UnsupportedStreaming {
                streaming,
                proto_version,
            } => {
                return write!(
                    f,
                    "proto_version={proto_version} does not support streaming = {streaming}, \
                     need {} or higher",
                    streaming.min_proto_version()
                );
            }
            ErrorKind::Overflow => f.write_str("a count or length does not fit its field")?,
            ErrorKind::InteriorNul => f.write_str("string contains a NUL byte")?,
        }
        write!(f, " at byte {}", self.offset)
    }
}

impl std::error::Error for Error {}

/// Shows a byte as `'x'` when it is printable ASCII, else as `0x07`.
struct ByteLiteral(u8);

impl fmt::Display for ByteLiteral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_ascii_graphic() || self.0 == b' ' {
            write!(f, "'{}'", char::from(self.0))
        } else {
            write!(f, "{:#04x}", self.0)
        }
    }
}
