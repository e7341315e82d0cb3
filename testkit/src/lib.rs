//! Throwaway PostgreSQL clusters (15 or 18) for tests, fixtures, demos and benchmarks.
//!
//! The project's tests run against real servers, never mocks. This crate makes that cheap and
//! safe: [`ClusterBuilder`] runs `initdb` in a fresh temp directory (as the `postgres` OS user
//! when the caller is root, since root may not run a server), configures it for logical
//! replication, starts it on a free port of 127.0.0.1 with its unix socket in its own directory,
//! and the resulting [`Cluster`] stops the server and removes the directory when dropped, also
//! when a test panics. [`RecvLogical`] runs `pg_recvlogical` against a cluster with a time limit,
//! and [`TempDir`] is a directory that goes away (one the server may write to, if asked).
//!
//! The tools of the workspace (xtask and the benchmarks of `ddl-bench`) share three more things
//! here: [`Cmd`] runs a program and says which one failed, [`report`] rewrites one section of a
//! Markdown report (BENCHMARKS.md, RELIABILITY.md, FIDELITY.md) and describes the machine, and
//! [`workspace_root`] finds the workspace.
//!
//! Programs come from `$DDL_PG_BINDIR`, else the bindir of `$DDL_PG_CONFIG` (set by `cargo xtask
//! --pg N`), else `/usr/lib/postgresql/15/bin`, else `pg_config --bindir` (see [`ClusterBuilder::bindir`]). The server's environment never has
//! `RUST_BACKTRACE`, which would otherwise put a backtrace into every error raised by a pgrx
//! extension.
//!
//! # Example
//!
//! ```
//! use ddl_testkit::ClusterBuilder;
//!
//! # fn main() -> Result<(), ddl_testkit::Error> {
//! let pg = ClusterBuilder::new()
//!     .name("doc")
//!     .conf("logical_decoding_work_mem", "64kB")
//!     .build()?;
//! pg.psql("postgres", "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2);")?;
//! assert_eq!(pg.psql("postgres", "SELECT count(*) FROM t")?, "2");
//! assert_eq!(pg.psql("postgres", "SHOW wal_level")?, "logical");
//! // Dropping `pg` stops the server and removes its directory.
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cluster;
mod cmd;
pub mod debian_source;
mod error;
mod os;
mod recvlogical;
pub mod report;
mod tempdir;
mod workspace;

pub use crate::{
    cluster::{Client, Cluster, ClusterBuilder, StopMode},
    cmd::Cmd,
    error::{Error, ErrorKind},
    os::{give_to_server_user, server_command},
    recvlogical::RecvLogical,
    tempdir::TempDir,
    workspace::workspace_root,
};
