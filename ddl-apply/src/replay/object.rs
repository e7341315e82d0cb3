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
    match (*node).type_ {
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = node as *mut pg_sys::AlterTableStmt;
            relation_type((*stmt).relation)
                .or_else(|| object_type_name((*stmt).objtype))
                .map(Cow::from)
        }
        pg_sys::NodeTag::T_RenameStmt => {
            relation_type((*(node as *mut pg_sys::RenameStmt)).relation).map(Cow::from)
        }
        pg_sys::NodeTag::T_AlterObjectSchemaStmt => {
            relation_type((*(node as *mut pg_sys::AlterObjectSchemaStmt)).relation).map(Cow::from)
        }
        pg_sys::NodeTag::T_CommentStmt => {
            let stmt = node as *mut pg_sys::CommentStmt;
            described((*stmt).objtype, (*stmt).object)
        }
        pg_sys::NodeTag::T_SecLabelStmt => {
            let stmt = node as *mut pg_sys::SecLabelStmt;
            described((*stmt).objtype, (*stmt).object)
        }
        pg_sys::NodeTag::T_GrantStmt => {
            object_type_name((*(node as *mut pg_sys::GrantStmt)).objtype).map(Cow::from)
        }
        // The objects the default privileges are for (`TABLES` in the capture's words).
        pg_sys::NodeTag::T_AlterDefaultPrivilegesStmt => {
            let action = (*(node as *mut pg_sys::AlterDefaultPrivilegesStmt)).action;
            if action.is_null() {
                return None;
            }
            object_type_name((*action).objtype).map(Cow::from)
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
    let (relation, creates) = match (*node).type_ {
        T::T_CreateStmt => ((*(node as *mut pg_sys::CreateStmt)).relation, true),
        T::T_ViewStmt => ((*(node as *mut pg_sys::ViewStmt)).view, true),
        T::T_CreateTableAsStmt => {
            let into = (*(node as *mut pg_sys::CreateTableAsStmt)).into;
            (
                if into.is_null() {
                    std::ptr::null_mut()
                } else {
                    (*into).rel
                },
                true,
            )
        }
        T::T_AlterTableStmt => ((*(node as *mut pg_sys::AlterTableStmt)).relation, false),
        T::T_IndexStmt => ((*(node as *mut pg_sys::IndexStmt)).relation, false),
        T::T_CreateTrigStmt => ((*(node as *mut pg_sys::CreateTrigStmt)).relation, false),
        T::T_RuleStmt => ((*(node as *mut pg_sys::RuleStmt)).relation, false),
        T::T_RenameStmt => ((*(node as *mut pg_sys::RenameStmt)).relation, false),
        // The capture sees the relation after the move: in its new schema.
        T::T_AlterObjectSchemaStmt => {
            let stmt = node as *mut pg_sys::AlterObjectSchemaStmt;
            if (*stmt).relation.is_null() || (*stmt).newschema.is_null() {
                return None;
            }
            return Some(
                CStr::from_ptr((*stmt).newschema)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        _ => return None,
    };
    if relation.is_null() {
        return None;
    }
    let namespace = if creates {
        if !(*relation).schemaname.is_null() {
            return Some(
                CStr::from_ptr((*relation).schemaname)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        // The first schema of the search_path that exists, as the statement will choose it.
        let found = ddl_server::xact::in_subtransaction(
            || pg_sys::RangeVarGetCreationNamespace(relation),
            |_| true,
        );
        found.ok()?
    } else {
        pg_sys::get_rel_namespace(relation_oid(relation)?)
    };
    let name = pg_sys::get_namespace_name(namespace);
    (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
}

/// The relation kind of `relation`, when it names one that exists.
unsafe fn relation_type(relation: *mut pg_sys::RangeVar) -> Option<&'static str> {
    if relation.is_null() {
        return None;
    }
    let relid = relation_oid(relation)?;
    match pg_sys::get_rel_relkind(relid) as u8 {
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
            let address = pg_sys::get_object_address(objtype, object, &mut relation, lock, true);
            if !relation.is_null() {
                // The lock stays until the end of the transaction; the statement takes its own.
                pg_sys::relation_close(relation, pg_sys::NoLock as pg_sys::LOCKMODE);
            }
            address
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
        && pg_sys::get_typtype(address.objectId) as u8 == pg_sys::TYPTYPE_DOMAIN
    {
        return Some(Cow::from("domain"));
    }
    let description = pg_sys::getObjectTypeDescription(&address, true);
    if description.is_null() {
        return object_type_name(objtype).map(Cow::from);
    }
    Some(Cow::from(
        CStr::from_ptr(description).to_string_lossy().into_owned(),
    ))
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
