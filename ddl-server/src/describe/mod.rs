//! What a statement made, described from the catalogs the same way on every node: the
//! event's `description` ([`ddl_wire::Description`]). The publisher's capture describes the
//! statement's objects right after it ran, in its own backend (the record carries the
//! description), the subscriber's replay after running it, and the two are compared.
//!
//! Everything here reads the catalog caches and scans catalogs, without SPI: in the capture
//! the caches already hold what the statement just touched, so a description costs little
//! beside the statement. Expressions and definitions are PostgreSQL's own deparsing
//! (`pg_get_expr`, `pg_get_constraintdef`, `pg_get_indexdef`, `pg_get_triggerdef`,
//! `pg_get_functiondef`, `pg_get_querydef`, `format_type`), run with `pg_catalog` alone on the
//! search_path so that every other object is schema-qualified whatever either node's settings.
//!
//! Relations (tables, views, materialized views, sequences) are in [`relation`], the other
//! kinds in [`object`]; [`index`] and [`key`] write the commonest index definitions and the
//! keys' constraint definitions as PostgreSQL's deparsing would, for less.

pub mod index;
pub mod key;
mod object;
mod relation;

pub use relation::{column_collation, type_name};

use crate::{guc, relcache};
use ddl_wire::{Action, Description, ObjectDescription, DESCRIPTION_VERSION};
use pgrx::pg_sys;

/// The description of a statement (`command_tag` on `identity`, the event's fields; for a
/// rename or a move `renamed_from`, the identity before it, else empty), or
/// `None` for a statement that makes nothing this version describes (COMMENT, GRANT, an
/// operator, ...), or whose object is not what the statement claims (gone after CREATE, still
/// there after DROP); `Err` with the message of an ERROR that describing raised. Such an ERROR
/// is caught in a subtransaction, which undoes what it did: in the capture it would otherwise
/// fail the user's statement, in an apply worker stop the subscription. A lock the description
/// needs is waited for at most a second (`lock_timeout`); the statement's own locks are the
/// describing backend's already.
///
/// `known`: what the caller knows of the statement's object besides its identity.
///
/// In a transaction whose catalogs are those after the statement.
// Not inlined: `cargo xtask bench instructions` profiles it.
#[inline(never)]
pub fn statement(
    command_tag: &str,
    identity: &str,
    renamed_from: &str,
    known: Known,
) -> Result<Option<Description>, String> {
    // A statement that makes nothing described costs nothing more: known from its tag
    // before the subtransaction and the settings.
    let Some((action, kind)) =
        action_and_noun(command_tag).and_then(|(action, noun)| Some((action, kind_of(noun)?)))
    else {
        return Ok(None);
    };
    let relation = known.relation.filter(|_| RELATION_KINDS.contains(&kind));
    if action == Action::Dropped {
        // Nothing to deparse, and lookups that raise no ERROR: no subtransaction, no settings.
        // SAFETY: the caller's promise.
        return Ok(unsafe { dropped(kind, identity, relation) });
    }
    // A table found by name: lookups of relations raise no ERROR whatever the search_path.
    let table = relation.or_else(|| match kind {
        // SAFETY: the caller's promise.
        "table" => match unsafe { object::find(kind, identity) }? {
            object::Found::Relation(relid) => Some(relid),
            _ => None,
        },
        _ => None,
    });
    // A table with nothing to deparse: described without the subtransaction and the settings.
    let plain = table.filter(|_| kind == "table").and_then(|relid| {
        // A known relation's two-part identity (not a column's) is its `schema.name`, written
        // by PostgreSQL after the statement as a description writes it.
        let named = relation.is_some()
            && relcache::identity_parts(identity).is_some_and(|parts| parts.len() == 2);
        // SAFETY: the caller's promise.
        unsafe { relation::plain(relid, action, known.made_alone, named.then_some(identity)) }
    });
    if let Some(mut object) = plain {
        if !renamed_from.is_empty() {
            say_renamed(&mut object, identity, renamed_from);
        }
        return Ok(Some(Description {
            version: DESCRIPTION_VERSION,
            objects: vec![object],
        }));
    }
    guarded(|| {
        let found = match table {
            Some(relid) => object::Found::Relation(relid),
            // SAFETY: the caller's promise.
            None => unsafe { object::find(kind, identity) }?,
        };
        // SAFETY: as above.
        let mut object = unsafe { described(found, action, kind, identity) }?;
        if !renamed_from.is_empty() {
            say_renamed(&mut object, identity, renamed_from);
        }
        Some(Description {
            version: DESCRIPTION_VERSION,
            objects: vec![object],
        })
    })
}

/// What the caller of [`statement`] knows of the statement's object besides its identity (the
/// capture knows it from PostgreSQL; a replay compares what the catalogs say).
#[derive(Clone, Copy, Debug, Default)]
pub struct Known {
    /// The relation the object is (a table, an index, ...): not looked for by name, which
    /// costs a statement on a table it just changed a catalog scan (the name's catalog cache
    /// entry went with the change). For a DROP, the relation PostgreSQL reported dropped: gone
    /// without asking.
    pub relation: Option<pg_sys::Oid>,
    /// The statement made `relation`, a table related to no other (CREATE TABLE without
    /// INHERITS, PARTITION OF or REFERENCES): neither its parents nor its foreign keys are
    /// looked for.
    pub made_alone: bool,
}

/// The kinds whose objects are relations (found as one by [`object::find`]).
const RELATION_KINDS: [&str; 5] = ["table", "view", "materialized view", "sequence", "index"];

/// The relation `relid` as it is now (action `present`), as [`statement`] describes a
/// statement's relation; `None` for a relation that is gone or not described.
pub fn relation_now(relid: pg_sys::Oid) -> Result<Option<Description>, String> {
    guarded(|| {
        // SAFETY: in the caller's transaction.
        let object = unsafe { relation::described(relid, Action::Present) }?;
        Some(Description {
            version: DESCRIPTION_VERSION,
            objects: vec![object],
        })
    })
}

/// Says in `object` (what a statement on `identity` made) that it was `renamed_from`: the
/// object's old identity, or for a column's (`schema.table.column`, whose table is described)
/// the column's old name. Not for a part described as its table (an index, a constraint):
/// the table was not renamed.
fn say_renamed(object: &mut ObjectDescription, identity: &str, renamed_from: &str) {
    let column = |identity: &str| match relcache::identity_parts(identity)?.as_slice() {
        [_, _, column] => Some(column.clone()),
        _ => None,
    };
    match (column(identity), column(renamed_from)) {
        (Some(new), Some(old)) => {
            if let Some(c) = object.columns.iter_mut().find(|c| c.name == new) {
                c.renamed_from = Some(old);
            }
        }
        _ if object.identity == identity => object.renamed_from = Some(renamed_from.to_string()),
        _ => {}
    }
}

/// The settings a description is made with: `pg_catalog` alone on the search_path (every
/// other object qualified), and PostgreSQL's defaults for every setting that changes how
/// deparsing writes a constant or a name (a `timestamptz` default in the session's time zone,
/// a float's digits, quoted identifiers), so that both nodes write the same text whatever
/// their sessions' settings. A setting already so is not set again ([`guc::with_settings`]);
/// a time zone that is UTC by another name ([`UTC_NAMES`]) is left as it is.
const SETTINGS: [(&str, &str); 8] = [
    ("search_path", "pg_catalog"),
    ("DateStyle", "ISO, MDY"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("extra_float_digits", "1"),
    ("bytea_output", "hex"),
    ("standard_conforming_strings", "on"),
    ("quote_all_identifiers", "off"),
];

/// Names of the UTC time zone, which deparsing writes the same way as `UTC` (`+00`, no
/// abbreviation): a server whose `timezone` is one of them (initdb writes the system's, often
/// `Etc/UTC`) is spared setting it for every description.
const UTC_NAMES: [&str; 8] = [
    "UTC",
    "Etc/UTC",
    "Etc/UCT",
    "UCT",
    "Etc/Universal",
    "Universal",
    "Etc/Zulu",
    "Zulu",
];

/// `describe` in a subtransaction, with [`SETTINGS`].
fn guarded<T>(describe: impl FnOnce() -> Option<T>) -> Result<Option<T>, String> {
    let utc = guc::current("TimeZone").is_some_and(|zone| UTC_NAMES.contains(&zone.as_str()));
    let settings: Vec<(&str, &str)> = SETTINGS
        .iter()
        .copied()
        .filter(|(name, _)| !(utc && *name == "TimeZone"))
        .collect();
    crate::xact::in_subtransaction(|| guc::with_settings(&settings, describe), |_| true)
        .map_err(|caught| caught.message)
}

/// What the command tag does (`CREATE`, `ALTER`, `DROP`), and to what kind of object (the rest
/// of the tag: `TABLE`, `MATERIALIZED VIEW`, ...).
fn action_and_noun(command_tag: &str) -> Option<(Action, &str)> {
    if command_tag == "SELECT INTO" {
        return Some((Action::Created, "TABLE"));
    }
    let (verb, noun) = command_tag.split_once(' ')?;
    let action = match verb {
        "CREATE" => Action::Created,
        "ALTER" => Action::Altered,
        "DROP" => Action::Dropped,
        _ => return None,
    };
    Some((action, noun))
}

/// Whether the object of `kind` named by `identity` is gone, as a statement that dropped it
/// left it (a foreign table is found as a table). In a transaction.
pub fn is_gone(kind: &str, identity: &str) -> bool {
    let kind = if kind == "foreign table" {
        "table"
    } else {
        kind
    };
    // SAFETY: in the caller's transaction; lookups that raise no ERROR.
    unsafe { object::find(kind, identity) }.is_none()
}

/// The description of a statement that dropped the object of `kind` named by `identity`: its
/// kind and identity; `None` when the object is still there (the statement did not do what it
/// says). `dropped_relation`: the relation PostgreSQL reported dropped, when it is one (gone:
/// asking would cost a catalog scan, as the statement invalidated its cache entries).
///
/// # Safety
/// In a transaction.
unsafe fn dropped(
    kind: &str,
    identity: &str,
    dropped_relation: Option<pg_sys::Oid>,
) -> Option<Description> {
    (dropped_relation.is_some() || is_gone(kind, identity)).then(|| Description {
        version: DESCRIPTION_VERSION,
        objects: vec![ObjectDescription {
            action: Action::Dropped,
            kind: kind.into(),
            identity: identity.into(),
            ..Default::default()
        }],
    })
}

/// The object `found` of `kind` a statement with `action` (not a drop) named by `identity`.
///
/// # Safety
/// In a transaction, with `pg_catalog` alone on the search_path.
unsafe fn described(
    found: object::Found,
    action: Action,
    kind: &str,
    identity: &str,
) -> Option<ObjectDescription> {
    match found {
        // An index is described as part of its table: CREATE INDEX changes the table.
        // SAFETY: the caller's promise.
        object::Found::Relation(relid) => unsafe {
            match relation::owning_table(relid) {
                Some(table) => relation::described(table, Action::Altered),
                None => relation::described(relid, action),
            }
        },
        // SAFETY: as above.
        found => unsafe { object::described(found, kind, identity, action) },
    }
}

/// The kind a command tag's noun names, as descriptions name kinds; `None` for a kind this
/// version does not describe.
fn kind_of(noun: &str) -> Option<&'static str> {
    Some(match noun {
        "TABLE" | "TABLE AS" => "table",
        "INDEX" => "index",
        "VIEW" => "view",
        "MATERIALIZED VIEW" => "materialized view",
        "SEQUENCE" => "sequence",
        "FUNCTION" => "function",
        "PROCEDURE" => "procedure",
        "AGGREGATE" => "aggregate",
        "ROUTINE" => "routine",
        "TYPE" => "type",
        "DOMAIN" => "domain",
        "TRIGGER" => "trigger",
        "POLICY" => "policy",
        "RULE" => "rule",
        "SCHEMA" => "schema",
        "EXTENSION" => "extension",
        _ => return None,
    })
}

/// The text a deparsing function returns for `args`, in UTF-8; `None` for NULL.
///
/// # Safety
/// `function` is one of PostgreSQL's `pg_get_*` functions, with its arguments; in a
/// transaction.
unsafe fn text_of(
    function: unsafe fn(pg_sys::FunctionCallInfo) -> pg_sys::Datum,
    args: &[pg_sys::Datum],
) -> Option<String> {
    let args: Vec<Option<pg_sys::Datum>> = args.iter().copied().map(Some).collect();
    // SAFETY: the caller's promise; the result is a text datum or NULL.
    unsafe {
        let datum = pgrx::fcinfo::direct_function_call_as_datum(function, &args)?;
        Some(crate::text::utf8_text(datum))
    }
}

/// The name of role `role`, or `None` for one that is gone.
fn role_name(role: pg_sys::Oid) -> Option<String> {
    // SAFETY: a catalog cache lookup (NULL when gone).
    unsafe {
        let name = pg_sys::GetUserNameFromId(role, true);
        (!name.is_null()).then(|| crate::text::utf8_ptr(name))
    }
}
