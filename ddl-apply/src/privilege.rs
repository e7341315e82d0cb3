//! Who may change a publication's DDL configuration, and how the change reaches the catalog.
//!
//! Nobody but the catalog's owner can write `ddl_sync.publication_sync` (PUBLIC may only read
//! it). The configuration functions therefore run as their caller (SECURITY INVOKER), check
//! PostgreSQL's own rule for changing a publication ([`owned_publication`]: the current user
//! has the privileges of the publication's owner, or is a superuser), and only then switch to
//! the catalog's owner for the one write ([`AsCatalogOwner`]).
//!
//! Why not SECURITY DEFINER: inside a SECURITY DEFINER function `current_user` is the function's
//! owner, and PostgreSQL keeps no record of the caller that a check could trust (`session_user`
//! ignores SET ROLE, and the "outer" user ignores enclosing SECURITY DEFINER functions, which
//! would let a function owned by one role change the publications of whoever calls it). Checking
//! first as the caller and raising privileges only around the write is what PostgreSQL's own
//! code does, and with the same check (`pg_publication_ownercheck`) and message.

use ddl_server::errors::OrInternal;
use std::ffi::CString;

use pgrx::prelude::*;

/// Finds a publication by name, locks it, and checks that the current user may change it.
///
/// The lock (ShareUpdateExclusiveLock on the publication object, held to the end of the
/// transaction) makes a concurrent DROP PUBLICATION wait for this transaction, so a row never
/// outlives its publication, and serialises writers of the same publication's rows.
///
/// Errors: PostgreSQL's own `publication "p" does not exist` (undefined_object) and
/// `must be owner of publication p` (insufficient_privilege).
pub(crate) fn owned_publication(name: &str) -> pg_sys::Oid {
    let cname = c_string(name);
    // SAFETY: a NUL-terminated name; get_publication_oid raises the error itself when missing.
    let pubid = unsafe { pg_sys::get_publication_oid(cname.as_ptr(), false) };
    lock_and_check(pubid, Some(name));
    pubid
}

/// [`owned_publication`] for a publication known by OID (a catalog row's `pfsyncpubid`).
///
/// A row whose publication is gone (possible only while event triggers were disabled) can be
/// changed by a superuser alone.
pub(crate) fn owned_publication_oid(pubid: pg_sys::Oid) {
    lock_and_check(pubid, None);
}

fn lock_and_check(pubid: pg_sys::Oid, name: Option<&str>) {
    // SAFETY: a lock on an object's OID (which need not exist), held to the end of the
    // caller's transaction.
    unsafe {
        pg_sys::LockDatabaseObject(
            pg_sys::PublicationRelationId,
            pubid,
            0,
            pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE,
        )
    };
    // Locking accepted pending invalidations: a publication dropped while we waited is gone.
    // SAFETY: a syscache lookup by OID; missing_ok: NULL for a publication that is gone.
    let current = unsafe { pg_sys::get_publication_name(pubid, true) };
    if current.is_null() {
        match name {
            Some(name) => {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                    format!("publication \"{name}\" does not exist")
                );
            }
            // SAFETY: reads the current user's catalog row.
            None if unsafe { pg_sys::superuser() } => return,
            None => {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!(
                        "must be superuser to change the DDL rules of dropped publication {pubid}"
                    )
                );
            }
        }
    }
    // SAFETY: the publication exists, locked; `current` is its NUL-terminated name, which
    // aclcheck_error puts in PostgreSQL's own "must be owner of publication" ERROR.
    unsafe {
        if !ddl_server::versions::owns_publication(pubid, pg_sys::GetUserId()) {
            pg_sys::aclcheck_error(
                pg_sys::AclResult::ACLCHECK_NOT_OWNER,
                pg_sys::ObjectType::OBJECT_PUBLICATION,
                current,
            );
        }
    }
}

/// While alive, the current user is the owner of `ddl_sync.publication_sync`, in a
/// security-restricted operation (no SET ROLE, no temporary objects), the way PostgreSQL runs
/// maintenance commands as a table's owner. Dropping it restores the caller; an error raised in
/// between unwinds through the drop, and transaction or subtransaction abort would restore the
/// user anyway.
pub(crate) struct AsCatalogOwner {
    user: pg_sys::Oid,
    context: i32,
}

impl AsCatalogOwner {
    pub(crate) fn enter() -> AsCatalogOwner {
        // From the catalog caches: this runs inside users' statements (the strict guard), some
        // of which must be the first action of their transaction, and before every apply
        // transaction's commit (its counters).
        // SAFETY: catalog lookups in the caller's transaction (missing_ok).
        let relid = unsafe { ddl_server::extension_tables::relid(c"publication_sync") };
        // SAFETY: the open relation's class row.
        let owner =
            ddl_server::relcache::with_relation(relid, |rel| unsafe { (*(*rel).rd_rel).relowner })
                .or_internal("ddl_sync.publication_sync has no owner in pg_class");
        let mut user = pg_sys::InvalidOid;
        let mut context = 0;
        // SAFETY: the same calls fmgr makes around a SECURITY DEFINER function.
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            pg_sys::SetUserIdAndSecContext(
                owner,
                context
                    | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                    | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
            );
        }
        // A local change even in replica mode (see ddl_sync.skip_replicated_row).
        crate::local_change::set_local_change(true);
        AsCatalogOwner { user, context }
    }
}

impl Drop for AsCatalogOwner {
    fn drop(&mut self) {
        crate::local_change::set_local_change(false);
        // SAFETY: restores what `enter` saved.
        unsafe { pg_sys::SetUserIdAndSecContext(self.user, self.context) }
    }
}

/// SQL text never holds NUL, so this cannot fail for a name that came from SQL.
pub(crate) fn c_string(name: &str) -> CString {
    CString::new(name).unwrap_or_else(|_| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_NAME,
            format!("name {name:?} contains a NUL character")
        );
    })
}
