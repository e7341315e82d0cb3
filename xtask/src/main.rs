//! `cargo xtask`: every chore of this repository is one command here.
//!
//! Why a Rust binary and not shell scripts or make: it runs the same way on a fresh Debian machine
//! and on a developer's, needs nothing but cargo (which a Rust project has anyway), and each task
//! can be read as ordinary code. Tasks that need PostgreSQL run [`setup`] first, so any of them
//! works on a fresh clone.
//!
//! Every task takes `--pg 15` (the default), `--pg 16`, `--pg 17`, `--pg 18` or `--pg 19`: the
//! PostgreSQL it builds for, tests on and installs into (see [`setup::select`]). Every cargo a
//! task starts builds with the compiler pgrx needs ([`setup::toolchain`]).
//!
//! ```text
//! cargo xtask demo [--keep]         DDL replication end to end on two throwaway clusters
//! cargo xtask setup                 install everything the project needs (idempotent)
//! cargo xtask test                  fmt, clippy, unit/property/golden tests, pgrx tests
//! cargo xtask package [--deb] [--debug]
//!                                   the installable archive (or Debian package) in target/package/
//! cargo xtask install [--debug]     build and install the same files into the PostgreSQL of pg_config
//! cargo xtask golden [--check]      capture pgoutput fixtures from a throwaway PostgreSQL 15
//! cargo xtask bench wire            ddl-wire against other pgoutput parsers -> BENCHMARKS.md
//! cargo xtask bench decode          ddl_pgoutput against pgoutput on the same WAL -> BENCHMARKS.md
//! cargo xtask bench capture         DDL latency and TPS with the capture hook -> BENCHMARKS.md
//! cargo xtask bench apply           a migration's apply time and DML lag on a subscriber -> BENCHMARKS.md
//! cargo xtask reliability [--trials N] [--seed S]
//!                                   kill -9, hostile inputs and lock contention -> RELIABILITY.md
//! cargo xtask regress [--groups N]  PostgreSQL's regression suite through replication -> FIDELITY.md
//! ```

#![forbid(unsafe_code)]

mod bench;
mod cmd;
mod deb;
mod demo;
mod golden;
mod install;
mod package;
mod regress;
mod reliability;
mod setup;
mod test;

use std::path::PathBuf;
use std::process::ExitCode;

/// What a task returns: a message for the user on failure.
pub type Result<T = ()> = std::result::Result<T, String>;

const USAGE: &str =
    "usage: cargo xtask [--pg 15|16|17|18|19] <demo [--keep]|setup|test|package [--deb] [--debug]|install [--debug]|golden [--check]|bench <wire|decode|capture|apply|copy|instructions|decode-instructions>|reliability [--trials N] [--seed S]|regress [--groups N]>";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = setup::select(&mut args) {
        eprintln!("xtask: {e}");
        return ExitCode::FAILURE;
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if !matches!(args.as_slice(), ["help" | "--help" | "-h"]) {
        if let Err(e) = setup::toolchain() {
            eprintln!("xtask: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match args.as_slice() {
        ["demo", rest @ ..] => demo::run(rest),
        ["setup", rest @ ..] => setup::run(rest),
        ["test", rest @ ..] => test::run(rest),
        ["package", rest @ ..] => package::run(rest),
        ["install", rest @ ..] => install::run(rest),
        ["golden", rest @ ..] => golden::run(rest),
        ["bench", rest @ ..] => bench::run(rest),
        ["reliability", rest @ ..] => reliability::run(rest),
        ["regress", rest @ ..] => regress::run(rest),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root, found from the manifest of ddl-testkit (which the benchmarks share), so
/// xtask works from any directory.
pub fn project_root() -> PathBuf {
    ddl_testkit::workspace_root()
}
