//! The text forms of the catalog's two configuration columns, as SQL functions: the DDL kind mask
//! (`pfsyncddl`, the `ddl = '...'` option's tokens) and the rules (`pfsyncextra`). Both are
//! ddl-filter's own parsers and messages, so the SQL interface, the capture hook and the output
//! plugin accept exactly the same text.

use ddl_filter::{DdlKinds, ErrorKind, RuleSet};
use pgrx::prelude::*;

/// Reads a `ddl` option (`'table, index'`, `'all'`, `'none'`) into its stored mask.
///
/// Errors: SQLSTATE `invalid_parameter_value` with ddl-filter's message, e.g.
/// `unknown ddl kind "tabel" (valid: table, index, ..., all, none)`.
#[pg_extern(immutable, strict, parallel_safe)]
pub fn parse_ddl_kinds(ddl: &str) -> i32 {
    ddl_mask(ddl)
}

/// Writes a stored mask as its canonical tokens (`'table, index'`, `'all'`, `'none'`).
///
/// Errors: SQLSTATE `invalid_parameter_value` for bits outside the eleven kinds.
#[pg_extern(immutable, strict, parallel_safe)]
pub fn format_ddl_kinds(mask: i32) -> String {
    match DdlKinds::try_from(mask) {
        Ok(kinds) => kinds.to_string(),
        Err(e) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                e.to_string()
            );
        }
    }
}

/// Checks rule text and returns its canonical form (what the catalog stores: one rule per line,
/// comments and bare words rewritten), or NULL when the text holds no rule.
///
/// Errors, with ddl-filter's message naming the line and column: SQLSTATE `syntax_error` when
/// the text does not follow the rule syntax, `invalid_parameter_value` when a rule is well formed
/// but unusable (unknown command tag, invalid regular expression or LIKE pattern, or a `filter`
/// rule: no filter is registered in the server).
#[pg_extern(immutable, strict, parallel_safe)]
pub fn parse_ddl_rules(rules: &str) -> Option<String> {
    rules_text(rules)
}

/// [`parse_ddl_kinds`] for Rust callers.
pub(crate) fn ddl_mask(ddl: &str) -> i32 {
    match DdlKinds::parse(ddl) {
        Ok(kinds) => kinds.bits(),
        Err(e) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                e.to_string()
            );
        }
    }
}

/// [`parse_ddl_rules`] for Rust callers.
pub(crate) fn rules_text(rules: &str) -> Option<String> {
    match rules.parse::<RuleSet>() {
        Ok(set) if set.rules().is_empty() => None,
        // Display ends every rule with a newline; the stored text only separates them.
        Ok(set) => Some(set.to_string().trim_end_matches('\n').to_owned()),
        Err(e) => {
            let code = match e.kind() {
                ErrorKind::Syntax { .. } => PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
                _ => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            };
            ereport!(ERROR, code, e.to_string());
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[path = "kinds_tests.rs"]
mod kinds_tests;
