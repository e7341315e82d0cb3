//! Pluggable tests for rules.

use crate::candidate::DdlCandidate;

/// A test written in code, used by rules of the form `exclude filter = 'name'` once registered
/// under that name with [`RuleSetBuilder::filter`](crate::RuleSetBuilder::filter).
///
/// Rules name filters instead of holding them so that a rule set stays plain text in the
/// catalog; whoever builds the rule set (an extension, a tool) supplies the code. Any
/// `Fn(&DdlCandidate<'_>) -> bool` closure is a filter.
///
/// It runs for every statement that reaches its rule, inside the server: keep it cheap, and do
/// not panic.
pub trait Filter: Send + Sync {
    /// Whether the rule naming this filter applies to the statement.
    fn matches(&self, candidate: &DdlCandidate<'_>) -> bool;
}

impl<F> Filter for F
where
    F: Fn(&DdlCandidate<'_>) -> bool + Send + Sync,
{
    fn matches(&self, candidate: &DdlCandidate<'_>) -> bool {
        self(candidate)
    }
}
