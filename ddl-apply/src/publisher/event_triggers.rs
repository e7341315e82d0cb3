//! Which of the extension's event triggers fire (see `sql/event_triggers.sql`): the capture's
//! where a publication has DDL configuration or an adapter is registered, the peer tables'
//! where a subscription has DDL configuration; elsewhere they are disabled, and PostgreSQL
//! collects no command for the database's DDL.

use crate::privilege::AsCatalogOwner;
use ddl_server::errors::{self, OrInternal};
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// Each trigger whose state is not the one the configuration asks for, with that state's
/// clause (`ENABLE ALWAYS`: apply workers run in replica mode, and their replays are captured
/// for cascades).
const CHANGES: &str = "
    WITH wanted (capture, peers) AS (
        SELECT EXISTS (SELECT FROM ddl_sync.publication_sync)
                   OR EXISTS (SELECT FROM ddl_sync.adapter),
               EXISTS (SELECT FROM ddl_sync.subscription_ddl))
    SELECT pg_catalog.format('ALTER EVENT TRIGGER %I %s', e.evtname,
               CASE WHEN on_ THEN 'ENABLE ALWAYS' ELSE 'DISABLE' END)
      FROM pg_catalog.pg_event_trigger e
     CROSS JOIN wanted w
     CROSS JOIN LATERAL (SELECT CASE WHEN e.evtname OPERATOR(pg_catalog.=) 'ddl_sync_register_peer_tables'
                                     THEN w.peers ELSE w.capture END) AS s (on_)
     WHERE e.evtname OPERATOR(pg_catalog.=) ANY (ARRAY['ddl_sync_capture_sql_drop',
               'ddl_sync_capture_ddl_command_end', 'ddl_sync_register_peer_tables']::pg_catalog.name[])
       AND (e.evtenabled OPERATOR(pg_catalog.=) 'A') IS DISTINCT FROM on_
     ORDER BY e.evtname";

/// `ddl_sync.refresh_event_triggers()`: sets the extension's event triggers to what its
/// configuration tables ask for, and makes every backend read those tables again before its
/// next capture (the capture caches them). Anyone may call it (it does nothing else); it runs
/// as the owner of the extension's catalog, who owns the triggers.
#[pg_extern(volatile, parallel_unsafe)]
fn refresh_event_triggers() {
    // SAFETY: a function called by SQL, inside its transaction.
    unsafe { ddl_server::extension_tables::capture_config_changed() };
    let _owner = AsCatalogOwner::enter();
    ddl_server::guc::with_search_path("pg_catalog", || {
        let changes: Vec<String> = Spi::connect(|client| {
            client.select(CHANGES, None, &[]).map(|rows| {
                rows.filter_map(|row| row.get::<String>(1).ok().flatten())
                    .collect()
            })
        })
        .or_internal("cannot read the event triggers");
        for change in changes {
            Spi::run(&change)
                .unwrap_or_else(|e| errors::internal(format_args!("\"{change}\" failed: {e}")));
        }
    });
}
