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
//! The commands are [`COMMANDS`], one entry each (name, arguments, what it does, the function
//! that runs it): `cargo xtask help` lists them, README.md lists the same in its command block,
//! and `cargo xtask tidy` checks that the two agree.

#![forbid(unsafe_code)]

mod bench;
mod cmd;
mod deb;
mod demo;
mod golden;
mod install;
mod package;
mod realworld;
mod regress;
mod reliability;
mod setup;
mod test;
mod tidy;

use std::path::PathBuf;
use std::process::ExitCode;

/// What a task returns: a message for the user on failure.
pub type Result<T = ()> = std::result::Result<T, String>;

/// One command of `cargo xtask`.
pub struct Command {
    /// What follows `cargo xtask`.
    pub name: &'static str,
    /// Its arguments as usage shows them (empty for none).
    pub args: &'static str,
    /// What it does, in one line.
    pub what: &'static str,
    run: fn(&[&str]) -> Result,
}

/// Every command, in the order `cargo xtask help` and README.md list them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "demo",
        args: "[--keep]",
        what: "DDL replication end to end on two throwaway clusters",
        run: demo::run,
    },
    Command {
        name: "setup",
        args: "",
        what: "install everything the project needs (idempotent)",
        run: setup::run,
    },
    Command {
        name: "test",
        args: "",
        what: "fmt, tidy, clippy, then every test on real PostgreSQL",
        run: test::run,
    },
    Command {
        name: "tidy",
        args: "",
        what: "the house rules (xtask/src/tidy.rs), no PostgreSQL needed",
        run: tidy::run,
    },
    Command {
        name: "package",
        args: "[--deb] [--debug]",
        what: "the archive (or Debian package) in target/package/",
        run: package::run,
    },
    Command {
        name: "install",
        args: "[--debug]",
        what: "build and install into the PostgreSQL of pg_config",
        run: install::run,
    },
    Command {
        name: "golden",
        args: "[--check]",
        what: "capture the golden pgoutput fixtures (--check: compare)",
        run: golden::run,
    },
    Command {
        name: "bench",
        args: "<wire|decode|capture|apply|copy|instructions|decode-instructions|apply-instructions> [options]",
        what: "a benchmark of the bench/ crate -> BENCHMARKS.md",
        run: bench::run,
    },
    Command {
        name: "reliability",
        args: "[--trials N] [--seed S] [--transactions N] [--debug]",
        what: "kill -9, hostile inputs, lock contention -> RELIABILITY.md",
        run: reliability::run,
    },
    Command {
        name: "regress",
        args: "[--groups N] [--debug]",
        what: "PostgreSQL's regression suite, replicated -> FIDELITY.md",
        run: regress::run,
    },
    Command {
        name: "realworld",
        args: "[--apps a,b,...] [--debug]",
        what: "real applications' upgrade histories, replicated -> FIDELITY.md",
        run: realworld::run,
    },
];

/// Where a description starts in [`listing`]; a longer command puts it on the next line.
const LISTING_COLUMN: usize = 40;

/// The commands, one `cargo xtask <name> <args>` and its description each (README.md's block).
pub fn listing() -> String {
    let mut out = String::new();
    for c in COMMANDS {
        let call = format!("cargo xtask {} {}", c.name, c.args);
        let call = call.trim_end();
        if call.len() + 2 <= LISTING_COLUMN {
            out += &format!("{call:<LISTING_COLUMN$}{}\n", c.what);
        } else {
            out += &format!("{call}\n{:LISTING_COLUMN$}{}\n", "", c.what);
        }
    }
    out
}

fn usage() -> String {
    format!(
        "usage: cargo xtask [--pg 15|16|17|18|19] <command> [arguments]\n\n{}",
        listing()
    )
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = setup::select(&mut args) {
        eprintln!("xtask: {e}");
        return ExitCode::FAILURE;
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Help and tidy build nothing: no toolchain to set up.
    if !matches!(args.as_slice(), ["help" | "--help" | "-h"] | ["tidy", ..]) {
        if let Err(e) = setup::toolchain() {
            eprintln!("xtask: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match args.as_slice() {
        ["help" | "--help" | "-h"] => {
            print!("{}", usage());
            Ok(())
        }
        [name, rest @ ..] => match COMMANDS.iter().find(|c| c.name == *name) {
            Some(command) => (command.run)(rest),
            None => Err(usage()),
        },
        [] => Err(usage()),
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
