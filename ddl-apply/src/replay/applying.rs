//! The subscription whose apply worker runs the replay, and its DDL configuration.

use ddl_filter::{DdlKinds, RuleSet, RuleSetBuilder};
use ddl_server::subscription_rel;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// `ddl_sync.applying_subscription()`: the subscription whose apply worker runs this session,
/// from the session's replication origin, which the apply worker names `pg_<subscription
/// oid>`; NULL elsewhere. The apply log records it with each event.
#[pg_extern(stable, parallel_restricted)]
pub fn applying_subscription() -> Option<pg_sys::Oid> {
    // SAFETY: reads a backend-local global and the origin catalog (missing_ok); the name is
    // NULL or a palloc'd NUL-terminated copy.
    let origin_name = unsafe {
        let origin = pg_sys::replorigin_session_origin;
        if origin == 0 {
            return None;
        }
        let mut name: *mut std::ffi::c_char = std::ptr::null_mut();
        if !pg_sys::replorigin_by_oid(origin, true, &mut name) || name.is_null() {
            return None;
        }
        ddl_server::text::utf8_ptr(name)
    };
    let oid: u32 = origin_name.strip_prefix("pg_")?.parse().ok()?;
    Some(pg_sys::Oid::from(oid))
}

/// What a failing replay does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// The apply worker errors and retries.
    Error,
    /// Rolled back in a subtransaction; recorded; replication goes on.
    Skip,
}

/// A subscription's row of `ddl_sync.subscription_ddl`.
pub struct Config {
    pub kinds: DdlKinds,
    pub conflict: Conflict,
    pub rules: RuleSet,
    /// The role that replays the statements of roles missing here (`ddl_fallback_role`).
    pub fallback_role: Option<String>,
}

pub struct Subscription {
    pub oid: pg_sys::Oid,
    pub name: String,
}

impl Subscription {
    /// The subscription being applied, from the session's replication origin, which the apply
    /// worker names `pg_<subscription oid>`.
    pub fn of_this_worker() -> Option<Subscription> {
        let oid = applying_subscription()?;
        let name = Spi::get_one_with_args::<String>(
            "SELECT subname::text FROM pg_catalog.pg_subscription WHERE oid = $1",
            &[oid.into()],
        )
        .ok()??;
        Some(Subscription { oid, name })
    }

    /// Its DDL configuration; `None` when it does not replay DDL.
    pub fn config(&self) -> Option<Config> {
        // The fallback role through to_jsonb: a database still at 0.2.0's SQL objects (before
        // ALTER EXTENSION UPDATE) has no such column, and must go on replaying meanwhile.
        let (ddl, conflict, rules, fallback_role) = Spi::connect(|client| {
            let mut rows = client
                .select(
                    "SELECT ddl, conflict, rules, pg_catalog.to_jsonb(s) OPERATOR(pg_catalog.->>) 'fallback_role'
                       FROM ddl_sync.subscription_ddl s WHERE subid OPERATOR(pg_catalog.=) $1",
                    None,
                    &[self.oid.into()],
                )
                .ok()?;
            let row = rows.next()?;
            Some((
                row.get::<i32>(1).ok().flatten()?,
                row.get::<String>(2).ok().flatten()?,
                row.get::<String>(3).ok().flatten(),
                row.get::<String>(4).ok().flatten(),
            ))
        })?;
        let mut builder = RuleSetBuilder::new();
        if let Some(rules) = &rules {
            builder.text(rules);
        }
        let rules = builder.build().unwrap_or_else(|e| {
            error!(
                "ddl_sync: rules of subscription \"{}\" are not readable: {e}",
                self.name
            )
        });
        Some(Config {
            kinds: DdlKinds::from_bits_truncate(ddl),
            conflict: if conflict == "skip" {
                Conflict::Skip
            } else {
                Conflict::Error
            },
            rules,
            fallback_role,
        })
    }

    /// Registers a table that replayed DDL created as ready in `pg_subscription_rel`, in the
    /// same transaction: it was created empty at this exact point of the stream, so there is
    /// nothing to copy, and every later row for it must be applied (without this, rows arrive
    /// only after a REFRESH PUBLICATION and the ones before it are lost). A table whose rows
    /// cannot be applied here stays out; the note for the row says why.
    pub fn register_ready(&self, identity: &str) -> Option<String> {
        let relid = Spi::get_one_with_args::<pg_sys::Oid>(
            "SELECT c.oid FROM pg_catalog.pg_class c
              WHERE c.oid = pg_catalog.to_regclass($1) AND c.relkind IN ('r', 'p')
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_subscription_rel r
                                 WHERE r.srsubid = $2 AND r.srrelid = c.oid)",
            &[identity.into(), self.oid.into()],
        )
        .ok()
        .flatten()?;
        if let Some(columns) = uncarriable_columns(relid) {
            return Some(not_applied_note(identity, &columns));
        }
        subscription_rel::add_ready(self.oid, relid);
        None
    }

    /// After a replayed ALTER TABLE changed table `relid`: when the table now has a column
    /// whose values cannot be applied here, takes it out of the subscription, and says so.
    pub fn recheck_columns(&self, relid: pg_sys::Oid) -> Option<String> {
        let name = Spi::get_one_with_args::<String>(
            "SELECT r.srrelid::pg_catalog.regclass::text FROM pg_catalog.pg_subscription_rel r
              WHERE r.srsubid = $1 AND r.srrelid = $2",
            &[self.oid.into(), relid.into()],
        )
        .ok()
        .flatten()?;
        let columns = uncarriable_columns(relid)?;
        subscription_rel::remove(self.oid, relid);
        Some(not_applied_note(&name, &columns))
    }
}

/// Types whose every value the subscriber refuses (their input and receive functions raise
/// `cannot accept a value of type ...`): PostgreSQL's internal trees and statistics. A row of a
/// table with such a column would stop the apply worker on every retry; the table is kept out
/// of the subscription instead, where the apply worker skips its rows.
const UNCARRIABLE_INPUT: &str = "'{pg_catalog.pg_node_tree_in, pg_catalog.pg_ndistinct_in,
    pg_catalog.pg_dependencies_in, pg_catalog.pg_mcv_list_in,
    pg_catalog.brin_bloom_summary_in, pg_catalog.brin_minmax_multi_summary_in}'::pg_catalog.regproc[]";

/// The columns of `relid` of an [`UNCARRIABLE_INPUT`] type (or an array or domain of one), as
/// `name type, ...`; `None` when there are none.
fn uncarriable_columns(relid: pg_sys::Oid) -> Option<String> {
    Spi::get_one_with_args::<String>(
        &format!(
            "SELECT pg_catalog.string_agg(pg_catalog.format('%I %s', a.attname,
                        pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
               FROM pg_catalog.pg_attribute a
               JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
               LEFT JOIN pg_catalog.pg_type e ON e.typarray = t.oid
               LEFT JOIN pg_catalog.pg_type b ON b.oid = t.typbasetype
              WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
                AND COALESCE(e.typinput, b.typinput, t.typinput) = ANY ({UNCARRIABLE_INPUT})"
        ),
        &[relid.into()],
    )
    .ok()
    .flatten()
}

fn not_applied_note(identity: &str, columns: &str) -> String {
    format!(
        "rows of {identity} are not applied on this subscriber: logical replication cannot \
         carry the values of column(s) {columns}; the table is not in the subscription"
    )
}
