//! "This change is ddl_sync's own": a flag in backend memory, not a setting.
//!
//! The extension's node-local tables (`publication_sync`, `subscription_ddl`,
//! `subscription_counters`, `prepared_counts`, `adapter`) are published by FOR ALL TABLES
//! publications, so a subscriber's apply worker receives the publisher's rows of them; a
//! REPLICA trigger (`ddl_sync.skip_replicated_row`) drops those. The extension's own writes in
//! replica mode (a rule removed after a replayed DROP) must go through, and say so here; the
//! apply log's counters are written as catalog rows, which fire no trigger.
//!
//! This used to be the setting `ddl_sync.local_change`, which any SQL can set: a replayed
//! statement's code running in the apply worker (a default expression, a function body) could
//! turn it on for the worker's whole session and let the publisher's rows into the
//! subscriber's configuration. The flag can only be set by `ddl_sync.set_local_change`, whose
//! EXECUTE is revoked from PUBLIC (`sql/privileges.sql`), and it is cleared at the end of
//! every transaction and the abort of every subtransaction, so an ERROR never leaves it on.

use ddl_server::xact;
use pgrx::prelude::*;
use std::cell::Cell;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current change is the extension's own.
#[pg_extern(volatile, parallel_restricted)]
fn local_change() -> bool {
    ON.get()
}

/// `ddl_sync.skip_replicated_row()`, the REPLICA trigger of the node-local tables: keeps the
/// row of a change that is the extension's own, drops every other (a replicated row).
#[pg_trigger(sql = false)]
fn skip_replicated_row<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, std::convert::Infallible> {
    if !ON.get() {
        return Ok(None);
    }
    Ok(match trigger.op() {
        Ok(PgTriggerOperation::Delete) => trigger.old(),
        _ => trigger.new(),
    })
}

/// Marks the changes that follow as the extension's own (`on`), or not; returns the previous
/// value so that a caller can put it back.
#[pg_extern(volatile, parallel_restricted)]
pub fn set_local_change(on: bool) -> bool {
    ON.replace(on)
}

/// Clears the flag at the end of every transaction and the abort of every subtransaction.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn clear_at_transaction_end() {
    // SAFETY: the caller's promise (from `_PG_init`); the listener only clears a flag, so it
    // cannot raise an ERROR inside PostgreSQL's transaction callbacks.
    unsafe {
        xact::at_end(|end| {
            if !matches!(end, xact::End::SubCommitted { .. }) {
                ON.set(false);
            }
        })
    };
}
