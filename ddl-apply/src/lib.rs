//! The `ddl_sync` extension, `ddl_sync.so`: one room per job, arrows pointing down only.
//!
//! * [`publisher`]: the publishers' configuration, `ddl_sync.publication_sync` (a
//!   `user_catalog_table` the output plugin reads under the historic snapshot) and the SQL
//!   functions that change it, the text forms of kinds and rules, and the capture's event
//!   triggers (whose functions are in `ddl_pgoutput.so`);
//! * `subscription`: CREATE/ALTER/DROP SUBSCRIPTION with `ddl`, `ddl_conflict`, `schema_mode` and
//!   `copy_schema` (with the library preloaded), the subscription's `ddl_pgoutput` slot, strict
//!   mode and its guard, the schema copy;
//! * `replay`: the replay of each DDL event inside the native apply worker, by the
//!   `apply_event` trigger on `ddl_sync.events`;
//! * `subscriber`: what those two share: the applying subscription and its configuration, the
//!   connection to its publisher, the apply-time code check;
//! * under all of them, `privilege` (who may write the catalog, and writes as its owner) and
//!   `local_change` (this node's own changes to node-local tables).
//!
//! The tables, views and triggers are written in SQL under `sql/`.

use pgrx::prelude::*;

mod local_change;
mod privilege;
pub mod publisher;
mod replay;
mod subscriber;
mod subscription;

::pgrx::pg_module_magic!(name, version);

// The SQL parts, in dependency order: the tables first, then what reads them through the Rust
// functions, and the privileges of everything last.
extension_sql_file!("../sql/catalog.sql", name = "catalog", bootstrap);
extension_sql_file!(
    "../sql/config_view.sql",
    name = "config_view",
    requires = ["catalog", publisher::kinds::format_ddl_kinds]
);
extension_sql_file!(
    "../sql/capture.sql",
    name = "capture",
    requires = ["catalog"]
);
extension_sql_file!(
    "../sql/apply.sql",
    name = "apply",
    requires = ["catalog", "capture", replay::replay_row]
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
extension_sql_file!(
    "../sql/publications.sql",
    name = "publications",
    requires = [
        "catalog",
        "capture",
        "apply",
        "adapters",
        "stats",
        "peers",
        "event_triggers",
        "copy_schema"
    ]
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
        replay::counters::follow_transaction_ends();
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
mod contract_tests;
#[cfg(any(test, feature = "pg_test"))]
mod describe_tests;
#[cfg(any(test, feature = "pg_test"))]
mod text_tests;
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
