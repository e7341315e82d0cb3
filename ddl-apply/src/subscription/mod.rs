//! Subscription configuration: `ddl_sync.set_subscription_ddl` ([`config`]) and, with this
//! library loaded (in `shared_preload_libraries`), the `ddl`, `ddl_conflict` and `schema_mode`
//! options of CREATE/ALTER SUBSCRIPTION, taken by a ProcessUtility hook:
//!
//! ```sql
//! CREATE SUBSCRIPTION sub CONNECTION '...' PUBLICATION p WITH (ddl = 'all', ddl_conflict = 'skip');
//! ALTER SUBSCRIPTION sub SET (ddl = 'table, index', schema_mode = 'strict');
//! ```
//!
//! The hook validates and removes our options ([`options`]) before PostgreSQL parses the rest,
//! lets PostgreSQL create or alter the subscription, then stores the configuration through the
//! same code as the function and, over a replication connection to the publisher
//! ([`connection`]):
//! - checks the kinds against the publications (an error when the subscription asks for kinds
//!   none of them replicates, or the publisher has no `ddl_sync`);
//! - creates the slot with plugin `ddl_pgoutput` when PostgreSQL would have created one
//!   (PostgreSQL 15's walrcv_create_slot always asks for pgoutput, which sends no DDL): same
//!   place in the command, same NOTICE, same restriction (not in a transaction block); with
//!   `create_slot = false` an existing slot of another plugin is an error.
//!
//! With `schema_mode = 'strict'` the published tables are compared on both sides ([`strict`])
//! when the subscription is created, enabled or switched to strict, and local DDL on them is
//! refused while it is enabled ([`guard`]).
//!
//! After DROP SUBSCRIPTION the configuration row goes; after ALTER SUBSCRIPTION ... REFRESH
//! (or SET/ADD PUBLICATION) `ddl_sync.events` is marked ready again if it just joined.

mod compare;
pub(crate) mod connection;
mod copy_refresh;
mod copy_schema;
mod dump;
mod guard;
mod options;
mod peers;
mod sequences;
mod strict;

pub(crate) use guard::define_setting;

use crate::subscriber::config;
use crate::subscription::connection::{Publisher, PLUGIN};
use ddl_server::errors::{self, OrInternal};
use ddl_server::text::utf8_ptr;
use ddl_server::utility::{Before, StatementStack, UtilityCall};
use options::Request;
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::PgLogLevel;
use std::cell::RefCell;
use std::ffi::c_char;

extern "C-unwind" {
    // catalog/pg_subscription.h; not in pgrx's bindings.
    fn UpdateTwoPhaseState(suboid: pg_sys::Oid, new_state: std::ffi::c_char);
}

/// `LOGICALREP_TWOPHASE_STATE_ENABLED`.
const TWO_PHASE_ENABLED: std::ffi::c_char = b'e' as std::ffi::c_char;

/// Installs the hook, chaining to the one installed before (e.g. `ddl_pgoutput`'s, when both
/// libraries are loaded).
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub(crate) unsafe fn install_hook() {
    // SAFETY: the caller's promise: once per process, from `_PG_init`, as both ask.
    unsafe {
        forget_aborted_statements();
        install_process_utility();
    }
}

ddl_server::process_utility_hook!(fn install_process_utility, before, after);

/// A statement on its way through the hook: the tree that runs, and our options it carried.
struct Pending {
    node: *mut pg_sys::Node,
    request: Option<Request>,
}

thread_local! {
    static PENDING: RefCell<StatementStack<Pending>> = const { RefCell::new(StatementStack::new()) };
}

/// Takes our options out of a subscription statement and checks what must be checked before
/// PostgreSQL runs it; for any other statement, the local-DDL guard.
///
/// # Safety
/// Called by the hook `process_utility_hook!` defines, with the arguments PostgreSQL gave it.
#[pg_guard]
unsafe extern "C-unwind" fn before(call: *mut UtilityCall) -> Before {
    // SAFETY: the caller's promise: the hook's own UtilityCall, on its stack for this call.
    let call = unsafe { &mut *call };
    // SAFETY: `pstmt` and its flag are those ProcessUtility was given.
    if let Some(refresh) = unsafe { copy_refresh::take(call.pstmt, call.read_only_tree) } {
        copy_refresh::copy(&refresh);
        call.pstmt = refresh.pstmt;
        call.read_only_tree = false;
    }
    // SAFETY: as above.
    let request = unsafe { options::take(call.pstmt, call.read_only_tree) };
    let Some(mut request) = request else {
        // SAFETY: as above; a utility PlannedStmt's `utilityStmt` is the statement about to
        // run, in its transaction.
        let node = unsafe { (*call.pstmt).utilityStmt };
        // SAFETY: as above.
        unsafe { guard::check(node) };
        let depth = PENDING.with_borrow_mut(|p| {
            p.push(Pending {
                node,
                request: None,
            })
        });
        return Before { depth, run: true };
    };
    if request.create.as_ref().is_some_and(|c| c.create_slot) {
        // PostgreSQL's own check, which create_slot = false turned off.
        // SAFETY: the call CreateSubscription makes, from the statement's own context.
        unsafe {
            pg_sys::PreventInTransactionBlock(
                call.top_level(),
                c"CREATE SUBSCRIPTION ... WITH (create_slot = true)".as_ptr(),
            )
        };
    }
    if let Some(create) = request.create.as_mut() {
        if create.copy_schema {
            // SAFETY: as above.
            unsafe {
                copy_schema_first(
                    &request.subscription,
                    create,
                    request.pstmt,
                    call.query_string,
                )
            };
        }
    }
    if let Some(create) = request.create.as_ref() {
        // Before PostgreSQL creates it: a missing table is then one line of our list, not
        // PostgreSQL's first error. Only for whom PostgreSQL will let create it (superusers on
        // PostgreSQL 15): nobody else makes the server connect anywhere.
        if request.schema_mode == Some(config::STRICT)
            && create.connect
            // SAFETY: reads the current user's catalog row, in the statement's transaction.
            && unsafe { pg_sys::superuser() }
        {
            let publisher = connect(&create.conninfo, &request.subscription);
            strict::check(
                &publisher,
                &request.subscription,
                &create.publications,
                None,
            );
        }
    }
    // We own the tree now: a copy, or one that was never read-only.
    call.pstmt = request.pstmt;
    call.read_only_tree = false;
    let run = request.run_statement;
    // SAFETY: `request.pstmt` is the statement given, or the copy `take` made of it.
    let node = unsafe { (*call.pstmt).utilityStmt };
    let depth = PENDING.with_borrow_mut(|p| {
        p.push(Pending {
            node,
            request: Some(request),
        })
    });
    Before { depth, run }
}

/// `copy_schema = true`: the publisher's schema here, and the slot made, before PostgreSQL
/// creates the subscription (whose tables must exist by then); `finish` then checks the slot
/// instead of making it. When PostgreSQL would refuse the statement itself, nothing is copied
/// and PostgreSQL's ERROR is left to it.
///
/// # Safety
/// In the CREATE SUBSCRIPTION's transaction, before PostgreSQL runs it; `pstmt` is the
/// statement PostgreSQL will run and `query_string` its text.
unsafe fn copy_schema_first(
    subscription: &str,
    create: &mut options::Create,
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const c_char,
) {
    copy_schema::require_superuser("create");
    if !create.create_slot {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "copy_schema = true needs connect = true and create_slot = true",
            "The copy is taken in the snapshot of the slot the statement creates."
        );
    }
    // SAFETY: the caller's promise.
    if !unsafe { postgres_accepts(pstmt, query_string) } {
        return;
    }
    // Our own queries must not resolve names through the caller's path, which may name
    // schemas that the copy (the publisher's roles) or this database's users can write to.
    let copied = ddl_server::guc::with_search_path("pg_catalog", || {
        copy_schema::copy(&copy_schema::Plan {
            subscription,
            conninfo: &create.conninfo,
            slot: &create.slot_name,
            failover: create.failover,
            runs_as_owner: create.runs_as_owner,
            publications: &create.publications,
        })
    });
    create.copied = Some(copied);
    create.create_slot = false;
}

/// Whether PostgreSQL's own checks of the CREATE SUBSCRIPTION `pstmt` pass (its options, the
/// name, the connection string's syntax, the publications' list): the statement runs with
/// `connect = false` in a subtransaction that is always rolled back. An ERROR of PostgreSQL's
/// part after the copy would leave the copy's slot behind on the publisher, holding WAL; so
/// when they fail, nothing is copied and PostgreSQL raises the same ERROR, as it raises it.
///
/// # Safety
/// As [`copy_schema_first`].
unsafe fn postgres_accepts(pstmt: *mut pg_sys::PlannedStmt, query_string: *const c_char) -> bool {
    let settings = [
        ("client_min_messages", "error"),
        ("log_min_messages", "error"),
    ];
    let checked = ddl_server::guc::with_settings(&settings, || {
        ddl_server::xact::in_subtransaction(
            || {
                // SAFETY: the caller's promise; the copy is a CREATE SUBSCRIPTION that
                // PostgreSQL runs as a statement of a function would, sending nothing.
                unsafe {
                    let copy = options::unconnected_copy(pstmt);
                    let mut qc = pg_sys::QueryCompletion::default();
                    pg_sys::ProcessUtility(
                        copy,
                        query_string,
                        false,
                        pg_sys::ProcessUtilityContext::PROCESS_UTILITY_QUERY,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        pg_sys::CreateDestReceiver(pg_sys::CommandDest::DestNone),
                        &mut qc,
                    );
                }
            },
            |_| false,
        )
    });
    checked.is_ok()
}

/// Stores our options of a subscription statement once PostgreSQL ran it, or follows up
/// another statement.
///
/// # Safety
/// Called by the hook `process_utility_hook!` defines, once the statement ran, with the depth
/// `before` gave.
#[pg_guard]
unsafe extern "C-unwind" fn after(depth: usize) {
    let Some(pending) = PENDING.with_borrow_mut(|p| p.take(depth)) else {
        return;
    };
    match pending.request {
        Some(request) => finish(&request),
        // SAFETY: the entry `before` pushed for this statement, which just ran without an
        // ERROR: its tree is still the caller's, in the statement's transaction.
        None => unsafe { after_other(pending.node) },
    }
}

/// Forgets the pending statements of an aborted (sub)transaction.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub(crate) unsafe fn forget_aborted_statements() {
    // SAFETY: the caller's promise (from `_PG_init`); the listener only drops entries of a
    // thread-local stack, which raises no ERROR.
    unsafe { ddl_server::xact::at_end(|end| PENDING.with_borrow_mut(|p| p.forget(end))) };
}

fn connect(conninfo: &str, name: &str) -> Publisher {
    Publisher::connect(conninfo, name).unwrap_or_else(|e| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
            format!("could not connect to the publisher: {e}")
        );
    })
}

/// The strict check of an existing subscription (ENABLE, SET (schema_mode = 'strict')): an
/// ERROR when the tables differ, or when they cannot be compared.
fn check_strict(subid: pg_sys::Oid, name: &str) {
    let Some(catalog) = read_catalog(subid) else {
        report(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("subscription \"{name}\" has schema_mode = strict, but its tables cannot be compared with the publisher's"),
            "The current user may not read the subscription's connection string (pg_subscription.subconninfo).".into(),
            "A superuser can do this, or set schema_mode = 'relaxed'.",
        );
        unreachable!("ERROR returns no control");
    };
    let publisher = connect(&catalog.conninfo, name);
    strict::check(&publisher, name, &catalog.publications, Some(subid));
}

/// Whether the extension exists in this database.
///
/// # Safety
/// In a transaction that can read catalogs: only for a subscription statement or a DDL
/// statement (the guard), as others include ROLLBACK of a failed transaction.
unsafe fn extension_exists() -> bool {
    // SAFETY: the caller's promise; missing_ok, so a missing extension is an answer.
    unsafe { pg_sys::get_extension_oid(c"ddl_sync".as_ptr(), true) != pg_sys::InvalidOid }
}

/// After a statement without our options.
///
/// # Safety
/// `node` is NULL or the utility statement that just ran, still in its transaction.
unsafe fn after_other(node: *mut pg_sys::Node) {
    if node.is_null() {
        return;
    }
    // SAFETY: the caller's promise: a statement's tree, whose tag says which it is.
    let tag = unsafe { (*node).type_ };
    match tag {
        // SAFETY: a subscription statement that ran (so its transaction can read catalogs).
        pg_sys::NodeTag::T_DropSubscriptionStmt if unsafe { extension_exists() } => {
            config::forget_dropped()
        }
        // A subscription without DDL replication: none of ddl_sync's tables, as without us.
        // SAFETY: as for DROP SUBSCRIPTION.
        pg_sys::NodeTag::T_CreateSubscriptionStmt if unsafe { extension_exists() } => {
            // SAFETY: the tag says CreateSubscriptionStmt; the parser always sets `subname`.
            let name =
                unsafe { utf8_ptr((*node.cast::<pg_sys::CreateSubscriptionStmt>()).subname) };
            config::own_tables_in_subscription(config::subscription_oid(&name), false);
        }
        pg_sys::NodeTag::T_AlterOwnerStmt => {
            // SAFETY: the tag says AlterOwnerStmt; for a subscription the parser makes `object`
            // a String node of its name.
            let name = unsafe {
                let stmt = node.cast::<pg_sys::AlterOwnerStmt>();
                if (*stmt).objectType != pg_sys::ObjectType::OBJECT_SUBSCRIPTION
                    || !extension_exists()
                {
                    return;
                }
                utf8_ptr((*(*stmt).object.cast::<pg_sys::String>()).sval)
            };
            config::owner_changed(&name);
        }
        pg_sys::NodeTag::T_AlterSubscriptionStmt => {
            // Named one by one: a name a new major renames must not become a catch-all binding.
            use ddl_server::versions::ALTER_SUBSCRIPTION_REFRESH_PUBLICATION;
            use pg_sys::AlterSubscriptionType::{
                ALTER_SUBSCRIPTION_ADD_PUBLICATION, ALTER_SUBSCRIPTION_DROP_PUBLICATION,
                ALTER_SUBSCRIPTION_ENABLED, ALTER_SUBSCRIPTION_SET_PUBLICATION,
            };
            // SAFETY: the tag says AlterSubscriptionStmt; the parser always sets `subname`.
            let (kind, name) = unsafe {
                let stmt = node.cast::<pg_sys::AlterSubscriptionStmt>();
                ((*stmt).kind, (*stmt).subname)
            };
            // SAFETY: as for DROP SUBSCRIPTION.
            let exists = || unsafe { extension_exists() };
            if kind == ALTER_SUBSCRIPTION_ENABLED && exists() {
                // PostgreSQL enabled it in this transaction; an ERROR takes that back.
                // SAFETY: the statement's NUL-terminated name (see above).
                let name = unsafe { utf8_ptr(name) };
                let subid = config::subscription_oid(&name);
                if config::is_strict(subid) {
                    check_strict(subid, &name);
                }
                return;
            }
            // Only these may add relations to pg_subscription_rel.
            if !matches!(
                kind,
                ALTER_SUBSCRIPTION_REFRESH_PUBLICATION
                    | ALTER_SUBSCRIPTION_SET_PUBLICATION
                    | ALTER_SUBSCRIPTION_ADD_PUBLICATION
                    | ALTER_SUBSCRIPTION_DROP_PUBLICATION
            ) || !exists()
            {
                return;
            }
            // SAFETY: as above.
            let name = unsafe { utf8_ptr(name) };
            let subid = config::subscription_oid(&name);
            config::own_tables_in_subscription(subid, config::is_configured(subid));
        }
        _ => {}
    }
}

/// Subscription `subscription`'s OID, catalog row and publisher, connected to as its workers
/// connect (for the functions an operator calls by the subscription's name); an ERROR when
/// the caller may not read its connection string.
fn publisher_of(subscription: &str) -> (pg_sys::Oid, Catalog, Publisher) {
    let subid = config::subscription_oid(subscription);
    let Some(catalog) = read_catalog(subid) else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "cannot read the connection string of subscription \"{subscription}\" (pg_subscription.subconninfo)"
            )
        );
    };
    let publisher = connect(&catalog.conninfo, subscription);
    (subid, catalog, publisher)
}

/// The subscription as PostgreSQL stored it.
struct Catalog {
    conninfo: String,
    slot: Option<String>,
    publications: Vec<String>,
    /// Relations in pg_subscription_rel (PostgreSQL's "tables" of CREATE SUBSCRIPTION).
    relations: i64,
    /// `failover = true` (17 and later): the slot is synchronised to the publisher's standbys.
    failover: bool,
}

/// `None` when the current user may not read the connection string (a non-superuser owner).
fn read_catalog(subid: pg_sys::Oid) -> Option<Catalog> {
    Spi::connect(|client| {
        let mut rows = client
            .select(
                &format!(
                    "SELECT s.subconninfo, s.subslotname::text, s.subpublications,
                            (SELECT count(*) FROM pg_catalog.pg_subscription_rel r WHERE r.srsubid = s.oid),
                            {}
                       FROM pg_catalog.pg_subscription s
                      WHERE s.oid = $1
                        AND pg_catalog.has_column_privilege('pg_catalog.pg_subscription', 'subconninfo', 'SELECT')",
                    ddl_server::versions::SUBSCRIPTION_FAILOVER_SQL
                ),
                None,
                &[subid.into()],
            )
            .or_internal("cannot read pg_subscription");
        let row = rows.next()?;
        Some(Catalog {
            conninfo: row.get::<String>(1).ok().flatten()?,
            slot: row.get::<String>(2).ok().flatten(),
            publications: row.get::<Vec<String>>(3).ok().flatten()?,
            relations: row.get::<i64>(4).ok().flatten().unwrap_or(0),
            failover: row.get::<bool>(5).ok().flatten().unwrap_or(false),
        })
    })
}

fn report(level: PgLogLevel, code: PgSqlErrorCode, message: String, detail: String, hint: &str) {
    ErrorReport::new(code, message, "ddl_sync")
        .set_detail(detail)
        .set_hint(hint)
        .report(level);
}

/// Stores the configuration, then does on the publisher what the statement asks for.
fn finish(request: &Request) {
    let subid = config::store(
        &request.subscription,
        config::Change {
            kinds: request.kinds,
            conflict: request.conflict,
            rules: None,
            schema_mode: request.schema_mode,
            fallback_role: request.fallback_role.clone(),
            divergence: request.divergence,
        },
    );
    let name = &request.subscription;
    if request.create.is_none() && request.schema_mode == Some(config::STRICT) {
        check_strict(subid, name);
    }
    match &request.create {
        Some(create) if create.connect => {
            let catalog = read_catalog(subid).unwrap_or_else(|| {
                errors::raise(
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format_args!("cannot read subscription \"{name}\""),
                )
            });
            let publisher = connect(&catalog.conninfo, name);
            check_kinds(&publisher, request, &catalog.publications);
            let Some(slot) = &catalog.slot else { return };
            if create.copy_schema {
                let Some(copied) = &create.copied else {
                    // copy_schema_first found that PostgreSQL refuses the statement, which it
                    // then ran all the same: make no subscription without its schema.
                    errors::raise(
                        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                        format_args!(
                            "subscription \"{name}\" was not created: its schema was not copied"
                        ),
                    );
                };
                copy_schema::record(subid, name, "CREATE SUBSCRIPTION", Some(slot), copied);
            }
            if create.create_slot {
                // As PostgreSQL 15: two-phase from the start only when no table needs a sync;
                // otherwise the apply worker enables it once every table is ready.
                let two_phase = create.two_phase && !create.copy_data && catalog.relations > 0;
                publisher.create_slot(slot, two_phase, catalog.failover);
                if two_phase {
                    // SAFETY: the subscription PostgreSQL created in this transaction; its
                    // catalog row is updated as the apply worker would once tables are ready.
                    unsafe {
                        pg_guard_ffi_boundary(|| UpdateTwoPhaseState(subid, TWO_PHASE_ENABLED))
                    };
                }
                notice!("created replication slot \"{slot}\" on publisher");
            } else {
                check_slot(&publisher, name, slot, PgLogLevel::ERROR);
            }
        }
        Some(_) => {}
        // ALTER: the stored configuration stands; a publisher that cannot be reached now is
        // only worth a warning (PostgreSQL's ALTER SUBSCRIPTION ... SET does not connect).
        None if request.kinds.is_some_and(|k| !k.is_empty()) => {
            let catalog = read_catalog(subid);
            let publisher = catalog
                .as_ref()
                .map(|c| Publisher::connect(&c.conninfo, name));
            match (catalog, publisher) {
                (Some(catalog), Some(Ok(publisher))) => {
                    check_kinds(&publisher, request, &catalog.publications);
                    if let Some(slot) = &catalog.slot {
                        check_slot(&publisher, name, slot, PgLogLevel::WARNING);
                    }
                }
                (_, Some(Err(e))) => warning!(
                    "could not connect to the publisher to check the DDL kinds of subscription \"{name}\": {e}"
                ),
                _ => warning!(
                    "the DDL kinds of subscription \"{name}\" were not checked against the publisher (no access to its connection string)"
                ),
            }
        }
        None => {}
    }
}

/// An error when the subscription asks for DDL its publications do not send: a kind it names
/// that none of them replicates, any DDL at all when none does (`all` asks for whatever they
/// send), or a publisher without `ddl_sync`.
fn check_kinds(publisher: &Publisher, request: &Request, publications: &[String]) {
    let Some(requested) = request.kinds.filter(|k| !k.is_empty()) else {
        return;
    };
    let name = &request.subscription;
    let Some(offered) = publisher.offered_kinds(publications) else {
        report(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("subscription \"{name}\" asks for DDL (ddl = '{requested}'), but the publisher has no ddl_sync extension"),
            "Without it the publisher captures no DDL.".into(),
            "Run CREATE EXTENSION ddl_sync in the publisher's database and give its publications a ddl option.",
        );
        unreachable!("ERROR returns no control");
    };
    let missing = if request.all {
        if offered.is_empty() {
            requested
        } else {
            ddl_filter::DdlKinds::empty()
        }
    } else {
        requested - offered
    };
    if missing.is_empty() {
        return;
    }
    let names = publications.join(", ");
    let message = if request.all {
        format!("subscription \"{name}\" asks for DDL, but none of its publications replicates DDL")
    } else {
        format!("subscription \"{name}\" asks for DDL of kinds that none of its publications replicates: {missing}")
    };
    report(
        PgLogLevel::ERROR,
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        message,
        format!("Publications {names} replicate DDL of kinds: {offered}."),
        "Add the kinds to a publication on the publisher (ALTER PUBLICATION ... SET (ddl = '...')), or leave them out of the subscription's ddl.",
    );
}

/// With `create_slot = false` the slot is the user's to make; one that exists with another
/// plugin would never send DDL.
fn check_slot(publisher: &Publisher, name: &str, slot: &str, level: PgLogLevel) {
    match publisher.slot_plugin(slot) {
        Some(plugin) if plugin != PLUGIN => report(
            level,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("replication slot \"{slot}\" on the publisher uses plugin \"{plugin}\", not {PLUGIN}"),
            format!("Subscription \"{name}\" replicates DDL, which only a slot of plugin {PLUGIN} sends."),
            &format!("Create the slot on the publisher with SELECT pg_create_logical_replication_slot('{slot}', '{PLUGIN}')."),
        ),
        _ => {}
    }
}
