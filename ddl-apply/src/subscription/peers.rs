//! Tables created here, registered in the subscriptions to this node's peers.
//!
//! Two nodes that subscribe to each other with `origin = none` (PostgreSQL 16 and later) and
//! DDL are peers: a table one of them creates reaches the other through its DDL, and from then
//! on the other publishes the table's rows. PostgreSQL applies rows only for the tables in a
//! subscription's `pg_subscription_rel`, which changes at `ALTER SUBSCRIPTION ... REFRESH
//! PUBLICATION`, and every row that arrives before that is dropped without a word. So when a
//! table is created here, it is registered as ready in every subscription of this database that
//! replays DDL with `origin = none`: it is new and empty, so there is nothing to copy, and each
//! row the peer sends for it is applied.
//!
//! The `ddl_command_end` event trigger `ddl_sync_register_peer_tables` (ENABLE ALWAYS, tags
//! `CREATE TABLE`, `CREATE TABLE AS`, `SELECT INTO`) calls [`ddl_sync_register_peer_tables`].
//! It fires for statements replayed by an apply worker too: in a mesh, a table that came from
//! one peer is registered in the subscriptions to the others (the replaying subscription
//! registers it itself, see `replay::tables`). A registration the peer never needs costs
//! nothing: no rows come for a table it does not publish, and a REFRESH PUBLICATION takes the
//! table out again.

use crate::privilege::AsCatalogOwner;
use crate::subscriber::applying::Subscription;
use ddl_server::errors::OrInternal;
use ddl_server::function_info_v1;
use ddl_server::guc;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;

function_info_v1!(pg_finfo_ddl_sync_register_peer_tables);

/// The permanent tables the statement created, with each subscription of this database that
/// replays DDL from a peer (`origin = none`) and does not have them yet.
fn new_peer_tables_sql() -> String {
    format!(
        "SELECT s.oid, s.subname::text, c.objid::regclass::text
           FROM pg_event_trigger_ddl_commands() c
           JOIN pg_class r ON r.oid = c.objid
           CROSS JOIN pg_subscription s
           JOIN ddl_sync.subscription_ddl d ON d.subid = s.oid
          WHERE c.classid = 'pg_class'::regclass
            AND r.relkind IN ('r', 'p') AND r.relpersistence = 'p'
            AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND {}
            AND NOT EXISTS (SELECT FROM pg_subscription_rel sr
                             WHERE sr.srsubid = s.oid AND sr.srrelid = r.oid)",
        ddl_server::versions::SUBSCRIPTION_ORIGIN_NONE_SQL
    )
}

/// `ddl_command_end` of a statement that may have created tables: register them in the peer
/// subscriptions.
///
/// # Safety
/// Called by PostgreSQL as an event trigger function.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn ddl_sync_register_peer_tables(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: the caller's promise: PostgreSQL's call frame.
    unsafe { ddl_server::event_trigger::data(fcinfo) };
    // SAFETY: a backend global, true while an extension script runs; an extension's tables
    // are the extension's business on each node.
    if !unsafe { pg_sys::creating_extension }
        && ddl_server::subscription_rel::database_has_peer_subscriptions()
    {
        register_new_tables();
    }
    pg_sys::Datum::from(0usize)
}

fn register_new_tables() {
    // The statement's role may read neither pg_subscription nor ddl_sync's catalog, and its
    // search_path is its own: the lookup and the writes run as the catalog's owner, in a
    // security-restricted operation, with pg_catalog alone on the path.
    guc::with_search_path("pg_catalog", || {
        let _owner = AsCatalogOwner::enter();
        for (oid, name, table) in new_peer_tables() {
            let subscription = Subscription { oid, name };
            if let Some(note) = subscription.register_ready(&table) {
                warning!("ddl_sync: subscription \"{}\": {note}", subscription.name);
            }
        }
    });
}

/// The rows of [`new_peer_tables_sql`]: subscription OID and name, table.
fn new_peer_tables() -> Vec<(pg_sys::Oid, String, String)> {
    Spi::connect(|client| {
        let rows = client
            .select(&new_peer_tables_sql(), None, &[])
            .or_internal("cannot look up peer subscriptions");
        rows.filter_map(|row| {
            Some((
                row.get::<pg_sys::Oid>(1).ok()??,
                row.get::<String>(2).ok()??,
                row.get::<String>(3).ok()??,
            ))
        })
        .collect()
    })
}
