//! The `ddl_sync` extension.
//!
//! `CREATE EXTENSION ddl_sync` on every node creates schema `ddl_sync` with:
//!
//! * `ddl_sync.publication_sync`, the publishers' DDL replication configuration (a
//!   `user_catalog_table`, read by the output plugin under the historic snapshot), with the SQL
//!   functions that change it ([`publication_sync`]: `set_publication_ddl`, `add_schema_rule`,
//!   `add_relation_rule`, `add_object_rule`, `set_rule_enabled`, `remove_rule`), the view
//!   `ddl_sync.publication_ddl_config` and `ddl_sync.list_rules` that show it in words (the rows
//!   of dropped objects are removed by the capture's `sql_drop` event trigger, in
//!   `ddl_pgoutput.so`);
//! * `ddl_sync.events`, the relation whose INSERTs carry DDL from publishers to subscribers;
//! * the text forms of the configuration ([`kinds`]: `parse_ddl_kinds`, `format_ddl_kinds`,
//!   `parse_ddl_rules`), which are ddl-filter's.
//!
//! The tables, view and trigger are written in SQL under `sql/`; [`privilege`] explains who may
//! write the catalog and how. On subscribers this library replays DDL inside the native apply
//! worker (`replay`), configured per subscription by `ddl_sync.set_subscription_ddl` or, with
//! the library preloaded, by `CREATE/ALTER SUBSCRIPTION ... WITH (ddl = ..., ddl_conflict = ...)`
//! ([`subscription`], which also creates the subscription's `ddl_pgoutput` slot). This crate is
//! the extension library, `ddl_sync.so`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use pgrx::prelude::*;

mod event_triggers;
pub mod kinds;
mod local_change;
mod privilege;
pub mod publication_sync;
mod replay;
mod subscription;

::pgrx::pg_module_magic!(name, version);

// The SQL parts, in dependency order: the tables first, then what reads them through the Rust
// functions, and the privileges of everything last.
extension_sql_file!("../sql/catalog.sql", name = "catalog", bootstrap);
extension_sql_file!(
    "../sql/config_view.sql",
    name = "config_view",
    requires = ["catalog", kinds::format_ddl_kinds]
);
extension_sql_file!(
    "../sql/capture.sql",
    name = "capture",
    requires = ["catalog"]
);
extension_sql_file!(
    "../sql/apply.sql",
    name = "apply",
    requires = ["catalog", "capture", replay::replay]
);
extension_sql_file!(
    "../sql/adapters.sql",
    name = "adapters",
    requires = ["catalog", "capture"]
);
extension_sql_file!(
    "../sql/stats.sql",
    name = "stats",
    requires = [
        "catalog",
        "capture",
        "config_view",
        replay::stats::subscription_errors,
        replay::stats::failing_event_list
    ]
);
extension_sql_file!("../sql/peers.sql", name = "peers", requires = ["catalog"]);
extension_sql_file!(
    "../sql/event_triggers.sql",
    name = "event_triggers",
    requires = [
        "catalog",
        "capture",
        "apply",
        "adapters",
        "peers",
        event_triggers::refresh_event_triggers
    ]
);
extension_sql_file!(
    "../sql/copy_schema.sql",
    name = "copy_schema",
    requires = ["catalog", "capture"]
);
extension_sql_file!("../sql/privileges.sql", name = "privileges", finalize);

/// Loaded: by `shared_preload_libraries` (so in every session), or by a session's first call of
/// one of its functions. Installs the hook that takes the `ddl` options of CREATE/ALTER
/// SUBSCRIPTION (see [`subscription`]).
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    ddl_server::releases::refuse_unfit_server("ddl_sync");
    ddl_server::log::forward_tracing();
    subscription::define_setting();
    replay::define_settings();
    // SAFETY: _PG_init runs once per process, before any statement: what each of these asks.
    unsafe {
        local_change::clear_at_transaction_end();
        subscription::install_hook();
        replay::created::install();
        replay::stats::init();
    }
}

/// The version of the installed extension library, to compare with `pg_extension.extversion`
/// after an upgrade of the files without `ALTER EXTENSION ddl_sync UPDATE`.
#[pg_extern(immutable, parallel_safe)]
fn library_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[cfg(any(test, feature = "pg_test"))]
mod catalog_tests;
#[cfg(any(test, feature = "pg_test"))]
mod publication_sync_tests;
#[cfg(any(test, feature = "pg_test"))]
pub(crate) use catalog_tests::tests;

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["wal_level = logical"]
    }
}
