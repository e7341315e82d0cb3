//! `cargo xtask bench <wire|decode|capture|apply|copy|instructions|decode-instructions|apply-instructions> [options]`: the benchmarks are the `bench/`
//! crate (ddl-bench, see its README); this only prepares the machine and runs its `ddl-bench`
//! binary in release mode with the same arguments, from the workspace root.
//!
//! `wire` needs PostgreSQL when it captures a stream ([`setup::ensure`]); `decode`, `capture`,
//! `apply`, `copy` and the three instruction counts measure the release builds of the server
//! libraries, which are installed first ([`install`], which also makes sure PostgreSQL is
//! there); the instruction counts also need valgrind, installed when missing.

use crate::cmd::Cmd;
use crate::install::{install, Profile};
use crate::{project_root, setup, Result};

const USAGE: &str =
    "usage: cargo xtask bench <wire|decode|capture|apply|copy|instructions|decode-instructions|apply-instructions> [options]";

pub fn run(args: &[&str]) -> Result {
    match args.first() {
        Some(&"wire") => setup::ensure()?,
        Some(&("decode" | "capture" | "apply" | "copy")) => install(Profile::Release)?,
        Some(&("instructions" | "decode-instructions" | "apply-instructions")) => {
            setup::ensure_packages(&["valgrind"])?;
            install(Profile::Release)?
        }
        _ => return Err(USAGE.to_string()),
    }
    // `--release` is what makes the figures of `wire` mean anything.
    Cmd::new("cargo")
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "ddl-bench",
            "--bin",
            "ddl-bench",
            "--",
        ])
        .args(args)
        .dir(project_root())
        .run()
}
