//! Parsing allocates nothing: a counting global allocator watches this thread while messages of
//! every type, in every context, are parsed and every column, value, relation id and name in
//! them is read, while the stream decoder and both file readers run over whole sessions, and
//! while invalid input is refused.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::{contexts, framed_file, recvlogical_file, session, tags_for, walk, Model, Rng};
use ddl_wire::{FramedReader, Message, RecvlogicalReader, StreamDecoder};

struct Counting;

thread_local! {
    // `const` and no destructor: touching it never allocates, so the allocator may use it.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; counting touches only a
// thread-local that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's promise for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's promise for `realloc`, passed on (`ptr` is `System`'s).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// How many allocations `f` made on this thread.
fn allocations_in(f: impl FnOnce() -> u64) -> (u64, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    let result = std::hint::black_box(f());
    (ALLOCATIONS.with(Cell::get) - before, result)
}

#[test]
fn the_counter_sees_allocations() {
    let (count, _) = allocations_in(|| std::hint::black_box(vec![1u8; 10]).len() as u64);
    assert_eq!(count, 1);
}

#[test]
fn parsing_and_walking_every_message_type_allocates_nothing() {
    let mut rng = Rng::new(21);
    // Everything is built first: the writers and the model allocate, the parsers must not.
    let mut cases = Vec::new();
    for ctx in contexts() {
        for tag in tags_for(&ctx) {
            for _ in 0..20 {
                cases.push((ctx, Model::random_of(tag, &mut rng, &ctx).bytes()));
            }
        }
    }
    let mut broken = Vec::new();
    for (ctx, bytes) in &cases {
        let mut cut = bytes.clone();
        cut.pop();
        let mut extra = bytes.clone();
        extra.push(b'!');
        broken.push((*ctx, cut));
        broken.push((*ctx, extra));
    }

    let (count, parsed) = allocations_in(|| {
        let mut sum = 0u64;
        for (ctx, bytes) in &cases {
            let message = Message::parse(bytes, ctx).expect("valid");
            sum = sum.wrapping_add(walk(&message));
            let (message, used) = Message::parse_prefix(bytes, ctx).expect("valid");
            sum = sum.wrapping_add(walk(&message)).wrapping_add(used as u64);
        }
        for (ctx, bytes) in &broken {
            let e = Message::parse(bytes, ctx).expect_err("broken");
            sum = sum.wrapping_add(e.offset() as u64);
        }
        sum
    });
    assert_eq!(
        count,
        0,
        "allocations while parsing {} messages",
        cases.len()
    );
    assert_ne!(parsed, 0);
}

#[test]
fn decoding_whole_sessions_and_files_allocates_nothing() {
    let mut rng = Rng::new(22);
    let mut sessions = Vec::new();
    for ctx in contexts().into_iter().filter(|c| !c.in_stream()) {
        for _ in 0..10 {
            let messages: Vec<Vec<u8>> = session(&mut rng, &ctx).iter().map(Model::bytes).collect();
            let recvlogical = recvlogical_file(&messages);
            let framed = framed_file(&messages);
            sessions.push((ctx, messages, recvlogical, framed));
        }
    }

    let (count, read) = allocations_in(|| {
        let mut read = 0u64;
        for (ctx, messages, recvlogical, framed) in &sessions {
            let mut decoder = StreamDecoder::new(*ctx);
            for bytes in messages {
                walk(&decoder.decode(bytes).expect("valid session"));
                read += 1;
            }
            for item in RecvlogicalReader::new(recvlogical, *ctx) {
                walk(&item.expect("valid file").1);
                read += 1;
            }
            for item in FramedReader::new(framed, *ctx) {
                walk(&item.expect("valid file").1);
                read += 1;
            }
            // A file cut short ends in an error, without allocating either.
            let cut = &recvlogical[..recvlogical.len() - 2];
            read += RecvlogicalReader::new(cut, *ctx)
                .filter(Result::is_err)
                .count() as u64;
        }
        read
    });
    assert_eq!(count, 0, "allocations while reading {read} messages");
    assert!(read > 0);
}
