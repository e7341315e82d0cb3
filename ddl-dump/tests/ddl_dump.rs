//! The `ddl-dump` binary, run as a user runs it: on the pg_recvlogical fixtures from
//! PostgreSQL 15, on damaged copies of them, on standard input, and on hand-made streams that
//! carry DDL (an Insert on `ddl_sync.events`, a `ddl_sync` logical message).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ddl_wire::*;

// ddl-wire's test helpers (the PRNG), and its pg_recvlogical fixtures below.
#[path = "../../ddl-wire/tests/common/mod.rs"]
mod common;

const DUMP: &str = env!("CARGO_BIN_EXE_ddl-dump");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ddl-wire/tests/fixtures")
}

/// Every `*.recvlogical` fixture with the proto_version of its `.meta`.
fn recvlogical_fixtures() -> Vec<(PathBuf, u32)> {
    let mut found = Vec::new();
    for entry in fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "recvlogical") {
            let meta = fs::read_to_string(path.with_extension("meta")).unwrap();
            let version = meta
                .lines()
                .filter_map(|l| l.trim().strip_prefix("proto_version="))
                .map(|v| v.split('#').next().unwrap().trim().parse().unwrap())
                .next()
                .expect("proto_version in .meta");
            found.push((path, version));
        }
    }
    found.sort();
    found
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(DUMP)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        // Write from a thread: the child's output may fill its pipe before it reads everything.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A JSON line, which must be one valid JSON value (RFC 8259, as serde_json reads it).
fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// No run may end in a panic, whatever the input.
fn assert_no_panic(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "{err}");
}

/// (offset, tag) of each message, as the library's own reader sees the file.
fn messages_of(file: &[u8], version: u32) -> Vec<(usize, u8)> {
    let streaming = if version >= 2 {
        Streaming::On
    } else {
        Streaming::Off
    };
    RecvlogicalReader::new(file, ProtocolContext::new(version, streaming).unwrap())
        .map(|item| {
            let (offset, message) = item.unwrap();
            (offset, message.tag())
        })
        .collect()
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn to_str(&self) -> Option<&str> {
        self.0.to_str()
    }

    fn display(&self) -> std::path::Display<'_> {
        self.0.display()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

impl AsRef<std::ffi::OsStr> for TempFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

fn temp_file(name: &str, bytes: &[u8]) -> TempFile {
    let path = std::env::temp_dir().join(format!("ddl-dump-test-{}-{name}", std::process::id()));
    fs::write(&path, bytes).unwrap();
    TempFile(path)
}

#[test]
fn every_fixture_verifies_with_one_line_per_message() {
    let fixtures = recvlogical_fixtures();
    assert!(!fixtures.is_empty(), "no *.recvlogical fixture");
    for (path, version) in fixtures {
        let file = fs::read(&path).unwrap();
        let messages = messages_of(&file, version);
        let v = version.to_string();
        let o = run(
            &["--proto-version", &v, "--verify", path.to_str().unwrap()],
            None,
        );
        assert_no_panic(&o);
        assert!(o.status.success(), "{}: {}", path.display(), stderr(&o));
        let out = stdout(&o);
        assert_eq!(out.lines().count(), messages.len(), "{}", path.display());
        // Each line starts with the message's offset, number and tag.
        for (i, (line, (offset, tag))) in out.lines().zip(&messages).enumerate() {
            let head = format!("{offset} {} {} ", i + 1, char::from(*tag));
            assert!(line.starts_with(&head), "{line:?} should start {head:?}");
        }
        let summary = format!("verified {} messages, {} bytes", messages.len(), file.len());
        assert!(stderr(&o).contains(&summary), "{}", stderr(&o));
    }
}

#[test]
fn text_lines_of_a_real_capture() {
    let path = fixtures().join("v1_text_recvlogical.recvlogical");
    let o = run(&[path.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    // Begin: LSN as X/Y, commit time in ISO 8601 UTC.
    let begin = lines[0];
    assert!(begin.starts_with("0 1 B Begin xid="), "{begin}");
    let time = begin.split("commit_time=").nth(1).unwrap();
    assert_eq!(time.len(), "2026-11-29T20:51:53.711018Z".len(), "{begin}");
    assert!(
        time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{begin}"
    );
    assert!(begin.contains(" final_lsn=0/"), "{begin}");
    // Relation with column names and types; Insert values under those names.
    assert!(
        out.contains(" R Relation public.kinds rel_id="),
        "no Relation line"
    );
    assert!(out.contains("columns=(id int4 key, small int2, "), "{out}");
    assert!(out.contains(" I Insert public.kinds new=(id=\"1\", small=\"7\", "));
    assert!(out.contains(", small=NULL, "));
    // Unchanged TOAST, old keys and old rows, Truncate.
    assert!(
        out.contains("=(unchanged toast)"),
        "no unchanged toast value"
    );
    assert!(out.contains(" U Update public.kinds key=(id=\"2\""));
    assert!(out.contains(" D Delete public.full_rows old=(id=\"2\""));
    assert!(out.contains(" T Truncate relations=(public."));
    assert!(out.contains(" C Commit commit_lsn=0/"));
    // One line per message: no raw newline or control character inside a line.
    assert!(out.lines().all(|l| !l.chars().any(|c| c.is_control())));
}

#[test]
fn streamed_changes_show_their_transaction() {
    let path = fixtures().join("v2_stream_recvlogical.recvlogical");
    let o = run(&["--proto-version", "2", path.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let start = out
        .lines()
        .find(|l| l.contains(" S Stream Start "))
        .unwrap();
    let xid = start
        .split("xid=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(out.contains(&format!(" I Insert xid={xid} ")), "{start}");
    assert!(out.contains(" E Stream Stop"));
    assert!(out.contains(&format!(" c Stream Commit xid={xid} ")));
    assert!(out.contains(" A Stream Abort xid="));
}

#[test]
fn json_lines_are_objects_with_offset_number_tag_and_type() {
    for (path, version) in recvlogical_fixtures() {
        let file = fs::read(&path).unwrap();
        let messages = messages_of(&file, version);
        let v = version.to_string();
        let o = run(
            &[
                "--proto-version",
                &v,
                "--format",
                "json",
                path.to_str().unwrap(),
            ],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(out.lines().count(), messages.len());
        for (i, (line, (offset, tag))) in out.lines().zip(&messages).enumerate() {
            let value = json(line);
            assert!(value.is_object(), "not an object: {line}");
            assert_eq!(value["offset"], *offset, "{line}");
            assert_eq!(value["number"], i + 1, "{line}");
            assert_eq!(value["tag"], char::from(*tag).to_string(), "{line}");
            assert!(value["type"].is_string(), "{line}");
        }
    }
    // A few fields of a real capture.
    let path = fixtures().join("v3_stream_twophase_binary_messages_recvlogical.recvlogical");
    let o = run(
        &["--proto-version=3", "--format=json", path.to_str().unwrap()],
        None,
    );
    let out = stdout(&o);
    assert!(out.starts_with(r#"{"offset":0,"number":1,"tag":"B","type":"Begin","xid":"#));
    assert!(out.contains(r#""type":"Insert","relation":"public.kinds","rel_id":"#));
    assert!(
        out.contains(r#""id":{"binary":"\\x00000001"}"#),
        "binary values"
    );
    assert!(
        out.contains(r#""content_hex":"\\x00010203fe""#),
        "binary content"
    );
    assert!(out.contains(r#""type":"Commit Prepared","xid":"#));
    assert!(out.contains(r#""unchanged_toast":true"#));
}

#[test]
fn a_truncated_file_names_the_message_and_the_offset() {
    let path = fixtures().join("v1_text_recvlogical.recvlogical");
    let file = fs::read(&path).unwrap();
    let messages = messages_of(&file, 1);
    let (k, (start, _)) = messages
        .iter()
        .enumerate()
        .find(|(_, (_, tag))| *tag == b'I')
        .unwrap();
    let next = messages[k + 1].0;

    // Cut inside the message.
    let cut = start + 5;
    let copy = temp_file("cut.recvlogical", &file[..cut]);
    let o = run(&[copy.to_str().unwrap()], None);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    let expected = format!(
        "ddl-dump: {}: message {} at byte {cut}: Insert ('I'): ",
        copy.display(),
        k + 1
    );
    assert!(err.starts_with(&expected), "{err}");
    assert!(err.contains("cut short"), "{err}");
    // What came before is printed.
    assert_eq!(stdout(&o).lines().count(), k);

    // Cut between the message and its '\n'.
    let copy = temp_file("no-newline.recvlogical", &file[..next - 1]);
    let o = run(&[copy.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("message {} at byte {}: ", k + 1, next - 1)),
        "{err}"
    );
    assert!(err.contains("without the '\\n'"), "{err}");

    // Cut right after a '\n': a shorter file, not a broken one.
    let copy = temp_file("whole.recvlogical", &file[..next]);
    let o = run(&["--verify", copy.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), k + 1);
}

#[test]
fn a_corrupted_byte_is_an_error_at_its_offset() {
    let path = fixtures().join("v1_text_recvlogical.recvlogical");
    let file = fs::read(&path).unwrap();
    let messages = messages_of(&file, 1);
    let (k, &(start, _)) = messages
        .iter()
        .enumerate()
        .find(|(_, (_, tag))| *tag == b'I')
        .unwrap();

    // An unknown message type.
    let mut bad = file.clone();
    bad[start] = b'x';
    let copy = temp_file("bad-tag.recvlogical", &bad);
    let o = run(&["--verify", copy.to_str().unwrap()], None);
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "message {} at byte {start}: unknown message type 'x'",
            k + 1
        )),
        "{err}"
    );

    // A column kind byte that does not exist: the Insert is 'I', rel id, 'N', column count,
    // then the first column's kind.
    let mut bad = file.clone();
    let kind_at = start + 1 + 4 + 1 + 2;
    assert_eq!(bad[kind_at], b't');
    bad[kind_at] = b'q';
    let copy = temp_file("bad-kind.recvlogical", &bad);
    let o = run(&[copy.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "message {} at byte {kind_at}: Insert ('I'): unrecognized column data kind 'q'",
            k + 1
        )),
        "{err}"
    );

    // The '\n' after a message replaced.
    let next = messages[k + 1].0;
    let mut bad = file.clone();
    bad[next - 1] = b'!';
    let copy = temp_file("bad-newline.recvlogical", &bad);
    let o = run(&[copy.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("message {} at byte {}: ", k + 1, next - 1)),
        "{err}"
    );
    assert!(err.contains("expected the '\\n'"), "{err}");
    assert!(err.contains("found '!'"), "{err}");
}

#[test]
fn standard_input_is_read_like_a_file() {
    let path = fixtures().join("v2_stream_recvlogical.recvlogical");
    let file = fs::read(&path).unwrap();
    let from_file = run(&["--proto-version=2", path.to_str().unwrap()], None);
    let dash = run(&["--proto-version=2", "-"], Some(&file));
    let none = run(&["--proto-version=2"], Some(&file));
    assert!(from_file.status.success() && dash.status.success() && none.status.success());
    assert_eq!(from_file.stdout, dash.stdout);
    assert_eq!(from_file.stdout, none.stdout);
    // Errors name standard input.
    let o = run(
        &["--proto-version=2", "--verify"],
        Some(&file[..file.len() - 3]),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("ddl-dump: stdin: message "),
        "{}",
        stderr(&o)
    );
}

/// `pg_recvlogical ... -f - | ddl-dump`: each message is printed when it arrives, not at the
/// end of the input.
#[test]
fn messages_are_printed_as_they_arrive() {
    let path = fixtures().join("v1_text_recvlogical.recvlogical");
    let file = fs::read(&path).unwrap();
    let messages = messages_of(&file, 1);
    let mut child = Command::new(DUMP)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let output = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            if lines.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // Two whole messages and half of the third; the input stays open.
    let third = messages[2].0;
    input.write_all(&file[..third + 3]).unwrap();
    input.flush().unwrap();
    for number in 1..=2 {
        let line = received
            .recv_timeout(Duration::from_secs(20))
            .expect("a whole message is printed before the input ends");
        assert!(line.starts_with(&format!("{} {number} ", messages[number - 1].0)));
    }
    assert!(received.recv_timeout(Duration::from_millis(200)).is_err());
    // The rest of the file.
    input.write_all(&file[third + 3..]).unwrap();
    drop(input);
    let rest: Vec<String> = received.iter().collect();
    assert_eq!(rest.len(), messages.len() - 2);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    // A long input: the same session several times over is still a valid stream.
    let path = fixtures().join("v1_text_recvlogical.recvlogical");
    let file = fs::read(&path).unwrap().repeat(20);
    let copy = temp_file("long.recvlogical", &file);
    let mut child = Command::new(DUMP)
        .arg(&copy)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

/// Usage errors are clap's, with this tool's exit status 64 (2 is an input error here).
#[test]
fn usage_errors_exit_64() {
    for (args, expected) in [
        (&["--bogus"][..], "unexpected argument '--bogus' found"),
        (
            &["--format", "xml"][..],
            "invalid value 'xml' for '--format <FORMAT>'",
        ),
        (
            &["--proto-version"][..],
            "a value is required for '--proto-version <N>'",
        ),
        (
            &["--proto-version", "five"][..],
            "invalid value 'five' for '--proto-version <N>'",
        ),
        (&["a", "b"][..], "unexpected argument 'b' found"),
        (
            &["--slot", "s"][..],
            "the following required arguments were not provided",
        ),
        (
            &["--proto-version", "5"][..],
            "proto_version=5 is not supported; pgoutput has versions 1 to 4",
        ),
        (
            &["--proto-version", "0"][..],
            "proto_version=0 is not supported",
        ),
        (
            &["--streaming-parallel"][..],
            "proto_version=1 does not support streaming = parallel, need 4 or higher",
        ),
        (
            &["--proto-version=3", "--streaming-parallel"][..],
            "proto_version=3 does not support streaming = parallel, need 4 or higher",
        ),
    ] {
        let o = run(args, Some(b""));
        assert_no_panic(&o);
        assert_eq!(o.status.code(), Some(64), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    // A usage line with the option errors.
    assert!(stderr(&run(&["--bogus"], None)).contains("Usage: ddl-dump "));
    // --help and --version are not errors.
    let o = run(&["--help"], None);
    assert!(o.status.success());
    assert!(stdout(&o).contains("--proto-version <N>"), "{}", stdout(&o));
    assert!(stdout(&o).contains("--follow <CONNSTR>"), "{}", stdout(&o));
    let o = run(&["--version"], None);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        format!("ddl-dump {}\n", env!("CARGO_PKG_VERSION"))
    );
    // A file that does not exist is an input error.
    let o = run(&["/nonexistent/ddl-dump-input"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("ddl-dump: /nonexistent/ddl-dump-input: "));
    // proto_version 4 with streaming = parallel is fine (PostgreSQL 16 and up).
    let o = run(&["--proto-version=4", "--streaming-parallel"], Some(b""));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Damaged inputs of every kind end with a clear status (0 when the damage still parses, 2
/// otherwise; 1 never, as what parses re-encodes exactly), never with a panic.
#[test]
fn damaged_inputs_never_panic_the_tool() {
    let mut rng = common::Rng::new(31);
    let fixtures = recvlogical_fixtures();
    for round in 0..60 {
        let (path, version) = &fixtures[round % fixtures.len()];
        let mut file = fs::read(path).unwrap();
        // A few bytes changed, inserted or removed somewhere, or random bytes.
        match round % 4 {
            0 => {
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(file.len());
                    file[at] = rng.next_u64() as u8;
                }
            }
            1 => {
                let at = rng.below(file.len());
                file.insert(at, rng.pick(&[b'\n', 0, 0xFF, b'I', b'S']));
            }
            2 => {
                file.remove(rng.below(file.len()));
            }
            _ => file = rng.bytes(400),
        }
        let v = version.to_string();
        for format in ["text", "json"] {
            let o = run(
                &["--proto-version", &v, "--format", format, "--verify", "-"],
                Some(&file),
            );
            assert_no_panic(&o);
            let code = o.status.code();
            assert!(
                code == Some(0) || code == Some(2),
                "{code:?}: {}",
                stderr(&o)
            );
            if code == Some(2) {
                assert!(
                    stderr(&o).starts_with("ddl-dump: stdin: "),
                    "{}",
                    stderr(&o)
                );
            }
            if format == "json" {
                for line in stdout(&o).lines() {
                    json(line);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// DDL

const EVENTS_REL_ID: u32 = 16_500;

/// The OID of an event column's SQL type.
fn type_oid(sql_type: &str) -> u32 {
    match sql_type {
        "boolean" => 16,
        "bigint" => 20,
        "text" => 25,
        "pg_lsn" => 3220,
        other => panic!("unexpected event column type {other}"),
    }
}

/// The Relation of `ddl_sync.events` as ddl_pgoutput sends it (plus a column the view ignores),
/// and the names of its columns in order.
fn events_relation(xid: Option<u32>) -> (Vec<u8>, Vec<&'static str>) {
    let mut names = vec!["id"];
    names.extend(event_columns().map(|(name, _)| name));
    let columns: Vec<Column<'_>> = names
        .iter()
        .map(|name| {
            let oid = event_columns()
                .find(|(n, _)| n == name)
                .map_or(20, |(_, ty)| type_oid(ty));
            Column::new(0, PgStr::new(name.as_bytes()).unwrap(), oid, -1)
        })
        .collect();
    let mut out = Vec::new();
    write_relation(
        xid,
        EVENTS_REL_ID,
        PgStr::new(EVENTS_SCHEMA.as_bytes()).unwrap(),
        PgStr::new(EVENTS_TABLE.as_bytes()).unwrap(),
        b'd',
        &columns,
        &mut out,
    )
    .unwrap();
    (out, names)
}

fn event_value(column: &str) -> &'static [u8] {
    match column {
        "id" => b"1",
        "lsn" => b"0/16B3748",
        "origin_sysid" => b"7301234567890123456",
        "origin_lsn" => b"0/0",
        "xid" => b"731",
        "top_level" => b"t",
        "forwarded" => b"f",
        "kind" => b"table",
        "dialect" => b"postgres",
        "command_tag" => b"CREATE TABLE",
        "schema_name" => b"public",
        "object_identity" => b"public.t",
        "sql" => b"CREATE TABLE t (a int)",
        "search_path" => b"\"$user\", public",
        "role_name" => b"app",
        "session_user_name" => b"app",
        "database_name" => b"shop",
        "tables" => b"CREATE TABLE public.t (a integer);",
        "settings" => b"",
        "role_rights" => b"NOSUPERUSER",
        "bindings" => b"",
        "capturing_sysid" => b"7301234567890123456",
        "sent_generated_columns" => b"",
        "description" => br#"{"version":1,"objects":[{"action":"created","kind":"table","identity":"public.t","owner":"app","columns":[{"name":"a","type":"integer"}],"table":{"replica_identity":"default"},"later":[1]}]}"#,
        other => panic!("no value for {other}"),
    }
}

/// An Insert on `ddl_sync.events`, with `broken` given another value.
fn events_insert(
    xid: Option<u32>,
    names: &[&str],
    broken: Option<(&str, &'static [u8])>,
) -> Vec<u8> {
    let values: Vec<TupleValue<'_>> = names
        .iter()
        .map(|name| match broken {
            Some((column, value)) if column == *name => TupleValue::Text(value),
            _ => TupleValue::Text(event_value(name)),
        })
        .collect();
    let mut out = Vec::new();
    write_insert(xid, EVENTS_REL_ID, &values, &mut out).unwrap();
    out
}

fn record() -> DdlRecord<'static> {
    DdlRecord {
        flags: RecordFlags::TOP_LEVEL | RecordFlags::TRANSACTIONAL,
        xid: 731,
        kind: "table",
        class_id: 1259,
        object_id: 16_384,
        namespace_id: 2200,
        origin: RecordOrigin {
            capturing_sysid: 7_301_234_567_890_123_456,
            original_sysid: 7_301_234_567_890_123_456,
            original_lsn: 0,
        },
        dialect: "postgres",
        command_tag: "CREATE TABLE",
        schema: "public",
        object_identity: "public.t",
        sql: "CREATE TABLE t (a int)",
        search_path: "\"$user\", public",
        role: "app",
        session_user: "app",
        database: "shop",
        tables: "CREATE TABLE public.t (a integer);",
        settings: "DateStyle=ISO, MDY",
        role_rights: "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS",
        bindings: Some("type public.money_amount\n"),
        renamed_from: "",
        description: "",
        tag: [0; ddl_wire::RECORD_TAG_LEN],
    }
}

/// A pg_recvlogical file of `messages`.
fn file_of(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut file = Vec::new();
    for m in messages {
        file.extend_from_slice(m);
        file.push(b'\n');
    }
    file
}

fn begin() -> Vec<u8> {
    let mut out = Vec::new();
    write_begin(0x16B_3800, 0, 731, &mut out);
    out
}

fn commit() -> Vec<u8> {
    let mut out = Vec::new();
    write_commit(0x16B_3800, 0x16B_3830, 0, &mut out);
    out
}

const DDL_LINE: &str = "DDL table CREATE TABLE public.t (schema public, role app, \
                        search_path \"$user\", public): CREATE TABLE t (a int)";

#[test]
fn an_insert_on_ddl_sync_events_is_shown_as_its_ddl() {
    let (relation, names) = events_relation(None);
    let file = file_of(&[
        begin(),
        relation,
        events_insert(None, &names, None),
        // A broken row: reported, shown as a row, and the dump goes on.
        events_insert(None, &names, Some(("xid", b"7x"))),
        events_insert(None, &names, Some(("sql", b"\xff"))),
        commit(),
    ]);
    let path = temp_file("events.recvlogical", &file);
    let o = run(&["--verify", path.to_str().unwrap()], None);
    assert_no_panic(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines[1].contains(" R Relation ddl_sync.events rel_id=16500 "));
    assert!(lines[1].contains(" ddl_events "), "{}", lines[1]);
    assert!(lines[2].ends_with(DDL_LINE), "{}", lines[2]);
    assert!(lines[2].contains(" 3 I DDL table "), "{}", lines[2]);

    // The broken rows: a row each, with a warning on the line and on stderr.
    let messages = messages_of(&file, 1);
    assert!(lines[3].contains(" I Insert ddl_sync.events new=(id=\"1\", "));
    assert!(lines[3].contains("xid=\"7x\""), "{}", lines[3]);
    assert!(lines[3].contains("(warning: "));
    assert!(lines[4].contains("sql=\"\\xff\""), "{}", lines[4]);
    assert!(lines[5].contains(" C Commit "));
    let err = stderr(&o);
    let warning = format!(
        "ddl-dump: {}: warning: message 4 at byte {}: Insert on ddl_sync.events is not a \
         valid DDL event, shown as a row: event column \"xid\" is not a valid bigint",
        path.display(),
        messages[3].0
    );
    assert!(err.contains(&warning), "{err}");
    assert!(
        err.contains(&format!("warning: message 5 at byte {}: ", messages[4].0)),
        "{err}"
    );
    assert!(err.contains("event column \"sql\" is not UTF-8"), "{err}");

    // JSON: every DdlEvent field.
    let o = run(&["--format", "json", path.to_str().unwrap()], None);
    assert!(o.status.success());
    let out = stdout(&o);
    let ddl = out.lines().nth(2).unwrap();
    json(ddl);
    assert!(
        ddl.starts_with(&format!(
            r#"{{"offset":{},"number":3,"tag":"I","type":"Insert","relation":"ddl_sync.events","rel_id":16500,"ddl":{{"#,
            messages[2].0
        )),
        "{ddl}"
    );
    for member in [
        r#""lsn":"0/16B3748""#,
        r#""origin_sysid":7301234567890123456"#,
        r#""origin_lsn":"0/0""#,
        r#""xid":731"#,
        r#""top_level":true"#,
        r#""forwarded":false"#,
        r#""kind":"table""#,
        r#""dialect":"postgres""#,
        r#""command_tag":"CREATE TABLE""#,
        r#""schema":"public""#,
        r#""object_identity":"public.t""#,
        r#""sql":"CREATE TABLE t (a int)""#,
        r#""search_path":"\"$user\", public""#,
        r#""role":"app""#,
        r#""session_user":"app""#,
        r#""database":"shop""#,
        r#""tables":"CREATE TABLE public.t (a integer);""#,
        r#""role_rights":"NOSUPERUSER""#,
        r#""capturing_sysid":7301234567890123456"#,
        // The description as an object, not a string of JSON, with what this reader does not
        // know kept.
        r#""description":{"version":1,"objects":[{"action":"created","kind":"table","identity":"public.t","owner":"app","columns":[{"name":"a","type":"integer"}],"table":{"replica_identity":"default"},"later":[1]}]}"#,
    ] {
        assert!(ddl.contains(member), "{member} in {ddl}");
    }
    let broken = out.lines().nth(3).unwrap();
    json(broken);
    assert!(broken.contains(r#""new":{"id":"1","#), "{broken}");
    assert!(broken.contains(r#""warning":"Insert on ddl_sync.events is not a valid DDL event"#));
}

#[test]
fn a_streamed_ddl_event_shows_its_transaction() {
    let (relation, names) = events_relation(Some(901));
    let mut start = Vec::new();
    write_stream_start(901, true, &mut start);
    let mut stop = Vec::new();
    write_stream_stop(&mut stop);
    let file = file_of(&[
        start,
        relation,
        events_insert(Some(901), &names, None),
        stop,
    ]);
    let o = run(&["--proto-version", "2", "-"], Some(&file));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out.lines().nth(2).unwrap();
    assert!(
        line.contains(" I DDL xid=901 table CREATE TABLE "),
        "{line}"
    );
    assert!(line.ends_with("): CREATE TABLE t (a int)"), "{line}");
}

#[test]
fn an_events_relation_without_a_needed_column_is_reported() {
    let mut columns = Vec::new();
    for (name, ty) in event_columns().filter(|(n, _)| *n != "sql") {
        columns.push(Column::new(
            0,
            PgStr::new(name.as_bytes()).unwrap(),
            type_oid(ty),
            -1,
        ));
    }
    let mut relation = Vec::new();
    write_relation(
        None,
        EVENTS_REL_ID,
        c"ddl_sync".into(),
        c"events".into(),
        b'd',
        &columns,
        &mut relation,
    )
    .unwrap();
    let names: Vec<&str> = event_columns()
        .map(|(n, _)| n)
        .filter(|n| *n != "sql")
        .collect();
    let file = file_of(&[
        begin(),
        relation,
        events_insert(None, &names, None),
        commit(),
    ]);
    let o = run(&["-"], Some(&file));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 4);
    assert!(!out.contains(" I DDL "), "{out}");
    let err = stderr(&o);
    assert!(err.contains("warning: message 2 at byte "), "{err}");
    assert!(
        err.contains("ddl_sync.events has no column \"sql\""),
        "{err}"
    );
    assert!(err.contains("warning: message 3 at byte "), "{err}");
}

#[test]
fn a_ddl_sync_message_is_shown_as_its_ddl_record() {
    let mut good = Vec::new();
    record().encode(&mut good);
    let mut forwarded = record();
    forwarded.flags = RecordFlags::FORWARDED | RecordFlags::TRANSACTIONAL;
    forwarded.origin.original_sysid = 42;
    forwarded.origin.original_lsn = 0x1_0000_0010;
    forwarded.kind = "index";
    forwarded.dialect = "tsql";
    forwarded.sql = "CREATE TABLE t\n(a int)";
    let mut forwarded_bytes = Vec::new();
    forwarded.encode(&mut forwarded_bytes);
    let message = |content: &[u8], prefix: &std::ffi::CStr| {
        let mut out = Vec::new();
        write_logical_message(None, true, 0x16B_3748, prefix.into(), content, &mut out).unwrap();
        out
    };
    let file = file_of(&[
        begin(),
        message(&good, c"ddl_sync"),
        // Garbage under the prefix: a warning, and the dump goes on.
        message(b"\x02\x00\xffgarbage", c"ddl_sync"),
        message(&forwarded_bytes, c"ddl_sync"),
        // The same bytes under another prefix are no DDL.
        message(&good, c"other"),
        commit(),
    ]);
    let path = temp_file("record.recvlogical", &file);
    let messages = messages_of(&file, 1);
    let o = run(&["--verify", path.to_str().unwrap()], None);
    assert_no_panic(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(lines[1], format!("{} 2 M {DDL_LINE}", messages[1].0));
    assert!(lines[2]
        .contains(" M Message transactional lsn=0/16B3748 prefix=ddl_sync content=\\x0200ff67"));
    assert!(lines[2].contains("(warning: ddl_sync message is not a valid DDL record"));
    assert!(
        lines[3].ends_with(
            "M DDL index CREATE TABLE public.t (schema public, role app, search_path \
             \"$user\", public, dialect tsql, nested, forwarded from 42 at 1/10): CREATE TABLE \
             t\\n(a int)"
        ),
        "{}",
        lines[3]
    );
    assert!(lines[4].contains(" M Message transactional lsn=0/16B3748 prefix=other content="));
    assert!(lines[5].contains(" C Commit "));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warning: message 3 at byte {}: ddl_sync message is not a valid DDL record, shown as \
             it is: ddl_sync record at byte 10: payload ends inside field ",
            messages[2].0
        )),
        "{err}"
    );
    assert!(err.contains("verified 6 messages"), "{err}");

    let o = run(&["--format=json", path.to_str().unwrap()], None);
    let out = stdout(&o);
    for line in out.lines() {
        json(line);
    }
    let ddl = out.lines().nth(1).unwrap();
    for member in [
        r#""type":"Message","transactional":true,"lsn":"0/16B3748","prefix":"ddl_sync","ddl":{"#,
        r#""format_version":5"#,
        r#""top_level":true"#,
        r#""transactional":true"#,
        r#""forwarded":false"#,
        r#""xid":731"#,
        r#""kind":"table""#,
        r#""class_id":1259"#,
        r#""object_id":16384"#,
        r#""namespace_id":2200"#,
        r#""capturing_sysid":7301234567890123456"#,
        r#""original_sysid":7301234567890123456"#,
        r#""original_lsn":"0/0""#,
        r#""sql":"CREATE TABLE t (a int)""#,
        r#""database":"shop""#,
        r#""role_rights":"NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS""#,
    ] {
        assert!(ddl.contains(member), "{member} in {ddl}");
    }
    assert!(!ddl.contains("content"), "{ddl}");
    let garbage = out.lines().nth(2).unwrap();
    assert!(
        garbage.contains(r#""content_hex":"\\x0200ff67"#),
        "{garbage}"
    );
    assert!(garbage.contains(r#""warning":"ddl_sync message is not a valid DDL record"#));
}

#[test]
fn the_captures_empty_padding_message_is_not_a_warning() {
    let mut padding = Vec::new();
    write_logical_message(
        None,
        true,
        0x16B_3748,
        c"ddl_sync".into(),
        b"",
        &mut padding,
    )
    .unwrap();
    let file = file_of(&[begin(), padding, commit()]);
    let path = temp_file("padding.recvlogical", &file);
    let o = run(&[path.to_str().unwrap()], None);
    assert_no_panic(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("warning"), "{}", stdout(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 3);
}
