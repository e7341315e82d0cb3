//! Code that a replayed statement would make run during apply, as the subscription owner.
//!
//! PostgreSQL 15's apply worker applies every row as the subscription owner, a superuser. Code
//! attached to a table therefore runs with a superuser's rights on the subscriber whenever a
//! row of that table arrives: triggers and rules enabled ALWAYS or REPLICA, and the functions
//! called by CHECK constraints, defaults (filled in for columns the publisher does not send),
//! generated columns, index expressions and predicates, partition keys and domain constraints.
//! Natively only a subscriber-side table owner can attach such code; replicated DDL would hand
//! that to every publisher role that may create a table. So a statement replayed as a role that
//! is not a superuser here is refused when it leaves behind:
//! - a trigger or rule enabled ALWAYS or REPLICA (the only ones an apply worker fires);
//! - an expression that calls a function (directly, or as an operator's implementation) that is
//!   not owned by a superuser, or a cast that does (`to_json` and the like look casts to json
//!   up as they run). SECURITY DEFINER does not make one acceptable: it runs as its owner, but
//!   in the apply worker's session, so it can change what every later row runs with (a
//!   setting kept with `set_config(..., false)`: a search_path for the superuser's own
//!   triggers, `array_nulls` for every array applied after it; a session-level advisory
//!   lock; a LISTEN), which PostgreSQL prevents only for code it runs as a table's owner
//!   (`run_as_owner = false`: a security-restricted operation in a GUC level of its own);
//! - an expression that calls a function the role may not execute, or a built-in that acts with
//!   its caller's rights on what its arguments name (runs SQL text, reads relations, changes
//!   settings, uses sequences or large objects; see [`caller_rights`]).
//!
//! "Leaves behind" is read from the catalogs: the rows the statement inserted or updated carry
//! the xid of the subtransaction it ran in (or of one below it), which no earlier statement's
//! rows do. Both sides of a call count: a new expression calling an old function, and an old
//! expression calling a function the statement changed (`CREATE OR REPLACE`, `ALTER FUNCTION
//! ... SECURITY INVOKER`, `OWNER TO`).
//!
//! PostgreSQL 16 and later apply each row as its table's owner (`run_as_owner = false`, the
//! default), so code attached to a table runs with that owner's rights, as it would for the
//! owner's own writes on the publisher: the check applies there only to subscriptions with
//! `run_as_owner = true` ([`rows_applied_as_subscription_owner`]).

use crate::subscriber::applying::applying_subscription;
use crate::subscriber::caller_rights;
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// Whether this apply worker's subscription applies rows as the subscription owner (always on
/// 15; with `run_as_owner = true` on 16+). Yes when that cannot be read: the check is then kept.
pub fn rows_applied_as_subscription_owner() -> bool {
    applying_subscription().is_none_or(subscription_runs_as_owner)
}

/// Whether subscription `subid` applies rows as its owner (always on 15; with `run_as_owner =
/// true` on 16+). Yes when that cannot be read.
pub fn subscription_runs_as_owner(subid: pg_sys::Oid) -> bool {
    Spi::get_one_with_args::<bool>(
        &format!(
            "SELECT {} FROM pg_catalog.pg_subscription s WHERE s.oid OPERATOR(pg_catalog.=) $1",
            ddl_server::versions::SUBSCRIPTION_RUNS_AS_OWNER_SQL
        ),
        &[subid.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(true)
}

/// Whose rows the check judges.
#[derive(Clone, Copy)]
pub enum Author<'a> {
    /// A statement replayed as a role that is not a superuser: every trigger or rule it left
    /// enabled ALWAYS or REPLICA counts.
    NotSuperuser,
    /// A schema a superuser copied from the publisher (`copy_schema`), whose objects keep their
    /// owners: a trigger or rule counts when its table is not owned by a superuser (only the
    /// table's owner, or a superuser, can enable one). Who wrote an expression is not known
    /// there (a superuser may have, before giving the table away), only whether it can run as
    /// the subscription owner: the default of a column every applied row brings (`Received`)
    /// never does, and is not judged.
    TableOwners(&'a Received),
}

/// The columns whose values every row copied or applied here brings from the publisher: those
/// the subscription's publications send (all of a table's, or its column list). A default of
/// such a column is never evaluated by table sync or apply, which fill in only the columns a
/// row lacks; a generated column's expression is, and is judged as ever. Parallel lists: the
/// table (`schema.table`, quoted as `format('%I.%I')` writes it) and the column's name.
#[derive(Default)]
pub struct Received {
    pub tables: Vec<String>,
    pub columns: Vec<String>,
}

/// The OIDs of the pg_attrdef rows of columns in `$3`/`$4` (a [`Received`]) that are not
/// generated: what the checks below leave out.
pub(crate) const RECEIVED_DEFAULTS: &str = "
        SELECT d.oid FROM pg_catalog.pg_attrdef d
          JOIN pg_catalog.pg_attribute a
            ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) d.adnum
          JOIN ROWS FROM (pg_catalog.unnest($3::pg_catalog.text[]), pg_catalog.unnest($4::pg_catalog.text[]))
               AS r (tab, col)
            ON pg_catalog.to_regclass(r.tab) OPERATOR(pg_catalog.=) d.adrelid
           AND a.attname OPERATOR(pg_catalog.=) r.col
         WHERE a.attgenerated OPERATOR(pg_catalog.=) ''";

/// Why the statement just run (in the subtransaction whose xid is `since`) must be undone, or
/// `None`. Every name and operator below is qualified: the caller's search_path may be anyone's.
pub fn refusal(since: pg_sys::TransactionId) -> Option<String> {
    code_left_behind(since, Author::NotSuperuser).map(|what| {
        format!(
            "{what}: it would run as the subscription owner whenever a row is applied; only a \
             superuser's statements may leave that behind where rows are applied as the \
             subscription owner (PostgreSQL 15, or run_as_owner = true; see SECURITY.md)"
        )
    })
}

/// The code that the catalog rows written since the subtransaction `since` began attach to
/// tables, and that would run with the subscription owner's rights during apply, as one line
/// (each finding separated by `; `), or `None`. An error reading the catalogs is a finding.
pub fn code_left_behind(since: pg_sys::TransactionId, author: Author<'_>) -> Option<String> {
    // xmin >= since, wraparound-safe: age() counts back from the transaction's own xid, and the
    // statement's rows are younger than anything before its subtransaction.
    // One row always (NULL when nothing is wrong): get_one reports an empty result as an error.
    // $2: whether a trigger or rule counts only on a table that is not a superuser's; $3, $4:
    // the columns whose defaults are left out (`Received`).
    const QUERY: &str = "
        SELECT (SELECT pg_catalog.string_agg(reason, '; ' ORDER BY reason) FROM (
        WITH mine AS (SELECT pg_catalog.age($1::pg_catalog.text::pg_catalog.xid) AS age),
        received_defaults AS (RECEIVED),
        not_superusers AS (
            SELECT c.oid FROM pg_catalog.pg_class c
              JOIN pg_catalog.pg_roles o ON o.oid OPERATOR(pg_catalog.=) c.relowner
             WHERE NOT o.rolsuper),
        calls AS (
            SELECT d.classid, d.objid, d.objsubid, f.oid AS fn, f.proowner
              FROM pg_catalog.pg_depend d
              JOIN pg_catalog.pg_operator op
                ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_operator'::pg_catalog.regclass
               AND op.oid OPERATOR(pg_catalog.=) d.refobjid
              JOIN pg_catalog.pg_proc f ON f.oid OPERATOR(pg_catalog.=) op.oprcode::pg_catalog.oid
             WHERE pg_catalog.age(d.xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
                OR pg_catalog.age(f.xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
            UNION ALL
            SELECT d.classid, d.objid, d.objsubid, f.oid, f.proowner
              FROM pg_catalog.pg_depend d
              JOIN pg_catalog.pg_proc f
                ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
               AND f.oid OPERATOR(pg_catalog.=) d.refobjid
             WHERE pg_catalog.age(d.xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
                OR pg_catalog.age(f.xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
        )
        SELECT pg_catalog.format('trigger %I on %s is enabled %s',
                   t.tgname, t.tgrelid::pg_catalog.regclass,
                   CASE WHEN t.tgenabled OPERATOR(pg_catalog.=) 'A' THEN 'ALWAYS' ELSE 'REPLICA' END)
          FROM pg_catalog.pg_trigger t
         WHERE NOT t.tgisinternal AND t.tgenabled OPERATOR(pg_catalog.=) ANY ('{A,R}'::pg_catalog.\"char\"[])
           AND pg_catalog.age(t.xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
           AND (NOT $2 OR EXISTS (SELECT FROM not_superusers n WHERE n.oid OPERATOR(pg_catalog.=) t.tgrelid))
        UNION ALL
        SELECT pg_catalog.format('rule %I on %s is enabled %s',
                   r.rulename, r.ev_class::pg_catalog.regclass,
                   CASE WHEN r.ev_enabled OPERATOR(pg_catalog.=) 'A' THEN 'ALWAYS' ELSE 'REPLICA' END)
          FROM pg_catalog.pg_rewrite r
         WHERE r.ev_enabled OPERATOR(pg_catalog.=) ANY ('{A,R}'::pg_catalog.\"char\"[])
           AND r.ev_type OPERATOR(pg_catalog.<>) '1'
           AND pg_catalog.age(r.xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
           AND (NOT $2 OR EXISTS (SELECT FROM not_superusers n WHERE n.oid OPERATOR(pg_catalog.=) r.ev_class))
        UNION ALL
        SELECT pg_catalog.format('%s calls %s, owned by %I, which is not a superuser%s',
                   pg_catalog.pg_describe_object(c.classid, c.objid, c.objsubid),
                   c.fn::pg_catalog.regprocedure, o.rolname,
                   CASE WHEN f.prosecdef THEN ' (SECURITY DEFINER, it would run in the apply \
worker''s session and could change its settings, advisory locks or LISTENs for every row after \
it)' ELSE '' END)
          FROM calls c
          JOIN pg_catalog.pg_proc f ON f.oid OPERATOR(pg_catalog.=) c.fn
          JOIN pg_catalog.pg_roles o ON o.oid OPERATOR(pg_catalog.=) c.proowner
         WHERE NOT o.rolsuper
           AND NOT (c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                    AND c.objid IN (SELECT oid FROM received_defaults))
           AND c.classid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_constraint',
                   'pg_catalog.pg_attrdef', 'pg_catalog.pg_class',
                   'pg_catalog.pg_type', 'pg_catalog.pg_cast']::pg_catalog.regclass[])
        ) AS found (reason))";
    let none = Received::default();
    let (by_owner, received) = match author {
        Author::NotSuperuser => (false, &none),
        Author::TableOwners(received) => (true, received),
    };
    let text = u32::from(since).to_string();
    let query = QUERY.replace("RECEIVED", RECEIVED_DEFAULTS);
    let mut found: Vec<String> = match Spi::get_one_with_args::<String>(
        &query,
        &[
            text.as_str().into(),
            by_owner.into(),
            received.tables.clone().into(),
            received.columns.clone().into(),
        ],
    ) {
        Ok(found) => found.into_iter().collect(),
        Err(e) => vec![format!("cannot check the code the statement attached: {e}")],
    };
    match caller_rights::findings(since, by_owner, received) {
        Ok(calls) => found.extend(calls),
        Err(e) => found.push(format!(
            "cannot check the functions its expressions call: {e}"
        )),
    }
    (!found.is_empty()).then(|| found.join("; "))
}
