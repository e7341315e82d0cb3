// Shared by the fuzz targets: the first input byte picks the protocol context, so one corpus
// explores every version, streaming mode and stream state.

use ddl_wire::{ProtocolContext, Streaming};

/// The context the byte `b` selects (every valid combination is reachable).
pub fn context(b: u8) -> ProtocolContext {
    let version = u32::from(b % 4) + 1;
    let streaming = match (b / 4) % 3 {
        0 => Streaming::Off,
        1 => Streaming::On,
        _ => Streaming::Parallel,
    };
    let ctx = ProtocolContext::new(version, streaming).unwrap_or_else(|_| {
        ProtocolContext::new(version, Streaming::Off).expect("1 to 4 is valid")
    });
    ctx.with_in_stream(b & 0x80 != 0 && ctx.streaming() != Streaming::Off)
}

/// Encodes `message` and checks it is exactly `bytes`: whatever the parser accepts, it must
/// be able to write back unchanged.
pub fn assert_reencodes(message: &ddl_wire::Message<'_>, bytes: &[u8]) {
    let mut again = Vec::with_capacity(bytes.len());
    message.encode(&mut again);
    assert_eq!(again, bytes);
}
