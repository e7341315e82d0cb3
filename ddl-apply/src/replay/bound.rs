//! A replayed statement binds here what it bound on the publisher, or is refused.
//!
//! The text is parsed again against this node's catalogs, and PostgreSQL picks a function or
//! an operator by the best match anywhere in the search_path: a role of this node that may
//! create objects in one of those schemas can plant a better match than the one the publisher
//! used (`public.<>(varchar, varchar)` against `pg_catalog.<>(text, text)`), and the replay
//! would then run that role's code as the replay's role, and leave it in a CHECK or a default
//! that the apply worker runs for every row. The record lists, by identity, what the statement
//! bound by name on the publisher (`ddl_server::bindings`, the record's `bindings`); here:
//! - a function that is not built in, whose owner is not a superuser here, and which the
//!   publisher's statement did not bind or run, is stopped before it runs (the object access
//!   hook's `OAT_FUNCTION_EXECUTE`, which PostgreSQL calls as it sets up an expression): its
//!   code never runs, so nothing it would do outside the transaction happens;
//! - once the statement has run, what the objects it made or changed use is described the same
//!   way, and anything whose owner (for an operator, also its function's) is not a superuser
//!   here and which the publisher's statement did not bind refuses the statement, undone.
//!
//! Objects of superusers are not judged: a superuser could run anything anyway, and this
//! node's own superuser-owned code (event triggers, extensions) may differ from the
//! publisher's. Records of publishers older than the `bindings` field are not checked
//! (SECURITY.md).

use ddl_server::bindings;
use ddl_server::object_access::Access;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// The statement being watched: what the publisher's bound, and what this one made.
struct Watch {
    published: Rc<BTreeSet<String>>,
    holders: Vec<pg_sys::ObjectAddress>,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
    /// Why a function was stopped before it ran: read once the ERROR has unwound.
    static STOPPED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether a statement is watched: until one is, the hook's reports need no more work.
pub fn watching() -> bool {
    WATCH.with_borrow(Option::is_some)
}

/// The object access hook's report, while a statement is watched (`created.rs` hands on each).
pub fn seen(object: pg_sys::ObjectAddress, access: Access) {
    match access {
        // A trigger PostgreSQL makes itself (`internal`: a foreign key's four, a deferrable
        // unique constraint's recheck) calls a built-in function, which no role can change:
        // nothing to find, so not looked into (a pg_depend scan each). A partition's clone of
        // its parent's trigger is not internal and is looked into like any. The capture still
        // lists what they use, which subscribers of older versions compare with.
        Access::PostCreate { internal: true } if object.classId == pg_sys::TriggerRelationId => {}
        Access::PostCreate { internal } if bindings::holds_names(&object, internal) => {
            holder(object)
        }
        Access::PostAlter if bindings::changes_what_it_uses(&object) => holder(object),
        Access::FunctionExecute if !bindings::is_builtin(object.objectId) => {
            about_to_run(object.objectId)
        }
        _ => {}
    }
}

fn holder(object: pg_sys::ObjectAddress) {
    WATCH.with_borrow_mut(|w| {
        if let Some(w) = w {
            w.holders.push(object);
        }
    });
}

/// Stops `function` with an ERROR when the statement may not run it.
fn about_to_run(function: pg_sys::Oid) {
    let Some(published) = WATCH.with_borrow(|w| w.as_ref().map(|w| w.published.clone())) else {
        return;
    };
    let object = pg_sys::ObjectAddress {
        classId: pg_sys::ProcedureRelationId,
        objectId: function,
        objectSubId: 0,
    };
    if let Some(reason) = unpublished(&object, &published, "would run") {
        STOPPED.set(Some(reason.clone()));
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("ddl_sync: the replayed statement is refused: {reason}")
        );
    }
}

/// Why `object` may not be bound (`verb`: what the statement does with it), or `None`.
fn unpublished(
    object: &pg_sys::ObjectAddress,
    published: &BTreeSet<String>,
    verb: &str,
) -> Option<String> {
    // SAFETY: catalog reads in the replay's transaction.
    let owners = unsafe { bindings::owners(object) };
    // SAFETY: a catalog cache lookup of each owner.
    let untrusted = owners
        .iter()
        .copied()
        .find(|&owner| !unsafe { pg_sys::superuser_arg(owner) })?;
    // SAFETY: as above.
    let identity = unsafe { bindings::identity(object) }?;
    if published.contains(&identity) {
        return None;
    }
    // SAFETY: a syscache lookup (noerr).
    let owner = unsafe {
        let name = pg_sys::GetUserNameFromId(untrusted, true);
        if name.is_null() {
            format!("role {}", untrusted.to_u32())
        } else {
            format!("role \"{}\"", ddl_server::text::utf8_ptr(name))
        }
    };
    Some(format!(
        "it {verb} {identity}, which {owner} (not a superuser) can change here, and which the \
         statement did not bind where it first ran: a name found something else on this node \
         (see SECURITY.md, \"Names\")"
    ))
}

/// Runs `f` (one statement) watching what it binds; returns its result and why it must be
/// undone, if it must. `published`: the record's bindings, `None` when not known (then
/// nothing is checked). A function stopped before it ran ends `f` with an ERROR; the reason is
/// then [`take_stopped`].
pub fn checking<T>(
    published: Option<Rc<BTreeSet<String>>>,
    f: impl FnOnce() -> T,
) -> (T, Option<String>) {
    STOPPED.set(None);
    let Some(published) = published else {
        return (f(), None);
    };
    struct Restore(Option<Watch>);
    impl Drop for Restore {
        fn drop(&mut self) {
            WATCH.set(self.0.take());
        }
    }
    let outer = Restore(WATCH.replace(Some(Watch {
        published: published.clone(),
        holders: Vec::new(),
    })));
    let result = f();
    let holders = WATCH
        .with_borrow_mut(|w| w.as_mut().map(|w| std::mem::take(&mut w.holders)))
        .unwrap_or_default();
    drop(outer);
    // SAFETY: catalog reads in the replay's transaction, after the statement.
    let used = unsafe { bindings::referenced(&holders) };
    let mut findings: Vec<String> = used
        .iter()
        .filter_map(|object| unpublished(object, &published, "uses"))
        .collect();
    findings.sort();
    findings.dedup();
    (result, (!findings.is_empty()).then(|| findings.join("; ")))
}

/// Why a function was stopped before it ran during the last [`checking`], once.
pub fn take_stopped() -> Option<String> {
    STOPPED.take()
}
