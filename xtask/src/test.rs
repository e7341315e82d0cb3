//! `cargo xtask test`: everything CI checks, in the order that fails fastest.
//!
//! The pure crates run with plain `cargo test` (they must never need PostgreSQL); the pgrx crates
//! run under `cargo pgrx test` as the `postgres` OS user, because root cannot run a server.

use crate::cmd::Cmd;
use crate::{golden, project_root, setup, Result};

/// Crates that build and test with no PostgreSQL and no pgrx.
const PURE_CRATES: &[&str] = &["ddl-wire", "ddl-filter", "ddl-testkit", "xtask"];

/// Crates with `#[pg_test]`s, each run by `cargo pgrx test` in its own directory.
const PGRX_CRATES: &[&str] = &["ddl-decode", "ddl-apply"];

pub fn run(args: &[&str]) -> Result {
    if let Some(a) = args.first() {
        return Err(format!("test: unexpected argument {a:?}"));
    }
    setup::ensure()?;
    let root = project_root();
    Cmd::new("cargo").args(["fmt", "--all", "--check"]).dir(&root).run()?;
    Cmd::new("cargo")
        .args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])
        .dir(&root)
        .run()?;
    let mut pure = vec!["test"];
    for c in PURE_CRATES {
        pure.extend(["-p", c]);
    }
    // The golden test may only skip on a checkout that lacks fixtures by accident, never here.
    Cmd::new("cargo")
        .args(pure)
        .env("DDL_WIRE_REQUIRE_FIXTURES", "1")
        .dir(&root)
        .run()?;
    golden::run(&["--check"])?;
    for c in PGRX_CRATES {
        pgrx_test(c)?;
    }
    println!("test: all passed");
    Ok(())
}

fn pgrx_test(krate: &str) -> Result {
    let pgdata = ddl_testkit::TempDir::for_postgres(&format!("pgrx-{krate}"))
        .map_err(|e| format!("test: temporary pgdata for {krate}: {e}"))?;
    Cmd::new("cargo")
        .args(["pgrx", "test", &format!("pg{}", setup::PG_MAJOR), "--runas", "postgres", "--pgdata"])
        .args([pgdata.path().join("data")])
        .env_remove("RUST_BACKTRACE")
        .dir(project_root().join(krate))
        .run()
}
