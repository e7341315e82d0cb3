//! The statement a rule set decides about.

use crate::kind::DdlKind;

/// One captured DDL statement, borrowed from wherever it lives (the ProcessUtility hook, a
/// decoded record, a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DdlCandidate<'a> {
    /// Its kind, from [`classify`](crate::classify) or [`classify_object`](crate::classify_object).
    pub kind: DdlKind,
    /// The command tag, e.g. `CREATE TABLE`.
    pub tag: &'a str,
    /// The schema of the object, if it has one.
    pub schema: Option<&'a str>,
    /// The schema-qualified identity of the object as `pg_identify_object()` gives it, e.g.
    /// `public.orders`, if known.
    pub identity: Option<&'a str>,
    /// The statement text.
    pub sql: &'a str,
}
