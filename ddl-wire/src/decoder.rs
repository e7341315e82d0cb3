//! [`StreamDecoder`]: message parsing that follows the stream's state.

use crate::tags::{
    message_type_name, DELETE_TAG, INSERT_TAG, MESSAGE_TAG, ORIGIN_TAG, RELATION_TAG,
    STREAM_ABORT_TAG, STREAM_COMMIT_TAG, STREAM_PREPARE_TAG, STREAM_START_TAG, STREAM_STOP_TAG,
    TRUNCATE_TAG, TYPE_TAG, UPDATE_TAG,
};
use crate::{Error, ErrorKind, Message, ProtocolContext, Streaming};

/// Parses the messages of one replication stream in order, keeping the [`ProtocolContext`] up
/// to date and refusing messages that cannot come where they do.
///
/// It tracks streamed blocks: Stream Start opens one (and switches on the transaction id prefix
/// of the changes), Stream Stop closes it. It refuses, as pgoutput would never send:
/// - Stream Start inside a block, and Stream Stop outside one;
/// - inside a block, anything but Relation, Type, Insert, Update, Delete, Truncate, Message,
///   Origin (which follows the first Stream Start of a replicated transaction) and Stream Stop;
/// - streaming messages when the context has `streaming = off`;
/// - message types newer than the negotiated protocol version.
///
/// It does not follow transactions (Begin to Commit): transaction-level checks belong to the
/// consumer, which knows what it asked for.
///
/// A message that fails leaves the state unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDecoder {
    ctx: ProtocolContext,
    stream_xid: Option<u32>,
}

impl StreamDecoder {
    /// A decoder starting in the state `ctx` describes, usually outside any streamed block.
    pub fn new(ctx: ProtocolContext) -> StreamDecoder {
        StreamDecoder {
            ctx,
            stream_xid: None,
        }
    }

    /// The context the next message will be parsed with.
    pub fn context(&self) -> &ProtocolContext {
        &self.ctx
    }

    /// True between Stream Start and Stream Stop.
    pub fn in_stream(&self) -> bool {
        self.ctx.in_stream()
    }

    /// The transaction of the open streamed block, if a Stream Start opened one (not when the
    /// decoder was created inside a block).
    pub fn stream_xid(&self) -> Option<u32> {
        self.stream_xid
    }

    /// Decodes `buf`, which must hold exactly one message (see [`Message::parse`]).
    #[inline]
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> Result<Message<'a>, Error> {
        self.check(buf)?;
        let message = Message::parse(buf, &self.ctx)?;
        self.advance(&message);
        Ok(message)
    }

    /// Decodes the message at the start of `buf`, returning it with the number of bytes it used
    /// (see [`Message::parse_prefix`]).
    pub fn decode_prefix<'a>(&mut self, buf: &'a [u8]) -> Result<(Message<'a>, usize), Error> {
        self.check(buf)?;
        let (message, used) = Message::parse_prefix(buf, &self.ctx)?;
        self.advance(&message);
        Ok((message, used))
    }

    /// Refuses a message type where it cannot come, before parsing it with the wrong context.
    #[inline]
    fn check(&self, buf: &[u8]) -> Result<(), Error> {
        let Some(&tag) = buf.first() else {
            return Ok(());
        };
        let refuse = |kind| Err(Error::new(kind, 0, Some(tag)));
        let streaming_message = matches!(
            tag,
            STREAM_START_TAG
                | STREAM_STOP_TAG
                | STREAM_COMMIT_TAG
                | STREAM_ABORT_TAG
                | STREAM_PREPARE_TAG
        );
        if streaming_message && self.ctx.streaming() == Streaming::Off {
            return refuse(ErrorKind::StreamingOff);
        }
        if self.ctx.in_stream() {
            match tag {
                STREAM_START_TAG => refuse(ErrorKind::StreamStartInStream),
                RELATION_TAG | TYPE_TAG | INSERT_TAG | UPDATE_TAG | DELETE_TAG | TRUNCATE_TAG
                | MESSAGE_TAG | ORIGIN_TAG | STREAM_STOP_TAG => Ok(()),
                // Unknown types are for the parser to report.
                _ if message_type_name(tag).is_none() => Ok(()),
                // Transaction boundaries: pgoutput asserts it is not streaming when it sends them.
                _ => refuse(ErrorKind::NotAllowedInStream),
            }
        } else if tag == STREAM_STOP_TAG {
            refuse(ErrorKind::StreamStopOutsideStream)
        } else {
            Ok(())
        }
    }

    #[inline]
    fn advance(&mut self, message: &Message<'_>) {
        match message {
            Message::StreamStart(start) => {
                self.ctx = self.ctx.with_in_stream(true);
                self.stream_xid = Some(start.xid());
            }
            Message::StreamStop => {
                self.ctx = self.ctx.with_in_stream(false);
                self.stream_xid = None;
            }
            _ => {}
        }
    }
}
