//! A subscription's DDL configuration, `ddl_sync.subscription_ddl`: one writer for the SQL
//! function `ddl_sync.set_subscription_ddl` and for the `ddl` / `ddl_conflict` options of
//! CREATE/ALTER SUBSCRIPTION (see [`super`]).

use crate::privilege::AsCatalogOwner;
use ddl_filter::{DdlKinds, RuleSetBuilder};
use ddl_server::errors::{self, OrInternal};
use ddl_server::subscription_rel;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// The valid conflict policies: `error` (the worker errors and retries) and `skip`.
pub(crate) fn conflict_policy(text: &str) -> Result<&'static str, String> {
    match text {
        "error" => Ok("error"),
        "skip" => Ok("skip"),
        _ => Err(format!(
            "unknown conflict policy \"{text}\" (valid: error, skip)"
        )),
    }
}

/// The valid schema modes: `relaxed` (no check) and `strict` (see `strict.rs`).
pub(crate) fn schema_mode(text: &str) -> Result<&'static str, String> {
    match text {
        "relaxed" => Ok("relaxed"),
        "strict" => Ok(STRICT),
        _ => Err(format!(
            "unknown schema mode \"{text}\" (valid: strict, relaxed)"
        )),
    }
}

pub(crate) const STRICT: &str = "strict";

/// The valid divergence policies (`ddl_divergence`): what a subscriber does when a statement
/// it applied made something other than what it made on the publisher (see `replay/verify.rs`).
/// `warn`: the event is `diverged`, with a WARNING, and replication goes on; `error`: the apply
/// worker errors and retries, as for a failing statement under `ddl_conflict = 'error'`, until
/// the subscriber is made equal or the event is resolved.
pub(crate) fn divergence_policy(text: &str) -> Result<&'static str, String> {
    match text {
        "warn" => Ok("warn"),
        "error" => Ok("error"),
        _ => Err(format!(
            "unknown divergence policy \"{text}\" (valid: warn, error)"
        )),
    }
}

/// What to change; `None` keeps what is stored.
#[derive(Default)]
pub(crate) struct Change {
    pub kinds: Option<DdlKinds>,
    pub conflict: Option<&'static str>,
    /// `Some(None)`: no rules.
    pub rules: Option<Option<String>>,
    pub schema_mode: Option<&'static str>,
    /// `Some(None)`: no fallback role (statements of missing roles are refused).
    pub fallback_role: Option<Option<String>>,
    pub divergence: Option<&'static str>,
}

/// A stored configuration row.
struct Stored {
    ddl: i32,
    conflict: String,
    rules: Option<String>,
    schema_mode: String,
}

/// This database's subscription named `$1` (qualified: it runs with its caller's search_path).
const SUBSCRIPTION_BY_NAME: &str = "SELECT oid FROM pg_catalog.pg_subscription
     WHERE subname OPERATOR(pg_catalog.=) $1
       AND subdbid OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
                                            WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())";

/// The subscription of this database named `name`; PostgreSQL's error when there is none.
pub(crate) fn subscription_oid(name: &str) -> pg_sys::Oid {
    Spi::get_one_with_args::<pg_sys::Oid>(SUBSCRIPTION_BY_NAME, &[name.into()])
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                format!("subscription \"{name}\" does not exist")
            );
        })
}

/// Replay reads every statement and name as UTF-8 (pgrx's `&str`), so it runs only in UTF8
/// databases; refusing here, where a subscription is configured, is a clear error instead of
/// an apply worker failing on its first non-ASCII statement. The publisher's database may be
/// in any encoding: its walsender converts the rows to this database's.
fn require_utf8_database() {
    // SAFETY: reads the backend's fixed database encoding.
    let encoding = unsafe { pg_sys::GetDatabaseEncoding() };
    if encoding != pg_sys::pg_enc::PG_UTF8 as i32 {
        // SAFETY: the name of a valid encoding, a static string. Not converted: PostgreSQL's
        // encoding names are ASCII.
        let name = unsafe { std::ffi::CStr::from_ptr(pg_sys::GetDatabaseEncodingName()) };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "ddl_sync replays DDL only into UTF8 databases",
            format!(
                "This database's encoding is {}. Create the subscriber's database with \
                 ENCODING 'UTF8'; the publisher's may have any encoding.",
                name.to_string_lossy()
            )
        );
    }
}

/// Stores a change of the configuration of subscription `name` (only for a role with its
/// owner's privileges, as PostgreSQL's own ownership check: a membership without INHERIT does
/// not count, nor on 16+ one granted `WITH INHERIT FALSE`), forgets the rows of subscriptions
/// dropped meanwhile, and marks `ddl_sync.events` ready for it. Returns the subscription's OID.
pub(crate) fn store(name: &str, change: Change) -> pg_sys::Oid {
    require_utf8_database();
    let subid = subscription_oid(name);
    let (may_change, subowner) = Spi::get_two_with_args::<bool, pg_sys::Oid>(
        "SELECT pg_catalog.pg_has_role(subowner, 'USAGE'), subowner
           FROM pg_catalog.pg_subscription WHERE oid = $1",
        &[subid.into()],
    )
    .unwrap_or((None, None));
    let (Some(true), Some(subowner)) = (may_change, subowner) else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("must be owner of subscription {name}")
        );
    };
    // The catalog is the extension owner's to read and write; the caller was checked above.
    let owner = AsCatalogOwner::enter();
    let stored = stored_row(subid);
    let kinds = match (change.kinds, &stored) {
        (Some(kinds), _) => kinds.bits(),
        (None, Some(row)) => row.ddl,
        (None, None) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("subscription \"{name}\" does not replicate DDL: set ddl first")
            );
        }
    };
    if kinds != 0 {
        require_superuser_owner(name, subowner);
    }
    let conflict = change
        .conflict
        .map(str::to_owned)
        .or_else(|| stored.as_ref().map(|row| row.conflict.clone()))
        .unwrap_or_else(|| "error".to_owned());
    let schema_mode = change
        .schema_mode
        .map(str::to_owned)
        .or_else(|| stored.as_ref().map(|row| row.schema_mode.clone()))
        .unwrap_or_else(|| "relaxed".to_owned());
    let rules = change
        .rules
        .unwrap_or_else(|| stored.and_then(|row| row.rules));
    {
        // Without the hook (not preloaded) DROP SUBSCRIPTION leaves its row; an OID can be reused.
        forget_dropped_rows();
        Spi::run_with_args(
            "INSERT INTO ddl_sync.subscription_ddl (subid, ddl, conflict, rules, schema_mode)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (subid) DO UPDATE SET ddl = excluded.ddl, conflict = excluded.conflict,
                                               rules = excluded.rules,
                                               schema_mode = excluded.schema_mode",
            &[
                subid.into(),
                kinds.into(),
                conflict.into(),
                rules.into(),
                schema_mode.into(),
            ],
        )
        .unwrap_or_else(|e| {
            errors::internal(format_args!(
                "cannot store the configuration of {name}: {e}"
            ))
        });
        // Only when asked: a database still at 0.2.0's SQL objects has no such column.
        if let Some(fallback) = change.fallback_role {
            Spi::run_with_args(
                "UPDATE ddl_sync.subscription_ddl SET fallback_role = $2 WHERE subid = $1",
                &[subid.into(), fallback.into()],
            )
            .unwrap_or_else(|e| {
                errors::internal(format_args!(
                    "cannot store the fallback role of {name}: {e}"
                ))
            });
        }
        if let Some(divergence) = change.divergence {
            Spi::run_with_args(
                "UPDATE ddl_sync.subscription_ddl SET divergence = $2 WHERE subid = $1",
                &[subid.into(), divergence.into()],
            )
            .unwrap_or_else(|e| {
                errors::internal(format_args!(
                    "cannot store the divergence policy of {name}: {e}"
                ))
            });
        }
    }
    drop(owner);
    own_tables_in_subscription(subid, true);
    subid
}

/// A subscription that replicates DDL is owned by a superuser, as on PostgreSQL 15, where only
/// superusers own subscriptions. 16 lets a role with `pg_create_subscription` own one, but its
/// apply worker could not take a single event: it writes each into `ddl_sync.events`, the
/// extension owner's table (with `run_as_owner = false` only as a role that may become that
/// owner, with `true` only with INSERT on it), and the replay becomes the role that ran each
/// statement on the publisher and keeps the extension's own tables, which need a superuser's
/// rights here. Refused here, before anything is made on the publisher, rather than found by
/// the apply worker stopping at the first event.
fn require_superuser_owner(name: &str, owner: pg_sys::Oid) {
    // SAFETY: catalog cache lookups of the subscription's owner, which exists.
    let (superuser, role) = unsafe {
        (
            pg_sys::superuser_arg(owner),
            ddl_server::text::utf8_ptr(pg_sys::GetUserNameFromId(owner, false)),
        )
    };
    if !superuser {
        errors::Error::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format_args!(
                "subscription \"{name}\" replicates DDL, so its owner must be a superuser"
            ),
        )
        .detail(format_args!(
            "Role \"{role}\" is not a superuser. The apply worker records each DDL event in \
             ddl_sync.events and replays the statement as the publisher's role that ran it: \
             both need a superuser's rights on the subscriber."
        ))
        .hint("Let a superuser own the subscription, or set ddl = 'none'.")
        .raise();
    }
}

/// After `ALTER SUBSCRIPTION name OWNER TO`: a subscription that replicates DDL keeps a
/// superuser as its owner (see [`require_superuser_owner`]).
pub(crate) fn owner_changed(name: &str) {
    let subid = subscription_oid(name);
    let replicates_ddl = {
        let _owner = AsCatalogOwner::enter();
        stored_row(subid).is_some_and(|row| row.ddl != 0)
    };
    if !replicates_ddl {
        return;
    }
    let owner = Spi::get_one_with_args::<pg_sys::Oid>(
        "SELECT subowner FROM pg_catalog.pg_subscription WHERE oid = $1",
        &[subid.into()],
    )
    .or_internal("cannot read the subscription's owner")
    .or_internal("the subscription has no owner");
    require_superuser_owner(name, owner);
}

/// The stored configuration of a subscription.
fn stored_row(subid: pg_sys::Oid) -> Option<Stored> {
    Spi::connect(|client| {
        let mut rows = client
            .select(
                "SELECT ddl, conflict, rules, schema_mode FROM ddl_sync.subscription_ddl
                  WHERE subid = $1",
                None,
                &[subid.into()],
            )
            .or_internal("cannot read ddl_sync.subscription_ddl");
        let row = rows.next()?;
        Some(Stored {
            ddl: row.get::<i32>(1).ok().flatten()?,
            conflict: row.get::<String>(2).ok().flatten()?,
            rules: row.get::<String>(3).ok().flatten(),
            schema_mode: row.get::<String>(4).ok().flatten()?,
        })
    })
}

/// Whether the subscription has a configuration row.
pub(crate) fn is_configured(subid: pg_sys::Oid) -> bool {
    let _owner = AsCatalogOwner::enter();
    stored_row(subid).is_some()
}

/// Whether the subscription's schema mode is `strict`.
pub(crate) fn is_strict(subid: pg_sys::Oid) -> bool {
    let _owner = AsCatalogOwner::enter();
    stored_row(subid).is_some_and(|row| row.schema_mode == STRICT)
}

/// Sets ddl_sync's own tables in `pg_subscription_rel` the way the subscription needs them:
///
/// * `ddl_sync.events` ready when it replicates DDL (`replicates_ddl`), added when missing
///   (a subscription made without DDL replication and configured since): the table is always
///   empty on publishers, and a table sync of it would lose the DDL sent meanwhile (the sync
///   worker reads its own slot); out of the subscription otherwise, like the others;
/// * every other table of schema `ddl_sync` out of the subscription. They are each node's own
///   catalogs (its publications' configuration, its apply log, its adapters), which a
///   publication `FOR ALL TABLES` includes: synced, they would copy the publisher's
///   configuration over the subscriber's, and their sync workers, which never replay DDL, would
///   stop at the first row of a table that only DDL creates. Out of the subscription, their
///   changes are not applied here: a subscription without DDL replication gets exactly the
///   tables and rows it would get from a publisher without the extension.
///
/// Nothing else to do for a table already so, or not (yet) in the subscription.
pub(crate) fn own_tables_in_subscription(subid: pg_sys::Oid, replicates_ddl: bool) {
    let mut to_ready = None;
    let mut to_remove = Vec::new();
    Spi::connect(|client| {
        let rows = client
            .select(
                "SELECT r.srrelid, c.relname = 'events', r.srsubstate <> 'r'
                   FROM pg_catalog.pg_subscription_rel r
                   JOIN pg_catalog.pg_class c ON c.oid = r.srrelid
                  WHERE r.srsubid = $1
                    AND c.relnamespace = 'ddl_sync'::pg_catalog.regnamespace",
                None,
                &[subid.into()],
            )
            .or_internal("cannot read pg_subscription_rel");
        for row in rows {
            let relid = row.get::<pg_sys::Oid>(1).ok().flatten();
            let is_events = row.get::<bool>(2).ok().flatten() == Some(true);
            let not_ready = row.get::<bool>(3).ok().flatten() == Some(true);
            match relid {
                Some(relid) if is_events && replicates_ddl => {
                    if not_ready {
                        to_ready = Some(relid);
                    }
                }
                Some(relid) => to_remove.push(relid),
                _ => {}
            }
        }
    });
    if let Some(events) = to_ready {
        subscription_rel::set_ready(subid, events);
    } else if replicates_ddl {
        // Taken out when the subscription was made without DDL replication (see above), or
        // never listed: the events must reach the apply trigger from now on. (A publication
        // that does not publish the table sends none; a refresh then removes it, and this
        // adds it again.)
        if let Some(events) = ddl_server::relcache::relation_named("ddl_sync.events") {
            if !subscription_rel::contains(subid, events) {
                subscription_rel::add_ready(subid, events);
            }
        }
    }
    for relid in to_remove {
        subscription_rel::remove(subid, relid);
    }
}

/// Deletes the configuration and statistics rows of subscriptions that no longer exist (after
/// DROP SUBSCRIPTION).
pub(crate) fn forget_dropped() {
    let _owner = AsCatalogOwner::enter();
    forget_dropped_rows();
}

fn forget_dropped_rows() {
    Spi::run(
        "DELETE FROM ddl_sync.subscription_ddl d
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.oid = d.subid);
         DELETE FROM ddl_sync.subscription_counters c
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.oid = c.subid);
         DELETE FROM ddl_sync.prepared_counts c
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.oid = c.subid);
         DELETE FROM ddl_sync.schema_copies c
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.oid = c.subid)",
    )
    .or_internal("cannot clean ddl_sync.subscription_ddl");
}

/// `ddl_sync.set_subscription_ddl(subscription, ddl, conflict, rules, schema_mode)`: which DDL
/// a subscription replays, what a failing statement does, and its schema mode. Also marks
/// `ddl_sync.events` ready for it. It does not connect to the publisher: a strict schema mode
/// is checked when the subscription is enabled. (With `ddl_sync` preloaded,
/// `CREATE/ALTER SUBSCRIPTION ... WITH (ddl = ..., ddl_conflict = ..., schema_mode = ...)` does
/// the same, and more: see the crate's README.)
#[pg_extern(volatile)]
fn set_subscription_ddl(
    subscription: &str,
    ddl: &str,
    conflict: default!(&str, "'error'"),
    rules: default!(Option<&str>, "NULL"),
    schema_mode: default!(&str, "'relaxed'"),
) {
    let schema_mode = self::schema_mode(schema_mode).unwrap_or_else(|e| {
        ereport!(ERROR, PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, e);
    });
    let kinds = DdlKinds::parse(ddl).unwrap_or_else(|e| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            e.to_string()
        );
    });
    let conflict = conflict_policy(conflict).unwrap_or_else(|e| {
        ereport!(ERROR, PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, e);
    });
    let rules = rules.map(|text| {
        let mut builder = RuleSetBuilder::new();
        builder.text(text);
        builder.build().map(|r| r.to_string()).unwrap_or_else(|e| {
            ereport!(ERROR, PgSqlErrorCode::ERRCODE_SYNTAX_ERROR, e.to_string());
        })
    });
    store(
        subscription,
        Change {
            kinds: Some(kinds),
            conflict: Some(conflict),
            rules: Some(rules),
            schema_mode: Some(schema_mode),
            fallback_role: None,
            divergence: None,
        },
    );
}

/// The `ddl_fallback_role` value: `''` or `none` for no fallback; else a role that exists
/// here and is no superuser (a role that cannot log in is the usual choice).
pub(crate) fn fallback_role(text: &str) -> Result<Option<String>, String> {
    if text.is_empty() || text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let superuser = Spi::get_one_with_args::<bool>(
        "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) $1",
        &[text.into()],
    );
    match superuser {
        Ok(Some(false)) => Ok(Some(text.to_string())),
        Ok(Some(true)) => Err(format!(
            "role \"{text}\" is a superuser: statements of missing roles would gain its rights"
        )),
        _ => Err(format!("role \"{text}\" does not exist")),
    }
}
