//! A set of names as one text field: the format of the event's `bindings` (what a statement
//! bound by name where it ran, see ddl-server's `bindings`) and `sent_generated_columns` (the
//! stored generated columns whose values a stream sends).
//!
//! The text: one name per line, each line ending with a newline, in byte order without
//! repeats; a backslash is written `\\` and a newline inside a name (a quoted identifier may
//! hold one) `\n`. The empty field is the empty set.

use std::collections::BTreeSet;
use std::fmt;

/// The field for `names` (in any order, repeats allowed).
pub fn encode_name_set<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    let sorted: BTreeSet<String> = names.into_iter().map(|s| s.as_ref().to_string()).collect();
    let mut out = String::new();
    for name in &sorted {
        for c in name.chars() {
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

/// The names of a field that [`encode_name_set`] wrote.
pub fn parse_name_set(field: &str) -> Result<BTreeSet<String>, NameSetError> {
    let mut names = BTreeSet::new();
    let mut name = String::new();
    let mut chars = field.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\n' => {
                names.insert(std::mem::take(&mut name));
            }
            '\\' => match chars.next() {
                Some((_, '\\')) => name.push('\\'),
                Some((_, 'n')) => name.push('\n'),
                _ => return Err(NameSetError { offset: at }),
            },
            c => name.push(c),
        }
    }
    if name.is_empty() {
        Ok(names)
    } else {
        Err(NameSetError {
            offset: field.len(),
        })
    }
}

/// A field that [`encode_name_set`] did not write: a bad escape, or a last line without its
/// newline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameSetError {
    /// The byte where it goes wrong.
    pub offset: usize,
}

impl fmt::Display for NameSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the set of names is malformed at byte {} (a bad escape or an unfinished line)",
            self.offset
        )
    }
}

impl std::error::Error for NameSetError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_sorted_without_repeats() {
        let field = encode_name_set([
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
        let back = parse_name_set(&field).unwrap();
        assert_eq!(back.len(), 3);
        assert!(back.contains("function public.\"a\nb\\\"()"));
        assert!(back.contains("type public.money"));
    }

    #[test]
    fn nothing_is_the_empty_field() {
        assert_eq!(encode_name_set(Vec::<&str>::new()), "");
        assert!(parse_name_set("").unwrap().is_empty());
    }

    #[test]
    fn malformed_fields_name_the_byte() {
        assert_eq!(parse_name_set("a\\x\n"), Err(NameSetError { offset: 1 }));
        assert_eq!(parse_name_set("a\\"), Err(NameSetError { offset: 1 }));
        assert_eq!(parse_name_set("a\nb"), Err(NameSetError { offset: 3 }));
        assert!(parse_name_set("a\nb")
            .unwrap_err()
            .to_string()
            .contains("byte 3"));
    }
}
