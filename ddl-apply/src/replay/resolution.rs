//! An operator's decision about the DDL event a subscription is stuck on.
//!
//! Under `ddl_conflict = 'error'` a statement that fails stops the apply worker, which retries
//! the whole transaction until the cause is gone: nothing is lost or applied twice, but the
//! subscription waits. `ddl_sync.failing_events` shows the event (statement, error, origin LSN)
//! and `ddl_sync.resolve_event(subscription, action [, statement])` decides what its next retry
//! does, in one step:
//!
//! - `retry`: replay it as it is (after fixing the cause here; the worker retries by itself);
//! - `skip`: record it as skipped and apply the rest of its transaction;
//! - `replace`: run `statement` (one statement, checked like a replayed one, as the event's
//!   role) instead of the event's.
//!
//! The decision is a row of `ddl_sync.event_resolution`, keyed by the event's origin, that the
//! replay deletes in the apply transaction: used exactly once, and still there if that
//! transaction fails again for another reason.

use crate::replay::stats;
use crate::subscriber::config::subscription_oid;
use ddl_server::errors::OrInternal;
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// A decision stored for an event.
pub enum Resolution {
    /// Not replayed; `note` says by whom and when.
    Skip { note: String },
    /// `sql` replayed instead; `note` says by whom and when.
    Replace { sql: String, note: String },
}

/// The decision stored for the event of subscription `subid` with origin `(sysid, lsn)`,
/// deleted as it is read. `None` when there is none (or the
/// extension's SQL objects predate decisions). Costs no query unless `resolve_event` was used
/// for the subscription since the server started.
pub fn take(subid: pg_sys::Oid, sysid: u64, lsn: ddl_wire::Lsn) -> Option<Resolution> {
    if !stats::resolving(subid) {
        return None;
    }
    let exists = Spi::get_one::<bool>(
        "SELECT pg_catalog.to_regclass('ddl_sync.event_resolution') IS NOT NULL",
    );
    if exists != Ok(Some(true)) {
        return None;
    }
    // The apply worker runs in replica mode, where the table's node-local trigger drops
    // replicated changes: this one is ours.
    let was_local = crate::local_change::set_local_change(true);
    let taken = Spi::connect_mut(|client| {
        let rows = client
            .update(
                "DELETE FROM ddl_sync.event_resolution
                  WHERE subid = $1 AND origin_sysid = $2 AND origin_lsn = $3::pg_catalog.pg_lsn
              RETURNING action, sql, resolved_by::text, resolved_at::text",
                None,
                // pg_lsn from its text, which every major reads in either of their forms.
                &[subid.into(), (sysid as i64).into(), lsn.to_string().into()],
            )
            .or_internal("cannot read ddl_sync.event_resolution");
        let row = rows.first();
        let action = row.get::<String>(1).ok().flatten()?;
        let by = row.get::<String>(3).ok().flatten().unwrap_or_default();
        let at = row.get::<String>(4).ok().flatten().unwrap_or_default();
        let note = format!("by {by} at {at} (ddl_sync.resolve_event)");
        match action.as_str() {
            "skip" => Some(Resolution::Skip { note }),
            "replace" => Some(Resolution::Replace {
                sql: row.get::<String>(2).ok().flatten()?,
                note,
            }),
            _ => None,
        }
    });
    crate::local_change::set_local_change(was_local);
    taken
}

/// `ddl_sync.resolve_event(subscription, action, statement, origin_lsn)`: decides what the next
/// retry of the event `subscription` is stuck on does (see the module). `origin_lsn`, when
/// given, must be that event's: a guard against resolving another event than the one looked
/// at. Superusers only (PostgreSQL 15's subscription owners). Returns what will happen.
#[pg_extern(volatile)]
fn resolve_event(
    subscription: &str,
    action: &str,
    statement: default!(Option<&str>, "NULL"),
    origin_lsn: default!(Option<&str>, "NULL"),
) -> String {
    // SAFETY: reads the current user's catalog row.
    if !unsafe { pg_sys::superuser() } {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "only a superuser may resolve a subscription's DDL events"
        );
    }
    let subid = subscription_oid(subscription);
    let Some(failing) = stats::failing(subid) else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("subscription \"{subscription}\" is not stuck on a DDL event"),
            "ddl_sync.failing_events lists the events subscriptions are stuck on (ddl_conflict = 'error'; errors since the server started)."
        );
    };
    if let Some(lsn) = origin_lsn {
        let same = Spi::get_one_with_args::<bool>(
            "SELECT $1::pg_catalog.pg_lsn = $2::pg_catalog.pg_lsn",
            &[lsn.into(), failing.origin_lsn.clone().into()],
        );
        if same != Ok(Some(true)) {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!(
                    "subscription \"{subscription}\" is stuck on the event at origin LSN {}, not {lsn}",
                    failing.origin_lsn
                )
            );
        }
    }
    let key: [pgrx::datum::DatumWithOid; 3] = [
        subid.into(),
        failing.origin_sysid.into(),
        failing.origin_lsn.clone().into(),
    ];
    Spi::run_with_args(
        "DELETE FROM ddl_sync.event_resolution
          WHERE subid = $1 AND origin_sysid = $2 AND origin_lsn = $3::pg_catalog.pg_lsn",
        &key,
    )
    .or_internal("cannot write ddl_sync.event_resolution");
    let what = match (action, statement) {
        ("retry", None) => "will be replayed as it is on the next retry".to_string(),
        ("skip", None) => {
            "will be skipped on the next retry (the rest of its transaction applies)".to_string()
        }
        ("replace", Some(sql)) => {
            if let Err(why) = crate::replay::statement::parse_one(sql) {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("the replacement statement is not usable: {why}")
                );
            }
            format!("will be replaced by \"{sql}\" on the next retry")
        }
        ("retry" | "skip", Some(_)) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("action \"{action}\" takes no statement")
            );
        }
        ("replace", None) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                "action \"replace\" needs the statement to run instead"
            );
        }
        _ => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("unknown action \"{action}\""),
                "The actions are retry, skip and replace."
            );
        }
    };
    if action != "retry" {
        Spi::run_with_args(
            "INSERT INTO ddl_sync.event_resolution (subid, origin_sysid, origin_lsn, action, sql)
             VALUES ($1, $2, $3::pg_catalog.pg_lsn, $4, $5)",
            &[
                subid.into(),
                failing.origin_sysid.into(),
                failing.origin_lsn.clone().into(),
                action.into(),
                statement.into(),
            ],
        )
        .or_internal("cannot write ddl_sync.event_resolution");
    }
    // The view says so until the event goes through (or fails again).
    stats::decided(subid);
    format!(
        "the event at origin LSN {} of subscription \"{subscription}\" (\"{}\") {what}",
        failing.origin_lsn, failing.sql
    )
}
