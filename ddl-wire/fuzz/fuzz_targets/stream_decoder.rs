//! A `StreamDecoder` fed a sequence of messages: each is one length byte then that many
//! bytes, so the fuzzer can build sequences that move through streamed blocks.
#![no_main]

use ddl_wire::StreamDecoder;
use libfuzzer_sys::fuzz_target;

#[path = "context.rs"]
mod context;

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let mut decoder = StreamDecoder::new(context::context(first).with_in_stream(false));
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let (buf, tail) = tail.split_at(len);
        rest = tail;
        let before = decoder.clone();
        match decoder.decode(buf) {
            Ok(message) => context::assert_reencodes(&message, buf),
            Err(_) => assert_eq!(decoder, before),
        }
    }
});
