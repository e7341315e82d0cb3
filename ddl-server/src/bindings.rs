//! What a statement bound by name, described the same way on every node: the capture lists
//! it in the record (`ddl_wire::encode_name_set`), the replay describes its own run of the
//! text and compares (ddl-apply's `replay/bound.rs`).
//!
//! "Bound" is read from the catalogs, not from the text: the objects a statement made (or, for
//! functions and columns, changed) that keep what a name found, and the normal dependencies
//! PostgreSQL recorded for them (`pg_depend`, deptype `n`: the functions, operators, types,
//! collations, relations, text search objects and operator classes an expression or a
//! definition uses; automatic and internal dependencies are a table's own parts), plus the
//! functions the statement ran. Built-in objects (OIDs below 16384, made by initdb) are left
//! out: they are the same on every node of a major and no role can change them.
//! A relation's columns are read from its descriptor rather than `pg_depend`: the same answer
//! for the commonest statement, for less.

use pgrx::pg_sys;
use std::ffi::{c_char, CStr};

/// Catalogs PostgreSQL has no constant for in pgrx, with the OIDs every major gives them.
const DEPEND_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(2608);
const DEPEND_DEPENDER_INDEX: pg_sys::Oid = pg_sys::Oid::from_u32(2673);
const CONSTRAINT_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(2606);
const ATTR_DEFAULT_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(2604);
const REWRITE_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(2618);
const POLICY_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(3256);
const CAST_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(2605);
const TS_DICTIONARY_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(3600);
const TS_CONFIG_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(3602);
const STATISTIC_EXT_RELATION: pg_sys::Oid = pg_sys::Oid::from_u32(3381);

/// `FormData_pg_depend`, the same in every major.
#[repr(C)]
struct PgDepend {
    classid: pg_sys::Oid,
    objid: pg_sys::Oid,
    objsubid: i32,
    refclassid: pg_sys::Oid,
    refobjid: pg_sys::Oid,
    refobjsubid: i32,
    deptype: c_char,
}

/// Whether a new object can keep what a name found: one of a catalog whose rows do, but not
/// an array type the server made for another (`internal`), which uses only its element.
pub fn holds_names(object: &pg_sys::ObjectAddress, internal: bool) -> bool {
    let class_id = object.classId;
    !(internal && class_id == pg_sys::TypeRelationId)
        && [
            pg_sys::RelationRelationId,
            pg_sys::TypeRelationId,
            pg_sys::ProcedureRelationId,
            pg_sys::OperatorRelationId,
            pg_sys::TriggerRelationId,
            pg_sys::EventTriggerRelationId,
            STATISTIC_EXT_RELATION,
            CONSTRAINT_RELATION,
            ATTR_DEFAULT_RELATION,
            REWRITE_RELATION,
            POLICY_RELATION,
            CAST_RELATION,
            TS_DICTIONARY_RELATION,
            TS_CONFIG_RELATION,
        ]
        .contains(&class_id)
}

/// Whether a change of `object` can make it use something else: a function replaced or
/// altered, a column's type or default changed.
pub fn changes_what_it_uses(object: &pg_sys::ObjectAddress) -> bool {
    object.classId == pg_sys::ProcedureRelationId
        || (object.classId == pg_sys::RelationRelationId && object.objectSubId != 0)
}

/// Whether a dependency on an object of catalog `class_id` is one a name can have found.
fn found_by_name(class_id: pg_sys::Oid) -> bool {
    [
        pg_sys::ProcedureRelationId,
        pg_sys::OperatorRelationId,
        pg_sys::TypeRelationId,
        pg_sys::CollationRelationId,
        pg_sys::RelationRelationId,
        pg_sys::OperatorClassRelationId,
        pg_sys::OperatorFamilyRelationId,
        TS_DICTIONARY_RELATION,
        TS_CONFIG_RELATION,
    ]
    .contains(&class_id)
}

/// Made by initdb: the same on every node of a major, and no role can change it.
pub fn is_builtin(oid: pg_sys::Oid) -> bool {
    oid.to_u32() < pg_sys::FirstNormalObjectId
}

fn address(class_id: pg_sys::Oid, object_id: pg_sys::Oid, sub_id: i32) -> pg_sys::ObjectAddress {
    pg_sys::ObjectAddress {
        classId: class_id,
        objectId: object_id,
        objectSubId: sub_id,
    }
}

/// The objects that `holders` (objects one statement made or changed) use and a name may
/// have found, built-ins left out; repeats possible.
///
/// # Safety
/// In a transaction, after the statement (catalog reads).
// Not inlined: `cargo xtask bench instructions` profiles it.
#[inline(never)]
pub unsafe fn referenced(holders: &[pg_sys::ObjectAddress]) -> Vec<pg_sys::ObjectAddress> {
    let mut found = Vec::new();
    // The row types of the relations among them, and the array type made right after each
    // (heap_create_with_catalog makes the two one after the other): what those use is their
    // relation's.
    let mut row_types = Vec::new();
    for holder in holders {
        if holder.classId == pg_sys::RelationRelationId {
            // SAFETY: the caller's promise.
            unsafe { relation_uses(holder, &mut found, &mut row_types) };
        }
    }
    let mut after_row_type = false;
    for holder in holders {
        let is_type = holder.classId == pg_sys::TypeRelationId;
        let of_relation = is_type && (row_types.contains(&holder.objectId) || after_row_type);
        after_row_type = is_type && row_types.contains(&holder.objectId);
        if holder.classId == pg_sys::RelationRelationId || of_relation {
            continue;
        }
        // SAFETY: the caller's promise.
        unsafe {
            if !is_type || !is_relation_or_array_type(holder.objectId) {
                dependencies(holder, &mut found);
            }
        }
    }
    found
}

/// What a relation made, or a column added or changed, uses: its columns' types and
/// collations and the type it is made of; for an index and a partitioned table (whose key may
/// call functions) also what `pg_depend` says.
///
/// # Safety
/// In a transaction.
unsafe fn relation_uses(
    holder: &pg_sys::ObjectAddress,
    found: &mut Vec<pg_sys::ObjectAddress>,
    row_types: &mut Vec<pg_sys::Oid>,
) {
    // SAFETY: the caller's promise; the relcache entry is released below.
    let rel = unsafe { pg_sys::RelationIdGetRelation(holder.objectId) };
    if rel.is_null() {
        return;
    }
    // SAFETY: an open relcache entry, its pg_class row and descriptor.
    let (relkind, reloftype, attrs) = unsafe {
        let form = &*(*rel).rd_rel;
        row_types.push(form.reltype);
        (
            form.relkind as u8,
            form.reloftype,
            crate::versions::attributes((*rel).rd_att),
        )
    };
    for attr in attrs {
        if attr.attisdropped
            || (holder.objectSubId != 0 && i32::from(attr.attnum) != holder.objectSubId)
        {
            continue;
        }
        if !is_builtin(attr.atttypid) {
            found.push(address(pg_sys::TypeRelationId, attr.atttypid, 0));
        }
        if attr.attcollation != pg_sys::InvalidOid && !is_builtin(attr.attcollation) {
            found.push(address(pg_sys::CollationRelationId, attr.attcollation, 0));
        }
    }
    if reloftype != pg_sys::InvalidOid && !is_builtin(reloftype) {
        found.push(address(pg_sys::TypeRelationId, reloftype, 0));
    }
    // SAFETY: opened above.
    unsafe { pg_sys::RelationClose(rel) };
    let keyed = [
        pg_sys::RELKIND_INDEX,
        pg_sys::RELKIND_PARTITIONED_INDEX,
        pg_sys::RELKIND_PARTITIONED_TABLE,
    ];
    if holder.objectSubId == 0 && keyed.contains(&relkind) {
        // SAFETY: the caller's promise.
        unsafe { dependencies(holder, found) };
    }
}

/// A table's row type or an array type: what they use is their relation's or element's.
///
/// # Safety
/// In a transaction.
unsafe fn is_relation_or_array_type(type_id: pg_sys::Oid) -> bool {
    // SAFETY: the caller's promise; a syscache entry, released below.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            crate::versions::syscache(pg_sys::SysCacheIdentifier::TYPEOID),
            pg_sys::Datum::from(type_id),
        );
        if tuple.is_null() {
            return true;
        }
        let form = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_type>(tuple);
        let skip = form.typtype as u8 == pg_sys::TYPTYPE_COMPOSITE
            || (form.typcategory as u8 == pg_sys::TYPCATEGORY_ARRAY
                && form.typelem != pg_sys::InvalidOid);
        pg_sys::ReleaseSysCache(tuple);
        skip
    }
}

/// The normal dependencies of `holder` (of one column of it, for a column) on objects a name
/// can have found, built-ins left out.
///
/// # Safety
/// In a transaction.
unsafe fn dependencies(holder: &pg_sys::ObjectAddress, found: &mut Vec<pg_sys::ObjectAddress>) {
    // SAFETY: the caller's promise; pg_depend read through its (classid, objid, objsubid)
    // index by its first two columns.
    unsafe {
        crate::catalog_scan::scan(
            DEPEND_RELATION,
            DEPEND_DEPENDER_INDEX,
            &[(1, holder.classId), (2, holder.objectId)],
            |tuple, _| {
                let dep = &*pg_sys::heap_tuple_get_struct::<PgDepend>(tuple);
                if dep.deptype as u8 == pg_sys::DependencyType::DEPENDENCY_NORMAL as u8
                    && (holder.objectSubId == 0 || dep.objsubid == holder.objectSubId)
                    && found_by_name(dep.refclassid)
                    && !is_builtin(dep.refobjid)
                {
                    found.push(address(dep.refclassid, dep.refobjid, dep.refobjsubid));
                }
            },
        );
    }
}

/// `<type> <identity>` of `object` as PostgreSQL writes them (`pg_identify_object`), the same
/// on every node for the same object; `None` when it is gone.
///
/// # Safety
/// In a transaction.
pub unsafe fn identity(object: &pg_sys::ObjectAddress) -> Option<String> {
    // SAFETY: the caller's promise; missing_ok, so NULL rather than an ERROR; both strings
    // palloc'd in the current context.
    unsafe {
        let kind = pg_sys::getObjectTypeDescription(object, true);
        let name = pg_sys::getObjectIdentity(object, true);
        if kind.is_null() || name.is_null() {
            return None;
        }
        Some(format!(
            "{} {}",
            CStr::from_ptr(kind).to_string_lossy(),
            CStr::from_ptr(name).to_string_lossy()
        ))
    }
}

/// The role that owns `object` here (a column: its table's), and for an operator the owner of
/// its function too: whoever can change what using it does. Empty when it has no owner or is
/// gone.
///
/// # Safety
/// In a transaction.
pub unsafe fn owners(object: &pg_sys::ObjectAddress) -> Vec<pg_sys::Oid> {
    // SAFETY: the caller's promise.
    let mut owners: Vec<pg_sys::Oid> = unsafe { owner(object.classId, object.objectId) }
        .into_iter()
        .collect();
    if object.classId == pg_sys::OperatorRelationId {
        // SAFETY: a syscache lookup (InvalidOid for an operator that is gone).
        let function = unsafe { pg_sys::get_opcode(object.objectId) };
        if function != pg_sys::InvalidOid {
            // SAFETY: as above.
            owners.extend(unsafe { owner(pg_sys::ProcedureRelationId, function) });
        }
    }
    owners
}

/// The owner column of the catalog row of `object_id` in `class_id`.
///
/// # Safety
/// In a transaction; `class_id` is a catalog objectaddress.c knows.
unsafe fn owner(class_id: pg_sys::Oid, object_id: pg_sys::Oid) -> Option<pg_sys::Oid> {
    // SAFETY: the caller's promise; the catalog is opened and closed here, its row read with
    // its own descriptor.
    unsafe {
        let owner_column = pg_sys::get_object_attnum_owner(class_id);
        if owner_column as u32 == pg_sys::InvalidAttrNumber {
            return None;
        }
        let rel = pg_sys::table_open(class_id, pg_sys::AccessShareLock as i32);
        let tuple = pg_sys::get_catalog_object_by_oid(
            rel,
            pg_sys::get_object_attnum_oid(class_id),
            object_id,
        );
        let mut isnull = true;
        let owner = if tuple.is_null() {
            None
        } else {
            let datum =
                pg_sys::heap_getattr(tuple, i32::from(owner_column), (*rel).rd_att, &mut isnull);
            (!isnull).then(|| pg_sys::Oid::from(datum.value() as u32))
        };
        pg_sys::table_close(rel, pg_sys::AccessShareLock as i32);
        owner
    }
}
