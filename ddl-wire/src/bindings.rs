//! The `bindings` field of a record: what a statement bound by name where it ran.
//!
//! A subscriber replays the statement's text, so every name in it (a function, an operator, a
//! type, a collation, a relation) is looked up again in the subscriber's catalogs. PostgreSQL
//! picks a function or operator by the best match anywhere in the search_path, so a role that
//! may create objects in one of its schemas there can plant a better match
//! (`public.<>(varchar, varchar)` beats `pg_catalog.<>(text, text)` for a varchar column) and
//! the same text then runs that role's code. The capture lists what the objects the statement
//! made or changed refer to, and the functions it ran, by their identity as PostgreSQL writes
//! it (`operator public.<>(character varying,character varying)`); the subscriber describes
//! its replay the same way and refuses one that binds, or runs, what the publisher's did not.
//!
//! Built-in objects (OIDs below 16384, made by initdb) are not listed: they are the same on
//! every node of a major and no role can change them.
//!
//! The text: one identity per line, each line ending with a newline, in byte order without
//! repeats; a backslash is written `\\` and a newline inside an identity (a quoted name may
//! hold one) `\n`.

use std::collections::BTreeSet;
use std::fmt;

/// The field for `identities` (in any order, repeats allowed).
pub fn encode_bindings<S: AsRef<str>>(identities: impl IntoIterator<Item = S>) -> String {
    let sorted: BTreeSet<String> = identities
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect();
    let mut out = String::new();
    for identity in &sorted {
        for c in identity.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('\n');
    }
    out
}

/// The identities of a `bindings` field.
pub fn parse_bindings(field: &str) -> Result<BTreeSet<String>, BindingsError> {
    let mut identities = BTreeSet::new();
    let mut identity = String::new();
    let mut chars = field.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\n' => {
                identities.insert(std::mem::take(&mut identity));
            }
            '\\' => match chars.next() {
                Some((_, '\\')) => identity.push('\\'),
                Some((_, 'n')) => identity.push('\n'),
                _ => return Err(BindingsError { offset: at }),
            },
            c => identity.push(c),
        }
    }
    if identity.is_empty() {
        Ok(identities)
    } else {
        Err(BindingsError {
            offset: field.len(),
        })
    }
}

/// A `bindings` field that the capture did not write: a bad escape, or a last line without
/// its newline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindingsError {
    /// The byte where it goes wrong.
    pub offset: usize,
}

impl fmt::Display for BindingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the bindings field is malformed at byte {} (a bad escape or an unfinished line)",
            self.offset
        )
    }
}

impl std::error::Error for BindingsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_sorted_without_repeats() {
        let field = encode_bindings([
            "type public.money",
            "operator public.<>(character varying,character varying)",
            "type public.money",
            "function public.\"a\nb\\\"()",
        ]);
        assert_eq!(
            field,
            "function public.\"a\\nb\\\\\"()\n\
             operator public.<>(character varying,character varying)\n\
             type public.money\n"
        );
        let back = parse_bindings(&field).unwrap();
        assert_eq!(back.len(), 3);
        assert!(back.contains("function public.\"a\nb\\\"()"));
        assert!(back.contains("type public.money"));
    }

    #[test]
    fn nothing_is_the_empty_field() {
        assert_eq!(encode_bindings(Vec::<&str>::new()), "");
        assert!(parse_bindings("").unwrap().is_empty());
    }

    #[test]
    fn malformed_fields_name_the_byte() {
        assert_eq!(parse_bindings("a\\x\n"), Err(BindingsError { offset: 1 }));
        assert_eq!(parse_bindings("a\\"), Err(BindingsError { offset: 1 }));
        assert_eq!(parse_bindings("a\nb"), Err(BindingsError { offset: 3 }));
        assert!(parse_bindings("a\nb")
            .unwrap_err()
            .to_string()
            .contains("byte 3"));
    }
}
