//! Reading the text form of rules (the writer is [`Rule`]'s `Display`).
//!
//! ```text
//! text      = { line } ;
//! line      = [ rule ] [ "#" comment ] ( newline | end of text ) ;
//! rule      = action subject [ operator ] value ;
//! action    = "include" | "exclude" ;                               (any case)
//! subject   = "kind" | "tag" | "schema" | "identity" | "sql" | "filter" ; (any case)
//! operator  = "=" | "like" | "~" | "~*" ;                            (default "=")
//! value     = "'" { character except "'" | "''" } "'"                (may span lines)
//!           | character except blank, "'" and "#", { same } ;       (a bare word)
//!                             (for kind: everything up to the end of the line or "#")
//! ```
//! Blanks (any whitespace but a newline: spaces, tabs, carriage returns...) may separate tokens.

use crate::error::{Error, ErrorKind, Location};
use crate::kind::DdlKinds;
use crate::rule::{Action, Condition, Pattern, Rule};

/// The rules of a text, each with the location of its value (where a bad pattern is reported).
pub(crate) fn parse(text: &str) -> Result<Vec<(Rule, Location)>, Error> {
    let mut cursor = Cursor::new(text);
    let mut rules = Vec::new();
    loop {
        cursor.skip_blanks();
        match cursor.peek() {
            None => return Ok(rules),
            Some('\n') => {
                cursor.bump();
            }
            Some('#') => cursor.skip_comment(),
            Some(_) => {
                rules.push(rule(&mut cursor)?);
                end_of_line(&mut cursor)?;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Subject {
    Kind,
    Tag,
    Schema,
    Identity,
    Sql,
    Filter,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equals,
    Like,
    Regex,
    RegexCaseInsensitive,
}

fn rule(cursor: &mut Cursor<'_>) -> Result<(Rule, Location), Error> {
    let start = *cursor;
    let action = match cursor.keyword().to_ascii_lowercase().as_str() {
        "include" => Action::Include,
        "exclude" => Action::Exclude,
        _ => return Err(syntax(&start, "include or exclude")),
    };

    cursor.skip_blanks();
    let start = *cursor;
    let subject = match cursor.keyword().to_ascii_lowercase().as_str() {
        "kind" => Subject::Kind,
        "tag" => Subject::Tag,
        "schema" => Subject::Schema,
        "identity" => Subject::Identity,
        "sql" => Subject::Sql,
        "filter" => Subject::Filter,
        _ => return Err(syntax(&start, "kind, tag, schema, identity, sql or filter")),
    };

    cursor.skip_blanks();
    let start = *cursor;
    let operator = operator(cursor);
    let text_only = matches!(subject, Subject::Kind | Subject::Tag | Subject::Filter);
    if text_only && operator != Operator::Equals {
        return Err(syntax(
            &start,
            "= (kind, tag and filter rules take no other operator)",
        ));
    }

    cursor.skip_blanks();
    let at = cursor.location();
    let value = value(cursor, subject == Subject::Kind)?;
    let condition = match subject {
        Subject::Kind => Condition::Kind(DdlKinds::parse(&value).map_err(|e| e.at(at))?),
        Subject::Tag => Condition::Tag(value),
        Subject::Filter => Condition::Filter(value),
        Subject::Schema => Condition::Schema(pattern(operator, value)),
        Subject::Identity => Condition::Identity(pattern(operator, value)),
        Subject::Sql => Condition::Sql(pattern(operator, value)),
    };
    Ok((Rule { action, condition }, at))
}

fn pattern(operator: Operator, value: String) -> Pattern {
    match operator {
        Operator::Equals => Pattern::Equals(value),
        Operator::Like => Pattern::Like(value),
        Operator::Regex => Pattern::Regex(value),
        Operator::RegexCaseInsensitive => Pattern::RegexCaseInsensitive(value),
    }
}

/// Takes an operator if there is one; none means `=`.
fn operator(cursor: &mut Cursor<'_>) -> Operator {
    match cursor.peek() {
        Some('=') => {
            cursor.bump();
            Operator::Equals
        }
        Some('~') => {
            cursor.bump();
            if cursor.peek() == Some('*') {
                cursor.bump();
                Operator::RegexCaseInsensitive
            } else {
                Operator::Regex
            }
        }
        _ => {
            // `like` is an operator only when a value follows it, so `schema like` still
            // means the schema named "like".
            let mut ahead = *cursor;
            let word = ahead.keyword();
            let value_follows = matches!(ahead.peek(), Some(c) if c == '\'' || is_blank(c));
            if word.eq_ignore_ascii_case("like") && value_follows {
                ahead.skip_blanks();
                if ahead.peek().is_some_and(|c| c != '\n' && c != '#') {
                    *cursor = ahead;
                    return Operator::Like;
                }
            }
            Operator::Equals
        }
    }
}

/// A quoted value, or a bare word; for `kind` the bare value runs to the end of the line (or a
/// comment), as the `ddl` option's own syntax allows blanks after its commas.
fn value(cursor: &mut Cursor<'_>, to_end_of_line: bool) -> Result<String, Error> {
    let start = *cursor;
    if cursor.peek() == Some('\'') {
        cursor.bump();
        let mut value = String::new();
        loop {
            match cursor.bump() {
                None => {
                    return Err(syntax(
                        &start,
                        "a closing quote for the value starting here",
                    ))
                }
                Some('\'') if cursor.peek() == Some('\'') => {
                    cursor.bump();
                    value.push('\'');
                }
                Some('\'') => return Ok(value),
                Some(c) => value.push(c),
            }
        }
    }
    let word = if to_end_of_line {
        cursor
            .take_while(|c| c != '\n' && c != '\'' && c != '#')
            .trim_end()
    } else {
        cursor.take_while(|c| !is_blank(c) && c != '\n' && c != '\'' && c != '#')
    };
    if word.is_empty() {
        return Err(syntax(&start, "a value (a quoted string or a word)"));
    }
    Ok(word.to_owned())
}

fn end_of_line(cursor: &mut Cursor<'_>) -> Result<(), Error> {
    cursor.skip_blanks();
    match cursor.peek() {
        None => Ok(()),
        Some('\n') => {
            cursor.bump();
            Ok(())
        }
        Some('#') => {
            cursor.skip_comment();
            Ok(())
        }
        Some(_) => Err(syntax(
            cursor,
            "end of line (quote values that contain blanks)",
        )),
    }
}

/// A syntax error at `at`, saying what is there.
fn syntax(at: &Cursor<'_>, expected: &'static str) -> Error {
    let found = match at.peek() {
        None => "end of text".to_owned(),
        Some('\n') => "end of line".to_owned(),
        Some(_) => {
            let token: String = at
                .rest
                .chars()
                .take_while(|c| !c.is_whitespace())
                .take(32)
                .collect();
            format!("{token:?}")
        }
    };
    Error::new(ErrorKind::Syntax { expected, found }).at(at.location())
}

/// Blanks separate tokens; a newline ends a rule.
fn is_blank(c: char) -> bool {
    c.is_whitespace() && c != '\n'
}

/// A position in the text, with its line and column for error messages.
#[derive(Clone, Copy)]
struct Cursor<'a> {
    rest: &'a str,
    line: usize,
    column: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            rest: text,
            line: 1,
            column: 1,
        }
    }

    fn location(&self) -> Location {
        Location::Text {
            line: self.line,
            column: self.column,
        }
    }

    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let mut chars = self.rest.chars();
        let c = chars.next()?;
        self.rest = chars.as_str();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let start = self.rest;
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
        start
            .get(..start.len() - self.rest.len())
            .unwrap_or_default()
    }

    /// A run of letters, digits and underscores (empty if none is next).
    fn keyword(&mut self) -> &'a str {
        self.take_while(|c| c.is_alphanumeric() || c == '_')
    }

    fn skip_blanks(&mut self) {
        self.take_while(is_blank);
    }

    fn skip_comment(&mut self) {
        self.take_while(|c| c != '\n');
    }
}
