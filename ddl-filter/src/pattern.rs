//! Compiled text patterns: exact strings and regular expressions (LIKE becomes one).

use std::borrow::Cow;

use regex::{Regex, RegexBuilder};

use crate::error::ErrorKind;
use crate::rule::Pattern;

/// A [`Pattern`] ready to match.
#[derive(Debug, Clone)]
pub(crate) enum TextMatcher {
    Equals(String),
    Regex(Regex),
}

impl TextMatcher {
    pub(crate) fn new(pattern: &Pattern) -> Result<TextMatcher, ErrorKind> {
        let (given, source, case_insensitive) = match pattern {
            Pattern::Equals(text) => return Ok(TextMatcher::Equals(text.clone())),
            Pattern::Like(like) => (like, Cow::Owned(like_to_regex(like)?), false),
            Pattern::Regex(source) => (source, Cow::Borrowed(source.as_str()), false),
            Pattern::RegexCaseInsensitive(source) => (source, Cow::Borrowed(source.as_str()), true),
        };
        // A translated LIKE pattern escapes everything but `%` and `_`, so it can only fail on
        // the size limit; the error then names the user's pattern, not the translation.
        RegexBuilder::new(&source)
            .case_insensitive(case_insensitive)
            .build()
            .map(TextMatcher::Regex)
            .map_err(|e| ErrorKind::InvalidRegex {
                pattern: given.clone(),
                message: e.to_string(),
            })
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        match self {
            TextMatcher::Equals(expected) => text == expected,
            TextMatcher::Regex(regex) => regex.is_match(text),
        }
    }
}

/// SQL LIKE as an anchored regular expression: `%` → `.*`, `_` → `.`, `\x` → literal `x`, any
/// other character literal; `.` matches newlines too, as `%` and `_` do in PostgreSQL.
fn like_to_regex(like: &str) -> Result<String, ErrorKind> {
    let mut regex = String::with_capacity(like.len() + 8);
    regex.push_str("(?s)^");
    let mut chars = like.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => regex.push_str(".*"),
            '_' => regex.push('.'),
            '\\' => match chars.next() {
                Some(escaped) => push_literal(&mut regex, escaped),
                None => return Err(ErrorKind::InvalidLike(like.to_owned())),
            },
            _ => push_literal(&mut regex, c),
        }
    }
    regex.push('$');
    Ok(regex)
}

fn push_literal(regex: &mut String, c: char) {
    let mut buf = [0u8; 4];
    regex.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn like(pattern: &str, text: &str) -> bool {
        TextMatcher::new(&Pattern::Like(pattern.to_owned()))
            .map(|m| m.is_match(text))
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    #[test]
    fn like_follows_sql() {
        assert!(like("tmp%", "tmp"));
        assert!(like("tmp%", "tmp_2024"));
        assert!(!like("tmp%", "xtmp"));
        assert!(like("a_c", "abc"));
        assert!(like("a_c", "aéc"));
        assert!(!like("a_c", "abbc"));
        assert!(like("%", "line\nbreak"));
        assert!(like("a_b", "a\nb"));
        assert!(!like("audit", "Audit"));
        assert!(like("a.b*c", "a.b*c"));
        assert!(!like("a.b", "axb"));
        assert!(like(r"tmp\_%", "tmp_x"));
        assert!(!like(r"tmp\_%", "tmpxx"));
        assert!(like(r"100\%", "100%"));
        assert!(!like(r"100\%", "1000"));
        assert!(like(r"c:\\dir", r"c:\dir"));
        assert!(like("", ""));
        assert!(!like("", "x"));
    }

    #[test]
    fn like_rejects_a_trailing_escape() {
        for bad in [r"tmp\", r"\", r"a\\\"] {
            assert_eq!(
                TextMatcher::new(&Pattern::Like(bad.to_owned())).err(),
                Some(ErrorKind::InvalidLike(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn regexes_search_anywhere() {
        let m = TextMatcher::new(&Pattern::Regex(r"^public\.".into())).ok();
        assert!(m.as_ref().is_some_and(|m| m.is_match("public.orders")));
        assert!(m.as_ref().is_some_and(|m| !m.is_match("xpublic.orders")));
        let m = TextMatcher::new(&Pattern::RegexCaseInsensitive("concurrently".into())).ok();
        assert!(m.is_some_and(|m| m.is_match("CREATE INDEX CONCURRENTLY i ON t (a)")));
        assert!(matches!(
            TextMatcher::new(&Pattern::Regex("(".into())),
            Err(ErrorKind::InvalidRegex { pattern, .. }) if pattern == "("
        ));
    }
}
