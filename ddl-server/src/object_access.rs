//! PostgreSQL's object access hook, chained, for the objects each statement creates and drops.
//!
//! `deleteOneObject` calls the hook (`OAT_DROP`) for every object a statement drops, its own
//! and those that go with it, before the object's catalog row is deleted: its name can still
//! be read there, and only there. A DROP's event triggers see the same objects later, but only
//! through `pg_event_trigger_dropped_objects()`, which costs more than everything else a
//! capture does with them (BENCHMARKS.md, "Instructions"). Likewise each object made is
//! reported as it is made (`OAT_POST_CREATE`), with whether the user asked for it or the server
//! made it on the side (a table's TOAST table), each change of an object (`OAT_POST_ALTER`), and
//! each function an expression is about to call (`OAT_FUNCTION_EXECUTE`, when the executor
//! sets the expression up, before it runs: sepgsql's check of who may execute what).
//!
//! The hook calls the one installed before it first, unguarded like the statement in
//! [`crate::utility`] (an ERROR of that hook, such as sepgsql's refusal, reaches the client as
//! raised), then the handler.

use pgrx::pg_sys;

/// What happens to an object.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub enum Access {
    /// About to be dropped, with its deletion's flags (`PERFORM_DELETION_*`).
    Drop { flags: i32 },
    /// Just made; `internal` when the server made it for another object, not the user.
    PostCreate { internal: bool },
    /// Just changed (a column's type, a function replaced).
    PostAlter,
    /// A function about to be called by an expression being set up.
    FunctionExecute,
}

/// The handler: `object` and what happens to it. Called for every object made, changed or
/// dropped and every function an expression calls: it filters first, and guards (`#[pg_guard]`) what may raise an ERROR or panic.
pub type Handler = unsafe extern "C-unwind" fn(object: pg_sys::ObjectAddress, access: Access);

/// The hook installed before ours, and our handler.
static mut PREVIOUS: pg_sys::object_access_hook_type = None;
static mut HANDLER: Option<Handler> = None;

/// Installs the hook, chained to the one installed before, calling `handler` for each object
/// created or dropped.
///
/// # Safety
/// Call once per process, from `_PG_init`; `handler` raises no ERROR and does not panic
/// outside a guard.
pub unsafe fn install(handler: Handler) {
    // SAFETY: `_PG_init` runs before any statement, in one thread.
    unsafe {
        PREVIOUS = pg_sys::object_access_hook;
        HANDLER = Some(handler);
        pg_sys::object_access_hook = Some(object_access);
    }
}

/// Not guarded, and holding nothing to drop while the previous hook runs.
unsafe extern "C-unwind" fn object_access(
    access: pg_sys::ObjectAccessType::Type,
    class_id: pg_sys::Oid,
    object_id: pg_sys::Oid,
    sub_id: i32,
    arg: *mut std::ffi::c_void,
) {
    // SAFETY: set once by `install`, before any statement; PostgreSQL's own arguments handed on.
    unsafe {
        if let Some(previous) = PREVIOUS {
            previous(access, class_id, object_id, sub_id, arg);
        }
    }
    // SAFETY: for these, `arg` is null or the event's own struct (objectaccess.h).
    let access = unsafe {
        match access {
            pg_sys::ObjectAccessType::OAT_DROP if !arg.is_null() => Access::Drop {
                flags: (*arg.cast::<pg_sys::ObjectAccessDrop>()).dropflags,
            },
            pg_sys::ObjectAccessType::OAT_POST_CREATE => Access::PostCreate {
                internal: !arg.is_null()
                    && (*arg.cast::<pg_sys::ObjectAccessPostCreate>()).is_internal,
            },
            pg_sys::ObjectAccessType::OAT_POST_ALTER => Access::PostAlter,
            pg_sys::ObjectAccessType::OAT_FUNCTION_EXECUTE => Access::FunctionExecute,
            _ => return,
        }
    };
    let object = pg_sys::ObjectAddress {
        classId: class_id,
        objectId: object_id,
        objectSubId: sub_id,
    };
    // SAFETY: set with the hook, which guards what needs it.
    unsafe {
        if let Some(handler) = HANDLER {
            handler(object, access);
        }
    }
}
