//! The `ddl_sync` extension.
//!
//! `CREATE EXTENSION ddl_sync` on every node creates schema `ddl_sync`. On publishers it will hold
//! the DDL replication catalogs; on subscribers, the replay of DDL inside the native apply worker
//! (see the project's ARCHITECTURE.md). This crate is the extension library, `ddl_sync.so`.

use pgrx::prelude::*;

::pgrx::pg_module_magic!(name, version);

/// The version of the installed extension library, to compare with `pg_extension.extversion`
/// after an upgrade of the files without `ALTER EXTENSION ddl_sync UPDATE`.
#[pg_extern(immutable, parallel_safe)]
fn library_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    #[pg_test]
    fn extension_lives_in_its_schema_and_reports_its_version() {
        let version = Spi::get_one::<String>("SELECT ddl_sync.library_version()")
            .expect("query ran")
            .expect("not null");
        let installed = Spi::get_one::<String>(
            "SELECT extversion FROM pg_extension WHERE extname = 'ddl_sync'",
        )
        .expect("query ran")
        .expect("extension installed");
        assert_eq!(version, installed);
    }
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["wal_level = logical"]
    }
}
