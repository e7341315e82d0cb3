//! `ddl-dump`: prints the pgoutput messages of a pg_recvlogical output file, one line each,
//! with the DDL statements a `ddl_pgoutput` stream carries shown as DDL.
//!
//! ```text
//! ddl-dump [--proto-version N] [--streaming-parallel] [--format text|json] [--verify] [FILE|-]
//! ddl-dump --follow CONNSTR --slot S --publication P [--option NAME=VALUE]... [--endpos LSN]
//!          [--recvlogical PATH] [the options above, without FILE]
//! ```
//!
//! The input is read as it arrives (`pg_recvlogical ... -f - | ddl-dump`), so each message is
//! printed as soon as it is whole; `--follow` runs pg_recvlogical itself. Exit status: 0 done, 1
//! `--verify` found a message that does not re-encode to its bytes, 2 the input is cut short or
//! invalid (or cannot be read, or pg_recvlogical failed), 64 usage.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode, Stdio};

use clap::Parser;
use ddl_wire::{ProtocolContext, StreamDecoder, Streaming};

mod follow;
mod render;
mod show;

use follow::Follow;
use render::{At, Format, Printer};

const ABOUT: &str = "Prints the pgoutput messages of a pg_recvlogical output file, one line per \
                     message, with the DDL a ddl_pgoutput stream carries shown as DDL";

const LONG_ABOUT: &str = "\
Prints the pgoutput messages of a pg_recvlogical output file (each message followed by one
'\\n'), one line per message. Inserts on ddl_sync.events and ddl_sync logical messages are shown
as the DDL statements they carry.

Reads FILE, or standard input when FILE is '-' or missing, as it arrives:
  pg_recvlogical -d db --slot s --start -o proto_version=1 -o publication_names=p -f - | ddl-dump -
or, with --follow, runs that pg_recvlogical itself (with --no-loop) until it ends or is
interrupted:
  ddl-dump --follow 'dbname=db host=h' --slot s --publication p";

const USAGE: &str = "ddl-dump [OPTIONS] [FILE|-]
       ddl-dump --follow <CONNSTR> --slot <S> --publication <P> [OPTIONS]";

const EXIT_STATUS: &str = "Exit status: 0 done, 1 --verify found a difference, 2 the input is \
                           cut short, invalid or unreadable, or pg_recvlogical failed, 64 usage \
                           error.";

const EXIT_VERIFY: u8 = 1;
const EXIT_INPUT: u8 = 2;
/// BSD's EX_USAGE. Not clap's 2, which is [`EXIT_INPUT`] here.
const EXIT_USAGE: u8 = 64;

/// What the command line asks for.
#[derive(Debug, Parser)]
#[command(
    name = "ddl-dump",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    override_usage = USAGE,
    after_help = EXIT_STATUS
)]
struct Options {
    /// The proto_version the stream was started with (1 to 4); streaming is taken as 'on' from
    /// version 2
    #[arg(long, value_name = "N", default_value_t = 1)]
    proto_version: u32,
    /// The stream was started with streaming = parallel (proto_version 4)
    #[arg(long)]
    streaming_parallel: bool,
    /// One line of text, or one JSON object, per message
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Text)]
    format: Format,
    /// Check that every message re-encodes to exactly its bytes
    #[arg(long)]
    verify: bool,
    /// The pg_recvlogical output file; standard input when '-' or missing
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// `--follow`: the slot to stream instead of a file.
    #[command(flatten)]
    follow: Follow,
}

impl Options {
    /// The file to read; `None` for standard input.
    fn input(&self) -> Option<&Path> {
        self.file.as_deref().filter(|path| *path != Path::new("-"))
    }
}

/// The protocol context the options describe: `streaming = on` from version 2 (a stream that
/// was started without it just never sends streaming messages), `parallel` when asked.
fn context(options: &Options) -> Result<ProtocolContext, ddl_wire::Error> {
    let streaming = if options.streaming_parallel {
        Streaming::Parallel
    } else if options.proto_version >= 2 {
        Streaming::On
    } else {
        Streaming::Off
    };
    ProtocolContext::new(options.proto_version, streaming)
}

/// Why a dump stopped early.
enum Stop {
    /// The input is cut short or invalid: message `number`, at file offset `offset`.
    Input {
        number: u64,
        offset: u64,
        what: String,
    },
    /// The input could not be read.
    Read(io::Error),
    /// `--verify`: a message re-encodes differently.
    Verify {
        number: u64,
        tag: u8,
        offset: u64,
        expected: Option<u8>,
        actual: Option<u8>,
    },
    /// Standard output went away (`| head`): not an error.
    BrokenPipe,
    /// Standard output failed otherwise.
    Write(io::Error),
}

impl From<io::Error> for Stop {
    /// An error writing the output.
    fn from(e: io::Error) -> Stop {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Stop::BrokenPipe
        } else {
            Stop::Write(e)
        }
    }
}

/// What was dumped.
struct Summary {
    messages: u64,
    bytes: u64,
}

/// How much to read at a time (at least: a message that does not fit grows the buffer).
const CHUNK: usize = 64 * 1024;

/// Dumps `input` to `out`, reading incrementally: every whole message in the buffer is
/// printed, then the output is flushed before waiting for more input.
fn dump(
    input: &mut dyn Read,
    name: &str,
    options: &Options,
    ctx: ProtocolContext,
    out: &mut dyn Write,
) -> Result<Summary, Stop> {
    let mut decoder = StreamDecoder::new(ctx);
    let mut printer = Printer::new(options.format);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    // buf[start..] is not consumed yet; buf[0] is at file offset `base`.
    let mut start = 0usize;
    let mut base = 0u64;
    let mut eof = false;
    let mut number = 0u64;
    let mut again = Vec::new();
    loop {
        while start < buf.len() {
            let rest = &buf[start..];
            let offset = base + start as u64;
            let before = decoder.clone();
            let (message, used) = match decoder.decode_prefix(rest) {
                Ok(parsed) => parsed,
                // More input may complete the message.
                Err(e) if e.is_incomplete() && !eof => break,
                Err(e) => {
                    let mut what = wire_error(&e);
                    if e.is_incomplete() {
                        what.push_str(" (the input is cut short)");
                    }
                    return Err(Stop::Input {
                        number: number + 1,
                        offset: offset + e.offset() as u64,
                        what,
                    });
                }
            };
            match rest.get(used) {
                Some(b'\n') => {}
                Some(&other) => {
                    return Err(Stop::Input {
                        number: number + 1,
                        offset: offset + used as u64,
                        what: format!(
                            "{}: expected the '\\n' pg_recvlogical writes after each message, \
                             found {}",
                            describe(message.tag()),
                            byte(Some(other))
                        ),
                    });
                }
                None if eof => {
                    return Err(Stop::Input {
                        number: number + 1,
                        offset: offset + used as u64,
                        what: format!(
                            "{}: the input ends without the '\\n' pg_recvlogical writes after \
                             each message (the input is cut short)",
                            describe(message.tag())
                        ),
                    });
                }
                None => {
                    // Parse it again once the '\n' is there.
                    decoder = before;
                    break;
                }
            }
            number += 1;
            if options.verify {
                again.clear();
                message.encode(&mut again);
                let bytes = &rest[..used];
                if let Some(at) = first_difference(bytes, &again) {
                    return Err(Stop::Verify {
                        number,
                        tag: message.tag(),
                        offset: offset + at as u64,
                        expected: bytes.get(at).copied(),
                        actual: again.get(at).copied(),
                    });
                }
            }
            let rendered = printer.message(at(offset, number), &message);
            out.write_all(rendered.line.as_bytes())?;
            out.write_all(b"\n")?;
            if let Some(warning) = rendered.warning {
                // Keep the warning next to its line on a terminal.
                out.flush()?;
                report(&format!(
                    "{name}: warning: message {number} at byte {offset}: {warning}"
                ));
            }
            start += used + 1;
        }
        if eof {
            return Ok(Summary {
                messages: number,
                bytes: base + buf.len() as u64,
            });
        }
        // Everything whole is printed: show it before waiting for more.
        out.flush()?;
        if start > 0 {
            buf.drain(..start);
            base += start as u64;
            start = 0;
        }
        // Read at least as much as is buffered, so that a large message is parsed again only
        // a logarithmic number of times when the input comes in large pieces.
        let filled = buf.len();
        buf.resize(filled + CHUNK.max(filled), 0);
        let read = loop {
            match input.read(&mut buf[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    buf.truncate(filled);
                    return Err(Stop::Read(e));
                }
            }
        };
        buf.truncate(filled + read);
        eof = read == 0;
    }
}

/// Where `expected` and `actual` first differ (a byte, or where the shorter one ends).
fn first_difference(expected: &[u8], actual: &[u8]) -> Option<usize> {
    if expected == actual {
        return None;
    }
    Some(
        expected
            .iter()
            .zip(actual)
            .position(|(a, b)| a != b)
            .unwrap_or(expected.len().min(actual.len())),
    )
}

/// The message concerned, as the crate's errors name it: `Insert ('I')`.
fn describe(tag: u8) -> String {
    match ddl_wire::message_type_name(tag) {
        Some(name) => format!("{name} ('{}')", char::from(tag)),
        None => format!("message type {}", byte(Some(tag))),
    }
}

/// A wire error without its trailing ` at byte N`: the caller gives the file offset instead.
fn wire_error(e: &ddl_wire::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at byte {}", e.offset());
    match text.strip_suffix(&suffix) {
        Some(head) => head.to_owned(),
        None => text,
    }
}

/// A byte as `'x'` when printable, else as `0x07`; `end of message` for none.
fn byte(b: Option<u8>) -> String {
    match b {
        Some(b) if b.is_ascii_graphic() || b == b' ' => format!("'{}' (0x{b:02x})", char::from(b)),
        Some(b) => format!("0x{b:02x}"),
        None => "the end of the message".to_owned(),
    }
}

fn at(offset: u64, number: u64) -> At {
    At { offset, number }
}

/// Ends the pg_recvlogical of `--follow`: after a dump that stopped early it is killed (its
/// output is no longer read); after the end of its output, its failure is the dump's
/// (`Some` exit code).
fn finish(mut child: Child, dumped: bool) -> Option<ExitCode> {
    if !dumped {
        let _ = child.kill();
    }
    match child.wait() {
        Ok(status) if dumped && !status.success() => {
            report(&format!("pg_recvlogical failed ({status})"));
            Some(ExitCode::from(EXIT_INPUT))
        }
        Ok(_) => None,
        Err(e) => {
            report(&format!("cannot wait for pg_recvlogical: {e}"));
            Some(ExitCode::from(EXIT_INPUT))
        }
    }
}

/// Writes `ddl-dump: TEXT` to standard error; a closed standard error is ignored.
fn report(text: &str) {
    let _ = writeln!(io::stderr().lock(), "ddl-dump: {text}");
}

fn main() -> ExitCode {
    let options = match Options::try_parse() {
        Ok(options) => options,
        Err(e) => {
            // --help and --version come here too: they print to standard output and succeed.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let ctx = match context(&options) {
        Ok(ctx) => ctx,
        Err(e) => {
            report(&e.to_string());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut recvlogical = None;
    let follow = options
        .follow
        .command(options.proto_version, options.streaming_parallel);
    let (name, mut input): (String, Box<dyn Read>) = match (follow, options.input()) {
        (Some(mut cmd), _) => {
            let spawned = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).spawn();
            let mut child = match spawned {
                Ok(child) => child,
                Err(e) => {
                    report(&format!(
                        "cannot run {}: {e}",
                        cmd.get_program().to_string_lossy()
                    ));
                    return ExitCode::from(EXIT_INPUT);
                }
            };
            let Some(stdout) = child.stdout.take() else {
                unreachable!("standard output is piped")
            };
            recvlogical = Some(child);
            ("pg_recvlogical".to_owned(), Box::new(stdout))
        }
        (None, None) => ("stdin".to_owned(), Box::new(io::stdin().lock())),
        (None, Some(path)) => match File::open(path) {
            Ok(file) => (path.display().to_string(), Box::new(file)),
            Err(e) => {
                report(&format!("{}: {e}", path.display()));
                return ExitCode::from(EXIT_INPUT);
            }
        },
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(CHUNK, stdout.lock());
    let result = dump(&mut *input, &name, &options, ctx, &mut out);
    let result = result.and_then(|summary| {
        out.flush()?;
        Ok(summary)
    });
    if let Some(child) = recvlogical {
        if let Some(code) = finish(child, result.is_ok()) {
            return code;
        }
    }
    match result {
        Ok(summary) => {
            if options.verify {
                report(&format!(
                    "{name}: verified {} messages, {} bytes: each re-encodes to exactly its bytes",
                    summary.messages, summary.bytes
                ));
            }
            ExitCode::SUCCESS
        }
        Err(stop) => {
            // What was printed before the problem is worth seeing; the output may be gone.
            let _ = out.flush();
            match stop {
                Stop::Input {
                    number,
                    offset,
                    what,
                } => {
                    report(&format!(
                        "{name}: message {number} at byte {offset}: {what}"
                    ));
                    ExitCode::from(EXIT_INPUT)
                }
                Stop::Read(e) => {
                    report(&format!("{name}: {e}"));
                    ExitCode::from(EXIT_INPUT)
                }
                Stop::Verify {
                    number,
                    tag,
                    offset,
                    expected,
                    actual,
                } => {
                    report(&format!(
                        "{name}: verify: message {number} ({}) re-encodes differently at byte \
                         {offset}: expected {}, got {}",
                        describe(tag),
                        byte(expected),
                        byte(actual)
                    ));
                    ExitCode::from(EXIT_VERIFY)
                }
                Stop::BrokenPipe => ExitCode::SUCCESS,
                Stop::Write(e) => {
                    report(&format!("standard output: {e}"));
                    ExitCode::from(EXIT_INPUT)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use clap::error::ErrorKind;
    use clap::CommandFactory;

    fn args(list: &[&str]) -> Result<Options, clap::Error> {
        Options::try_parse_from(std::iter::once("ddl-dump").chain(list.iter().copied()))
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Options::command().debug_assert();
    }

    #[test]
    fn options_and_their_defaults() {
        let o = args(&[]).unwrap();
        assert_eq!(
            (o.proto_version, o.streaming_parallel, o.verify),
            (1, false, false)
        );
        assert_eq!((o.format, o.input()), (Format::Text, None));
        assert!(o.follow.command(1, false).is_none());

        let o = args(&[
            "--proto-version",
            "4",
            "--streaming-parallel",
            "--format=json",
            "--verify",
            "f.bin",
        ])
        .unwrap();
        assert_eq!(
            (o.proto_version, o.streaming_parallel, o.verify),
            (4, true, true)
        );
        assert_eq!(o.format, Format::Json);
        assert_eq!(o.input(), Some(Path::new("f.bin")));
        assert_eq!(context(&o).unwrap().streaming(), Streaming::Parallel);

        let o = args(&["--proto-version=2", "-"]).unwrap();
        assert_eq!(o.input(), None);
        assert_eq!(context(&o).unwrap().streaming(), Streaming::On);

        let o = args(&["--", "--verify"]).unwrap();
        assert_eq!(o.input(), Some(Path::new("--verify")));

        let o = args(&[
            "--follow",
            "dbname=db",
            "--slot=s",
            "--publication",
            "p",
            "--publication=q",
            "--option",
            "messages=true",
            "--proto-version=2",
        ])
        .unwrap();
        let follow = &o.follow;
        assert_eq!(
            (follow.connstr.as_deref(), follow.slot.as_deref()),
            (Some("dbname=db"), Some("s"))
        );
        assert_eq!(follow.publications, ["p", "q"]);
        assert_eq!(follow.options, ["messages=true"]);
        assert_eq!((o.input(), o.proto_version), (None, 2));
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        for (list, kind, expected) in [
            (&["--bogus"][..], ErrorKind::UnknownArgument, "'--bogus'"),
            (
                &["--proto-version"][..],
                ErrorKind::InvalidValue,
                "a value is required",
            ),
            (
                &["--proto-version", "x"][..],
                ErrorKind::ValueValidation,
                "'x'",
            ),
            (&["--format", "xml"][..], ErrorKind::InvalidValue, "'xml'"),
            (&["a", "b"][..], ErrorKind::UnknownArgument, "'b'"),
            (&["--verify=yes"][..], ErrorKind::TooManyValues, "'yes'"),
            (
                &["--proto-version=1", "--proto-version=2"][..],
                ErrorKind::ArgumentConflict,
                "cannot be used multiple times",
            ),
            (
                &["--slot", "s"][..],
                ErrorKind::MissingRequiredArgument,
                "--follow <CONNSTR>",
            ),
            (
                &["--follow", "db", "--publication", "p"][..],
                ErrorKind::MissingRequiredArgument,
                "--slot <S>",
            ),
            (
                &["--follow", "db", "--slot", "s"][..],
                ErrorKind::MissingRequiredArgument,
                "--publication <P>",
            ),
            (
                &["--follow", "db", "--slot", "s", "--publication=p", "f.bin"][..],
                ErrorKind::ArgumentConflict,
                "cannot be used with",
            ),
            (
                &["--follow", "db", "--slot", "a", "--slot", "b"][..],
                ErrorKind::ArgumentConflict,
                "cannot be used multiple times",
            ),
            (
                &[
                    "--follow",
                    "db",
                    "--slot",
                    "s",
                    "--publication=p",
                    "--option",
                    "x",
                ][..],
                ErrorKind::ValueValidation,
                "expected NAME=VALUE",
            ),
        ] {
            let err = args(list).unwrap_err();
            let text = err.to_string();
            assert_eq!(err.kind(), kind, "{list:?}: {text}");
            assert!(text.contains(expected), "{list:?}: {text}");
        }
        let o = args(&["--streaming-parallel", "--proto-version=3"]).unwrap();
        let err = context(&o).unwrap_err().to_string();
        assert!(err.contains("streaming = parallel, need 4"), "{err}");
    }

    #[test]
    fn verify_names_the_first_differing_byte() {
        assert_eq!(first_difference(b"abc", b"abc"), None);
        assert_eq!(first_difference(b"abc", b"abd"), Some(2));
        assert_eq!(first_difference(b"abc", b"ab"), Some(2));
        assert_eq!(first_difference(b"ab", b"abc"), Some(2));
        assert_eq!(byte(Some(b'I')), "'I' (0x49)");
        assert_eq!(byte(Some(0)), "0x00");
        assert_eq!(byte(None), "the end of the message");
    }

    #[test]
    fn messages_are_described_as_the_crate_names_them() {
        assert_eq!(describe(b'I'), "Insert ('I')");
        assert_eq!(describe(b'E'), "Stream Stop ('E')");
        assert_eq!(describe(b'x'), "message type 'x' (0x78)");
    }
}
