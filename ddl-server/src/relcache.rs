//! Relations and schemas: found by name in the catalog caches, and open from the relcache for
//! as long as a closure needs them.

use pgrx::pg_sys;

/// `f` of relation `relid`, open (no lock taken: the caller's transaction holds what it
/// needs) for the call; `None` when there is no such relation.
pub fn with_relation<T>(relid: pg_sys::Oid, f: impl FnOnce(pg_sys::Relation) -> T) -> Option<T> {
    // SAFETY: a relcache lookup in the current transaction; NULL for a relation that is gone.
    let rel = unsafe { pg_sys::RelationIdGetRelation(relid) };
    if rel.is_null() {
        return None;
    }
    let out = f(rel);
    // SAFETY: opened above, closed once (an ERROR inside `f` leaves the reference to the
    // resource owner, which releases it at abort).
    unsafe { pg_sys::RelationClose(rel) };
    Some(out)
}

/// The relation named by the schema-qualified identity `identity` (`schema.name`, each part
/// quoted as `quote_identifier` quotes it: the form of an event's `object_identity`), or
/// `None` when there is none, or `identity` is not of that form (a column's identity has three
/// parts). Answered from the catalog caches without a lock, and for an identity this database
/// wrote it raises no ERROR (no parser, no search_path): the output plugin asks it while
/// decoding, where an ERROR would stop the stream.
pub fn relation_named(identity: &str) -> Option<pg_sys::Oid> {
    let [schema, name] = <[String; 2]>::try_from(identity_parts(identity)?).ok()?;
    relation_in(namespace_named(&schema)?, &name)
}

/// `schema.name` of relation `relid`, each part quoted as PostgreSQL quotes identifiers (the
/// form of an event's `object_identity`), in UTF-8; `None` when it is gone.
pub fn qualified_name(relid: pg_sys::Oid) -> Option<String> {
    // SAFETY: catalog cache lookups in the caller's transaction (NULL when gone); the result
    // is a new server string.
    unsafe {
        let name = pg_sys::get_rel_name(relid);
        let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
        if name.is_null() || schema.is_null() {
            return None;
        }
        Some(crate::text::utf8_ptr(pg_sys::quote_qualified_identifier(
            schema, name,
        )))
    }
}

/// [`qualified_name`] of the relation whose pg_class row is `class` (an open relation's),
/// without looking the row up again; `None` when its schema is gone.
///
/// # Safety
/// `class` is an open relation's pg_class row; in a transaction.
pub unsafe fn class_qualified_name(class: &pg_sys::FormData_pg_class) -> Option<String> {
    // SAFETY: the caller's promise; a catalog cache lookup (NULL when gone), the result a new
    // server string.
    unsafe {
        let schema = pg_sys::get_namespace_name(class.relnamespace);
        (!schema.is_null()).then(|| {
            crate::text::utf8_ptr(pg_sys::quote_qualified_identifier(
                schema,
                class.relname.data.as_ptr(),
            ))
        })
    }
}

/// The table of the column that the identity `schema.table.column` names (as
/// [`relation_named`] reads identities); `None` for another form, or when there is none.
pub fn relation_of_column(identity: &str) -> Option<pg_sys::Oid> {
    let [schema, table, _] = <[String; 3]>::try_from(identity_parts(identity)?).ok()?;
    relation_in(namespace_named(&schema)?, &table)
}

/// The name a one-part identity names, unquoted (`"My Schema"`: `My Schema`); `None` for an
/// identity of more parts, or text `quote_identifier` does not write.
pub fn unquoted(identity: &str) -> Option<String> {
    let [name] = <[String; 1]>::try_from(identity_parts(identity)?).ok()?;
    Some(name)
}

/// The name and table of a trigger's, policy's or rule's identity (`name on schema.table`, as
/// `pg_identify_object` writes it); `None` for another form, or when there is no such table.
pub fn part_on(identity: &str) -> Option<(String, pg_sys::Oid)> {
    let (name, relation) = split_on(identity)?;
    Some((name, relation_named(relation)?))
}

/// The name, unquoted, and the rest of an identity of the form `name on rest` (a trigger's,
/// policy's or rule's on its table, a constraint's on its table or domain); `None` for another
/// form.
pub fn split_on(identity: &str) -> Option<(String, &str)> {
    // A name with a space is quoted, so " on " may occur inside it: the first occurrence
    // after which the text before is one whole name.
    identity
        .match_indices(" on ")
        .find_map(|(at, on)| Some((unquoted(&identity[..at])?, &identity[at + on.len()..])))
}

/// The schema named `name` (UTF-8, as events carry names), from the catalog caches; `None`
/// when there is none.
pub fn namespace_named(name: &str) -> Option<pg_sys::Oid> {
    // SAFETY: in the caller's transaction; a syscache lookup of a NUL-terminated name in the
    // database encoding, missing_ok.
    let namespace = unsafe {
        let name = crate::text::server_cstring(name)?;
        pg_sys::get_namespace_oid(name.as_ptr(), true)
    };
    (namespace != pg_sys::InvalidOid).then_some(namespace)
}

/// The relation named `name` (UTF-8) in schema `namespace`, from the catalog caches; `None`
/// when there is none.
pub fn relation_in(namespace: pg_sys::Oid, name: &str) -> Option<pg_sys::Oid> {
    // SAFETY: as for [`namespace_named`].
    let relid = unsafe {
        let name = crate::text::server_cstring(name)?;
        pg_sys::get_relname_relid(name.as_ptr(), namespace)
    };
    (relid != pg_sys::InvalidOid).then_some(relid)
}

/// The parts of a dotted identity as `quote_identifier` writes each (`"a""b".c`: `a"b`, `c`);
/// `None` for text it does not write (an unclosed quote, an empty part).
pub fn identity_parts(identity: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut chars = identity.chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    '"' => break,
                    c => part.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' || c == '"' {
                    break;
                }
                part.push(c);
                chars.next();
            }
        }
        if part.is_empty() {
            return None;
        }
        parts.push(part);
        match chars.next() {
            None => return Some(parts),
            Some('.') => continue,
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::identity_parts as parts;

    fn owned(parts: &[&str]) -> Option<Vec<String>> {
        Some(parts.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn splits_identities_as_quote_identifier_writes_them() {
        assert_eq!(parts("public.t"), owned(&["public", "t"]));
        assert_eq!(
            parts("\"My Schema\".\"a\"\"b.c\""),
            owned(&["My Schema", "a\"b.c"])
        );
        assert_eq!(parts("public.t.col"), owned(&["public", "t", "col"]));
        assert_eq!(parts("t"), owned(&["t"]));
    }

    #[test]
    fn refuses_what_quote_identifier_does_not_write() {
        for bad in [
            "", ".", "a.", ".a", "\"a", "a\"b\"", "\"a\"b", "a..b", "\"\".a",
        ] {
            assert_eq!(parts(bad), None, "{bad:?}");
        }
    }
}
