//! While a strict subscription is enabled, local DDL on the tables it replicates is refused:
//! such a statement makes the subscriber's schema differ from the publisher's, which strict
//! mode exists to prevent (and which breaks replication or silently drops values).
//!
//! Checked in the ProcessUtility hook, before the statement runs, for the statements that
//! change a table's definition or what hangs off it: ALTER TABLE (and ALTER INDEX, on the
//! index's table), RENAME, SET SCHEMA, DROP TABLE / INDEX / TRIGGER / RULE / POLICY, CREATE
//! INDEX / TRIGGER / RULE / POLICY, ALTER POLICY. A table counts when it, a partition of it,
//! or a table it is a partition of is in `pg_subscription_rel` of an enabled subscription
//! whose `schema_mode` is `strict`.
//!
//! Let through: the apply worker replaying DDL (its session has a replication origin), an
//! extension script, and any session with `ddl_sync.allow_local_ddl = on` (maintenance).

use crate::privilege::AsCatalogOwner;
use ddl_server::errors::OrInternal;
use ddl_server::relation_oid;
use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting, PgLogLevel};

static ALLOW: GucSetting<bool> = GucSetting::<bool>::new(false);

/// Defines `ddl_sync.allow_local_ddl`.
pub(crate) fn define_setting() {
    GucRegistry::define_bool_guc(
        c"ddl_sync.allow_local_ddl",
        c"Allows local DDL on tables replicated by an enabled strict subscription.",
        c"For maintenance: such DDL makes the subscriber's schema differ from the publisher's.",
        &ALLOW,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// Refuses `node` when it changes a table an enabled strict subscription replicates.
///
/// # Safety
/// `node` is the utility statement about to run, inside a transaction.
pub(super) unsafe fn check(node: *mut pg_sys::Node) {
    if ALLOW.get()
        || ddl_server::versions::session_origin() != 0
        // SAFETY: a backend global, which only this backend writes.
        || unsafe { pg_sys::creating_extension }
    {
        return;
    }
    // SAFETY: the caller's promise.
    let relids = unsafe { relations(node) };
    // Only a statement that changes a table, and only in a database with subscriptions (one
    // catalog cache lookup, no SPI: a publisher pays nothing more), can meet a strict one. A
    // statement that changes a table runs in a transaction that can read catalogs (BEGIN,
    // COMMIT and ROLLBACK, which may run in an aborted one, stop at the first test).
    if relids.is_empty()
        || !ddl_server::subscription_rel::database_has_subscriptions()
        // SAFETY: as above.
        || !unsafe { super::extension_exists() }
        || !any_strict()
    {
        return;
    }
    let Some((subscription, table)) = protected(relids) else {
        return;
    };
    super::report(
        PgLogLevel::ERROR,
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "table {table} is replicated by subscription \"{subscription}\" (schema_mode = strict): local DDL on it is refused"
        ),
        "Local DDL would make the subscriber's schema differ from the publisher's.".into(),
        &format!(
            "Run the DDL on the publisher: it replicates. For maintenance, SET ddl_sync.allow_local_ddl = on, \
             or ALTER SUBSCRIPTION {subscription} SET (schema_mode = 'relaxed')."
        ),
    );
}

/// Whether a subscription of this database is strict: without one (`relaxed` is the default),
/// no table is protected, and the query of [`protected`] (planned each time, some 1.6 million
/// instructions per local DDL statement, more than most statements) is not run.
fn any_strict() -> bool {
    let mut strict = false;
    // SAFETY: in the statement's transaction; `schema_mode` is a text column, read for each
    // row while it is valid.
    unsafe {
        ddl_server::extension_tables::scan(
            c"subscription_ddl",
            &[c"schema_mode"],
            pg_sys::AccessShareLock,
            |_, _, values| {
                strict |=
                    values[0].is_some_and(|mode| ddl_server::text::utf8_text(mode) == "strict")
            },
        )
    };
    strict
}

/// The first enabled strict subscription that replicates one of `relids` (or a partition or
/// partitioned ancestor of one), with that table.
fn protected(relids: Vec<pg_sys::Oid>) -> Option<(String, String)> {
    // subscription_ddl is the extension owner's to read; the statement's search_path is its
    // user's, who may have planted an operator ahead of pg_catalog.
    ddl_server::guc::with_search_path("pg_catalog", || {
        let _owner = AsCatalogOwner::enter();
        protected_as_owner(relids)
    })
}

fn protected_as_owner(relids: Vec<pg_sys::Oid>) -> Option<(String, String)> {
    Spi::connect(|client| {
        let mut rows = client.select(
            "SELECT s.subname::pg_catalog.text, r.srrelid::pg_catalog.regclass::pg_catalog.text
               FROM pg_catalog.pg_subscription_rel r
               JOIN pg_catalog.pg_subscription s ON s.oid = r.srsubid
               JOIN ddl_sync.subscription_ddl d ON d.subid = s.oid
              WHERE s.subenabled AND d.schema_mode = 'strict'
                AND r.srrelid IN (
                    SELECT t.relid
                      FROM pg_catalog.unnest($1::pg_catalog.oid[]) AS u(relid)
                     CROSS JOIN LATERAL (
                         SELECT u.relid
                         UNION SELECT p.relid FROM pg_catalog.pg_partition_tree(u.relid) p
                         UNION SELECT a.relid FROM pg_catalog.pg_partition_ancestors(u.relid) a
                     ) AS t(relid))
              ORDER BY 1, 2
              LIMIT 1",
            None,
            &[relids.into()],
        )?;
        let Some(row) = rows.next() else {
            return Ok(None);
        };
        Ok::<_, pgrx::spi::Error>(Some((
            row.get::<String>(1)?.unwrap_or_default(),
            row.get::<String>(2)?.unwrap_or_default(),
        )))
    })
    .or_internal("cannot read the strict subscriptions")
}

/// The tables a statement changes the definition of (those that exist: a missing one is
/// PostgreSQL's error to give). Indexes stand for their tables.
///
/// # Safety
/// `node` is NULL or the tree of a utility statement; in a transaction.
unsafe fn relations(node: *mut pg_sys::Node) -> Vec<pg_sys::Oid> {
    if node.is_null() {
        return Vec::new();
    }
    use pg_sys::NodeTag as T;
    // SAFETY: the caller's promise: a statement's tree, whose tag says which it is; each
    // field read is that statement's RangeVar (NULL filtered below).
    let range_vars: Vec<*mut pg_sys::RangeVar> = unsafe {
        match (*node).type_ {
            T::T_AlterTableStmt => vec![(*node.cast::<pg_sys::AlterTableStmt>()).relation],
            T::T_RenameStmt => vec![(*node.cast::<pg_sys::RenameStmt>()).relation],
            T::T_AlterObjectSchemaStmt => {
                vec![(*node.cast::<pg_sys::AlterObjectSchemaStmt>()).relation]
            }
            T::T_IndexStmt => vec![(*node.cast::<pg_sys::IndexStmt>()).relation],
            T::T_CreateTrigStmt => vec![(*node.cast::<pg_sys::CreateTrigStmt>()).relation],
            T::T_RuleStmt => vec![(*node.cast::<pg_sys::RuleStmt>()).relation],
            T::T_CreatePolicyStmt => vec![(*node.cast::<pg_sys::CreatePolicyStmt>()).table],
            T::T_AlterPolicyStmt => vec![(*node.cast::<pg_sys::AlterPolicyStmt>()).table],
            T::T_DropStmt => dropped(node.cast()),
            _ => return Vec::new(),
        }
    };
    range_vars
        .into_iter()
        .filter(|rv| !rv.is_null())
        .filter_map(|rv| {
            // SAFETY: a RangeVar of the statement (or made from its names), resolved without a
            // lock in the caller's transaction; then syscache lookups by OID, which answer
            // 0 / InvalidOid for a relation dropped meanwhile.
            unsafe {
                let relid = relation_oid(rv)?;
                match pg_sys::get_rel_relkind(relid) as u8 {
                    0 => None,
                    pg_sys::RELKIND_INDEX | pg_sys::RELKIND_PARTITIONED_INDEX => {
                        Some(pg_sys::IndexGetRelation(relid, true))
                            .filter(|r| *r != pg_sys::InvalidOid)
                    }
                    _ => Some(relid),
                }
            }
        })
        .collect()
}

/// The relations of a DROP of tables or indexes, or of what hangs off a table (the name list
/// without its last element names the table).
///
/// # Safety
/// `stmt` is a DropStmt's tree; in a transaction (the RangeVars are made in the current memory
/// context).
unsafe fn dropped(stmt: *mut pg_sys::DropStmt) -> Vec<*mut pg_sys::RangeVar> {
    use pg_sys::ObjectType as O;
    // SAFETY: the caller's promise.
    let (remove_type, objects) = unsafe { ((*stmt).removeType, (*stmt).objects) };
    let whole = match remove_type {
        O::OBJECT_TABLE | O::OBJECT_INDEX => true,
        O::OBJECT_TRIGGER | O::OBJECT_RULE | O::OBJECT_POLICY => false,
        _ => return Vec::new(),
    };
    // SAFETY: for these object types, `objects` is a List of name Lists (of String nodes).
    let objects = unsafe { PgList::<pg_sys::List>::from_pg(objects) };
    objects
        .iter_ptr()
        .filter_map(|names| {
            // SAFETY: as above, one name List.
            let names = unsafe { PgList::<pg_sys::String>::from_pg(names) };
            let mut names = names.iter_ptr().collect::<Vec<_>>();
            if !whole {
                names.pop()?;
            }
            if names.is_empty() {
                return None;
            }
            let mut list = PgList::<pg_sys::String>::new();
            for name in names {
                list.push(name);
            }
            // SAFETY: a List of the statement's String nodes, qualified name first, as the
            // parser makes for a DROP; the RangeVar is palloc'd in the current context.
            Some(unsafe { pg_sys::makeRangeVarFromNameList(list.into_pg()) })
        })
        .collect()
}
