//! `ddl-bench <wire|decode|capture|apply|copy|instructions|decode-instructions> [options]`: what `cargo xtask bench` runs, in release
//! mode, once it has prepared the machine (see the crate's documentation).

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ddl_bench::exit("ddl-bench", ddl_bench::run(&args))
}
