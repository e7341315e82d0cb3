//! `FramedReader` over an arbitrary file: every message fills its frame exactly.
#![no_main]

use ddl_wire::FramedReader;
use libfuzzer_sys::fuzz_target;

#[path = "context.rs"]
mod context;

fuzz_target!(|data: &[u8]| {
    let Some((&first, file)) = data.split_first() else {
        return;
    };
    let mut reader = FramedReader::new(file, context::context(first).with_in_stream(false));
    while let Some(item) = reader.next() {
        match item {
            Ok((offset, message)) => {
                // The reader moved past the frame, which the message fills exactly.
                let end = reader.position();
                let len = u32::from_be_bytes(file[offset - 4..offset].try_into().unwrap());
                assert_eq!(end - offset, len as usize);
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
