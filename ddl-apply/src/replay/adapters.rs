//! Which adapter replays a dialect. Registered in this order, so that the last wins:
//! 1. the built-in adapters (`postgres`, `tsql-simple` for `tsql`);
//! 2. adapters registered from C in this process (`ddl_sync_register_adapter`, from another
//!    extension's `_PG_init`), oldest first;
//! 3. the enabled rows of `ddl_sync.adapter` in this database (SQL adapters).
//!
//! Why SQL last: a row is an explicit choice for one database that its administrator can make
//! and undo at run time, while a C adapter is loaded for the whole server.

use crate::replay::{c_abi, sql_adapter};
use ddl_adapter::{Adapter, Registry};
use pgrx::prelude::*;
use std::collections::BTreeMap;

/// Every adapter for `dialect` (every dialect when `None`), in registration order, with where
/// it comes from.
fn layers(dialect: Option<&str>) -> Vec<(Box<dyn Adapter>, &'static str)> {
    let mut layers: Vec<(Box<dyn Adapter>, &'static str)> = vec![
        (Box::new(ddl_adapter_postgres::PostgresAdapter), "built-in"),
        (Box::new(ddl_adapter_tsql::TsqlSimpleAdapter), "built-in"),
    ];
    for adapter in c_abi::registered() {
        layers.push((Box::new(adapter), "c"));
    }
    for adapter in sql_adapter::enabled(dialect) {
        layers.push((Box::new(adapter), "sql"));
    }
    layers
}

/// The registry the replay of an event in `dialect` uses.
pub fn registry(dialect: &str) -> Registry {
    let mut registry = Registry::new();
    for (adapter, _) in layers(Some(dialect)) {
        registry.register(adapter);
    }
    registry
}

/// `ddl_sync.adapters()`: the adapter that replays each dialect in this backend, and where it
/// comes from (`built-in`, `c`, `sql`). C adapters are those loaded in this process: call it in
/// a session of a server that preloads them.
#[pg_extern(stable)]
fn adapters() -> TableIterator<
    'static,
    (
        name!(dialect, String),
        name!(name, String),
        name!(source, String),
    ),
> {
    let mut by_dialect = BTreeMap::new();
    for (adapter, source) in layers(None) {
        by_dialect.insert(
            adapter.dialect().to_ascii_lowercase(),
            (adapter.name().to_string(), source.to_string()),
        );
    }
    TableIterator::new(
        by_dialect
            .into_iter()
            .map(|(dialect, (name, source))| (dialect, name, source)),
    )
}
