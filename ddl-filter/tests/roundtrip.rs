//! Property tests with a small deterministic generator: rule text round trips, and no input
//! makes the parser or the classifier panic.

use ddl_filter::{
    classify, classify_object, Action, Condition, DdlCandidate, DdlKinds, Pattern, Rule, RuleSet,
    RuleSetBuilder,
};

/// xorshift64*: deterministic, so a failure names a case that can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn string(&mut self, pieces: &[&str], max: usize) -> String {
        (0..self.below(max + 1))
            .map(|_| self.pick(pieces))
            .collect()
    }
}

/// Pieces that stress the quoting: quotes, backslashes, line ends, comment signs, keywords,
/// non-ASCII and other whitespace.
const NASTY: &[&str] = &[
    "a", "Z", "9", "_", "%", ".", "'", "''", "\\", "\\\\", "\n", "\r\n", "\r", "\t", " ", "#", "=",
    "~", "~*", "*", "é", "日本", "\u{a0}", "😀", "\u{2028}", "\0", "like", "include", "--", "$$",
];

/// LIKE pieces: every `\` escapes something, so no pattern ends in a lone escape.
const LIKE: &[&str] = &[
    "a", "b", "%", "_", "\\%", "\\_", "\\\\", "\\'", "'", "\\\n", "\n", " ", "#", "é",
];

const REGEX: &[&str] = &[
    "^",
    "$",
    ".*",
    "[a-z]+",
    "\\.",
    "(?:x|y)",
    "\\bword\\b",
    "\\d{2,3}",
    "'",
    "#",
    "\n",
    " ",
    "é",
];

const FILTERS: &[&str] = &["big", "we'ird # name\nwith lines", "", "like"];

fn tags() -> Vec<&'static str> {
    include_str!("data/pg15_command_tags.txt")
        .lines()
        .filter(|tag| *tag != "???")
        .collect()
}

fn pattern(rng: &mut Rng) -> Pattern {
    match rng.below(4) {
        0 => Pattern::Equals(rng.string(NASTY, 8)),
        1 => Pattern::Like(rng.string(LIKE, 8)),
        2 => Pattern::Regex(regex_source(rng)),
        _ => Pattern::RegexCaseInsensitive(regex_source(rng)),
    }
}

fn regex_source(rng: &mut Rng) -> String {
    let mut source = regex::escape(&rng.string(NASTY, 4));
    source.push_str(&rng.string(REGEX, 4));
    source
}

fn condition(rng: &mut Rng, tags: &[&str]) -> Condition {
    match rng.below(6) {
        0 => Condition::Kind(DdlKinds::from_bits_truncate(rng.below(0x800) as i32)),
        1 => {
            // Any spelling PostgreSQL would accept as the same tag.
            let tag = rng.pick(tags);
            let spelled = match rng.below(3) {
                0 => tag.to_lowercase(),
                1 => format!(" {} ", tag.replace(' ', "\t ")),
                _ => tag.to_owned(),
            };
            Condition::Tag(spelled)
        }
        2 => Condition::Schema(pattern(rng)),
        3 => Condition::Identity(pattern(rng)),
        4 => Condition::Sql(pattern(rng)),
        _ => Condition::Filter(rng.pick(FILTERS).to_owned()),
    }
}

fn builder_with_filters() -> RuleSetBuilder {
    let mut builder = RuleSetBuilder::new();
    for name in FILTERS {
        builder.filter(name, |c: &DdlCandidate<'_>| c.sql.is_empty());
    }
    builder
}

#[test]
fn generated_rule_sets_round_trip_through_text() {
    let tags = tags();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..2000 {
        let mut builder = builder_with_filters();
        for _ in 0..rng.below(8) {
            let condition = condition(&mut rng, &tags);
            let action = if rng.below(2) == 0 {
                Action::Include
            } else {
                Action::Exclude
            };
            builder.rule(Rule { action, condition });
        }
        let set = builder
            .build()
            .unwrap_or_else(|e| panic!("case {case}: generated rules do not build: {e}"));

        let text = set.to_string();
        let back = builder_with_filters()
            .text(&text)
            .build()
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        assert_eq!(back.rules(), set.rules(), "case {case}:\n{text}");
        assert_eq!(
            back.to_string(),
            text,
            "case {case}: canonical text is stable"
        );
        assert_eq!(
            text.matches('\n').count(),
            set.rules().len()
                + set
                    .rules()
                    .iter()
                    .map(|r| r.to_string().matches('\n').count())
                    .sum::<usize>(),
            "case {case}: one rule per line, except newlines inside quoted values"
        );
    }
}

#[test]
fn single_rules_round_trip_through_their_line() {
    let tags = tags();
    let mut rng = Rng(42);
    for case in 0..2000 {
        let rule = Rule::exclude(condition(&mut rng, &tags));
        let line = rule.to_string();
        let set = builder_with_filters()
            .text(&line)
            .build()
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{line}"));
        assert_eq!(set.rules(), [rule], "case {case}: {line}");
    }
}

/// Garbage built from the syntax's own pieces: parsing never panics, and whatever parses
/// round-trips.
#[test]
fn arbitrary_text_never_panics() {
    const PIECES: &[&str] = &[
        "include",
        "exclude",
        "INCLUDE",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "kind",
        "tag",
        "schema",
        "identity",
        "sql",
        "filter",
        "=",
        "~",
        "~*",
        "like",
        "'",
        "''",
        "#",
        "\\",
        "table",
        "index, view",
        "all",
        "none",
        "GRANT",
        "CREATE TABLE",
        "big",
        "x",
        "(",
        "[",
        "%",
        "_",
        "é",
        "\u{a0}",
        "\0",
        ",",
    ];
    let mut rng = Rng(7);
    let mut parsed = 0;
    for _ in 0..20_000 {
        let text = rng.string(PIECES, 12);
        if let Ok(set) = builder_with_filters().text(&text).build() {
            parsed += 1;
            let again = builder_with_filters().text(&set.to_string()).build();
            assert_eq!(
                again.ok().map(|s| s.rules().to_vec()),
                Some(set.rules().to_vec()),
                "{text:?}"
            );
        }
        let _ = text.parse::<RuleSet>();
        let _ = DdlKinds::parse(&text);
        let _ = classify(&text);
        let _ = classify_object(&text, &text);
    }
    // The generator must reach the valid part of the language too.
    assert!(parsed > 100, "only {parsed} texts parsed");
}
