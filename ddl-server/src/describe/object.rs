//! Objects found by an event's identity, and the kinds that are not relations: functions,
//! procedures and aggregates, types and domains, a table's triggers, policies and rules,
//! schemas, extensions.

use super::{relation, role_name, text_of};
use crate::relcache;
use crate::text::{quote_identifier, utf8_identifier, utf8_ptr};
use crate::versions;
use ddl_wire::{Action, ObjectDescription, Part};
use pgrx::pg_sys;

/// An object an identity names.
pub(super) enum Found {
    /// A relation (for a column's identity, its table).
    Relation(pg_sys::Oid),
    /// A function, procedure or aggregate.
    Routine(pg_sys::Oid),
    /// A type or domain.
    Type(pg_sys::Oid),
    /// A trigger, policy or rule (`kind`) by name on a table.
    Part(pg_sys::Oid, String),
    /// A schema.
    Schema(pg_sys::Oid),
    /// An extension.
    Extension(pg_sys::Oid),
}

/// The object of `kind` that `identity` names (the form `pg_identify_object` writes, an
/// event's `object_identity`), or `None` when there is none.
///
/// # Safety
/// In a transaction, with `pg_catalog` alone on the search_path (an identity is fully
/// qualified, so the path only keeps a user's objects out of the lookup).
pub(super) unsafe fn find(kind: &str, identity: &str) -> Option<Found> {
    // SAFETY: the caller's promise; catalog cache lookups, and the `to_reg*` functions, which
    // answer NULL for what does not exist.
    unsafe {
        match kind {
            // A column's statement (RENAME COLUMN) names the column, a constraint's (RENAME
            // CONSTRAINT) the constraint on its table: each is found as its table.
            "table" | "view" | "materialized view" | "sequence" | "index" => {
                relcache::relation_named(identity)
                    .or_else(|| relcache::relation_of_column(identity))
                    .or_else(|| relcache::part_on(identity).map(|(_, relid)| relid))
                    .map(Found::Relation)
            }
            "function" | "procedure" | "aggregate" | "routine" => {
                routine_named(identity).map(Found::Routine)
            }
            // An attribute's statement (ALTER TYPE ... RENAME ATTRIBUTE) names the attribute,
            // a domain constraint's (RENAME CONSTRAINT) the constraint on its domain: each is
            // found as its type.
            "type" | "domain" => type_named(identity)
                .or_else(|| match relcache::identity_parts(identity)?.as_slice() {
                    [schema, name, _] => type_in(schema, name),
                    _ => None,
                })
                .or_else(|| type_named(relcache::split_on(identity)?.1))
                .map(Found::Type),
            "trigger" | "policy" | "rule" => {
                let (name, relid) = relcache::part_on(identity)?;
                parts(kind, relid)
                    .iter()
                    .any(|p| p.name == name)
                    .then_some(Found::Part(relid, name))
            }
            "schema" => {
                relcache::namespace_named(&relcache::unquoted(identity)?).map(Found::Schema)
            }
            "extension" => {
                let name = crate::text::server_cstring(&relcache::unquoted(identity)?)?;
                let oid = pg_sys::get_extension_oid(name.as_ptr(), true);
                (oid != pg_sys::InvalidOid).then_some(Found::Extension(oid))
            }
            _ => None,
        }
    }
}

/// The object `found` after a statement did `action` to it (`kind` as the statement names
/// it); `None` when it is not described.
///
/// # Safety
/// As for [`find`].
pub(super) unsafe fn described(
    found: Found,
    kind: &str,
    identity: &str,
    action: Action,
) -> Option<ObjectDescription> {
    let object = ObjectDescription {
        action,
        kind: kind.into(),
        identity: identity.into(),
        ..Default::default()
    };
    // SAFETY: the caller's promise.
    unsafe {
        match found {
            Found::Relation(_) => None,
            Found::Routine(oid) => Some(routine(oid, object)),
            Found::Type(oid) => type_(oid, object),
            Found::Part(relid, name) => relation::with_lock(relid, || {
                let definition = parts(kind, relid).into_iter().find(|p| p.name == name)?;
                Some(ObjectDescription {
                    definition: Some(definition.definition),
                    ..object
                })
            })
            .flatten(),
            Found::Schema(oid) => Some(ObjectDescription {
                owner: role_name(schema_owner(oid)?),
                ..object
            }),
            Found::Extension(oid) => extension(oid, object),
        }
    }
}

/// The function, procedure or aggregate whose identity is `identity` (`schema.name(argument
/// types)`): among those of that name in that schema, the one PostgreSQL writes the same
/// identity for. Not through `to_regprocedure`, whose parser refuses an argument of a shell
/// type (`CREATE FUNCTION ... (xfloat4)` while `xfloat4` is only a shell).
///
/// # Safety
/// In a transaction.
unsafe fn routine_named(identity: &str) -> Option<pg_sys::Oid> {
    let [schema, name] = <[String; 2]>::try_from(relcache::identity_parts(
        &identity[..arguments_start(identity)?],
    )?)
    .ok()?;
    let namespace = relcache::namespace_named(&schema)?;
    // SAFETY: in a transaction (the caller's promise).
    let name = unsafe { crate::text::server_cstring(&name) }?;
    let id = versions::syscache(pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP);
    // SAFETY: the caller's promise; a catalog cache list by name, its members read and the
    // list released; each member's identity written by PostgreSQL.
    unsafe {
        let list = pg_sys::SearchSysCacheList(
            id,
            1,
            pg_sys::Datum::from(name.as_ptr()),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
        );
        let members = (*list).members.as_slice((*list).n_members as usize);
        let found = members.iter().find_map(|&member| {
            let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_proc>(
                std::ptr::addr_of_mut!((*member).tuple),
            );
            (row.pronamespace == namespace
                && utf8_ptr(pg_sys::format_procedure_qualified(row.oid)) == identity)
                .then_some(row.oid)
        });
        pg_sys::ReleaseCatCacheList(list);
        found
    }
}

/// Where the argument list of a routine's identity starts: its first `(` outside quotes.
fn arguments_start(identity: &str) -> Option<usize> {
    let mut quoted = false;
    identity.char_indices().find_map(|(at, c)| {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => return Some(at),
            _ => {}
        }
        None
    })
}

/// The type or domain whose identity is `identity` (`schema.name`), shell types included
/// (`to_regtype` refuses those).
///
/// # Safety
/// In a transaction.
unsafe fn type_named(identity: &str) -> Option<pg_sys::Oid> {
    let [schema, name] = <[String; 2]>::try_from(relcache::identity_parts(identity)?).ok()?;
    // SAFETY: the caller's promise.
    unsafe { type_in(&schema, &name) }
}

/// The type or domain named `name` in schema `schema` (both unquoted).
///
/// # Safety
/// In a transaction.
unsafe fn type_in(schema: &str, name: &str) -> Option<pg_sys::Oid> {
    let namespace = relcache::namespace_named(schema)?;
    // SAFETY: in a transaction (the caller's promise).
    let name = unsafe { crate::text::server_cstring(name) }?;
    // SAFETY: the caller's promise; a catalog cache lookup by name and schema.
    let oid = unsafe {
        pg_sys::GetSysCacheOid(
            versions::syscache(pg_sys::SysCacheIdentifier::TYPENAMENSP),
            pg_sys::Anum_pg_type_oid as pg_sys::AttrNumber,
            pg_sys::Datum::from(name.as_ptr()),
            pg_sys::Datum::from(namespace),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
        )
    };
    (oid != pg_sys::InvalidOid).then_some(oid)
}

/// The triggers, policies or rules (`kind`) of table `relid`.
///
/// # Safety
/// In a transaction.
unsafe fn parts(kind: &str, relid: pg_sys::Oid) -> Vec<Part> {
    // SAFETY: the caller's promise.
    unsafe {
        match kind {
            "trigger" => relation::triggers(relid),
            "policy" => relation::policies(relid),
            _ => relation::rules(relid),
        }
    }
}

/// A function, procedure or aggregate: its kind, owner, and for a function or procedure its
/// `CREATE FUNCTION` as `pg_get_functiondef` writes it (which it does not for an aggregate).
///
/// # Safety
/// As for [`find`].
unsafe fn routine(oid: pg_sys::Oid, object: ObjectDescription) -> ObjectDescription {
    let id = versions::syscache(pg_sys::SysCacheIdentifier::PROCOID);
    // SAFETY: the caller's promise; a catalog cache row, released below.
    let (prokind, owner) = unsafe {
        let tuple = pg_sys::SearchSysCache1(id, oid.into());
        if tuple.is_null() {
            return object;
        }
        let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_proc>(tuple);
        let out = (row.prokind as u8, row.proowner);
        pg_sys::ReleaseSysCache(tuple);
        out
    };
    let kind = match prokind {
        b'p' => "procedure",
        b'a' => "aggregate",
        _ => "function",
    };
    ObjectDescription {
        kind: kind.into(),
        owner: role_name(owner),
        definition: (prokind != b'a')
            // SAFETY: a function just found in the catalog.
            .then(|| unsafe { text_of(pg_sys::pg_get_functiondef, &[oid.into()]) })
            .flatten(),
        ..object
    }
}

/// A type or domain: a domain's base type, collation, NOT NULL, default and constraints; an
/// enum's labels; a composite type's attributes; a range's subtype and functions.
///
/// # Safety
/// As for [`find`].
unsafe fn type_(oid: pg_sys::Oid, object: ObjectDescription) -> Option<ObjectDescription> {
    let id = versions::syscache(pg_sys::SysCacheIdentifier::TYPEOID);
    // SAFETY: the caller's promise; a catalog cache row, read and released below.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(id, oid.into());
        if tuple.is_null() {
            return None;
        }
        let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_type>(tuple);
        let (typtype, owner, relid) = (row.typtype as u8, row.typowner, row.typrelid);
        let domain = (typtype == b'd').then(|| {
            let mut isnull = true;
            let default = pg_sys::SysCacheGetAttr(
                id,
                tuple,
                pg_sys::Anum_pg_type_typdefaultbin as pg_sys::AttrNumber,
                &mut isnull,
            );
            let default = (!isnull)
                .then(|| text_of(pg_sys::pg_get_expr, &[default, pg_sys::InvalidOid.into()]))
                .flatten();
            domain(row, oid, default)
        });
        pg_sys::ReleaseSysCache(tuple);
        let object = ObjectDescription {
            kind: if typtype == b'd' { "domain" } else { "type" }.into(),
            owner: role_name(owner),
            ..object
        };
        Some(match typtype {
            b'd' => ObjectDescription {
                definition: domain,
                ..object
            },
            b'e' => ObjectDescription {
                labels: labels(oid),
                ..object
            },
            b'c' => ObjectDescription {
                columns: crate::relcache::with_relation(relid, |rel| relation::columns(rel, relid))
                    .unwrap_or_default(),
                ..object
            },
            b'r' => ObjectDescription {
                definition: range(oid),
                ..object
            },
            _ => object,
        })
    }
}

/// `integer COLLATE "C" NOT NULL DEFAULT 0 CONSTRAINT positive CHECK (VALUE > 0)`.
///
/// # Safety
/// `row` is domain `oid`'s pg_type row; in a transaction.
unsafe fn domain(
    row: &pg_sys::FormData_pg_type,
    oid: pg_sys::Oid,
    default: Option<String>,
) -> String {
    // SAFETY: the caller's promise; catalog lookups.
    unsafe {
        let mut definition = relation::type_name(row.typbasetype, row.typtypmod);
        if row.typcollation != pg_sys::InvalidOid
            && row.typcollation != pg_sys::get_typcollation(row.typbasetype)
        {
            if let Some(collation) = relation::collation_name(row.typcollation) {
                definition.push_str(&format!(" COLLATE {collation}"));
            }
        }
        if row.typnotnull {
            definition.push_str(" NOT NULL");
        }
        if let Some(default) = default {
            definition.push_str(&format!(" DEFAULT {default}"));
        }
        for constraint in relation::constraints_of(oid, None) {
            definition.push_str(&format!(
                " CONSTRAINT {} {}",
                quote_identifier(&constraint.name),
                constraint.definition
            ));
        }
        definition
    }
}

/// The labels of enum `oid`, in their order.
///
/// # Safety
/// In a transaction.
unsafe fn labels(oid: pg_sys::Oid) -> Vec<String> {
    let mut found: Vec<(f32, String)> = Vec::new();
    // SAFETY: a scan of pg_enum by enumtypid (its index's first key column).
    unsafe {
        crate::catalog_scan::scan(
            pg_sys::EnumRelationId,
            pg_sys::Oid::from(pg_sys::EnumTypIdSortOrderIndexId),
            &[(pg_sys::Anum_pg_enum_enumtypid as pg_sys::AttrNumber, oid)],
            |tuple, _| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_enum>(tuple);
                found.push((row.enumsortorder, utf8_ptr(row.enumlabel.data.as_ptr())));
            },
        )
    };
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    found.into_iter().map(|(_, label)| label).collect()
}

/// `SUBTYPE = integer, COLLATION = ..., CANONICAL = ..., SUBTYPE_DIFF = ...` of range `oid`.
///
/// # Safety
/// In a transaction.
unsafe fn range(oid: pg_sys::Oid) -> Option<String> {
    let id = versions::syscache(pg_sys::SysCacheIdentifier::RANGETYPE);
    // SAFETY: the caller's promise; a catalog cache row, released below; catalog lookups.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(id, oid.into());
        if tuple.is_null() {
            return None;
        }
        let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_range>(tuple);
        let mut definition = format!(
            "SUBTYPE = {}",
            utf8_ptr(pg_sys::format_type_be(row.rngsubtype))
        );
        if row.rngcollation != pg_sys::InvalidOid {
            definition.push_str(&format!(
                ", COLLATION = {}",
                utf8_ptr(pg_sys::generate_collation_name(row.rngcollation))
            ));
        }
        for (option, function) in [
            ("CANONICAL", row.rngcanonical),
            ("SUBTYPE_DIFF", row.rngsubdiff),
        ] {
            if function != pg_sys::InvalidOid {
                definition.push_str(&format!(
                    ", {option} = {}",
                    utf8_ptr(pg_sys::format_procedure_qualified(function))
                ));
            }
        }
        pg_sys::ReleaseSysCache(tuple);
        Some(definition)
    }
}

/// The owner of schema `oid`.
///
/// # Safety
/// In a transaction.
unsafe fn schema_owner(oid: pg_sys::Oid) -> Option<pg_sys::Oid> {
    let id = versions::syscache(pg_sys::SysCacheIdentifier::NAMESPACEOID);
    // SAFETY: the caller's promise; a catalog cache row, released below.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(id, oid.into());
        if tuple.is_null() {
            return None;
        }
        let owner =
            (*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_namespace>(tuple)).nspowner;
        pg_sys::ReleaseSysCache(tuple);
        Some(owner)
    }
}

/// An extension: its owner, and `VERSION '1.2' SCHEMA public`.
///
/// # Safety
/// In a transaction.
unsafe fn extension(oid: pg_sys::Oid, object: ObjectDescription) -> Option<ObjectDescription> {
    let mut found = None;
    // SAFETY: a scan of pg_extension by OID; its version (text) read with the catalog's
    // descriptor.
    unsafe {
        crate::catalog_scan::scan(
            pg_sys::ExtensionRelationId,
            pg_sys::Oid::from(pg_sys::ExtensionOidIndexId),
            &[(pg_sys::Anum_pg_extension_oid as pg_sys::AttrNumber, oid)],
            |tuple, desc| {
                let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_extension>(tuple);
                let version =
                    relation::attribute(tuple, desc, pg_sys::Anum_pg_extension_extversion)
                        .map(|version| crate::text::utf8_text(version))
                        .unwrap_or_default();
                let schema = pg_sys::get_namespace_name(row.extnamespace);
                found = Some(ObjectDescription {
                    owner: role_name(row.extowner),
                    definition: Some(format!(
                        "VERSION '{}' SCHEMA {}",
                        version.replace('\'', "''"),
                        if schema.is_null() {
                            String::new()
                        } else {
                            utf8_identifier(schema)
                        }
                    )),
                    ..object.clone()
                });
            },
        )
    };
    found
}
