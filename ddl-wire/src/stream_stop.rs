//! Stream Stop ('E'): the end of a streamed block. It has no body: the message is its tag,
//! [`Message::StreamStop`](crate::Message::StreamStop).

use crate::primitive::put_u8;
use crate::tags::STREAM_STOP_TAG;

/// Writes a Stream Stop message (`logicalrep_write_stream_stop`).
pub fn write_stream_stop(out: &mut Vec<u8>) {
    put_u8(out, STREAM_STOP_TAG);
}
