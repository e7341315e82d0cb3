//! What the capture keeps between statements, and PostgreSQL's invalidation messages that say
//! when to forget it.
//!
//! Every captured statement would otherwise scan `ddl_sync.publication_sync` (and every DROP
//! `ddl_sync.adapter`), look up the session's role names, and read its settings: together a
//! fifth of the capture's cost (BENCHMARKS.md, "Instructions"). They change rarely, and when
//! they do, PostgreSQL says so the way it tells its own caches:
//! - a row written to `publication_sync` or `adapter` through SQL fires the extension's
//!   `*_event_triggers` row triggers, whose `ddl_sync.refresh_event_triggers()` sends a relcache
//!   invalidation of both tables
//!   (`ddl_server::extension_tables::capture_config_changed`); the capture's own deletions of rows about
//!   dropped objects send it too; TRUNCATE and DROP EXTENSION invalidate the tables themselves;
//! - ALTER ROLE (a rename, an attribute) invalidates the role's syscache entry, GRANT and
//!   REVOKE of a role its memberships'.
//!
//! Each message, at commit in every backend and at once in the backend that sent it (also when
//! its transaction rolls back), bumps a counter: a cached value read at an older count is read
//! again. This is how PostgreSQL keeps its own publication descriptors in the relcache.

use pgrx::pg_sys;
use std::cell::{Cell, RefCell};

thread_local! {
    /// Bumped by every invalidation that concerns what the capture caches.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    /// The relations whose invalidation bumps [`GENERATION`] (the extension's configuration
    /// tables, once read).
    static WATCHED: RefCell<Vec<pg_sys::Oid>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// The current count: a value cached at this count is still right while it stays the same.
pub fn generation() -> u64 {
    GENERATION.get()
}

/// A value read from one of the extension's tables, kept until an invalidation of that table
/// (or a role's, or a cache reset).
pub struct Cached<T>(RefCell<Option<(u64, T)>>);

impl<T: Clone> Cached<T> {
    pub const fn new() -> Cached<T> {
        Cached(RefCell::new(None))
    }

    /// The kept value, else `read`'s, which returns the table's OID with it: kept when the
    /// table exists (without the extension there is nothing to watch, and its CREATE EXTENSION
    /// sends no invalidation that would say so).
    ///
    /// # Safety
    /// Runs in a backend inside a transaction.
    pub unsafe fn get(&self, read: impl FnOnce() -> (pg_sys::Oid, T)) -> T {
        if let Some((at, value)) = &*self.0.borrow() {
            if *at == generation() {
                return value.clone();
            }
        }
        let (relid, value) = read();
        if relid != pg_sys::InvalidOid {
            // SAFETY: the caller's promise.
            unsafe { watch(relid) };
            // The count after the read: an invalidation processed while the table was being
            // opened is in what was read.
            *self.0.borrow_mut() = Some((generation(), value.clone()));
        }
        value
    }
}

/// From now on, an invalidation of relation `relid` bumps the count.
///
/// # Safety
/// Runs in a backend.
unsafe fn watch(relid: pg_sys::Oid) {
    // SAFETY: the caller's promise.
    unsafe { register() };
    WATCHED.with_borrow_mut(|w| {
        if !w.contains(&relid) {
            w.push(relid);
        }
    });
}

/// Registers the callbacks that bump the count (once per process): before a value is cached
/// against it.
///
/// # Safety
/// Runs in a backend.
pub unsafe fn register() {
    if !REGISTERED.replace(true) {
        // SAFETY: two callbacks that only bump a counter, registered once per process.
        unsafe {
            pg_sys::CacheRegisterRelcacheCallback(Some(relcache_changed), pg_sys::Datum::from(0));
            pg_sys::CacheRegisterSyscacheCallback(
                ddl_server::versions::syscache(pg_sys::SysCacheIdentifier::AUTHOID),
                Some(role_changed),
                pg_sys::Datum::from(0),
            );
            // A role granted or revoked: what the session's role may do changed.
            pg_sys::CacheRegisterSyscacheCallback(
                ddl_server::versions::syscache(pg_sys::SysCacheIdentifier::AUTHMEMROLEMEM),
                Some(role_changed),
                pg_sys::Datum::from(0),
            );
        }
    }
}

/// PostgreSQL's relcache callback: `relid` changed, or every relation (InvalidOid) after a
/// cache reset. Must not fail: it only compares and counts.
unsafe extern "C-unwind" fn relcache_changed(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    let concerned = relid == pg_sys::InvalidOid || WATCHED.with_borrow(|w| w.contains(&relid));
    if concerned {
        GENERATION.set(GENERATION.get().wrapping_add(1));
    }
}

/// PostgreSQL's syscache callback for roles: a role's name may have changed.
unsafe extern "C-unwind" fn role_changed(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
    GENERATION.set(GENERATION.get().wrapping_add(1));
}
