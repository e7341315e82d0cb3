//! Shared pieces of the end-to-end tests: they run against real PostgreSQL 15 clusters made by
//! `ddl-testkit`, with `ddl_pgoutput` and `ddl_sync` installed in the server's directories
//! (`cargo xtask install --debug`, which `cargo xtask test` runs first).
#![deny(missing_docs)]

use ddl_testkit::{Cluster, ClusterBuilder};

/// A publisher-ready cluster: logical WAL, prepared transactions, and a small
/// `logical_decoding_work_mem` so that modest transactions already stream.
pub fn publisher(name: &str) -> Cluster {
    ClusterBuilder::new()
        .name(name)
        .conf("logical_decoding_work_mem", "64kB")
        .build()
        .unwrap_or_else(|e| panic!("cannot start cluster {name}: {e}"))
}

/// The `data` of every change of `slot` as hex, one message per line, without consuming them.
pub fn peek_hex(pg: &Cluster, slot: &str, options: &[(&str, &str)]) -> Result<String, String> {
    let opts: String = options
        .iter()
        .map(|(k, v)| format!(", '{k}', '{v}'"))
        .collect();
    pg.psql(
        "postgres",
        &format!(
            "SELECT encode(data, 'hex') FROM pg_logical_slot_peek_binary_changes('{slot}', NULL, NULL{opts})"
        ),
    )
    .map_err(|e| e.to_string())
}
