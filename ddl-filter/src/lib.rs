//! DDL kinds, PostgreSQL command-tag classification and include/exclude rules for DDL
//! replication. Pure Rust: no PostgreSQL, no pgrx.
//!
//! Three layers, each usable alone:
//!
//! * [`DdlKinds`] is the `ddl` option of `CREATE PUBLICATION ... WITH (ddl = 'table, index')`:
//!   twelve kinds as bit flags whose values are a stored format, with the option's text syntax
//!   ([`DdlKinds::parse`], and [`Display`](std::fmt::Display) for the canonical form).
//! * [`classify`] and [`classify_object`] map every PostgreSQL 15 command tag (and, where the tag
//!   does not say, the type of the object changed) to a [`DdlKind`], or to the reason it is never
//!   replicated ([`NotReplicated`]). They run once per statement inside the server and never
//!   allocate.
//! * A [`RuleSet`], made by a [`RuleSetBuilder`], decides per statement ([`DdlCandidate`]) from a
//!   kind mask and ordered include/exclude [`Rule`]s on the kind, command tag, schema, object
//!   identity, statement text or a pluggable [`Filter`]. Its rules round-trip through a one
//!   rule per line text form, the one stored in `ddl_sync.publication_sync.pfsyncextra`.
//!
//! The README documents the tokens and bit values, the classification of every tag, the rule
//! syntax and the evaluation order.
//!
//! # Example
//!
//! ```
//! use ddl_filter::{classify, Action, Decision, DdlCandidate, DdlKinds, RuleSetBuilder};
//!
//! # fn main() -> Result<(), ddl_filter::Error> {
//! // What the publication stores: its `ddl` option and its rules.
//! let kinds: DdlKinds = "table, index".parse()?;
//! let rules = RuleSetBuilder::new()
//!     .kinds(kinds)
//!     .text("exclude schema = audit\nexclude sql ~* '\\bconcurrently\\b'  # replayed apart")
//!     .build()?;
//!
//! // What the capture sees for one statement.
//! let sql = "CREATE INDEX orders_day ON public.orders (day)";
//! let Some(kind) = classify("CREATE INDEX").kind() else {
//!     return Ok(()); // never replicated
//! };
//! let candidate = DdlCandidate {
//!     kind,
//!     tag: "CREATE INDEX",
//!     schema: Some("public"),
//!     identity: Some("public.orders_day"),
//!     sql,
//! };
//! assert_eq!(rules.decide(&candidate), Decision::NoRuleMatched);
//!
//! let audit = DdlCandidate { schema: Some("audit"), ..candidate };
//! let decision = rules.decide(&audit);
//! assert_eq!(decision, Decision::Matched { rule: 0, action: Action::Exclude });
//! assert!(!decision.replicate());
//! assert_eq!(rules.to_string().lines().next(), Some("exclude schema = 'audit'"));
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod candidate;
mod classify;
mod error;
mod filter;
mod kind;
mod normalize;
mod pattern;
mod rule;
mod ruleset;
mod syntax;

pub use crate::{
    candidate::DdlCandidate,
    classify::{classify, classify_object, Classification, NotReplicated},
    error::{Error, ErrorKind, Location},
    filter::Filter,
    kind::{DdlKind, DdlKinds},
    rule::{Action, Condition, Pattern, Rule},
    ruleset::{Decision, RuleSet, RuleSetBuilder},
};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
