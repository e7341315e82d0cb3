//! Rule sets: evaluation order, the text syntax and its errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ddl_filter::{
    Action, Condition, DdlCandidate, DdlKind, DdlKinds, Decision, ErrorKind, Location, Pattern,
    Rule, RuleSet, RuleSetBuilder,
};

fn candidate(kind: DdlKind, schema: &'static str, name: &'static str) -> DdlCandidate<'static> {
    DdlCandidate {
        kind,
        tag: "CREATE TABLE",
        schema: Some(schema),
        identity: Some(name),
        sql: "CREATE TABLE x (a int)",
    }
}

fn rules(text: &str) -> RuleSet {
    text.parse()
        .unwrap_or_else(|e| panic!("{text:?} does not parse: {e}"))
}

fn matched(rule: usize, action: Action) -> Decision {
    Decision::Matched { rule, action }
}

#[test]
fn rule_sets_can_be_shared_between_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<RuleSet>();
    shared::<RuleSetBuilder>();
}

#[test]
fn no_rules_replicate_selected_kinds_only() {
    let all = RuleSet::default();
    let orders = candidate(DdlKind::Table, "public", "public.orders");
    assert_eq!(all.decide(&orders), Decision::NoRuleMatched);
    assert!(all.decide(&orders).replicate());

    let indexes = RuleSetBuilder::new().kinds(DdlKinds::INDEX).build();
    let indexes = indexes.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(indexes.decide(&orders), Decision::KindNotSelected);
    assert!(!indexes.decide(&orders).replicate());
    let index = candidate(DdlKind::Index, "public", "public.orders_pkey");
    assert_eq!(indexes.decide(&index), Decision::NoRuleMatched);
}

#[test]
fn kind_mask_comes_before_rules() {
    let set = RuleSetBuilder::new()
        .kinds(DdlKinds::TABLE)
        .text("include kind = all")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let view = candidate(DdlKind::View, "public", "public.v");
    assert_eq!(set.decide(&view), Decision::KindNotSelected);
    let table = candidate(DdlKind::Table, "public", "public.t");
    assert_eq!(set.decide(&table), matched(0, Action::Include));
}

#[test]
fn first_matching_rule_decides() {
    let keep = candidate(DdlKind::Table, "audit", "audit.keep");
    let other = candidate(DdlKind::Table, "audit", "audit.log");
    let public = candidate(DdlKind::Table, "public", "public.t");

    let exception_first = rules("include identity = audit.keep\nexclude schema = audit");
    assert_eq!(exception_first.decide(&keep), matched(0, Action::Include));
    assert_eq!(exception_first.decide(&other), matched(1, Action::Exclude));
    assert_eq!(exception_first.decide(&public), Decision::NoRuleMatched);

    // The same rules the other way round: the exception never gets a say.
    let general_first = rules("exclude schema = audit\ninclude identity = audit.keep");
    assert_eq!(general_first.decide(&keep), matched(0, Action::Exclude));
    assert!(!general_first.decide(&keep).replicate());
}

#[test]
fn only_what_is_included() {
    let set = rules("include schema = public\nexclude kind = all");
    assert!(set
        .decide(&candidate(DdlKind::Table, "public", "public.t"))
        .replicate());
    let app = candidate(DdlKind::Sequence, "app", "app.s");
    assert_eq!(set.decide(&app), matched(1, Action::Exclude));
}

#[test]
fn kind_and_tag_rules() {
    let set = rules("exclude kind = 'trigger, rule'\nexclude tag = 'create table as'");
    let trigger = candidate(DdlKind::Trigger, "public", "t on public.x");
    assert_eq!(set.decide(&trigger), matched(0, Action::Exclude));
    let ctas = DdlCandidate {
        tag: "CREATE  TABLE AS",
        ..candidate(DdlKind::Table, "public", "public.x")
    };
    assert_eq!(set.decide(&ctas), matched(1, Action::Exclude));
    let create = candidate(DdlKind::Table, "public", "public.x");
    assert_eq!(set.decide(&create), Decision::NoRuleMatched);
}

#[test]
fn missing_schema_or_identity_never_matches() {
    let set = rules("exclude schema ~ '.*'\nexclude identity like '%'\ninclude kind = all");
    let anonymous = DdlCandidate {
        schema: None,
        identity: None,
        ..candidate(DdlKind::Schema, "", "")
    };
    assert_eq!(set.decide(&anonymous), matched(2, Action::Include));
    let with_schema = DdlCandidate {
        identity: None,
        ..candidate(DdlKind::Table, "s", "")
    };
    assert_eq!(set.decide(&with_schema), matched(0, Action::Exclude));
}

#[test]
fn operators() {
    let set = rules(concat!(
        "exclude schema like 'tmp\\_%'\n",
        "exclude identity ~ '^public\\.scratch_'\n",
        "exclude sql ~* '\\bconcurrently\\b'\n",
        "exclude schema = Audit\n",
    ));
    let decide = |schema: &'static str, identity: &'static str, sql: &'static str| {
        set.decide(&DdlCandidate {
            sql,
            ..candidate(DdlKind::Index, schema, identity)
        })
    };
    let plain = "CREATE INDEX i ON t (a)";
    assert_eq!(
        decide("tmp_1", "tmp_1.i", plain),
        matched(0, Action::Exclude)
    );
    assert_eq!(decide("tmpx1", "tmpx1.i", plain), Decision::NoRuleMatched);
    assert_eq!(
        decide("public", "public.scratch_i", plain),
        matched(1, Action::Exclude)
    );
    assert_eq!(
        decide("public", "xpublic.scratch_i", plain),
        Decision::NoRuleMatched
    );
    let concurrently = "create index Concurrently i on t (a)";
    assert_eq!(
        decide("public", "public.i", concurrently),
        matched(2, Action::Exclude)
    );
    let word_inside = "CREATE INDEX nonconcurrently ON t (a)";
    assert_eq!(
        decide("public", "public.i", word_inside),
        Decision::NoRuleMatched
    );
    // Bare words are names, taken as written: no case folding.
    assert_eq!(
        decide("Audit", "Audit.i", plain),
        matched(3, Action::Exclude)
    );
    assert_eq!(decide("audit", "audit.i", plain), Decision::NoRuleMatched);
}

#[test]
fn filters_are_called_in_order_and_by_name() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let set = RuleSetBuilder::new()
        .text("include schema = keep\nexclude filter = big\nexclude filter = 'dropped'")
        .filter("big", move |c: &DdlCandidate<'_>| {
            counted.fetch_add(1, Ordering::Relaxed);
            c.sql.len() > 30
        })
        .filter("dropped", |c: &DdlCandidate<'_>| c.sql.starts_with("DROP"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    let small = candidate(DdlKind::Table, "public", "public.x");
    let big = DdlCandidate {
        sql: "CREATE TABLE x (a int, b int, c int)",
        ..small
    };
    let kept = DdlCandidate {
        schema: Some("keep"),
        ..big
    };
    let drop = DdlCandidate {
        sql: "DROP TABLE x",
        ..small
    };
    assert_eq!(set.decide(&kept), matched(0, Action::Include));
    assert_eq!(
        calls.load(Ordering::Relaxed),
        0,
        "an earlier match stops evaluation"
    );
    assert_eq!(set.decide(&big), matched(1, Action::Exclude));
    assert_eq!(set.decide(&small), Decision::NoRuleMatched);
    assert_eq!(set.decide(&drop), matched(2, Action::Exclude));
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}

#[test]
fn registering_a_filter_again_replaces_it() {
    let set = RuleSetBuilder::new()
        .filter("f", |_: &DdlCandidate<'_>| false)
        .filter("f", |_: &DdlCandidate<'_>| true)
        .text("exclude filter = f")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let c = candidate(DdlKind::Table, "public", "public.x");
    assert_eq!(set.decide(&c), matched(0, Action::Exclude));
}

#[test]
fn builder_rules_and_text_keep_their_order() {
    let mut builder = RuleSetBuilder::new();
    builder
        .rule(Rule::exclude(Condition::Schema(Pattern::Equals(
            "a".into(),
        ))))
        .text("exclude schema = b\n\n# c next\nexclude schema = c")
        .rule(Rule::include(Condition::Kind(DdlKinds::all())));
    let set = builder.build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.rules().len(), 4);
    for (schema, rule) in [("a", 0), ("b", 1), ("c", 2), ("d", 3)] {
        let c = candidate(DdlKind::Table, schema, "x");
        assert_eq!(set.decide(&c).replicate(), rule == 3, "{schema}");
        assert!(matches!(set.decide(&c), Decision::Matched { rule: r, .. } if r == rule));
    }
    // The builder is reusable: building again gives the same rules.
    let again = builder.build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.rules(), set.rules());
}

#[test]
fn text_syntax_variants() {
    let expected = [
        Rule::exclude(Condition::Schema(Pattern::Equals("audit".into()))),
        Rule::include(Condition::Identity(Pattern::Regex(r"^public\.".into()))),
        Rule::exclude(Condition::Sql(Pattern::RegexCaseInsensitive(
            "CONCURRENTLY".into(),
        ))),
        Rule::exclude(Condition::Schema(Pattern::Like("tmp%".into()))),
        Rule::exclude(Condition::Schema(Pattern::Equals("like".into()))),
        Rule::exclude(Condition::Schema(Pattern::Equals("likes".into()))),
        Rule::exclude(Condition::Kind(DdlKinds::INDEX | DdlKinds::TRIGGER)),
        Rule::exclude(Condition::Kind(DdlKinds::INDEX | DdlKinds::TRIGGER)),
        Rule::exclude(Condition::Tag("GRANT".into())),
        Rule::exclude(Condition::Identity(Pattern::Equals(
            "it's\n# not a comment".into(),
        ))),
        Rule::include(Condition::Sql(Pattern::Like("a\\b".into()))),
    ];
    let text = concat!(
        "  # leading comment\r\n",
        "exclude schema audit\r\n",
        "INCLUDE Identity ~ '^public\\.'   # trailing comment\n",
        "\n",
        "\t exclude sql ~*'CONCURRENTLY'\n",
        "exclude schema LIKE tmp%\n",
        "exclude schema like\n",
        "exclude schema likes # a bare word\n",
        "exclude kind index,trigger\n",
        "exclude kind Index , TRIGGER  # the ddl option's own syntax\n",
        "exclude tag=GRANT\n",
        "exclude identity = 'it''s\n",
        "# not a comment'\n",
        "include sql like 'a\\b'",
    );
    assert_eq!(rules(text).rules(), expected);
}

#[test]
fn canonical_text() {
    let set = rules(concat!(
        "exclude schema audit\n",
        "exclude kind index,trigger\n",
        "include sql ~* 'it''s'\n",
        "exclude tag = 'create table as'\n",
    ));
    assert_eq!(
        set.to_string(),
        concat!(
            "exclude schema = 'audit'\n",
            "exclude kind = 'index, trigger'\n",
            "include sql ~* 'it''s'\n",
            "exclude tag = 'create table as'\n",
        )
    );
    assert_eq!(RuleSet::default().to_string(), "");
    assert_eq!(rules("  # only a comment\n\n").rules(), []);
}

/// The error for `text`: its kind, and where.
fn error(text: &str) -> (ErrorKind, Option<Location>, String) {
    match text.parse::<RuleSet>() {
        Ok(set) => panic!("{text:?} parsed as {set:?}"),
        Err(e) => (e.kind().clone(), e.location(), e.to_string()),
    }
}

fn at(line: usize, column: usize) -> Option<Location> {
    Some(Location::Text { line, column })
}

fn syntax(expected: &'static str, found: &str) -> ErrorKind {
    ErrorKind::Syntax {
        expected,
        found: found.to_owned(),
    }
}

#[test]
fn syntax_errors_name_line_and_column() {
    let subjects = "kind, tag, schema, identity, sql or filter";
    let (kind, location, message) = error("exclude schema = a\ninclde schema = b");
    assert_eq!(kind, syntax("include or exclude", "\"inclde\""));
    assert_eq!(location, at(2, 1));
    assert_eq!(
        message,
        "line 2, column 1: expected include or exclude, found \"inclde\""
    );

    let (kind, location, message) = error("# rules\n  exclude  schemas = b");
    assert_eq!(kind, syntax(subjects, "\"schemas\""));
    assert_eq!(location, at(2, 12));
    assert_eq!(
        message,
        format!("line 2, column 12: expected {subjects}, found \"schemas\"")
    );

    let only_equals = "= (kind, tag and filter rules take no other operator)";
    let (kind, location, _) = error("exclude kind ~ index");
    assert_eq!((kind, location), (syntax(only_equals, "\"~\""), at(1, 14)));
    let (kind, location, _) = error("exclude tag like 'GRANT'");
    assert_eq!(
        (kind, location),
        (syntax(only_equals, "\"like\""), at(1, 13))
    );

    let value = "a value (a quoted string or a word)";
    let (kind, location, _) = error("exclude schema =");
    assert_eq!((kind, location), (syntax(value, "end of text"), at(1, 17)));
    let (kind, location, _) = error("exclude schema = # no value\n");
    assert_eq!((kind, location), (syntax(value, "\"#\""), at(1, 18)));
    let (kind, location, _) = error("exclude schema\nexclude kind = all");
    assert_eq!((kind, location), (syntax(value, "end of line"), at(1, 15)));

    let (kind, location, _) = error("exclude sql ~ 'never\nclosed");
    assert_eq!(
        (kind, location),
        (
            syntax("a closing quote for the value starting here", "\"'never\""),
            at(1, 15)
        )
    );

    let eol = "end of line (quote values that contain blanks)";
    let (kind, location, _) = error("exclude schema my schema");
    assert_eq!((kind, location), (syntax(eol, "\"schema\""), at(1, 19)));
    let (kind, location, _) = error("exclude kind table 'index'");
    assert_eq!((kind, location), (syntax(eol, "\"'index'\""), at(1, 20)));
    let (kind, location, _) = error("exclude schema 'a' 'b'");
    assert_eq!((kind, location), (syntax(eol, "\"'b'\""), at(1, 20)));

    // Columns count characters, not bytes.
    let (_, location, _) = error("exclude schema = 'é' x");
    assert_eq!(location, at(1, 22));
}

#[test]
fn value_errors_point_at_the_value() {
    let (kind, location, message) = error("exclude schema = a\nexclude kind = 'table, tabel'");
    assert_eq!(kind, ErrorKind::UnknownKind("tabel".into()));
    assert_eq!(location, at(2, 16));
    assert!(message.starts_with("line 2, column 16: unknown ddl kind \"tabel\" (valid: table,"));

    let (kind, location, _) = error("exclude kind = 'none, table'");
    assert_eq!((kind, location), (ErrorKind::NoneWithOtherKinds, at(1, 16)));

    let (kind, location, message) = error("\n\nexclude tag = 'CREATE TABLES'");
    assert_eq!(kind, ErrorKind::UnknownTag("CREATE TABLES".into()));
    assert_eq!(location, at(3, 15));
    assert_eq!(
        message,
        "line 3, column 15: unknown command tag \"CREATE TABLES\" (not a PostgreSQL 15 command tag)"
    );

    let (kind, location, _) = error("exclude filter = nobody");
    assert_eq!(
        (kind, location),
        (ErrorKind::UnknownFilter("nobody".into()), at(1, 18))
    );

    let (kind, location, message) = error("include sql ~  '(unclosed'");
    assert!(
        matches!(&kind, ErrorKind::InvalidRegex { pattern, .. } if pattern == "(unclosed"),
        "{kind:?}"
    );
    assert_eq!(location, at(1, 16));
    assert!(message.starts_with("line 1, column 16: invalid regular expression \"(unclosed\": "));

    let (kind, location, _) = error("exclude schema like 'tmp\\'");
    assert_eq!(
        (kind, location),
        (ErrorKind::InvalidLike("tmp\\".into()), at(1, 21))
    );
}

#[test]
fn builder_rule_errors_name_the_rule() {
    let result = RuleSetBuilder::new()
        .text("exclude schema = a")
        .rule(Rule::exclude(Condition::Identity(Pattern::Regex(
            "[".into(),
        ))))
        .build();
    let error = result.err();
    assert_eq!(
        error.as_ref().and_then(|e| e.location()),
        Some(Location::Rule(1))
    );
    assert!(error.is_some_and(|e| e
        .to_string()
        .starts_with("rule 1: invalid regular expression")));

    let result = RuleSetBuilder::new()
        .rule(Rule::include(Condition::Tag("???".into())))
        .build();
    assert_eq!(
        result.err().map(|e| (e.kind().clone(), e.location())),
        Some((ErrorKind::UnknownTag("???".into()), Some(Location::Rule(0))))
    );
}
