//! Rows follow what they are about: when a publication, schema, relation or object is dropped,
//! its `publication_sync` rows go with it, in the same transaction; so does the SQL adapter
//! (`ddl_sync.adapter`) of a dropped function, whose dialect is then replayed by the C or
//! built-in adapter again, and the `ddl_sync.keyless_identity` row of a dropped table
//! (`keyless.rs`).
//!
//! Done here, in the `sql_drop` event trigger that already reads the dropped objects, rather
//! than by a PL/pgSQL trigger of its own: that one cost a SECURITY DEFINER call, two
//! `set_config`s and a planned DELETE on every DROP of every table, about 5% of a DROP's time,
//! to find nothing to delete almost always. Here the common case costs one comparison per row.

use crate::invalidation;
use crate::rules::{self, PublicationRules, Row};
use crate::statement::Dropped;
use ddl_server::errors::OrInternal;
use pgrx::pg_sys;
use pgrx::spi::Spi;
use std::cell::Cell;

thread_local! {
    /// Rows were deleted (as catalog rows, which fire no trigger) since the innermost
    /// statement began: the event triggers' states are refreshed once it ends.
    static DELETED: Cell<bool> = const { Cell::new(false) };
}

/// After a statement (from the hook, outside any event trigger): when it made the capture
/// delete rows, the extension's event triggers follow what is left (`ddl_sync
/// .refresh_event_triggers()`, sql/event_triggers.sql): the last DDL publication dropped
/// disables them. Never inside the `sql_drop` trigger, which would disable itself mid-command.
pub fn refresh_event_triggers() {
    if DELETED.replace(false) {
        Spi::run("SELECT ddl_sync.refresh_event_triggers()")
            .or_internal("cannot refresh the event triggers");
    }
}

/// Whether `ddl_sync.adapter` or `ddl_sync.keyless_identity` has rows that a drop could be
/// about (those of `publication_sync` the caller has read already). Cached until one of the
/// tables changes (each change invalidates all of them: `capture_config_changed`).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn anything_to_forget() -> bool {
    thread_local! {
        static CACHED: invalidation::Cached<bool> = const { invalidation::Cached::new() };
    }
    // SAFETY: the caller's promise.
    CACHED.with(|cached| unsafe {
        cached.get(|| {
            let (adapter, adapters) = ddl_server::extension_tables::has_rows(c"adapter");
            let (_, tracked) = ddl_server::extension_tables::has_rows(c"keyless_identity");
            (adapter, adapters || tracked)
        })
    })
}

/// Deletes the rows about `dropped` objects. `rules` are the rows of `publication_sync` the
/// trigger has read already: the table is scanned again, to delete, only when one of them is
/// about a dropped object (almost never), and `ddl_sync.adapter` only when a function went.
///
/// The rows are deleted as catalog rows (no triggers, no privilege check): whoever may drop an
/// object may drop its rules, and the deletion must also go through in an apply worker, whose
/// replica mode would otherwise let the tables' node-local triggers skip it.
///
/// # Safety
/// Runs in a backend inside a transaction, in a `sql_drop` event trigger.
pub unsafe fn forget(rules: &PublicationRules, dropped: &[Dropped]) {
    let about_dropped = |row: &Row| dropped.iter().any(|d| is_about(row, d));
    if rules.rows().any(&about_dropped) {
        // SAFETY: the caller's promise; each tuple is the scan's current row of `rel`, which is
        // open with RowExclusiveLock, as CatalogTupleDelete needs.
        unsafe {
            rules::scan(pg_sys::RowExclusiveLock, |rel, tuple, row| {
                if about_dropped(&row) {
                    pg_sys::CatalogTupleDelete(rel, &raw mut (*tuple).t_self);
                }
            })
        };
        DELETED.set(true);
    }
    let functions: Vec<u32> = dropped
        .iter()
        .filter(|d| d.class_id == u32::from(pg_sys::ProcedureRelationId))
        .map(|d| d.object_id)
        .collect();
    if !functions.is_empty() {
        // SAFETY: the caller's promise.
        unsafe { forget_adapters(&functions) };
    }
    let tables: Vec<pg_sys::Oid> = dropped
        .iter()
        .filter(|d| d.class_id == u32::from(pg_sys::RelationRelationId) && d.sub_id == 0)
        .map(|d| pg_sys::Oid::from(d.object_id))
        .collect();
    // SAFETY: the caller's promise.
    if !tables.is_empty() && unsafe { anything_to_forget() } {
        // SAFETY: as above.
        unsafe { crate::keyless::forget(|relid| tables.contains(&relid)) };
    }
    if DELETED.get() {
        // The capture's caches of both tables (no trigger fired to say so).
        // SAFETY: the caller's promise.
        unsafe { ddl_server::extension_tables::capture_config_changed() };
    }
}

/// Deletes the `ddl_sync.adapter` rows that use one of `functions`.
///
/// # Safety
/// As [`forget`].
unsafe fn forget_adapters(functions: &[u32]) {
    let columns = ddl_server::contract::ADAPTER_FUNCTION_COLUMNS;
    // SAFETY: the caller's promise; each tuple is the scan's current row of `rel`, which is open
    // with RowExclusiveLock, as CatalogTupleDelete needs; the columns are of type `oid`.
    unsafe {
        ddl_server::extension_tables::scan(
            c"adapter",
            &columns,
            pg_sys::RowExclusiveLock,
            |rel, tuple, v| {
                let uses = |d: &Option<pg_sys::Datum>| {
                    d.is_some_and(|d| functions.contains(&(d.value() as u32)))
                };
                if v.iter().any(uses) {
                    pg_sys::CatalogTupleDelete(rel, &raw mut (*tuple).t_self);
                    DELETED.set(true);
                }
            },
        )
    };
}

/// Whether `row` is about the dropped object `d` (a column drop leaves its relation's rows).
fn is_about(row: &Row, d: &Dropped) -> bool {
    let object = pg_sys::Oid::from(d.object_id);
    let class = d.class_id;
    (class == u32::from(pg_sys::PublicationRelationId) && row.pubid == object)
        || (class == u32::from(pg_sys::NamespaceRelationId)
            && row.kind == b'n'
            && row.nspid == object)
        || (d.sub_id == 0
            && row.kind == b'o'
            && row.relid == pg_sys::Oid::from(class)
            && row.objid == object)
        || (d.sub_id == 0
            && class == u32::from(pg_sys::RelationRelationId)
            && row.kind == b'r'
            && row.relid == object)
}
