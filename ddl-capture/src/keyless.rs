//! Tables whose updates and deletes a publication publishes but that have no key.
//!
//! PostgreSQL refuses every UPDATE and DELETE of a table without a replica identity while a
//! publication publishes them ("cannot update table ... because it does not have a replica
//! identity and publishes updates"). A publication `FOR ALL TABLES` (or `TABLES IN SCHEMA`)
//! takes each new table without anyone looking at it, so a migration that creates a
//! bookkeeping table without a primary key and later updates it fails on the publisher, and
//! so does the application afterwards. The setting `ddl_sync.keyless_tables` decides what a
//! replicated statement that leaves such a table does:
//!
//! - `full` (default): after the statement the hook runs `ALTER TABLE ... REPLICA IDENTITY
//!   FULL` on the table (captured and replicated like any statement, so the apply log says so)
//!   with a NOTICE; the old row then travels whole and subscribers find rows by all their
//!   columns. Once the table has a primary key, `REPLICA IDENTITY DEFAULT` again: FULL logs
//!   whole old rows, which a key makes needless. Only a FULL set here is set back
//!   (`ddl_sync.keyless_identity` remembers which), never one a user chose, and a statement
//!   that names a replica identity itself is the user's choice. A table with a column of a type
//!   without an equality operator (`point`, `json`, ...) cannot be FULL: a subscriber compares
//!   old rows column by column and stops at such a column; it gets a WARNING instead and stays
//!   as PostgreSQL leaves it.
//! - `refuse`: the statement fails, with the reason and the fix (a primary key).
//! - `native`: nothing; PostgreSQL refuses the updates and deletes later.
//!
//! Why `full` is the default: it keeps the application's writes working and the nodes equal,
//! at the cost of bigger WAL for the tables that have no key (typically small), where the
//! other choices fail a migration that runs on a stock PostgreSQL.
//!
//! Not applied to statements replayed from another node (the follow-up arrives as the
//! publisher's own event), nor to tables no publication publishes updates or deletes of.

use crate::statement;
use ddl_server::errors::OrInternal;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting, PgLogLevel, PostgresGucEnum};
use std::ffi::CStr;

/// What a replicated statement that leaves a published table without a key does.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
    #[name = c"full"]
    Full,
    #[name = c"refuse"]
    Refuse,
    #[name = c"native"]
    Native,
}

static POLICY: GucSetting<Policy> = GucSetting::<Policy>::new(Policy::Full);

/// The extension's table of the tables whose FULL replica identity the policy set.
const TRACKED: &CStr = c"keyless_identity";

/// Defines `ddl_sync.keyless_tables`.
pub fn define_setting() {
    GucRegistry::define_enum_guc(
        c"ddl_sync.keyless_tables",
        c"What a replicated statement that leaves a published table without a key does.",
        c"full: the table gets REPLICA IDENTITY FULL (DEFAULT again once it has a primary key); \
          refuse: the statement fails; native: PostgreSQL refuses the table's updates and \
          deletes.",
        &POLICY,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The relations a captured statement made or changed, for the hook to look at once it has
/// run.
#[derive(Debug, Default)]
pub struct Candidates {
    relations: Vec<pg_sys::Oid>,
    /// Captured before it ran (`early.rs`): the relations it made are the candidates.
    made: bool,
}

/// Notes the relations of the innermost statement, which a publication takes and which was not
/// replayed from another node.
pub(crate) fn consider(target: &crate::trigger::Target) {
    statement::with_innermost(|s| {
        let candidates = &mut s.keyless;
        if target.class_id == u32::from(pg_sys::RelationRelationId) && target.object_id == 0 {
            candidates.made = true;
        }
        let object =
            (target.class_id == u32::from(pg_sys::RelationRelationId)).then_some(target.object_id);
        for relid in target.relations.iter().copied().chain(object) {
            let relid = pg_sys::Oid::from(relid);
            if relid != pg_sys::InvalidOid && !candidates.relations.contains(&relid) {
                candidates.relations.push(relid);
            }
        }
    });
}

/// Applies the policy to the candidates of a statement that has run.
///
/// # Safety
/// Runs in the ProcessUtility hook after the statement `pstmt`, inside its transaction;
/// `made` are the relations it made.
pub unsafe fn follow(
    candidates: Candidates,
    pstmt: *mut pg_sys::PlannedStmt,
    made: &[(pg_sys::Oid, i32)],
) {
    let mut relations = candidates.relations;
    if candidates.made {
        relations.extend(made.iter().filter(|(_, c)| *c == 0).map(|(r, _)| *r));
    }
    let policy = POLICY.get();
    if relations.is_empty() {
        return;
    }
    // Under `native` only a table the policy made FULL before has something to do: none when
    // `keyless_identity` is empty (the cached answer also counts adapters, rarely there).
    // SAFETY: the caller's promise.
    if policy == Policy::Native && !unsafe { crate::forget::anything_to_forget() } {
        return;
    }
    // SAFETY: the caller's promise: the tree that ran.
    let chosen = unsafe { names_replica_identity(pstmt) };
    for relid in relations {
        // SAFETY: the caller's promise.
        let Some(table) = (unsafe { Table::read(relid) }) else {
            continue;
        };
        // The follow-up runs as the statement's role: a table it does not own (no statement
        // found so far lists one) is left as it is rather than failing the statement.
        // SAFETY: the caller's promise; the table exists (read above, locked).
        if !unsafe { ddl_server::versions::owns_relation(relid, pg_sys::GetUserId()) } {
            continue;
        }
        // SAFETY: as above.
        let tracked = table.full && unsafe { is_tracked(relid) };
        if chosen || (tracked && table.primary_key) {
            // SAFETY: as above.
            unsafe { untrack(relid) };
        }
        if chosen {
            continue;
        }
        if tracked && table.primary_key {
            set_identity(&table.name, "DEFAULT");
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "replica identity of table {} set back to DEFAULT",
                    table.name
                ),
                "ddl_sync",
            )
            .set_detail(
                "ddl_sync.keyless_tables had set it to FULL while the table had no primary key.",
            )
            .report(PgLogLevel::NOTICE);
        } else if table.keyless && table.published {
            // SAFETY: as above.
            unsafe { apply(policy, relid, &table) };
        }
    }
}

/// What the policy needs to know of a table as the statement left it.
struct Table {
    name: String,
    /// No replica identity: DEFAULT without a primary key.
    keyless: bool,
    full: bool,
    primary_key: bool,
    /// A publication publishes its updates or deletes.
    published: bool,
}

impl Table {
    /// `None` for a relation that is gone, not a permanent table, or in a system schema.
    ///
    /// # Safety
    /// Runs in a backend inside a transaction.
    unsafe fn read(relid: pg_sys::Oid) -> Option<Table> {
        let lock = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
        // SAFETY: the caller's promise; NULL for a relation that is gone.
        let rel = unsafe { pg_sys::try_relation_open(relid, lock) };
        if rel.is_null() {
            return None;
        }
        // SAFETY: `rel` is open until the close below: its pg_class row, index list,
        // publications and descriptor.
        let table = unsafe {
            let class = &*(*rel).rd_rel;
            let is_table = matches!(
                class.relkind as u8,
                pg_sys::RELKIND_RELATION | pg_sys::RELKIND_PARTITIONED_TABLE
            ) && class.relpersistence as u8 == pg_sys::RELPERSISTENCE_PERMANENT
                && !pg_sys::IsCatalogRelation(rel);
            is_table.then(|| {
                let identity = class.relreplident as u8;
                let primary_key = class.relhasindex && {
                    pg_sys::list_free(pg_sys::RelationGetIndexList(rel));
                    (*rel).rd_pkindex != pg_sys::InvalidOid
                };
                let keyless = identity == pg_sys::REPLICA_IDENTITY_DEFAULT && !primary_key;
                let full = identity == pg_sys::REPLICA_IDENTITY_FULL;
                let published = (keyless || full) && {
                    let actions = crate::volatile::publication_actions(rel);
                    actions.pubupdate || actions.pubdelete
                };
                Table {
                    name: ddl_server::relcache::qualified_name(relid).unwrap_or_default(),
                    keyless,
                    full,
                    primary_key,
                    published,
                }
            })
        };
        // SAFETY: opened above, closed once.
        unsafe { pg_sys::relation_close(rel, lock) };
        table
    }
}

/// The policy, for a published table without a key.
///
/// # Safety
/// Runs in the hook after the statement, inside its transaction.
unsafe fn apply(policy: Policy, relid: pg_sys::Oid, table: &Table) {
    let name = &table.name;
    match policy {
        Policy::Native => {}
        Policy::Refuse => ErrorReport::new(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "table {name} has no replica identity, and a publication publishes its updates \
                 and deletes"
            ),
            "ddl_sync",
        )
        .set_detail("PostgreSQL would refuse every UPDATE and DELETE of its rows.")
        .set_hint(
            "Declare a primary key. SET ddl_sync.keyless_tables = 'full' gives such tables \
             REPLICA IDENTITY FULL; 'native' leaves them as PostgreSQL does.",
        )
        .report(PgLogLevel::ERROR),
        // SAFETY: the caller's promise.
        Policy::Full => match unsafe { without_equality(relid) } {
            Some((column, type_name)) => ErrorReport::new(
                PgSqlErrorCode::ERRCODE_WARNING,
                format!("table {name} has no primary key, and its replica identity cannot be FULL"),
                "ddl_sync",
            )
            .set_detail(format!(
                "Column {column} is of type {type_name}, which has no equality operator: a \
                 subscriber could not find the rows of its updates and deletes. PostgreSQL \
                 refuses them while a publication publishes them."
            ))
            .set_hint("Declare a primary key.")
            .report(PgLogLevel::WARNING),
            None => {
                set_identity(name, "FULL");
                // SAFETY: the caller's promise.
                unsafe { track(relid) };
                ErrorReport::new(
                    PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                    format!("replica identity of table {name} set to FULL"),
                    "ddl_sync",
                )
                .set_detail(
                    "The table has no primary key, and a publication publishes its updates and \
                     deletes, which PostgreSQL refuses on a table without a replica identity.",
                )
                .set_hint(
                    "A primary key makes it DEFAULT again. SET ddl_sync.keyless_tables = \
                     'native' leaves such tables as PostgreSQL does.",
                )
                .report(PgLogLevel::NOTICE);
            }
        },
    }
}

/// Runs `ALTER TABLE name REPLICA IDENTITY identity` as the statement's role, which owns the
/// table (it just made or changed it). Captured and replicated like the user's statements.
fn set_identity(name: &str, identity: &str) {
    Spi::run(&format!("ALTER TABLE {name} REPLICA IDENTITY {identity}"))
        .or_internal("cannot set the replica identity of a table without a key");
}

/// Whether the statement names a replica identity itself (`ALTER TABLE ... REPLICA
/// IDENTITY`): the user's choice, which the policy leaves alone.
///
/// # Safety
/// `pstmt` is a utility statement's PlannedStmt, its tree a node.
unsafe fn names_replica_identity(pstmt: *mut pg_sys::PlannedStmt) -> bool {
    // SAFETY: the caller's promise; an AlterTableStmt by its tag, whose `cmds` is a List of
    // AlterTableCmds.
    unsafe {
        let node = (*pstmt).utilityStmt;
        if node.is_null() || (*node).type_ != pg_sys::NodeTag::T_AlterTableStmt {
            return false;
        }
        let cmds = (*node.cast::<pg_sys::AlterTableStmt>()).cmds;
        pgrx::list::PgList::<pg_sys::AlterTableCmd>::from_pg(cmds)
            .iter_ptr()
            .any(|cmd| (*cmd).subtype == pg_sys::AlterTableType::AT_ReplicaIdentity)
    }
}

/// The first column whose type has no default equality operator, and the type's name: a
/// subscriber compares old rows of a FULL replica identity column by column (all but dropped
/// and generated ones, which the publisher does not send).
///
/// # Safety
/// `relid` is a relation the statement left; in its transaction.
unsafe fn without_equality(relid: pg_sys::Oid) -> Option<(String, String)> {
    let lock = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
    // SAFETY: the caller's promise (relation_open raises an ERROR for one that is gone); open
    // until the close below.
    let rel = unsafe { pg_sys::relation_open(relid, lock) };
    // SAFETY: `rel` is open: its descriptor.
    let attrs = unsafe { ddl_server::versions::attributes((*rel).rd_att) };
    let found = attrs
        .iter()
        .filter(|a| !a.attisdropped && a.attgenerated == 0)
        .find_map(|a| {
            // SAFETY: a type of a column (it exists while the column does); the type cache
            // raises an ERROR only for a type that is gone.
            let eq = unsafe {
                (*pg_sys::lookup_type_cache(a.atttypid, pg_sys::TYPECACHE_EQ_OPR as i32)).eq_opr
            };
            (eq == pg_sys::InvalidOid).then(|| {
                // SAFETY: a NameData is NUL-terminated within its array; format_type_be returns
                // a new server string.
                unsafe {
                    (
                        ddl_server::text::utf8_identifier(a.attname.data.as_ptr()),
                        ddl_server::text::utf8_ptr(pg_sys::format_type_be(a.atttypid)),
                    )
                }
            })
        });
    // SAFETY: opened above, closed once.
    unsafe { pg_sys::relation_close(rel, lock) };
    found
}

/// Whether the policy set the FULL replica identity of `relid`.
///
/// # Safety
/// Runs in a backend inside a transaction.
unsafe fn is_tracked(relid: pg_sys::Oid) -> bool {
    let mut found = false;
    // SAFETY: the caller's promise; the column is an `oid`.
    unsafe {
        ddl_server::extension_tables::scan(
            TRACKED,
            &[c"relid"],
            pg_sys::AccessShareLock,
            |_, _, v| found |= v[0].is_some_and(|d| pg_sys::Oid::from(d.value() as u32) == relid),
        )
    };
    found
}

/// Remembers that the policy set the FULL replica identity of `relid`.
///
/// # Safety
/// Runs in a backend inside a transaction.
unsafe fn track(relid: pg_sys::Oid) {
    // SAFETY: the caller's promise. A row left by a table of the same OID that is gone would
    // make the insert fail on the key: deleted first.
    unsafe {
        untrack(relid);
        ddl_server::extension_tables::insert(TRACKED, &[pg_sys::Datum::from(relid)]);
        ddl_server::extension_tables::capture_config_changed();
    }
}

/// Forgets `relid` (its FULL replica identity, if any, is now the user's).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn untrack(relid: pg_sys::Oid) {
    // SAFETY: the caller's promise.
    unsafe { forget(|r| r == relid) };
}

/// Deletes the rows of `ddl_sync.keyless_identity` whose table `gone` says, as catalog rows
/// (no trigger, no privilege check: whoever may alter or drop a table may drop its row, also
/// in an apply worker's replica mode).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn forget(gone: impl Fn(pg_sys::Oid) -> bool) {
    let mut deleted = false;
    // SAFETY: the caller's promise; each tuple is the scan's current row of `rel`, open with
    // RowExclusiveLock, as CatalogTupleDelete needs; the column is an `oid`.
    unsafe {
        ddl_server::extension_tables::scan(
            TRACKED,
            &[c"relid"],
            pg_sys::RowExclusiveLock,
            |rel, tuple, v| {
                if v[0].is_some_and(|d| gone(pg_sys::Oid::from(d.value() as u32))) {
                    pg_sys::CatalogTupleDelete(rel, &raw mut (*tuple).t_self);
                    deleted = true;
                }
            },
        );
        if deleted {
            ddl_server::extension_tables::capture_config_changed();
        }
    }
}
