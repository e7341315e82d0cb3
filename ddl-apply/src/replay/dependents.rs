//! Tables and views that the publisher's statement dropped because they depended on what it
//! dropped or changed (`DROP ... CASCADE`, a column's dependent view), which this node kept
//! because here they did not depend on it. An earlier statement refused here leaves such a
//! table: in PostgreSQL's own `rowsecurity` test, with its roles on the publisher only, the
//! role's `ALTER TABLE t3 INHERIT t1` is refused, t3 (made from its definition) has no parent
//! here, and `DROP TABLE t1 CASCADE` drops t3 there but not here; the next table of that name
//! then stops the subscription. The event's description lists them (the capture names every
//! table and view a statement dropped with its object).
//!
//! After the statement is applied, those still here are dropped by a statement of the event's
//! role, as any of its statements is replayed (so with no more rights: a relation it may not
//! drop here stays, with a note), without `CASCADE` (what depends on them here is this node's
//! own), under `skip` whatever the subscription's policy: keeping one is what happened before,
//! never a reason to stop. Each name is one this node resolves to a relation of the kind the
//! publisher said, written from this node's catalog, so no text of the event reaches the
//! statement.

use super::{run_as_event, Event};
use crate::subscriber::applying::{Config, Conflict, Subscription};
use ddl_server::relcache;
use ddl_wire::Action;
use pgrx::pg_sys;

/// The kinds dropped (the description's word, the statement's, the relkinds it covers: a
/// partitioned table is dropped as a table), in the order that leaves dependents of each other
/// to go first.
const KINDS: [(&str, &str, &[u8]); 4] = [
    ("view", "VIEW", b"v"),
    ("materialized view", "MATERIALIZED VIEW", b"m"),
    ("foreign table", "FOREIGN TABLE", b"f"),
    ("table", "TABLE", b"rp"),
];

/// Drops what the publisher's statement of `event` dropped with its object and this node
/// kept; the notes for the event's row.
pub(super) fn drop_kept(
    event: &Event<'_>,
    subscription: &Subscription,
    config: &Config,
) -> Vec<String> {
    let Some(published) = event.published() else {
        return Vec::new();
    };
    let kept = |kind: &str, relkinds: &[u8]| -> Vec<String> {
        published
            .objects
            .iter()
            .filter(|o| o.action == Action::Dropped && o.kind == kind)
            .filter(|o| o.identity != event.row.object_identity)
            .filter_map(|o| relcache::relation_named(&o.identity))
            .filter(|&relid| relkinds.contains(&relkind(relid)))
            .filter_map(relcache::qualified_name)
            .collect()
    };
    let skip = Config {
        kinds: config.kinds,
        conflict: Conflict::Skip,
        rules: config.rules.clone(),
        fallback_role: config.fallback_role.clone(),
        divergence: config.divergence,
    };
    // The drop is this node's follow-up, not the publisher's statement: nothing of the
    // event's to compare it with, no table to make, no names it bound on the publisher.
    let follow_up = Event {
        row: ddl_wire::DdlEvent {
            schema: "",
            object_identity: "",
            tables: None,
            bindings: None,
            sent_generated_columns: None,
            description: None,
            ..event.row
        },
        settings: event.settings,
        published: None,
    };
    let mut notes = Vec::new();
    for (kind, keyword, relkinds) in KINDS {
        let names = kept(kind, relkinds);
        if names.is_empty() {
            continue;
        }
        let list = names.join(", ");
        let sql = format!("DROP {keyword} IF EXISTS {list}");
        let verdict = run_as_event(&follow_up, &sql, subscription, &skip);
        notes.push(match verdict {
            Ok(v) if v.status == "applied" => format!(
                "dropped here too, as on the publisher, where it depended on what the \
                 statement dropped or changed: {list}"
            ),
            Ok(v) => format!(
                "kept here, though the publisher's statement dropped it with what it \
                 depended on there: {list} ({} {})",
                v.status,
                v.detail.unwrap_or_default()
            ),
            Err(why) => format!(
                "kept here, though the publisher's statement dropped it with what it \
                 depended on there: {list} ({why})"
            ),
        });
    }
    notes
}

/// The relkind of relation `relid` (`\0` when it is gone).
fn relkind(relid: pg_sys::Oid) -> u8 {
    // SAFETY: a catalog cache lookup in the replay's transaction.
    unsafe { pg_sys::get_rel_relkind(relid) as u8 }
}
