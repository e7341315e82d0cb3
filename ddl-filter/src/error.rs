//! The crate's one error type.

use std::fmt;

use crate::kind::{DdlKind, DdlKinds};

/// An error from parsing a `ddl` option, a kind mask or rule text, or from building a rule set.
///
/// Its message names what was wrong and, for rules, where: `line 3, column 18: ...` for rule
/// text, `rule 2: ...` (the index in [`RuleSet::rules`](crate::RuleSet::rules)) for a rule given
/// to the builder as a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    location: Option<Location>,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A token of a `ddl` option that names no kind; it is empty for an empty token (`'table,,index'`).
    UnknownKind(String),
    /// `none` combined with other tokens, e.g. `'none, table'`.
    NoneWithOtherKinds,
    /// A kind mask with bits outside the twelve kinds.
    UnknownBits(i32),
    /// Rule text that does not follow the syntax.
    Syntax {
        /// What the parser expected at this point.
        expected: &'static str,
        /// What it found instead (a token, or `end of line` / `end of text`).
        found: String,
    },
    /// A `tag` rule naming something that is not a PostgreSQL 15 command tag.
    UnknownTag(String),
    /// A `filter` rule naming a filter that was not registered with the builder.
    UnknownFilter(String),
    /// A regular expression that does not compile.
    InvalidRegex {
        /// The pattern as given.
        pattern: String,
        /// The regex crate's explanation.
        message: String,
    },
    /// A LIKE pattern ending in its escape character (`\`).
    InvalidLike(String),
}

/// Where an error was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// In rule text: 1-based line and column (counted in characters).
    Text {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
    },
    /// A rule given to the builder as a value, by its index in the built rule set.
    Rule(usize),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error {
            kind,
            location: None,
        }
    }

    pub(crate) fn at(mut self, location: Location) -> Error {
        self.location = Some(location);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Where, for errors in rules.
    pub fn location(&self) -> Option<Location> {
        self.location
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for Error {}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnknownKind(token) => {
                write!(f, "unknown ddl kind {token:?} (valid: ")?;
                for kind in DdlKind::ALL {
                    write!(f, "{}, ", kind.token())?;
                }
                f.write_str("all, none)")
            }
            ErrorKind::NoneWithOtherKinds => {
                f.write_str("ddl kind \"none\" cannot be combined with other kinds")
            }
            ErrorKind::UnknownBits(mask) => write!(
                f,
                "ddl kind mask {mask:#x} has bits outside the known kinds ({:#x})",
                DdlKinds::all().bits()
            ),
            ErrorKind::Syntax { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ErrorKind::UnknownTag(tag) => {
                write!(
                    f,
                    "unknown command tag {tag:?} (not a PostgreSQL 15 command tag)"
                )
            }
            ErrorKind::UnknownFilter(name) => write!(f, "no filter named {name:?} is registered"),
            ErrorKind::InvalidRegex { pattern, message } => {
                write!(f, "invalid regular expression {pattern:?}: {message}")
            }
            ErrorKind::InvalidLike(pattern) => write!(
                f,
                "invalid LIKE pattern {pattern:?}: it ends with the escape character \\"
            ),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Text { line, column } => write!(f, "line {line}, column {column}"),
            Location::Rule(index) => write!(f, "rule {index}"),
        }
    }
}
