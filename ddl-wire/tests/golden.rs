//! Golden captures from a real PostgreSQL 15 under `tests/fixtures/` (see its README): for each
//! `NAME.meta`, `NAME.frames` (`source=peek`: rows of `pg_logical_slot_peek_binary_changes`, each
//! behind a big-endian u32 length) or `NAME.recvlogical` (`source=recvlogical`: a pg_recvlogical
//! output file).
//!
//! Every message must parse with the fixture's options and encode back byte for byte, must
//! agree with those options (no binary values unless `binary=on`, ...), and the fixtures
//! together must contain every message type PostgreSQL 15 can send, so that a missing capture
//! fails here.
//!
//! With no fixtures at all the test is skipped, unless `DDL_WIRE_REQUIRE_FIXTURES=1`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use ddl_wire::*;

/// What pgoutput on PostgreSQL 15 can send (protocol 1 to 3): every message type except none.
const PG15_TAGS: [u8; 19] = [
    b'B', b'C', b'O', b'R', b'Y', b'I', b'U', b'D', b'T', b'M', b'S', b'E', b'c', b'A', b'b', b'P',
    b'K', b'r', b'p',
];

/// The options a capture was taken with (`NAME.meta`, one `key=value` per line).
#[derive(Debug)]
struct Meta {
    proto_version: u32,
    streaming: Streaming,
    binary: bool,
    messages: bool,
    two_phase: bool,
    /// The data file's extension, from `source=`.
    data: &'static str,
}

fn on_off(key: &str, value: &str, path: &Path) -> bool {
    match value {
        "on" => true,
        "off" => false,
        _ => panic!("{}: {key}={value}, expected on or off", path.display()),
    }
}

fn read_meta(path: &Path) -> Meta {
    let text = fs::read_to_string(path).unwrap();
    let (mut proto_version, mut streaming, mut binary, mut messages, mut two_phase) =
        (None, None, None, None, None);
    let mut data = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{}: line {line:?} is not key=value", path.display()));
        // Values may carry a trailing `# comment`.
        let value = value.split('#').next().unwrap_or_default();
        let (key, value) = (key.trim(), value.trim());
        match key {
            "proto_version" => proto_version = Some(value.parse().unwrap()),
            "streaming" => {
                streaming = Some(match value {
                    "off" => Streaming::Off,
                    "on" => Streaming::On,
                    "parallel" => Streaming::Parallel,
                    _ => panic!("{}: streaming={value}", path.display()),
                })
            }
            "binary" => binary = Some(on_off(key, value, path)),
            "messages" => messages = Some(on_off(key, value, path)),
            "two_phase" => two_phase = Some(on_off(key, value, path)),
            "source" => {
                data = Some(match value {
                    "peek" => "frames",
                    "recvlogical" => "recvlogical",
                    _ => panic!("{}: source={value}", path.display()),
                })
            }
            // Which publications the capture used: nothing to check here.
            "publications" => {}
            _ => eprintln!("{}: ignoring unknown key {key}", path.display()),
        }
    }
    fn required<T>(value: Option<T>, path: &Path, key: &str) -> T {
        value.unwrap_or_else(|| panic!("{}: no {key}=", path.display()))
    }
    Meta {
        proto_version: required(proto_version, path, "proto_version"),
        streaming: required(streaming, path, "streaming"),
        binary: required(binary, path, "binary"),
        messages: required(messages, path, "messages"),
        two_phase: required(two_phase, path, "two_phase"),
        data: required(data, path, "source"),
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

/// Checks one message against the options; returns its tag.
fn check_message(message: &Message<'_>, bytes: &[u8], meta: &Meta, at: &str) -> u8 {
    let mut again = Vec::new();
    message.encode(&mut again);
    assert_eq!(again, bytes, "{at}: re-encoding differs");

    let tag = message.tag();
    if !meta.messages {
        assert_ne!(tag, MESSAGE_TAG, "{at}: Message with messages=off");
    }
    if !meta.two_phase {
        assert!(
            !b"bPKrp".contains(&tag),
            "{at}: two-phase message with two_phase=off"
        );
    }
    let tuples = match message {
        Message::Insert(i) => vec![i.tuple()],
        Message::Update(u) => [u.key_tuple(), u.old_tuple(), Some(u.new_tuple())]
            .into_iter()
            .flatten()
            .collect(),
        Message::Delete(d) => [d.key_tuple(), d.old_tuple()]
            .into_iter()
            .flatten()
            .collect(),
        _ => vec![],
    };
    for value in tuples.into_iter().flatten() {
        let value = value.unwrap_or_else(|e| panic!("{at}: {e}"));
        if !meta.binary {
            assert!(
                !matches!(value, TupleValue::Binary(_)),
                "{at}: binary value with binary=off"
            );
        }
    }
    if let Message::Relation(r) = message {
        for column in r.columns() {
            column.unwrap_or_else(|e| panic!("{at}: {e}"));
        }
    }
    tag
}

fn check_file<'a>(
    path: &Path,
    file: &'a [u8],
    meta: &Meta,
    reader: impl Iterator<Item = Result<(usize, Message<'a>), Error>>,
    tags: &mut BTreeSet<u8>,
) -> usize {
    let mut count = 0;
    for item in reader {
        let (offset, message) = item.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let at = format!("{} at byte {offset}", path.display());
        let mut encoded = Vec::new();
        message.encode(&mut encoded);
        let end = offset + encoded.len();
        let bytes = file
            .get(offset..end)
            .unwrap_or_else(|| panic!("{at}: past the end"));
        tags.insert(check_message(&message, bytes, meta, &at));
        count += 1;
    }
    assert!(count > 0, "{}: no messages", path.display());
    count
}

#[test]
fn golden_fixtures_parse_and_reencode_byte_for_byte() {
    let dir = fixtures_dir();
    let mut metas: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "meta"))
                .collect()
        })
        .unwrap_or_default();
    metas.sort();

    if metas.is_empty() {
        let required = std::env::var("DDL_WIRE_REQUIRE_FIXTURES").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "DDL_WIRE_REQUIRE_FIXTURES=1 but {} has no *.meta",
            dir.display()
        );
        eprintln!("skipped: no golden fixtures in {}", dir.display());
        return;
    }

    let mut tags = BTreeSet::new();
    for meta_path in &metas {
        let meta = read_meta(meta_path);
        let ctx = ProtocolContext::new(meta.proto_version, meta.streaming)
            .unwrap_or_else(|e| panic!("{}: {e}", meta_path.display()));
        let path = meta_path.with_extension(meta.data);
        let file = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (count, position, in_stream) = if meta.data == "frames" {
            let mut reader = FramedReader::new(&file, ctx);
            let count = check_file(&path, &file, &meta, reader.by_ref(), &mut tags);
            (count, reader.position(), reader.decoder().in_stream())
        } else {
            let mut reader = RecvlogicalReader::new(&file, ctx);
            let count = check_file(&path, &file, &meta, reader.by_ref(), &mut tags);
            (count, reader.position(), reader.decoder().in_stream())
        };
        assert_eq!(
            position,
            file.len(),
            "{}: not read to the end",
            path.display()
        );
        // Streamed blocks open and close while one WAL record is decoded: a capture never
        // ends inside one.
        assert!(
            !in_stream,
            "{}: ends inside a streamed block",
            path.display()
        );
        eprintln!("{}: {count} messages", path.display());
    }

    let missing: Vec<char> = PG15_TAGS
        .iter()
        .filter(|t| !tags.contains(t))
        .map(|t| char::from(*t))
        .collect();
    assert!(
        missing.is_empty(),
        "no fixture contains message types {missing:?}; capture them (see tests/fixtures)"
    );
}
