//! The object a statement is about, named as the capture names it, so that the kind the
//! subscriber works out is the kind the publisher recorded.
//!
//! The capture classifies with the object type PostgreSQL's command collection reports
//! (`pg_event_trigger_ddl_commands()`: `getObjectTypeDescription()` of the object's address,
//! e.g. `view column`), so the replay resolves the same address where the tag alone does not
//! tell. One deliberate refinement on both sides: a domain is `domain`, not the `type`
//! PostgreSQL reports for it, so that COMMENT ON DOMAIN is of kind domain like the other
//! domain statements (ddl-capture's `trigger.rs` does the same).

use ddl_server::relation_oid;
use ddl_server::text::utf8_ptr;
use pgrx::pg_sys;
use std::borrow::Cow;
use std::ffi::CStr;

/// The type of the object a statement is about, spelled as ddl-filter's classification knows it,
/// where the command tag alone does not tell: ALTER TABLE and its renames and schema moves
/// (PostgreSQL accepts them on any relation, so the relation decides), COMMENT, SECURITY LABEL,
/// GRANT, REVOKE and ALTER DEFAULT PRIVILEGES.
///
/// # Safety
/// `node` is a raw parse tree; runs in a transaction (catalog lookups).
pub unsafe fn object_type(node: *mut pg_sys::Node) -> Option<Cow<'static, str>> {
    use pg_sys::NodeTag as T;
    // SAFETY: the caller's promise: a parse tree, whose tag says which node it is.
    let tag = unsafe { (*node).type_ };
    match tag {
        T::T_AlterTableStmt => {
            // SAFETY: the tag says AlterTableStmt; its `relation` is the parser's RangeVar,
            // looked up in the caller's transaction.
            unsafe {
                let stmt = node.cast::<pg_sys::AlterTableStmt>();
                relation_type((*stmt).relation).or_else(|| object_type_name((*stmt).objtype))
            }
            .map(Cow::from)
        }
        T::T_RenameStmt => {
            // SAFETY: as above, a RenameStmt (`relation` NULL unless it names a relation).
            unsafe { relation_type((*node.cast::<pg_sys::RenameStmt>()).relation) }.map(Cow::from)
        }
        T::T_AlterObjectSchemaStmt => {
            // SAFETY: as above, an AlterObjectSchemaStmt.
            unsafe { relation_type((*node.cast::<pg_sys::AlterObjectSchemaStmt>()).relation) }
                .map(Cow::from)
        }
        T::T_CommentStmt => {
            // SAFETY: the tag says CommentStmt: `object` is the object its `objtype` names.
            unsafe {
                let stmt = node.cast::<pg_sys::CommentStmt>();
                described((*stmt).objtype, (*stmt).object)
            }
        }
        T::T_SecLabelStmt => {
            // SAFETY: as above, a SecLabelStmt.
            unsafe {
                let stmt = node.cast::<pg_sys::SecLabelStmt>();
                described((*stmt).objtype, (*stmt).object)
            }
        }
        T::T_GrantStmt => {
            // SAFETY: the tag says GrantStmt.
            object_type_name(unsafe { (*node.cast::<pg_sys::GrantStmt>()).objtype }).map(Cow::from)
        }
        // The objects the default privileges are for (`TABLES` in the capture's words).
        T::T_AlterDefaultPrivilegesStmt => {
            // SAFETY: the tag says AlterDefaultPrivilegesStmt; `action` is its GrantStmt (NULL
            // checked all the same).
            let objtype = unsafe {
                let action = (*node.cast::<pg_sys::AlterDefaultPrivilegesStmt>()).action;
                if action.is_null() {
                    return None;
                }
                (*action).objtype
            };
            object_type_name(objtype).map(Cow::from)
        }
        _ => None,
    }
}

/// The schema, on this node, of the relation a statement creates or works on, where the
/// statement names one: the subscriber's rules and the publisher's record must agree on it.
/// `None` for statements about other objects (the record's schema then stands) and for a
/// relation that does not exist here (the statement fails on its own).
///
/// # Safety
/// `node` is a raw parse tree; runs in a transaction with the event's search_path set.
pub unsafe fn relation_schema(node: *mut pg_sys::Node) -> Option<String> {
    use pg_sys::NodeTag as T;
    // SAFETY: the caller's promise: a parse tree, whose tag says which statement it is; each
    // field read is that statement's RangeVar (NULL is checked below) or schema name.
    let (relation, creates) = unsafe {
        match (*node).type_ {
            T::T_CreateStmt => ((*node.cast::<pg_sys::CreateStmt>()).relation, true),
            T::T_CreateForeignTableStmt => (
                (*node.cast::<pg_sys::CreateForeignTableStmt>())
                    .base
                    .relation,
                true,
            ),
            T::T_ViewStmt => ((*node.cast::<pg_sys::ViewStmt>()).view, true),
            T::T_CreateTableAsStmt => {
                let into = (*node.cast::<pg_sys::CreateTableAsStmt>()).into;
                (
                    if into.is_null() {
                        std::ptr::null_mut()
                    } else {
                        (*into).rel
                    },
                    true,
                )
            }
            T::T_AlterTableStmt => ((*node.cast::<pg_sys::AlterTableStmt>()).relation, false),
            T::T_IndexStmt => ((*node.cast::<pg_sys::IndexStmt>()).relation, false),
            T::T_CreateTrigStmt => ((*node.cast::<pg_sys::CreateTrigStmt>()).relation, false),
            T::T_RuleStmt => ((*node.cast::<pg_sys::RuleStmt>()).relation, false),
            T::T_RenameStmt => ((*node.cast::<pg_sys::RenameStmt>()).relation, false),
            // The capture sees the relation after the move: in its new schema.
            T::T_AlterObjectSchemaStmt => {
                let stmt = node.cast::<pg_sys::AlterObjectSchemaStmt>();
                if (*stmt).relation.is_null() || (*stmt).newschema.is_null() {
                    return None;
                }
                return Some(utf8_ptr((*stmt).newschema));
            }
            _ => return None,
        }
    };
    if relation.is_null() {
        return None;
    }
    let namespace = if creates {
        // SAFETY: `relation` is the statement's RangeVar, not NULL; its schema name is NULL or
        // the parser's NUL-terminated string.
        let schemaname = unsafe { (*relation).schemaname };
        if !schemaname.is_null() {
            // SAFETY: as above.
            return Some(unsafe { utf8_ptr(schemaname) });
        }
        // The first schema of the search_path that exists, as the statement will choose it.
        let found = ddl_server::xact::in_subtransaction(
            // SAFETY: as above, in the caller's transaction; an ERROR (no schema of the
            // search_path exists) is caught with the subtransaction.
            || unsafe { pg_sys::RangeVarGetCreationNamespace(relation) },
            |_| true,
        );
        found.ok()?
    } else {
        // SAFETY: as above; a relation gone since the lookup has namespace InvalidOid.
        unsafe { pg_sys::get_rel_namespace(relation_oid(relation)?) }
    };
    // SAFETY: a syscache lookup; NULL for a schema that does not exist.
    let name = unsafe { pg_sys::get_namespace_name(namespace) };
    // SAFETY: a NUL-terminated catalog name, palloc'd just now.
    (!name.is_null()).then(|| unsafe { utf8_ptr(name) })
}

/// The relation kind of `relation`, when it names one that exists.
///
/// # Safety
/// `relation` is NULL or a parse tree's `RangeVar`; runs in a transaction.
unsafe fn relation_type(relation: *mut pg_sys::RangeVar) -> Option<&'static str> {
    if relation.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    let relid = unsafe { relation_oid(relation) }?;
    // SAFETY: a syscache lookup by OID ('\0' for a relation dropped meanwhile).
    match unsafe { pg_sys::get_rel_relkind(relid) } as u8 {
        b'r' | b'p' => Some("table"),
        b'i' | b'I' => Some("index"),
        b'S' => Some("sequence"),
        b'v' => Some("view"),
        b'm' => Some("materialized view"),
        b'f' => Some("foreign table"),
        b'c' => Some("composite type"),
        _ => None,
    }
}

/// `getObjectTypeDescription()` of the object COMMENT or SECURITY LABEL names (`view column`
/// for a column of a view, where the statement only says COLUMN), with domains as `domain`;
/// the statement's own object type when the object does not exist here (the statement then
/// fails anyway).
///
/// # Safety
/// `objtype` and `object` are those of one raw COMMENT or SECURITY LABEL statement; runs in a
/// transaction.
unsafe fn described(
    objtype: pg_sys::ObjectType::Type,
    object: *mut pg_sys::Node,
) -> Option<Cow<'static, str>> {
    // missing_ok does not cover every failure (an overloaded function named without its
    // arguments): a failed lookup is answered from the statement, which then fails on its own,
    // under the subscription's conflict policy.
    let address = ddl_server::xact::in_subtransaction(
        || {
            let mut relation: pg_sys::Relation = std::ptr::null_mut();
            let lock = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
            // SAFETY: the caller's promise: the pair CommentObject itself resolves; the
            // relation it opens is ours to close, and the subtransaction catches an ERROR.
            unsafe {
                let address =
                    pg_sys::get_object_address(objtype, object, &mut relation, lock, true);
                if !relation.is_null() {
                    // The lock stays until the end of the transaction; the statement takes its
                    // own.
                    pg_sys::relation_close(relation, pg_sys::NoLock as pg_sys::LOCKMODE);
                }
                address
            }
        },
        |_| true,
    );
    let Ok(address) = address else {
        return object_type_name(objtype).map(Cow::from);
    };
    if address.objectId == pg_sys::InvalidOid {
        return object_type_name(objtype).map(Cow::from);
    }
    if address.classId == pg_sys::TypeRelationId
        // SAFETY: a syscache lookup of a type's OID.
        && unsafe { pg_sys::get_typtype(address.objectId) } as u8 == pg_sys::TYPTYPE_DOMAIN
    {
        return Some(Cow::from("domain"));
    }
    // SAFETY: an address just resolved; missing_ok: NULL rather than an ERROR.
    let description = unsafe { pg_sys::getObjectTypeDescription(&address, true) };
    if description.is_null() {
        return object_type_name(objtype).map(Cow::from);
    }
    // SAFETY: a NUL-terminated string built just now. Not converted: PostgreSQL's own words,
    // ASCII and never translated (objectaddress.c), which ddl-filter compares with its own.
    let description = unsafe { CStr::from_ptr(description) };
    Some(Cow::from(description.to_string_lossy().into_owned()))
}

/// pg_identify_object()'s name for each object type a statement can name.
fn object_type_name(t: pg_sys::ObjectType::Type) -> Option<&'static str> {
    use pg_sys::ObjectType as O;
    Some(match t {
        O::OBJECT_ACCESS_METHOD => "access method",
        O::OBJECT_AGGREGATE => "aggregate",
        O::OBJECT_CAST => "cast",
        O::OBJECT_COLUMN => "column",
        O::OBJECT_COLLATION => "collation",
        O::OBJECT_CONVERSION => "conversion",
        O::OBJECT_DATABASE => "database",
        O::OBJECT_DOMAIN => "domain",
        O::OBJECT_DOMCONSTRAINT => "domain constraint",
        O::OBJECT_EVENT_TRIGGER => "event trigger",
        O::OBJECT_EXTENSION => "extension",
        O::OBJECT_FDW => "foreign-data wrapper",
        O::OBJECT_FOREIGN_SERVER => "server",
        O::OBJECT_FOREIGN_TABLE => "foreign table",
        O::OBJECT_FUNCTION => "function",
        O::OBJECT_INDEX => "index",
        O::OBJECT_LANGUAGE => "language",
        O::OBJECT_LARGEOBJECT => "large object",
        O::OBJECT_MATVIEW => "materialized view",
        O::OBJECT_OPCLASS => "operator class",
        O::OBJECT_OPERATOR => "operator",
        O::OBJECT_OPFAMILY => "operator family",
        O::OBJECT_PARAMETER_ACL => "parameter ACL",
        O::OBJECT_POLICY => "policy",
        O::OBJECT_PROCEDURE => "procedure",
        O::OBJECT_PUBLICATION => "publication",
        O::OBJECT_ROLE => "role",
        O::OBJECT_ROUTINE => "routine",
        O::OBJECT_RULE => "rule",
        O::OBJECT_SCHEMA => "schema",
        O::OBJECT_SEQUENCE => "sequence",
        O::OBJECT_SUBSCRIPTION => "subscription",
        O::OBJECT_STATISTIC_EXT => "statistics object",
        O::OBJECT_TABCONSTRAINT => "table constraint",
        O::OBJECT_TABLE => "table",
        O::OBJECT_TABLESPACE => "tablespace",
        O::OBJECT_TRANSFORM => "transform",
        O::OBJECT_TRIGGER => "trigger",
        O::OBJECT_TSCONFIGURATION => "text search configuration",
        O::OBJECT_TSDICTIONARY => "text search dictionary",
        O::OBJECT_TSPARSER => "text search parser",
        O::OBJECT_TSTEMPLATE => "text search template",
        O::OBJECT_TYPE => "type",
        O::OBJECT_VIEW => "view",
        _ => return None,
    })
}
