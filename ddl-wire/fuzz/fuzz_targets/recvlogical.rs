//! `RecvlogicalReader` over an arbitrary file: offsets grow, messages lie where the reader says,
//! and it stops after an error.
#![no_main]

use ddl_wire::RecvlogicalReader;
use libfuzzer_sys::fuzz_target;

#[path = "context.rs"]
mod context;

fuzz_target!(|data: &[u8]| {
    let Some((&first, file)) = data.split_first() else {
        return;
    };
    let mut reader = RecvlogicalReader::new(file, context::context(first).with_in_stream(false));
    while let Some(item) = reader.next() {
        match item {
            Ok((offset, message)) => {
                // The reader moved past the message and its '\n'.
                let end = reader.position() - 1;
                assert_eq!(file[end], b'\n');
                context::assert_reencodes(&message, &file[offset..end]);
            }
            Err(e) => {
                assert!(e.offset() <= file.len());
                break;
            }
        }
    }
    assert!(reader.next().is_none());
});
