//! What a parser must know about the stream that the bytes alone do not say.

use std::fmt;

use crate::{Error, ErrorKind};

/// `LOGICALREP_PROTO_STREAM_VERSION_NUM`: streaming of in-progress transactions.
pub(crate) const STREAM_VERSION: u32 = 2;
/// `LOGICALREP_PROTO_TWOPHASE_VERSION_NUM`: two-phase commit messages.
pub(crate) const TWO_PHASE_VERSION: u32 = 3;
/// `LOGICALREP_PROTO_STREAM_PARALLEL_VERSION_NUM`: `streaming = parallel` (PostgreSQL 16).
pub(crate) const STREAM_PARALLEL_VERSION: u32 = 4;

/// The `streaming` option the client gave pgoutput.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Streaming {
    /// Transactions arrive whole, at commit (the default).
    #[default]
    Off,
    /// Large in-progress transactions may arrive in streamed blocks (protocol 2 and up).
    On,
    /// As `On`, and Stream Abort also carries the abort LSN and time, which a parallel apply
    /// worker needs (protocol 4, PostgreSQL 16 and up).
    Parallel,
}

impl Streaming {
    pub(crate) fn min_proto_version(self) -> u32 {
        match self {
            Streaming::Off => ProtocolContext::MIN_PROTO_VERSION,
            Streaming::On => STREAM_VERSION,
            Streaming::Parallel => STREAM_PARALLEL_VERSION,
        }
    }
}

/// Spelled as in the option: `off`, `on`, `parallel`.
impl fmt::Display for Streaming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Streaming::Off => "off",
            Streaming::On => "on",
            Streaming::Parallel => "parallel",
        })
    }
}

/// How to read the next message: the negotiated protocol version and `streaming` mode, and
/// whether the stream is between Stream Start and Stream Stop.
///
/// pgoutput's messages do not describe themselves fully. Relation, Type, Insert, Update,
/// Delete, Truncate and Message start with a transaction id only inside a streamed block, and
/// Stream Abort ends with the abort LSN and time only under `streaming = parallel`. The
/// version gates which message types may appear at all.
///
/// [`StreamDecoder`](crate::StreamDecoder) keeps `in_stream` up to date from the messages it
/// sees; callers of [`Message::parse`](crate::Message::parse) set it with
/// [`with_in_stream`](ProtocolContext::with_in_stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtocolContext {
    proto_version: u32,
    streaming: Streaming,
    in_stream: bool,
}

impl ProtocolContext {
    /// The lowest `proto_version` pgoutput accepts.
    pub const MIN_PROTO_VERSION: u32 = 1;
    /// The highest `proto_version` this crate knows (PostgreSQL 16 to 18 send up to 4;
    /// PostgreSQL 15 up to 3).
    pub const MAX_PROTO_VERSION: u32 = STREAM_PARALLEL_VERSION;

    /// A context outside any streamed block. Refuses what pgoutput's startup refuses: a version
    /// outside 1 to 4, `streaming = on` below 2, `streaming = parallel` below 4.
    pub fn new(proto_version: u32, streaming: Streaming) -> Result<ProtocolContext, Error> {
        if !(Self::MIN_PROTO_VERSION..=Self::MAX_PROTO_VERSION).contains(&proto_version) {
            return Err(Error::new(
                ErrorKind::UnsupportedProtocolVersion(proto_version),
                0,
                None,
            ));
        }
        if proto_version < streaming.min_proto_version() {
            return Err(Error::new(
                ErrorKind::UnsupportedStreaming {
                    streaming,
                    proto_version,
                },
                0,
                None,
            ));
        }
        Ok(ProtocolContext {
            proto_version,
            streaming,
            in_stream: false,
        })
    }

    /// The same context, inside (`true`) or outside a streamed block.
    ///
    /// [`Message::parse`](crate::Message::parse) reads the transaction id prefix exactly when
    /// this is set; it does not check that streaming is on
    /// ([`StreamDecoder`](crate::StreamDecoder) does).
    pub fn with_in_stream(self, in_stream: bool) -> ProtocolContext {
        ProtocolContext { in_stream, ..self }
    }

    /// The negotiated `proto_version`.
    pub fn proto_version(&self) -> u32 {
        self.proto_version
    }

    /// The `streaming` mode.
    pub fn streaming(&self) -> Streaming {
        self.streaming
    }

    /// True between Stream Start and Stream Stop.
    pub fn in_stream(&self) -> bool {
        self.in_stream
    }
}
