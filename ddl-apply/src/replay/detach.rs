//! `ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY`, replayed in its transactional form,
//! must leave the schema the concurrent form left on the publisher.
//!
//! The concurrent form adds to the detached table a CHECK constraint equal to its partition
//! constraint (PostgreSQL's `DetachAddConstraintIfNeeded`, so that queries still know the
//! table's bounds while other sessions may see it attached), unless the table's own constraints
//! already imply it; the plain form does not. The apply worker cannot run the concurrent form
//! (it commits in the middle), so the replay detaches plainly and then adds that constraint the
//! way PostgreSQL does: same expression, same generated name, marked valid without a scan, on
//! the table and (with one more inheritance count each) on its own partitions. Like PostgreSQL,
//! nothing is added for a hash partition, and nothing on 19, whose concurrent form adds none
//! (`versions::DETACH_CONCURRENTLY_ADDS_CHECK`).

use ddl_server::relation_oid;
use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::spi::Spi;
use std::ffi::CString;

extern "C-unwind" {
    // utils/partcache.h; not in pgrx's bindings.
    fn RelationGetPartitionQual(rel: pg_sys::Relation) -> *mut pg_sys::List;
}

/// The constraint to add once the partition is detached.
pub struct PendingCheck {
    relid: pg_sys::Oid,
    /// The partition constraint as a node string (`Constraint.cooked_expr`).
    cooked: CString,
}

/// When `node` is `ALTER TABLE ... DETACH PARTITION p CONCURRENTLY` and `p`'s constraints do
/// not imply its partition constraint: the constraint the concurrent form would add. Call it
/// before the statement runs (the partition constraint goes with the detach).
///
/// # Safety
/// `node` is a raw parse tree; runs in a transaction, with the event's search_path set.
pub unsafe fn concurrent_detach(node: *mut pg_sys::Node) -> Option<PendingCheck> {
    if !ddl_server::versions::DETACH_CONCURRENTLY_ADDS_CHECK {
        return None;
    }
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is; an
    // AlterTableStmt's `cmds` are AlterTableCmds, and a DETACH's `def` its PartitionCmd.
    let partition = unsafe {
        if (*node).type_ != pg_sys::NodeTag::T_AlterTableStmt {
            return None;
        }
        let stmt = node.cast::<pg_sys::AlterTableStmt>();
        let partition = PgList::<pg_sys::AlterTableCmd>::from_pg((*stmt).cmds)
            .iter_ptr()
            .filter(|cmd| (**cmd).subtype == pg_sys::AlterTableType::AT_DetachPartition)
            .map(|cmd| (*cmd).def.cast::<pg_sys::PartitionCmd>())
            .find(|def| !def.is_null() && (**def).concurrent)?;
        (*partition).name
    };
    // None: the statement fails on its own.
    // SAFETY: the PartitionCmd's RangeVar, resolved in the caller's transaction.
    let relid = unsafe { relation_oid(partition) }?;
    // As PostgreSQL: no constraint for a hash partition, whose partition constraint names the
    // partitioned table by OID (and would fail once that table is dropped).
    let hash = Spi::get_one_with_args::<bool>(
        "SELECT p.partstrat = 'h' FROM pg_catalog.pg_inherits i
           JOIN pg_catalog.pg_partitioned_table p ON p.partrelid = i.inhparent
          WHERE i.inhrelid = $1",
        &[relid.into()],
    );
    if hash == Ok(Some(true)) {
        return None;
    }
    // Reading is enough here; the detach takes its own locks (parent first) right after.
    // SAFETY: `relid` exists (just resolved); the relation stays open, and locked, until the
    // table_close below, and everything read from it is copied out before.
    unsafe {
        let rel = pg_sys::table_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let qual = pg_guard_ffi_boundary(|| RelationGetPartitionQual(rel));
        let pending = if qual.is_null() {
            None
        } else {
            // As DetachAddConstraintIfNeeded: constant-folded, and only when not implied
            // already.
            let qual = pg_sys::eval_const_expressions(std::ptr::null_mut(), qual.cast())
                .cast::<pg_sys::List>();
            if pg_sys::PartConstraintImpliedByRelConstraint(rel, qual) {
                None
            } else {
                let text = pg_sys::nodeToString(pg_sys::make_ands_explicit(qual).cast());
                Some(PendingCheck {
                    relid,
                    cooked: std::ffi::CStr::from_ptr(text).to_owned(),
                })
            }
        };
        // The lock stays until the end of the transaction, as the detach's own.
        pg_sys::table_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        pending
    }
}

impl PendingCheck {
    /// Adds the constraint to the detached table and its partitions (run after the detach).
    ///
    /// # Safety
    /// Runs in the transaction that ran the detach.
    pub unsafe fn add(&self) {
        let descendants = Spi::connect(|client| {
            client
                .select(
                    "SELECT relid FROM pg_catalog.pg_partition_tree($1) WHERE relid <> $1",
                    None,
                    &[self.relid.into()],
                )?
                .map(|row| row.get::<pg_sys::Oid>(1))
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_default();
        // The partitions take the name chosen for the table, as ATAddCheckConstraint does.
        // SAFETY: the caller's promise: the detached table and its partitions exist in this
        // transaction; the name is palloc'd in it, and lives while the partitions take it.
        unsafe {
            let name = self.add_to(self.relid, std::ptr::null_mut());
            for child in descendants.into_iter().flatten() {
                self.add_to(child, name);
            }
            pg_sys::CommandCounterIncrement();
        }
    }

    /// ATAddCheckConstraint's call for a re-added constraint: merged with an equal one, local
    /// on the table itself (`name` null: generated), inherited on its partitions (`name` the
    /// table's). Returns the constraint's name.
    ///
    /// # Safety
    /// `relid` is a table of this transaction, with its partition constraint gone (detached);
    /// `name` is NULL or a NUL-terminated string valid for the call.
    unsafe fn add_to(
        &self,
        relid: pg_sys::Oid,
        name: *mut std::ffi::c_char,
    ) -> *mut std::ffi::c_char {
        let is_local = name.is_null();
        let lock = pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE;
        // SAFETY: the caller's promise: the table exists; it stays open until the close below.
        let rel = unsafe { pg_sys::table_open(relid, lock) };
        // SAFETY: `name` is the caller's; the expression a copy in this transaction's context,
        // like the node: the cooked CHECK constraint ATAddCheckConstraint passes on.
        let constraint = unsafe {
            ddl_server::versions::cooked_check_constraint(
                name,
                pg_sys::pstrdup(self.cooked.as_ptr()),
            )
        };
        // SAFETY: `rel` is open and locked, `constraint` complete; the lock stays until the end
        // of the transaction, as the detach's own.
        let added = unsafe {
            let added = pg_sys::AddRelationNewConstraints(
                rel,
                std::ptr::null_mut(),
                pg_sys::lappend(std::ptr::null_mut(), constraint.cast()),
                true,
                is_local,
                true,
                std::ptr::null(),
            );
            pg_sys::table_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
            added
        };
        // SAFETY: AddRelationNewConstraints's list of CookedConstraints, palloc'd in this
        // transaction like the names they hold.
        unsafe {
            PgList::<pg_sys::CookedConstraint>::from_pg(added)
                .get_ptr(0)
                .map_or(name, |cooked| (*cooked).name)
        }
    }
}
