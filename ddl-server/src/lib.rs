//! The PostgreSQL glue of `ddl_sync`'s two server libraries (`ddl_pgoutput.so`, through
//! `ddl-capture`, and `ddl_sync.so`, through `ddl-apply`): the pieces of server machinery both
//! need, written once.
//!
//! - [`errors`]: the ERRORs we raise ourselves, each with a SQLSTATE (internal faults apart from
//!   what the user, the system or the publisher caused) and the prefix `ddl_sync: `;
//! - [`utility`]: chaining the ProcessUtility hook so that the statement's own ERROR reaches the
//!   client exactly as PostgreSQL raised it, and the per-statement state a hook keeps across
//!   the call, cleaned up when a (sub)transaction aborts instead of by a destructor;
//! - [`bindings`]: what a statement bound by name, by identity, the same on every node;
//! - [`contract`]: what the two libraries name of each other (symbols, SQL-declared functions,
//!   the tables and columns the plugin reads), in one place;
//! - [`event_row`]: a row of `ddl_sync.events` read as ddl-wire's event, by the event schema;
//! - [`event_trigger`]: event trigger functions called by symbol name;
//! - [`extension_tables`]: the extension's tables found without SPI, and the invalidation that
//!   says their capture configuration changed;
//! - [`guc`]: a scope with another `search_path`, from which no setting leaks;
//! - [`shmem`]: shared memory of a preloaded library, its hooks registered once;
//! - [`object_access`]: the object access hook, chained, for what each statement creates and drops;
//! - [`options`]: our options in a statement's `WITH (...)`, taken out before PostgreSQL reads them;
//! - [`relcache`]: a relation open for the length of a closure;
//! - [`log`]: the pure crates' `tracing` events in the server log, at the matching level;
//! - [`xact`]: PostgreSQL's transaction callbacks registered once, for every piece of backend
//!   state that must not outlive its (sub)transaction;
//! - [`spi`]: read-only queries that do not give the transaction an ID;
//! - [`subscription_rel`]: which tables a subscription applies rows to;
//! - [`roles`]: what a role may do on this node, described the same way on every node;
//! - [`session`]: what code can leave in a session beyond its statement (advisory locks, LISTEN);
//! - [`timeout`]: PostgreSQL's statement timeout around a stretch of our own work;
//! - [`text`]: server strings to UTF-8 and back, converted, never reinterpreted;
//! - [`versions`]: what differs between PostgreSQL 15 and 19, one function each;
//! - [`releases`]: which servers a build may run in (major, minor release, pre-release), and the
//!   layouts it depends on, pinned;
//! - [`relation_oid`]: the relation a `RangeVar` names, as the statement will resolve it.

pub mod bindings;
pub mod catalog_scan;
pub mod contract;
pub mod describe;
pub mod errors;
pub mod event_row;
pub mod event_trigger;
pub mod extension_tables;
pub mod guc;
pub mod log;
pub mod object_access;
pub mod options;
pub mod relcache;
pub mod releases;
pub mod roles;
pub mod session;
pub mod shmem;
pub mod spi;
pub mod subscription_rel;
pub mod text;
pub mod timeout;
pub mod utility;
pub mod versions;
pub mod xact;

use pgrx::pg_sys;

/// The OID of the relation `rv` names, resolved with the current search_path, without a lock;
/// `None` when there is none (the statement that names it then fails on its own).
///
/// # Safety
/// `rv` is a valid `RangeVar`; runs in a transaction.
pub unsafe fn relation_oid(rv: *mut pg_sys::RangeVar) -> Option<pg_sys::Oid> {
    // SAFETY: the caller's promise; NoLock because the statement takes its own locks, and
    // RVR_MISSING_OK so a missing relation is an answer, not an ERROR.
    let relid = unsafe {
        pg_sys::RangeVarGetRelidExtended(
            rv,
            pg_sys::NoLock as pg_sys::LOCKMODE,
            pg_sys::RVROption::RVR_MISSING_OK,
            None,
            std::ptr::null_mut(),
        )
    };
    (relid != pg_sys::InvalidOid).then_some(relid)
}
