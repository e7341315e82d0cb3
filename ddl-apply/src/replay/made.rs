//! Tables this node made from the publisher's definition for a statement whose role is refused
//! here (`tables.rs`), which then belong to the subscription owner: no replayed statement can
//! drop one, as the same role's DROP is refused too. Kept, such a table stops the subscription
//! when the publisher makes a table of that name again with another shape: in PostgreSQL's
//! `rowsecurity` test, with its roles on the publisher only, `r1` is made here without a key,
//! the role's `DROP TABLE r1` is refused, and the rows of its new `r1 (a int PRIMARY KEY)`
//! collide with the old rows.
//!
//! So each is remembered (`ddl_sync.made_tables`), and when an event's description says the
//! publisher dropped it (the statement's own object, or one its cascade took), the replay
//! drops it too, whatever became of the statement: by the role that made and owns it, without
//! CASCADE (what depends on it here is this node's own), under skip (keeping it is what
//! happened before). A remembered table that is no longer that role's is left alone. No name
//! of the event reaches the statement: it names the relation as this node's catalog does.

use super::Event;
use crate::subscriber::applying::Subscription;
use ddl_server::{guc, relcache};
use ddl_wire::Action;
use pgrx::pg_sys;
use pgrx::spi::Spi;

/// Remembers table `relid`, just made for `subscription` by the role the apply worker runs
/// as (and forgets the tables remembered that are gone).
pub(super) fn remember(relid: pg_sys::Oid, subscription: &Subscription) {
    if !registry_exists() {
        return;
    }
    // The apply worker runs in replica mode, where the table's node-local trigger drops
    // replicated changes: these are ours.
    let was_local = crate::local_change::set_local_change(true);
    let done = Spi::run(
        "DELETE FROM ddl_sync.made_tables m
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid = m.relid)",
    )
    .and_then(|()| {
        Spi::run_with_args(
            "INSERT INTO ddl_sync.made_tables (relid, subid) VALUES ($1, $2)
             ON CONFLICT (relid) DO UPDATE SET subid = EXCLUDED.subid",
            &[relid.into(), subscription.oid.into()],
        )
    });
    crate::local_change::set_local_change(was_local);
    if let Err(e) = done {
        ddl_server::errors::internal(format!("cannot write ddl_sync.made_tables: {e}"));
    }
}

/// Drops the tables made here for `subscription` that the publisher's statement of `event`
/// dropped; the notes for the event's row.
pub(super) fn drop_dropped(event: &Event<'_>, subscription: &Subscription) -> Vec<String> {
    let Some(published) = event.published() else {
        return Vec::new();
    };
    let dropped: Vec<pg_sys::Oid> = published
        .objects
        .iter()
        .filter(|o| o.action == Action::Dropped && o.kind == "table")
        .filter_map(|o| relcache::relation_named(&o.identity))
        .collect();
    if dropped.is_empty() || !registry_exists() {
        return Vec::new();
    }
    dropped
        .into_iter()
        .filter(|&relid| is_made_here(relid, subscription))
        .filter_map(drop_made)
        .collect()
}

/// Whether `relid` is a table made here for `subscription` that the apply worker's role still
/// owns.
fn is_made_here(relid: pg_sys::Oid, subscription: &Subscription) -> bool {
    let registered = Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM ddl_sync.made_tables WHERE relid = $1 AND subid = $2)",
        &[relid.into(), subscription.oid.into()],
    );
    // SAFETY: a relcache lookup of a relation just found, and this backend's role.
    let owned = relcache::with_relation(relid, |rel| unsafe {
        (*(*rel).rd_rel).relowner == pg_sys::GetUserId()
    });
    registered == Ok(Some(true)) && owned == Some(true)
}

/// Drops table `relid` (see the module's comment) and forgets it; the note for the event's row.
fn drop_made(relid: pg_sys::Oid) -> Option<String> {
    let name = relcache::qualified_name(relid)?;
    let drop = || {
        guc::with_search_path("pg_catalog", || Spi::run(&format!("DROP TABLE {name}")))
            .map_err(|e| e.to_string())?;
        let was_local = crate::local_change::set_local_change(true);
        let forgotten = Spi::run_with_args(
            "DELETE FROM ddl_sync.made_tables WHERE relid = $1",
            &[relid.into()],
        );
        crate::local_change::set_local_change(was_local);
        forgotten.map_err(|e| e.to_string())
    };
    let outcome = ddl_server::xact::in_subtransaction(drop, Result::is_ok);
    Some(match outcome {
        Ok(Ok(())) => format!(
            "{name}, made here from the publisher's definition, was dropped as the publisher \
             dropped it"
        ),
        Ok(Err(why)) => kept(&name, &why),
        Err(caught) => kept(&name, &caught.message),
    })
}

/// The note of a made table that could not be dropped.
fn kept(name: &str, why: &str) -> String {
    format!(
        "{name}, made here from the publisher's definition, is kept although the publisher \
         dropped it: {why}"
    )
}

/// Whether the extension here has `ddl_sync.made_tables` (a library newer than the installed
/// extension's version, before `ALTER EXTENSION ddl_sync UPDATE`, finds none).
fn registry_exists() -> bool {
    Spi::get_one::<bool>("SELECT pg_catalog.to_regclass('ddl_sync.made_tables') IS NOT NULL")
        == Ok(Some(true))
}
