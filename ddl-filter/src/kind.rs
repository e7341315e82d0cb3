//! The twelve DDL kinds, their tokens and their bit values, and which of them `all` names.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};

/// One kind of DDL, as named by a token of the `ddl` option.
///
/// The discriminant is the bit number of the kind in [`DdlKinds`]; see there for why the order is
/// fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[repr(u8)]
pub enum DdlKind {
    /// `table`: tables and what hangs off them without a kind of its own (constraints, policies,
    /// extended statistics).
    Table = 0,
    /// `index`
    Index = 1,
    /// `sequence`
    Sequence = 2,
    /// `trigger`
    Trigger = 3,
    /// `view`: views and materialized views.
    View = 4,
    /// `rule`
    Rule = 5,
    /// `schema`
    Schema = 6,
    /// `function`: functions, procedures and aggregates.
    Function = 7,
    /// `type`: types and the type system around them (casts, collations, operators, text search).
    Type = 8,
    /// `domain`
    Domain = 9,
    /// `extension`: extensions, and the library-backed objects extensions create (languages,
    /// access methods).
    Extension = 10,
    /// `foreign`: foreign tables (`IMPORT FOREIGN SCHEMA` included), only when named: they
    /// work only where the server they name exists, and servers and user mappings (hosts and
    /// credentials) are never replicated. Not in `all`.
    Foreign = 11,
}

impl DdlKind {
    /// Every kind, in bit order.
    pub const ALL: &'static [DdlKind] = &[
        DdlKind::Table,
        DdlKind::Index,
        DdlKind::Sequence,
        DdlKind::Trigger,
        DdlKind::View,
        DdlKind::Rule,
        DdlKind::Schema,
        DdlKind::Function,
        DdlKind::Type,
        DdlKind::Domain,
        DdlKind::Extension,
        DdlKind::Foreign,
    ];

    /// The token that names this kind in the `ddl` option, e.g. `"table"`.
    pub const fn token(self) -> &'static str {
        match self {
            DdlKind::Table => "table",
            DdlKind::Index => "index",
            DdlKind::Sequence => "sequence",
            DdlKind::Trigger => "trigger",
            DdlKind::View => "view",
            DdlKind::Rule => "rule",
            DdlKind::Schema => "schema",
            DdlKind::Function => "function",
            DdlKind::Type => "type",
            DdlKind::Domain => "domain",
            DdlKind::Extension => "extension",
            DdlKind::Foreign => "foreign",
        }
    }

    /// The set holding only this kind.
    pub const fn kinds(self) -> DdlKinds {
        DdlKinds::from_bits_retain(1 << (self as u8))
    }
}

impl fmt::Display for DdlKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.token())
    }
}

impl From<DdlKind> for DdlKinds {
    fn from(kind: DdlKind) -> DdlKinds {
        kind.kinds()
    }
}

bitflags::bitflags! {
    /// A set of DDL kinds: the value of `CREATE PUBLICATION ... WITH (ddl = '...')`.
    ///
    /// **The bit values are a stored format and will not change**: the mask is kept in integer
    /// catalog columns (`ddl_sync.publication_sync.pfsyncddl`), so bit *i* is the *i*-th token
    /// of `table, index, sequence, trigger, view, rule, schema, function, type, domain,
    /// extension, foreign` (`TABLE = 1 << 0` … `FOREIGN = 1 << 11`). New kinds may only take
    /// new bits.
    ///
    /// Text form: [`DdlKinds::parse`] (also [`FromStr`]) reads a comma-separated list of tokens,
    /// ignoring case and surrounding whitespace, plus `all` (every kind but the opt-in ones,
    /// [`DdlKinds::ALL`]) and `none`; [`Display`](fmt::Display) writes the canonical form (bit
    /// order, `all` for the kinds it names, `none` for the empty set), so parsing what was
    /// written gives the same set back.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct DdlKinds: i32 {
        /// `table` (bit 0, value 1)
        const TABLE = 1 << 0;
        /// `index` (bit 1, value 2)
        const INDEX = 1 << 1;
        /// `sequence` (bit 2, value 4)
        const SEQUENCE = 1 << 2;
        /// `trigger` (bit 3, value 8)
        const TRIGGER = 1 << 3;
        /// `view` (bit 4, value 16)
        const VIEW = 1 << 4;
        /// `rule` (bit 5, value 32)
        const RULE = 1 << 5;
        /// `schema` (bit 6, value 64)
        const SCHEMA = 1 << 6;
        /// `function` (bit 7, value 128)
        const FUNCTION = 1 << 7;
        /// `type` (bit 8, value 256)
        const TYPE = 1 << 8;
        /// `domain` (bit 9, value 512)
        const DOMAIN = 1 << 9;
        /// `extension` (bit 10, value 1024)
        const EXTENSION = 1 << 10;
        /// `foreign` (bit 11, value 2048): opt-in, not in [`DdlKinds::ALL`]
        const FOREIGN = 1 << 11;
    }
}

impl DdlKinds {
    /// The kinds an option must name to get: `foreign`.
    pub const OPT_IN: DdlKinds = DdlKinds::FOREIGN;

    /// What `all` names: every kind but the opt-in ones.
    pub const ALL: DdlKinds = DdlKinds::all().difference(DdlKinds::OPT_IN);

    /// Parses the text of a `ddl` option, e.g. `"table, index"`, `"ALL"` or `"none"`.
    ///
    /// Tokens are separated by commas; case and whitespace around a token do not matter. `all`
    /// may be combined with other tokens (it already holds all but `foreign`); `none` must
    /// stand alone. An
    /// empty or unknown token is an error naming it and listing the valid tokens.
    pub fn parse(text: &str) -> Result<DdlKinds, Error> {
        let mut kinds = DdlKinds::empty();
        let mut saw_none = false;
        let mut tokens = 0;
        for token in text.split(',') {
            let token = token.trim();
            tokens += 1;
            if token.eq_ignore_ascii_case("all") {
                kinds |= DdlKinds::ALL;
            } else if token.eq_ignore_ascii_case("none") {
                saw_none = true;
            } else {
                let kind = DdlKind::ALL
                    .iter()
                    .find(|kind| kind.token().eq_ignore_ascii_case(token))
                    .ok_or_else(|| Error::new(ErrorKind::UnknownKind(token.to_owned())))?;
                kinds |= kind.kinds();
            }
        }
        if saw_none && tokens > 1 {
            return Err(Error::new(ErrorKind::NoneWithOtherKinds));
        }
        Ok(kinds)
    }

    /// The token of a set holding exactly one kind, e.g. `Some("index")`; `None` otherwise.
    pub fn token(self) -> Option<&'static str> {
        DdlKind::ALL
            .iter()
            .find(|kind| kind.kinds() == self)
            .map(|kind| kind.token())
    }

    /// The kinds in this set, in bit order.
    pub fn kinds(self) -> impl Iterator<Item = DdlKind> {
        DdlKind::ALL
            .iter()
            .copied()
            .filter(move |kind| self.contains(kind.kinds()))
    }
}

impl FromStr for DdlKinds {
    type Err = Error;

    fn from_str(text: &str) -> Result<DdlKinds, Error> {
        DdlKinds::parse(text)
    }
}

/// The canonical text: tokens in bit order separated by `", "`, `all` for the kinds it names
/// (then the opt-in ones that are set: `all, foreign`), `none` when none is. Bits outside the
/// twelve kinds (only [`DdlKinds::from_bits_retain`] can set them) are not written.
impl fmt::Display for DdlKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.contains(DdlKinds::ALL) {
            f.write_str("all")?;
            return (*self & DdlKinds::OPT_IN)
                .kinds()
                .try_for_each(|kind| write!(f, ", {}", kind.token()));
        }
        let mut kinds = self.kinds();
        match kinds.next() {
            None => f.write_str("none"),
            Some(first) => {
                f.write_str(first.token())?;
                kinds.try_for_each(|kind| write!(f, ", {}", kind.token()))
            }
        }
    }
}

/// Checks a mask read from an integer column: bits outside the twelve kinds are an error naming
/// them (where [`DdlKinds::from_bits`] only says `None`).
impl TryFrom<i32> for DdlKinds {
    type Error = Error;

    fn try_from(mask: i32) -> Result<DdlKinds, Error> {
        DdlKinds::from_bits(mask).ok_or_else(|| Error::new(ErrorKind::UnknownBits(mask)))
    }
}
