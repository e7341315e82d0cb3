//! Running external programs: [`Cmd`] lives in ddl-testkit, shared with the benchmarks of the
//! `bench/` crate.

pub use ddl_testkit::Cmd;
