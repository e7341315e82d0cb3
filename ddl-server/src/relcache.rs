//! Relations from the relcache, open for as long as a closure needs them.

use pgrx::pg_sys;

/// `f` of relation `relid`, open (no lock taken: the caller's transaction holds what it
/// needs) for the call; `None` when there is no such relation.
pub fn with_relation<T>(relid: pg_sys::Oid, f: impl FnOnce(pg_sys::Relation) -> T) -> Option<T> {
    // SAFETY: a relcache lookup in the current transaction; NULL for a relation that is gone.
    let rel = unsafe { pg_sys::RelationIdGetRelation(relid) };
    if rel.is_null() {
        return None;
    }
    let out = f(rel);
    // SAFETY: opened above, closed once (an ERROR inside `f` leaves the reference to the
    // resource owner, which releases it at abort).
    unsafe { pg_sys::RelationClose(rel) };
    Some(out)
}
