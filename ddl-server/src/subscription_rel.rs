//! A subscription's relations (`pg_subscription_rel`): which tables its apply worker applies
//! rows to. PostgreSQL's functions for them are not in pgrx's bindings; these are the only
//! declarations of them (those whose arguments differ between majors are in `versions`).
//!
//! Why DDL replication writes there: a table that replayed DDL created is empty at that point of
//! the stream and must be applied from the next row on (ready, no sync); a table whose rows
//! cannot be applied here must be out of the subscription, because the apply worker skips the
//! rows of a table that is not in it, where any other answer stops it.

use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;

extern "C-unwind" {
    // catalog/pg_subscription_rel.h
    fn RemoveSubscriptionRel(subid: pg_sys::Oid, relid: pg_sys::Oid);
    // catalog/pg_subscription.h (15), utils/lsyscache.h (18)
    fn get_subscription_name(subid: pg_sys::Oid, missing_ok: bool) -> *mut std::ffi::c_char;
    fn GetSubscriptionRelState(
        subid: pg_sys::Oid,
        relid: pg_sys::Oid,
        sublsn: *mut pg_sys::XLogRecPtr,
    ) -> std::ffi::c_char;
}

/// Whether this database has any subscription, from the catalog cache (a list of
/// pg_subscription's rows of this database, kept and invalidated by PostgreSQL): code that runs
/// inside every DDL statement (the strict guard, the peer tables' event trigger) costs next to
/// nothing where there is none, e.g. on a publisher, and takes no lock.
pub fn database_has_subscriptions() -> bool {
    any_subscription(|_| true)
}

/// Whether this database has a subscription with `origin = none` (a peer's, see ddl-apply's
/// `peers`), from the same catalog cache list: none before PostgreSQL 16, none in most
/// databases; the peer tables' trigger stops there.
pub fn database_has_peer_subscriptions() -> bool {
    // SAFETY: a pg_subscription row of the catalog cache.
    any_subscription(|tuple| unsafe { crate::versions::takes_only_local_origin(tuple) })
}

/// Whether `matches` holds for one of this database's pg_subscription rows.
fn any_subscription(matches: impl Fn(pg_sys::HeapTuple) -> bool) -> bool {
    // SAFETY: a catcache list lookup by the first key of SUBSCRIPTIONNAME (subdbid, subname),
    // in the current transaction; each member's tuple is valid until the list is released,
    // which happens before returning.
    unsafe {
        pg_guard_ffi_boundary(|| {
            let list = pg_sys::SearchSysCacheList(
                crate::versions::syscache(pg_sys::SysCacheIdentifier::SUBSCRIPTIONNAME),
                1,
                pg_sys::Datum::from(pg_sys::MyDatabaseId),
                pg_sys::Datum::from(0usize),
                pg_sys::Datum::from(0usize),
            );
            let members = (*list).members.as_slice((*list).n_members as usize);
            let found = members.iter().any(|&member| matches(&mut (*member).tuple));
            pg_sys::ReleaseCatCacheList(list);
            found
        })
    }
}

/// `SUBREL_STATE_READY`: the relation is in sync; the apply worker applies its rows.
const READY: std::ffi::c_char = b'r' as std::ffi::c_char;

/// Adds `relid`, which is not in subscription `subid`, as ready.
pub fn add_ready(subid: pg_sys::Oid, relid: pg_sys::Oid) {
    // SAFETY: inserts one catalog row in the current transaction (an ERROR, e.g. a duplicate,
    // is PostgreSQL's); the apply worker sees it through invalidation.
    unsafe {
        pg_guard_ffi_boundary(|| {
            crate::versions::add_subscription_rel_state(
                subid,
                relid,
                READY,
                pg_sys::InvalidXLogRecPtr as u64,
            )
        })
    }
}

/// Marks `relid`, which is in subscription `subid`, ready.
pub fn set_ready(subid: pg_sys::Oid, relid: pg_sys::Oid) {
    // SAFETY: updates one catalog row in the current transaction.
    unsafe {
        pg_guard_ffi_boundary(|| {
            crate::versions::update_subscription_rel_state(
                subid,
                relid,
                READY,
                pg_sys::InvalidXLogRecPtr as u64,
            )
        })
    }
}

/// The name of subscription `subid` (UTF-8), from the catalog cache; `None` when there is none.
pub fn subscription_name(subid: pg_sys::Oid) -> Option<String> {
    // SAFETY: a syscache lookup (missing_ok: NULL for no such subscription); the result is a
    // new NUL-terminated name.
    unsafe {
        let name = pg_guard_ffi_boundary(|| get_subscription_name(subid, true));
        (!name.is_null()).then(|| crate::text::utf8_ptr(name))
    }
}

/// Whether `relid` is in subscription `subid` (in any state), from the catalog cache.
pub fn contains(subid: pg_sys::Oid, relid: pg_sys::Oid) -> bool {
    let mut lsn: pg_sys::XLogRecPtr = 0;
    // SAFETY: a catalog cache lookup in the current transaction; `lsn` outlives the call.
    let state =
        unsafe { pg_guard_ffi_boundary(|| GetSubscriptionRelState(subid, relid, &mut lsn)) };
    // SUBREL_STATE_UNKNOWN ('\0'): no such row.
    state != 0
}

/// Takes `relid` out of subscription `subid` (nothing when it is not in it).
pub fn remove(subid: pg_sys::Oid, relid: pg_sys::Oid) {
    // SAFETY: deletes catalog rows in the current transaction, as ALTER SUBSCRIPTION ...
    // REFRESH PUBLICATION does for a table no longer published.
    unsafe { pg_guard_ffi_boundary(|| RemoveSubscriptionRel(subid, relid)) }
}
