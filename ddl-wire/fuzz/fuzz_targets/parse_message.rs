//! `Message::parse` and `Message::parse_prefix` on arbitrary bytes, in the context picked by the
//! first byte; everything accepted must re-encode to the same bytes, and the lazy parts must
//! iterate without error.
#![no_main]

use ddl_wire::Message;
use libfuzzer_sys::fuzz_target;

#[path = "context.rs"]
mod context;

fuzz_target!(|data: &[u8]| {
    let Some((&first, buf)) = data.split_first() else {
        return;
    };
    let ctx = context::context(first);
    if let Ok(message) = Message::parse(buf, &ctx) {
        context::assert_reencodes(&message, buf);
        match &message {
            Message::Relation(r) => assert!(r.columns().all(|c| c.is_ok())),
            Message::Insert(i) => assert!(i.tuple().all(|v| v.is_ok())),
            Message::Update(u) => assert!(u.new_tuple().all(|v| v.is_ok())),
            _ => {}
        }
    }
    if let Ok((message, used)) = Message::parse_prefix(buf, &ctx) {
        context::assert_reencodes(&message, &buf[..used]);
    }
});
