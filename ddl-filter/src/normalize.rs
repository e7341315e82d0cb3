//! Case- and whitespace-insensitive names, normalised on the stack.
//!
//! Command tags and object types are compared once per DDL statement inside the server, so the
//! normal form is built in a fixed buffer instead of a `String`.

/// Room for the longest name worth comparing. PostgreSQL 15's longest command tag is 32 bytes
/// (`CREATE TEXT SEARCH CONFIGURATION`) and its longest object type 25 (`operator of access
/// method`); anything longer cannot match, so it is rejected instead of copied.
const CAPACITY: usize = 48;

/// Which case ASCII letters are folded to.
#[derive(Clone, Copy)]
pub(crate) enum Case {
    /// Command tags, written upper case by PostgreSQL.
    Upper,
    /// Object types, written lower case by `pg_identify_object()`.
    Lower,
}

/// The words of a name joined by single spaces, letters folded to one case.
pub(crate) struct Normalized {
    buf: [u8; CAPACITY],
    len: usize,
}

impl Normalized {
    /// `None` when the normal form would not fit or the name is not ASCII: no command tag or
    /// object type is either.
    pub(crate) fn new(name: &str, case: Case) -> Option<Normalized> {
        // One pass over the bytes (splitting into words first cost several times as much).
        let mut buf = [0u8; CAPACITY];
        let mut len = 0;
        let mut space = false;
        for &b in name.as_bytes() {
            if b.is_ascii_whitespace() {
                space = len > 0;
                continue;
            }
            if !b.is_ascii() {
                return None;
            }
            if std::mem::take(&mut space) {
                *buf.get_mut(len)? = b' ';
                len += 1;
            }
            *buf.get_mut(len)? = match case {
                Case::Upper => b.to_ascii_uppercase(),
                Case::Lower => b.to_ascii_lowercase(),
            };
            len += 1;
        }
        Some(Normalized { buf, len })
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII bytes were copied in, so this never falls back to "".
        self.buf
            .get(..self.len)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upper(name: &str) -> Option<String> {
        Normalized::new(name, Case::Upper).map(|n| n.as_str().to_owned())
    }

    #[test]
    fn folds_case_and_collapses_whitespace() {
        assert_eq!(
            upper(" create\t\n table  as ").as_deref(),
            Some("CREATE TABLE AS")
        );
        assert_eq!(
            Normalized::new("Parameter  ACL", Case::Lower)
                .as_ref()
                .map(Normalized::as_str),
            Some("parameter acl")
        );
        assert_eq!(upper("").as_deref(), Some(""));
        assert_eq!(upper(" \t ").as_deref(), Some(""));
    }

    #[test]
    fn rejects_what_cannot_match() {
        assert_eq!(upper("créate table"), None);
        assert_eq!(upper("CREATE\u{a0}TABLE"), None);
        let longest = "x".repeat(CAPACITY);
        assert_eq!(upper(&longest).map(|s| s.len()), Some(CAPACITY));
        assert_eq!(upper(&format!("{longest}x")), None);
        assert_eq!(upper(&format!("{longest} x")), None);
    }
}
