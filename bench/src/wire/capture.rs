//! A captured pgoutput stream in memory: the whole file, and where each message is in it.
//!
//! The file is the fixture framing ddl-wire reads: every message is a big-endian `u32` length
//! followed by that many bytes of one pgoutput message. The frames are found once, before any
//! timing, so every parser is timed on message parsing alone and all of them see the same slices.

use bytes::Bytes;
use std::ops::Range;
use std::path::Path;

/// Which pgoutput options produced a capture; a parser must be told, since a streamed change
/// carries a transaction id that nothing in the message itself announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `proto_version '1'`: whole transactions only.
    V1,
    /// `proto_version '2', streaming 'on'`: large transactions arrive in Stream Start/Stop blocks.
    V2Streaming,
}

impl Protocol {
    /// The `proto_version` the stream was decoded with.
    pub fn version(self) -> u32 {
        match self {
            Protocol::V1 => 1,
            Protocol::V2Streaming => 2,
        }
    }
}

/// One captured stream, read into memory.
pub struct Capture {
    /// A short name for tables (`v1`, `v2-streaming`).
    pub name: &'static str,
    pub protocol: Protocol,
    /// The whole file. A `Bytes` because pg_walstream's zero-copy entry point takes one; the
    /// other parsers borrow slices of it.
    pub bytes: Bytes,
    /// Each message, without its length prefix.
    pub frames: Vec<Range<usize>>,
}

impl Capture {
    /// Reads `path` and splits it into messages; an error names the byte offset of a broken frame.
    pub fn load(path: &Path, name: &'static str, protocol: Protocol) -> Result<Capture, String> {
        let data =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Capture::from_bytes(data, name, protocol).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A capture from the contents of a file.
    pub fn from_bytes(
        data: Vec<u8>,
        name: &'static str,
        protocol: Protocol,
    ) -> Result<Capture, String> {
        let frames = split_frames(&data)?;
        Ok(Capture {
            name,
            protocol,
            bytes: Bytes::from(data),
            frames,
        })
    }

    /// The file's size, length prefixes included.
    pub fn file_len(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes every parser reads: the messages, without their length prefixes.
    pub fn message_bytes(&self) -> usize {
        self.frames.iter().map(|r| r.len()).sum()
    }
}

/// Finds every `u32`-BE-length-prefixed message of `data`. The last frame must end exactly at the
/// end of the file: a truncated capture is an error, not a shorter benchmark.
pub fn split_frames(data: &[u8]) -> Result<Vec<Range<usize>>, String> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let Some(prefix) = data.get(at..at + 4) else {
            return Err(format!("truncated length prefix at byte {at}"));
        };
        let len = u32::from_be_bytes(prefix.try_into().expect("four bytes")) as usize;
        let start = at + 4;
        let end = start + len;
        if end > data.len() {
            return Err(format!(
                "message at byte {at} claims {len} bytes, only {} left",
                data.len() - start
            ));
        }
        if len == 0 {
            return Err(format!("empty message at byte {at}"));
        }
        frames.push(start..end);
        at = end;
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_found_and_truncation_is_refused() {
        let mut data = Vec::new();
        for msg in [&b"E"[..], b"B12345678"] {
            data.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            data.extend_from_slice(msg);
        }
        assert_eq!(split_frames(&data).unwrap(), vec![4..5, 9..18]);
        assert!(split_frames(&data[..data.len() - 1])
            .unwrap_err()
            .contains("byte 5"));
        assert!(split_frames(&data[..7])
            .unwrap_err()
            .contains("truncated length prefix"));
        assert!(split_frames(&[0, 0, 0, 0])
            .unwrap_err()
            .contains("empty message"));
    }
}
