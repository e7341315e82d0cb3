//! Rule sets: built (and their patterns compiled) once, asked once per statement.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::candidate::DdlCandidate;
use crate::classify::{classify, Classification, NotReplicated};
use crate::error::{Error, ErrorKind, Location};
use crate::filter::Filter;
use crate::kind::DdlKinds;
use crate::normalize::{Case, Normalized};
use crate::pattern::TextMatcher;
use crate::rule::{Action, Condition, Rule};
use crate::syntax;

/// What a rule set decided about a statement, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The statement's kind is not among the rule set's kinds: not replicated, whatever the
    /// rules say.
    KindNotSelected,
    /// The first rule that matched, by its index in [`RuleSet::rules`], and its action.
    Matched {
        /// Index of the rule in [`RuleSet::rules`].
        rule: usize,
        /// What the rule does.
        action: Action,
    },
    /// The kind is selected and no rule matched: replicated.
    NoRuleMatched,
}

impl Decision {
    /// Whether the statement is replicated.
    pub fn replicate(self) -> bool {
        match self {
            Decision::KindNotSelected => false,
            Decision::Matched { action, .. } => action == Action::Include,
            Decision::NoRuleMatched => true,
        }
    }
}

/// A kind mask and an ordered list of include/exclude rules, ready to decide.
///
/// [`decide`](RuleSet::decide) works in this order:
/// 1. a statement whose kind is not in [`kinds`](RuleSet::kinds) is excluded
///    ([`Decision::KindNotSelected`]);
/// 2. otherwise the rules are tried in order and the **first that matches decides**
///    ([`Decision::Matched`]), as in `pg_hba.conf`;
/// 3. when none matches, the statement is included ([`Decision::NoRuleMatched`]). End with
///    `exclude kind = all` to turn that into "exclude unless included".
///
/// Its [`Display`](fmt::Display) is the canonical text form of the rules (one per line; the
/// kind mask is stored apart, as an integer), which [`RuleSetBuilder::text`] and [`FromStr`]
/// read back into the same rules.
#[derive(Clone)]
pub struct RuleSet {
    kinds: DdlKinds,
    rules: Vec<Rule>,
    tests: Vec<Test>,
}

impl RuleSet {
    /// The kinds this rule set lets through to its rules.
    pub fn kinds(&self) -> DdlKinds {
        self.kinds
    }

    /// The rules, in evaluation order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Decides whether to replicate a statement. Builds no strings: the tag is normalised on the
    /// stack and the regular expressions were compiled by [`RuleSetBuilder::build`].
    pub fn decide(&self, candidate: &DdlCandidate<'_>) -> Decision {
        if !self.kinds.contains(candidate.kind.kinds()) {
            tracing::trace!(tag = candidate.tag, kind = %candidate.kind, "DDL kind not selected");
            return Decision::KindNotSelected;
        }
        if self.rules.is_empty() {
            return Decision::NoRuleMatched;
        }
        let tag = Normalized::new(candidate.tag, Case::Upper);
        let tag = tag.as_ref().map(Normalized::as_str);
        for (index, (rule, test)) in self.rules.iter().zip(&self.tests).enumerate() {
            if test.matches(candidate, tag) {
                tracing::trace!(tag = candidate.tag, rule = index, action = %rule.action, "DDL rule matched");
                return Decision::Matched {
                    rule: index,
                    action: rule.action,
                };
            }
        }
        Decision::NoRuleMatched
    }
}

/// The kinds `all` names, no rules: replicates everything but the opt-in kinds.
impl Default for RuleSet {
    fn default() -> RuleSet {
        RuleSet {
            kinds: DdlKinds::ALL,
            rules: Vec::new(),
            tests: Vec::new(),
        }
    }
}

/// One rule per line, each ending in a newline; nothing for no rules.
impl fmt::Display for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.rules.iter().try_for_each(|rule| writeln!(f, "{rule}"))
    }
}

/// Reads rule text, with every kind selected and no filters registered.
impl FromStr for RuleSet {
    type Err = Error;

    fn from_str(text: &str) -> Result<RuleSet, Error> {
        RuleSetBuilder::new().text(text).build()
    }
}

impl fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleSet")
            .field("kinds", &self.kinds)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

/// Builds a [`RuleSet`]; reusable, in the style of grep's `RegexMatcherBuilder`.
///
/// Rules keep the order in which [`rule`](RuleSetBuilder::rule) and
/// [`text`](RuleSetBuilder::text) add them. Nothing is checked until
/// [`build`](RuleSetBuilder::build), which parses the texts and compiles every pattern.
#[derive(Clone)]
pub struct RuleSetBuilder {
    kinds: DdlKinds,
    items: Vec<Item>,
    filters: Vec<(String, Arc<dyn Filter>)>,
}

#[derive(Debug, Clone)]
enum Item {
    Rule(Rule),
    Text(String),
}

impl RuleSetBuilder {
    /// The kinds `all` names, no rules, no filters.
    pub fn new() -> RuleSetBuilder {
        RuleSetBuilder {
            kinds: DdlKinds::ALL,
            items: Vec::new(),
            filters: Vec::new(),
        }
    }

    /// Only statements of these kinds reach the rules (default: all kinds).
    pub fn kinds(&mut self, kinds: DdlKinds) -> &mut RuleSetBuilder {
        self.kinds = kinds;
        self
    }

    /// Adds a rule.
    pub fn rule(&mut self, rule: Rule) -> &mut RuleSetBuilder {
        self.items.push(Item::Rule(rule));
        self
    }

    /// Adds the rules written in `text` (see the crate README for the syntax). Errors name a
    /// line and column of this text.
    pub fn text(&mut self, text: &str) -> &mut RuleSetBuilder {
        self.items.push(Item::Text(text.to_owned()));
        self
    }

    /// Registers a filter for rules of the form `filter = 'name'`, replacing one registered
    /// earlier under the same name.
    pub fn filter<F: Filter + 'static>(&mut self, name: &str, filter: F) -> &mut RuleSetBuilder {
        let filter: Arc<dyn Filter> = Arc::new(filter);
        match self.filters.iter_mut().find(|(known, _)| known == name) {
            Some(slot) => slot.1 = filter,
            None => self.filters.push((name.to_owned(), filter)),
        }
        self
    }

    /// Parses the texts, checks every rule and compiles its pattern.
    pub fn build(&self) -> Result<RuleSet, Error> {
        let mut rules = Vec::new();
        let mut tests = Vec::new();
        for item in &self.items {
            match item {
                Item::Rule(rule) => {
                    let location = Location::Rule(rules.len());
                    tests.push(self.compile(rule).map_err(|e| Error::new(e).at(location))?);
                    rules.push(rule.clone());
                }
                Item::Text(text) => {
                    for (rule, location) in syntax::parse(text)? {
                        tests.push(
                            self.compile(&rule)
                                .map_err(|e| Error::new(e).at(location))?,
                        );
                        rules.push(rule);
                    }
                }
            }
        }
        tracing::debug!(kinds = %self.kinds, rules = rules.len(), "DDL rule set built");
        Ok(RuleSet {
            kinds: self.kinds,
            rules,
            tests,
        })
    }

    fn compile(&self, rule: &Rule) -> Result<Test, ErrorKind> {
        Ok(match &rule.condition {
            Condition::Kind(kinds) => Test::Kinds(*kinds),
            Condition::Tag(tag) => {
                let unknown = || ErrorKind::UnknownTag(tag.clone());
                if classify(tag) == Classification::NotReplicated(NotReplicated::UnknownTag) {
                    return Err(unknown());
                }
                let normal = Normalized::new(tag, Case::Upper).ok_or_else(unknown)?;
                Test::Tag(normal.as_str().to_owned())
            }
            Condition::Schema(pattern) => Test::Schema(TextMatcher::new(pattern)?),
            Condition::Identity(pattern) => Test::Identity(TextMatcher::new(pattern)?),
            Condition::Sql(pattern) => Test::Sql(TextMatcher::new(pattern)?),
            Condition::Filter(name) => self
                .filters
                .iter()
                .find(|(known, _)| known == name)
                .map(|(_, filter)| Test::Filter(Arc::clone(filter)))
                .ok_or_else(|| ErrorKind::UnknownFilter(name.clone()))?,
        })
    }
}

impl Default for RuleSetBuilder {
    fn default() -> RuleSetBuilder {
        RuleSetBuilder::new()
    }
}

impl fmt::Debug for RuleSetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleSetBuilder")
            .field("kinds", &self.kinds)
            .field("items", &self.items)
            .field(
                "filters",
                &self
                    .filters
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A rule's condition, compiled.
#[derive(Clone)]
enum Test {
    Kinds(DdlKinds),
    /// The normalised command tag.
    Tag(String),
    Schema(TextMatcher),
    Identity(TextMatcher),
    Sql(TextMatcher),
    Filter(Arc<dyn Filter>),
}

impl Test {
    /// `tag` is the candidate's normalised tag (`None` when it cannot be a command tag).
    fn matches(&self, candidate: &DdlCandidate<'_>, tag: Option<&str>) -> bool {
        match self {
            Test::Kinds(kinds) => kinds.contains(candidate.kind.kinds()),
            Test::Tag(wanted) => tag == Some(wanted.as_str()),
            Test::Schema(matcher) => candidate.schema.is_some_and(|s| matcher.is_match(s)),
            Test::Identity(matcher) => candidate.identity.is_some_and(|i| matcher.is_match(i)),
            Test::Sql(matcher) => matcher.is_match(candidate.sql),
            Test::Filter(filter) => filter.matches(candidate),
        }
    }
}
