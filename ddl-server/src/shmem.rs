//! Shared memory of a preloaded library: one registration of PostgreSQL's shmem request and
//! startup hooks per library, for every segment in it.
//!
//! A segment is a `PgLwLock<T>` (pgrx's shared memory behind an LWLock of its own), made once
//! by the postmaster from `T::default()`. [`preload`] must be called from `_PG_init`; it does
//! nothing unless the library is being preloaded (`shared_preload_libraries`), and
//! [`available`] then tells every process whether the segments exist. Code that counts into
//! shared memory checks it and counts nothing otherwise: loading the library later, by name,
//! must work without it.

use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use pgrx::shmem::PgSharedMemoryInitialization;
use pgrx::{PGRXSharedMemory, PgLwLock};
use std::cell::RefCell;

/// What the request and startup hooks do for one segment.
trait Segment: Sync {
    /// # Safety
    /// In the `shmem_request_hook`.
    unsafe fn request(&'static self);
    /// # Safety
    /// In the `shmem_startup_hook`.
    unsafe fn startup(&'static self);
}

impl<T: PGRXSharedMemory + Default> Segment for PgLwLock<T> {
    unsafe fn request(&'static self) {
        // SAFETY: the caller's promise.
        unsafe { self.on_shmem_request() }
    }
    unsafe fn startup(&'static self) {
        // SAFETY: the caller's promise.
        unsafe { self.on_shmem_startup(T::default()) }
    }
}

thread_local! {
    /// The segments of this library; written only by `_PG_init` in the postmaster, read by its
    /// hooks (the same process), and inherited by the processes it starts.
    static SEGMENTS: RefCell<Vec<&'static dyn Segment>> = const { RefCell::new(Vec::new()) };
}

static mut PREVIOUS_REQUEST: pg_sys::shmem_request_hook_type = None;
static mut PREVIOUS_STARTUP: pg_sys::shmem_startup_hook_type = None;

/// Set in the postmaster while it preloads the library; inherited by every process it starts.
static mut IN_SHARED_MEMORY: bool = false;

/// Places `segment` in shared memory when the library is being preloaded; returns whether it
/// is. The first call installs the hooks, chained to the ones loaded before.
///
/// # Safety
/// Call from `_PG_init`, once per segment.
pub unsafe fn preload<T: PGRXSharedMemory + Default>(segment: &'static PgLwLock<T>) -> bool {
    // SAFETY: a backend global, set by the postmaster while it loads preloaded libraries.
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        return false;
    }
    let first = SEGMENTS.with_borrow_mut(|segments| {
        segments.push(segment);
        segments.len() == 1
    });
    if first {
        // SAFETY: `_PG_init` runs single-threaded in the postmaster; pgrx's pg_shmem_init! does
        // the same chaining.
        unsafe {
            PREVIOUS_REQUEST = pg_sys::shmem_request_hook;
            pg_sys::shmem_request_hook = Some(shmem_request);
            PREVIOUS_STARTUP = pg_sys::shmem_startup_hook;
            pg_sys::shmem_startup_hook = Some(shmem_startup);
            IN_SHARED_MEMORY = true;
        }
    }
    true
}

/// Whether this library's segments exist (it was preloaded).
pub fn available() -> bool {
    // SAFETY: written once, in the postmaster, before any backend exists.
    unsafe { IN_SHARED_MEMORY }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    // SAFETY: set once by `preload`, before this hook can run; this is the request hook.
    unsafe { chain(PREVIOUS_REQUEST, |segment| segment.request()) }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    // SAFETY: as above; this is the startup hook.
    unsafe { chain(PREVIOUS_STARTUP, |segment| segment.startup()) }
}

/// Calls the hook we replaced, as PostgreSQL would have, then `each` for every segment.
///
/// # Safety
/// In the hook that `previous` was saved from, with `each` that hook's step.
unsafe fn chain(
    previous: Option<unsafe extern "C-unwind" fn()>,
    each: unsafe fn(&'static dyn Segment),
) {
    if let Some(previous) = previous {
        // SAFETY: the caller's promise.
        unsafe { pg_guard_ffi_boundary(|| previous()) };
    }
    SEGMENTS.with_borrow(|segments| {
        for segment in segments {
            // SAFETY: the caller's promise.
            unsafe { each(*segment) };
        }
    });
}

/// The key of a slot in a shared table of per-object entries (a publication's counters, a
/// subscription's error): the object's database and OID, so that each database sees only its
/// own objects; 0 marks a free slot.
pub fn slot_key(object: pg_sys::Oid) -> u64 {
    (this_database() << 32) | u64::from(u32::from(object))
}

/// The object of a slot's key ([`slot_key`]) when the slot is in use by this database.
pub fn slot_object_here(key: u64) -> Option<pg_sys::Oid> {
    (key != 0 && key >> 32 == this_database()).then(|| pg_sys::Oid::from(key as u32))
}

fn this_database() -> u64 {
    // SAFETY: a backend global, set once when the backend connects to its database.
    u64::from(u32::from(unsafe { pg_sys::MyDatabaseId }))
}

/// The slot of `keys` (each slot's key, in order) that holds `key`, else the first free one;
/// `None` when the table is full.
pub fn slot_for(keys: impl Iterator<Item = u64> + Clone, key: u64) -> Option<usize> {
    keys.clone()
        .position(|k| k == key)
        .or_else(|| keys.into_iter().position(|k| k == 0))
}

#[cfg(test)]
mod tests {
    use super::slot_for;

    #[test]
    fn a_key_finds_its_slot_else_the_first_free_one() {
        let keys = [5u64, 0, 7, 0];
        assert_eq!(slot_for(keys.iter().copied(), 7), Some(2));
        assert_eq!(slot_for(keys.iter().copied(), 9), Some(1));
        assert_eq!(slot_for([5u64, 7].iter().copied(), 9), None);
    }
}
