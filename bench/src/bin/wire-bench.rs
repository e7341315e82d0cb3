//! `wire-bench`: the parser comparison of `cargo xtask bench wire` alone, on any capture in the
//! fixture framing, for profiling by hand (see `ddl_bench::wire::compare`).
//!
//! ```text
//! wire-bench --v1 FILE [--streamed FILE] [--runs N] [--markdown OUT] [--only PARSER]
//! ```

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    ddl_bench::exit(
        "wire-bench",
        ddl_bench::wire::compare::cli(std::env::args().skip(1)),
    )
}
