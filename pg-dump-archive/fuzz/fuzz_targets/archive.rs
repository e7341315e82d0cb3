//! `cargo fuzz run archive` (from pg-dump-archive/, seeds: tests/fixtures/*.dump): any bytes
//! are an archive or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(a) = pg_dump_archive::Archive::parse(data) {
        assert!(a.entries.iter().all(|e| e.id > 0));
    }
});
