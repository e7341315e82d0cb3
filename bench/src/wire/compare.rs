//! The parser comparison: how fast ddl-wire parses a captured pgoutput stream, next to other Rust
//! parsers. `cargo xtask bench wire` runs it on the streams it captures; the `wire-bench` binary
//! runs it by hand on any capture in the fixture framing:
//!
//! ```text
//! wire-bench --v1 FILE [--streamed FILE] [--runs N] [--markdown OUT] [--only PARSER]
//! ```
//!
//! `--v1` is a `proto_version 1` capture, which every parser reads; `--streamed` a
//! `proto_version 2, streaming on` capture, which elefant-client cannot read. Each parser first
//! makes one untimed pass whose counts (messages, values located, value bytes) must equal every
//! other parser's on the same capture, else the run fails: equal counts are what make the times
//! comparable. Then `runs` rounds time one pass of each parser in turn (interleaved, so a busy
//! moment of the machine does not land on one parser only), and the best pass gives MB/s:
//! message bytes (length prefixes excluded) per second, 1 MB = 10^6 bytes.
//!
//! `--only PARSER` runs the parsers whose name contains PARSER and nothing else, for profiling
//! one of them (`valgrind --tool=callgrind wire-bench --v1 FILE --runs 1 --only ddl-wire`); with
//! one parser there is nothing to check its counts against.

use super::capture::{Capture, Protocol};
use super::parsers::{self, Parser, PARSERS};
use super::work::Work;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: wire-bench --v1 FILE [--streamed FILE] [--runs N] [--markdown OUT] [--only PARSER]";

/// The ratios the project aims at (ddl-wire's MB/s over the other parser's).
const TARGETS: [(&str, f64); 2] = [("elefant-client 0.1.0", 2.0), ("pg_walstream 0.10.0", 5.0)];

struct Args {
    v1: PathBuf,
    streamed: Option<PathBuf>,
    runs: usize,
    markdown: Option<PathBuf>,
    only: Option<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut v1 = None;
    let mut streamed = None;
    let mut runs = 10;
    let mut markdown = None;
    let mut only = None;
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--v1" => v1 = Some(PathBuf::from(value()?)),
            "--streamed" => streamed = Some(PathBuf::from(value()?)),
            "--runs" => {
                runs = value()?
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--runs needs a positive number\n{USAGE}"))?
            }
            "--markdown" => markdown = Some(PathBuf::from(value()?)),
            "--only" => only = Some(value()?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let v1 = v1.ok_or_else(|| USAGE.to_string())?;
    Ok(Args {
        v1,
        streamed,
        runs,
        markdown,
        only,
    })
}

/// One parser's result on one capture.
struct Timing {
    parser: &'static str,
    work: Work,
    /// Every timed pass, sorted.
    passes: Vec<Duration>,
}

impl Timing {
    fn best(&self) -> Duration {
        self.passes[0]
    }

    fn median(&self) -> Duration {
        self.passes[self.passes.len() / 2]
    }
}

/// All parsers' results on one capture.
struct CaptureResult<'c> {
    capture: &'c Capture,
    timings: Vec<Timing>,
}

impl CaptureResult<'_> {
    fn mb_per_s(&self, t: &Timing) -> f64 {
        self.capture.message_bytes() as f64 / 1e6 / t.best().as_secs_f64()
    }

    fn timing(&self, parser: &str) -> Option<&Timing> {
        self.timings.iter().find(|t| t.parser == parser)
    }

    /// ddl-wire's MB/s over `other`'s, when both ran.
    fn ratio(&self, other: &str) -> Option<f64> {
        let wire = self.timing(PARSERS[0].name)?;
        let other = self.timing(other)?;
        Some(self.mb_per_s(wire) / self.mb_per_s(other))
    }
}

fn run_capture<'c>(
    capture: &'c Capture,
    runs: usize,
    only: Option<&str>,
) -> Result<CaptureResult<'c>, String> {
    let framed = parsers::framed_messages(capture)?;
    if framed != capture.frames.len() {
        return Err(format!(
            "{}: ddl-wire's FramedReader finds {framed} messages, the benchmark's framing {}",
            capture.name,
            capture.frames.len()
        ));
    }
    let parsers: Vec<&Parser> = PARSERS
        .iter()
        .filter(|p| p.protocols.contains(&capture.protocol))
        .filter(|p| only.is_none_or(|o| p.name.contains(o)))
        .collect();
    if parsers.is_empty() {
        return Err(format!(
            "no parser named like {only:?} reads {}",
            capture.name
        ));
    }

    // The untimed pass: every parser must have done the same work.
    let mut timings = Vec::new();
    for p in &parsers {
        let work = (p.parse)(capture)?;
        if let Some(first) = timings.first() {
            let first: &Timing = first;
            if first.work != work {
                return Err(format!(
                    "{}: {} and {} did different work, so their times are not comparable\n  {}: {}\n  {}: {}",
                    capture.name, first.parser, p.name, first.parser, first.work, p.name, work
                ));
            }
        }
        timings.push(Timing {
            parser: p.name,
            work,
            passes: Vec::with_capacity(runs),
        });
    }

    for _ in 0..runs {
        for (p, t) in parsers.iter().zip(&mut timings) {
            let start = Instant::now();
            let work = (p.parse)(capture)?;
            let elapsed = start.elapsed();
            // Cheap, and it keeps every pass honest.
            assert_eq!(
                work, t.work,
                "{} counted differently on a later pass",
                p.name
            );
            t.passes.push(elapsed);
        }
    }
    for t in &mut timings {
        t.passes.sort();
    }
    Ok(CaptureResult { capture, timings })
}

fn describe(capture: &Capture) -> String {
    let protocol = match capture.protocol {
        Protocol::V1 => "proto_version 1",
        Protocol::V2Streaming => "proto_version 2, streaming on",
    };
    format!(
        "{} ({protocol}): {:.1} MB file, {:.1} MB in {} messages",
        capture.name,
        capture.file_len() as f64 / 1e6,
        capture.message_bytes() as f64 / 1e6,
        capture.frames.len()
    )
}

fn print_result(r: &CaptureResult<'_>, runs: usize) {
    println!("\n{}", describe(r.capture));
    println!("  {}", r.timings[0].work);
    println!(
        "  {:<22} {:>12} {:>12} {:>10}",
        "parser",
        format!("best of {runs}"),
        "median",
        "MB/s"
    );
    for t in &r.timings {
        println!(
            "  {:<22} {:>9.1} ms {:>9.1} ms {:>10.1}",
            t.parser,
            t.best().as_secs_f64() * 1e3,
            t.median().as_secs_f64() * 1e3,
            r.mb_per_s(t)
        );
    }
    for (other, target) in TARGETS {
        if let Some(ratio) = r.ratio(other) {
            println!("  ddl-wire / {other}: {ratio:.2}x (target {target}x)");
        }
    }
}

/// The results as Markdown, for BENCHMARKS.md (`bench wire` adds the date, machine and workload).
fn markdown(results: &[CaptureResult<'_>], runs: usize) -> String {
    let mut md = String::new();
    for r in results {
        let _ = writeln!(md, "Capture {}.\n", describe(r.capture));
        let w = r.timings[0].work;
        let _ = writeln!(
            md,
            "Every parser below decoded the {} messages and located the same {} column values \
             ({} NULL/unchanged, {} value bytes) in {} Insert/Update/Delete messages.\n",
            w.messages, w.values, w.markers, w.value_bytes, w.changes
        );
        let _ = writeln!(md, "| parser | best of {runs} | median | MB/s |");
        let _ = writeln!(md, "|---|---:|---:|---:|");
        for t in &r.timings {
            let _ = writeln!(
                md,
                "| {} | {:.1} ms | {:.1} ms | {:.0} |",
                t.parser,
                t.best().as_secs_f64() * 1e3,
                t.median().as_secs_f64() * 1e3,
                r.mb_per_s(t)
            );
        }
        md.push('\n');
        for (other, target) in TARGETS {
            if let Some(ratio) = r.ratio(other) {
                let verdict = if ratio >= target { "met" } else { "NOT met" };
                let _ = writeln!(
                    md,
                    "- ddl-wire / {other}: **{ratio:.2}x** (target {target}x: {verdict})"
                );
            }
        }
        md.push('\n');
    }
    md
}

/// `wire-bench` with its command line (without the program's name): compares, prints the tables
/// and writes the Markdown when `--markdown` asks for it.
pub fn cli(args: impl Iterator<Item = String>) -> Result<(), String> {
    let args = parse_args(args)?;
    let md = compare(
        &args.v1,
        args.streamed.as_deref(),
        args.runs,
        args.only.as_deref(),
    )?;
    if let Some(out) = &args.markdown {
        std::fs::write(out, md).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    Ok(())
}

/// Compares the parsers on the `v1` capture and the `streamed` one, prints the tables and returns
/// them as Markdown, for BENCHMARKS.md.
pub(crate) fn compare(
    v1: &Path,
    streamed: Option<&Path>,
    runs: usize,
    only: Option<&str>,
) -> Result<String, String> {
    let mut captures = vec![Capture::load(v1, "v1", Protocol::V1)?];
    if let Some(path) = streamed {
        captures.push(Capture::load(path, "v2-streaming", Protocol::V2Streaming)?);
    }
    let mut results = Vec::new();
    for capture in &captures {
        let r = run_capture(capture, runs, only)?;
        print_result(&r, runs);
        results.push(r);
    }
    Ok(markdown(&results, runs))
}
