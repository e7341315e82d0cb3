//! Rules as values: what a rule says, before its patterns are compiled.

use std::fmt;

use crate::kind::DdlKinds;

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Replicate the statement.
    Include,
    /// Do not replicate it.
    Exclude,
}

/// What a rule tests.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Condition {
    /// The statement's kind is one of these (`kind = 'index, trigger'`).
    Kind(DdlKinds),
    /// The command tag, compared ignoring case and whitespace (`tag = 'CREATE TABLE AS'`). Must
    /// be a PostgreSQL 15 command tag.
    Tag(String),
    /// The schema of the object (`schema like 'tmp%'`). Never matches a statement without one.
    Schema(Pattern),
    /// The schema-qualified identity of the object, as `pg_identify_object()` gives it
    /// (`identity ~ '^public\.'`). Never matches a statement without one.
    Identity(Pattern),
    /// The statement text (`sql ~* 'concurrently'`).
    Sql(Pattern),
    /// A [`Filter`](crate::Filter) registered with the builder under this name
    /// (`filter = 'big_tables'`).
    Filter(String),
}

/// How a text is matched.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pattern {
    /// `=`: the whole text, exactly (case matters).
    Equals(String),
    /// `like`: SQL LIKE. `%` is any run of characters, `_` any one character, `\` makes the
    /// next character literal; the whole text must match and case matters.
    Like(String),
    /// `~`: a regular expression (Rust `regex` syntax) found anywhere in the text.
    Regex(String),
    /// `~*`: like [`Pattern::Regex`], ignoring case.
    RegexCaseInsensitive(String),
}

/// One line of a rule set: when the condition holds, the action decides.
///
/// [`Display`](fmt::Display) writes the rule's canonical line, e.g.
/// `exclude schema = 'audit'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// What happens when the condition holds.
    pub action: Action,
    /// What is tested.
    pub condition: Condition,
}

impl Rule {
    /// A rule that replicates what matches.
    pub fn include(condition: Condition) -> Rule {
        Rule {
            action: Action::Include,
            condition,
        }
    }

    /// A rule that keeps what matches from being replicated.
    pub fn exclude(condition: Condition) -> Rule {
        Rule {
            action: Action::Exclude,
            condition,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Include => "include",
            Action::Exclude => "exclude",
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.action)?;
        match &self.condition {
            Condition::Kind(kinds) => write!(f, "kind = {}", Quoted(&kinds.to_string())),
            Condition::Tag(tag) => write!(f, "tag = {}", Quoted(tag)),
            Condition::Schema(pattern) => write!(f, "schema {pattern}"),
            Condition::Identity(pattern) => write!(f, "identity {pattern}"),
            Condition::Sql(pattern) => write!(f, "sql {pattern}"),
            Condition::Filter(name) => write!(f, "filter = {}", Quoted(name)),
        }
    }
}

/// The operator and the quoted value, e.g. `like 'tmp%'`.
impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (operator, value) = match self {
            Pattern::Equals(value) => ("=", value),
            Pattern::Like(value) => ("like", value),
            Pattern::Regex(value) => ("~", value),
            Pattern::RegexCaseInsensitive(value) => ("~*", value),
        };
        write!(f, "{operator} {}", Quoted(value))
    }
}

/// A value in SQL string syntax: between single quotes, a quote doubled, everything else
/// (backslashes, newlines) as it is.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("'")?;
        let mut parts = self.0.split('\'');
        if let Some(first) = parts.next() {
            f.write_str(first)?;
        }
        for part in parts {
            f.write_str("''")?;
            f.write_str(part)?;
        }
        f.write_str("'")
    }
}
