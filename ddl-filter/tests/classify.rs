//! Command tag classification: every PostgreSQL 15 tag, the README's tables, the hard cases.

use ddl_filter::{classify, classify_object, Classification, DdlKind, NotReplicated};

/// The tags of PostgreSQL 15's src/include/tcop/cmdtaglist.h, one per line, in its order.
const PG15_TAGS: &str = include_str!("data/pg15_command_tags.txt");

const README: &str = include_str!("../README.md");

fn pg15_tags() -> Vec<&'static str> {
    PG15_TAGS.lines().collect()
}

fn replicated(kind: DdlKind) -> Classification {
    Classification::Replicated(kind)
}

fn not(why: NotReplicated) -> Classification {
    Classification::NotReplicated(why)
}

#[test]
fn fixture_is_the_pg15_list() {
    let tags = pg15_tags();
    assert_eq!(tags.len(), 192);
    assert_eq!(tags.first(), Some(&"???"));
    assert!(tags.contains(&"MERGE"), "MERGE is new in 15");
    // PostgreSQL keeps the list sorted (it bsearches it); so do we, with no duplicates.
    assert!(tags.windows(2).all(|w| w[0] < w[1]));
}

/// When PostgreSQL 15's server headers are installed, the fixture must match them.
#[test]
fn fixture_matches_installed_headers() {
    let path = "/usr/include/postgresql/15/server/tcop/cmdtaglist.h";
    let Ok(header) = std::fs::read_to_string(path) else {
        eprintln!("{path} not found: fixture not re-checked");
        return;
    };
    let from_header: Vec<&str> = header
        .lines()
        .filter(|line| line.starts_with("PG_CMDTAG("))
        .filter_map(|line| line.split('"').nth(1))
        .collect();
    assert_eq!(from_header, pg15_tags());
}

#[test]
fn every_pg15_tag_is_classified() {
    for tag in pg15_tags() {
        let class = classify(tag);
        if tag == "???" {
            assert_eq!(class, not(NotReplicated::UnknownTag));
        } else {
            assert_ne!(class, not(NotReplicated::UnknownTag), "{tag} falls through");
        }
        // The same answer whatever the spelling.
        assert_eq!(classify(&tag.to_lowercase()), class, "{tag}");
        assert_eq!(
            classify(&format!(" \t{}\n", tag.replace(' ', "  "))),
            class,
            "{tag}"
        );
    }
}

#[test]
fn unknown_input_is_not_replicated() {
    let long = "CREATE ".repeat(100);
    for tag in [
        "",
        "   ",
        "CREATE",
        "CREATE TABLES",
        "CREATETABLE",
        "CREATE TABLE;",
        "ALTER PROPERTY GRAPH",
        "CRÉATE TABLE",
        "CREATE\u{a0}TABLE",
        "CREATE\0TABLE",
        long.as_str(),
    ] {
        assert_eq!(classify(tag), not(NotReplicated::UnknownTag), "{tag:?}");
        assert_eq!(
            classify_object(tag, "table"),
            not(NotReplicated::UnknownTag),
            "{tag:?}"
        );
    }
}

/// Rows of a README table between `<!-- name:begin -->` and `<!-- name:end -->`: the first
/// cell, and the backquoted entries of the second (with whether each was bold).
fn readme_table(name: &str) -> Vec<(String, Vec<(String, bool)>)> {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let body = README
        .split_once(begin.as_str())
        .and_then(|(_, rest)| rest.split_once(end.as_str()))
        .map(|(body, _)| body)
        .unwrap_or_else(|| panic!("README has no {name} table"));
    body.lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let class = cells[1].trim_matches('`').to_owned();
            let entries = cells[2]
                .split(", ")
                .map(|entry| {
                    let bold = entry.starts_with("**");
                    (entry.trim_matches('*').trim_matches('`').to_owned(), bold)
                })
                .collect();
            (class, entries)
        })
        .collect()
}

#[test]
fn readme_tag_table_matches_the_code() {
    let rows = readme_table("command-tags");
    let mut listed: Vec<&str> = Vec::new();
    for (class, tags) in &rows {
        for (tag, bold) in tags {
            assert_eq!(&classify(tag).to_string(), class, "README row for {tag}");
            // Bold tags, and only they, change with the object type.
            let follows_object = ["index", "view", "function", "schema"]
                .iter()
                .any(|object| classify_object(tag, object) != classify(tag));
            assert_eq!(*bold, follows_object, "README bold for {tag}");
            listed.push(tag);
        }
    }
    listed.sort_unstable();
    assert_eq!(
        listed,
        pg15_tags(),
        "README lists every PostgreSQL 15 tag exactly once"
    );
}

#[test]
fn readme_object_type_table_matches_the_code() {
    let rows = readme_table("object-types");
    assert!(rows.len() >= 15);
    for (class, objects) in rows {
        for (object, _) in objects {
            assert_eq!(
                classify_object("COMMENT", &object).to_string(),
                class,
                "{object}"
            );
            assert_eq!(
                classify_object("GRANT", &object.to_uppercase()).to_string(),
                class
            );
        }
    }
}

#[test]
fn alter_of_a_relation_follows_the_relation() {
    // Object types as PostgreSQL 15's pg_event_trigger_ddl_commands() reported them.
    let cases = [
        ("ALTER TABLE", "index", replicated(DdlKind::Index)),
        ("ALTER TABLE", "sequence", replicated(DdlKind::Sequence)),
        ("ALTER TABLE", "view", replicated(DdlKind::View)),
        (
            "ALTER TABLE",
            "materialized view",
            replicated(DdlKind::View),
        ),
        ("ALTER TABLE", "foreign table", replicated(DdlKind::Foreign)),
        ("ALTER TABLE", "table", replicated(DdlKind::Table)),
        (
            "ALTER TABLE",
            "table constraint",
            replicated(DdlKind::Table),
        ),
        ("ALTER INDEX", "table", replicated(DdlKind::Table)),
        ("ALTER VIEW", "view", replicated(DdlKind::View)),
        ("alter  table", "INDEX", replicated(DdlKind::Index)),
        // Unknown object types leave the tag's kind.
        (
            "ALTER TABLE",
            "partitioned thing",
            replicated(DdlKind::Table),
        ),
        ("ALTER TABLE", "", replicated(DdlKind::Table)),
        ("ALTER SEQUENCE", "séquence", replicated(DdlKind::Sequence)),
    ];
    for (tag, object, expected) in cases {
        assert_eq!(classify_object(tag, object), expected, "{tag} on {object}");
    }
}

#[test]
fn other_tags_ignore_the_object_type() {
    // pg_identify_object() calls a domain "type"; the tag must win.
    assert_eq!(
        classify_object("CREATE DOMAIN", "type"),
        replicated(DdlKind::Domain)
    );
    assert_eq!(
        classify_object("ALTER DOMAIN", "type"),
        replicated(DdlKind::Domain)
    );
    assert_eq!(
        classify_object("CREATE TABLE AS", "table"),
        replicated(DdlKind::Table)
    );
    assert_eq!(
        classify_object("CREATE TRIGGER", "table"),
        replicated(DdlKind::Trigger)
    );
    assert_eq!(
        classify_object("REFRESH MATERIALIZED VIEW", "table"),
        replicated(DdlKind::View)
    );
    assert_eq!(
        classify_object("DROP OWNED", "table"),
        not(NotReplicated::RoleWide)
    );
    assert_eq!(
        classify_object("VACUUM", "table"),
        not(NotReplicated::Maintenance)
    );
    for tag in pg15_tags() {
        let class = classify(tag);
        if class != not(NotReplicated::UnknownObjectType) && !tag.starts_with("ALTER ") {
            assert_eq!(classify_object(tag, "schema"), class, "{tag}");
        }
    }
}

#[test]
fn object_dependent_tags() {
    let cases = [
        ("COMMENT", "table", replicated(DdlKind::Table)),
        ("COMMENT", "table column", replicated(DdlKind::Table)),
        ("COMMENT", "view column", replicated(DdlKind::View)),
        (
            "COMMENT",
            "composite type column",
            replicated(DdlKind::Type),
        ),
        ("COMMENT", "domain constraint", replicated(DdlKind::Domain)),
        ("COMMENT", "trigger", replicated(DdlKind::Trigger)),
        ("COMMENT", "rule", replicated(DdlKind::Rule)),
        ("COMMENT", "aggregate", replicated(DdlKind::Function)),
        ("COMMENT", "statistics object", replicated(DdlKind::Table)),
        ("COMMENT", "large object", not(NotReplicated::LargeObject)),
        ("COMMENT", "event trigger", not(NotReplicated::EventTrigger)),
        (
            "SECURITY LABEL",
            "materialized view",
            replicated(DdlKind::View),
        ),
        ("SECURITY LABEL", "role", not(NotReplicated::GlobalObject)),
        ("GRANT", "TABLE", replicated(DdlKind::Table)),
        ("GRANT", "FOREIGN SERVER", not(NotReplicated::ForeignData)),
        ("GRANT", "LARGE OBJECT", not(NotReplicated::LargeObject)),
        ("REVOKE", "DOMAIN", replicated(DdlKind::Domain)),
        ("REVOKE", "LANGUAGE", replicated(DdlKind::Extension)),
        ("GRANT", "PARAMETER", not(NotReplicated::GlobalObject)),
        (
            "ALTER DEFAULT PRIVILEGES",
            "SCHEMAS",
            replicated(DdlKind::Schema),
        ),
        (
            "ALTER DEFAULT PRIVILEGES",
            "FUNCTIONS",
            replicated(DdlKind::Function),
        ),
        (
            "ALTER DEFAULT PRIVILEGES",
            "SEQUENCES",
            replicated(DdlKind::Sequence),
        ),
        // Without a recognised object, never replicated.
        ("COMMENT", "", not(NotReplicated::UnknownObjectType)),
        (
            "GRANT",
            "default acl",
            not(NotReplicated::UnknownObjectType),
        ),
        (
            "GRANT",
            "schema column",
            not(NotReplicated::UnknownObjectType),
        ),
        ("REVOKE", "tablé", not(NotReplicated::UnknownObjectType)),
    ];
    for (tag, object, expected) in cases {
        assert_eq!(
            classify_object(tag, object),
            expected,
            "{tag} on {object:?}"
        );
    }
}

#[test]
fn hard_cases_by_tag() {
    let cases = [
        ("CREATE TABLE AS", replicated(DdlKind::Table)),
        ("SELECT INTO", replicated(DdlKind::Table)),
        ("CREATE MATERIALIZED VIEW", replicated(DdlKind::View)),
        ("CREATE POLICY", replicated(DdlKind::Table)),
        ("CREATE STATISTICS", replicated(DdlKind::Table)),
        ("CREATE AGGREGATE", replicated(DdlKind::Function)),
        ("CREATE PROCEDURE", replicated(DdlKind::Function)),
        ("CREATE OPERATOR CLASS", replicated(DdlKind::Type)),
        ("CREATE CAST", replicated(DdlKind::Type)),
        ("CREATE TEXT SEARCH DICTIONARY", replicated(DdlKind::Type)),
        ("CREATE ACCESS METHOD", replicated(DdlKind::Extension)),
        ("CREATE LANGUAGE", replicated(DdlKind::Extension)),
        ("ALTER EXTENSION", replicated(DdlKind::Extension)),
        ("CREATE EVENT TRIGGER", not(NotReplicated::EventTrigger)),
        ("CREATE PUBLICATION", not(NotReplicated::Replication)),
        ("ALTER SUBSCRIPTION", not(NotReplicated::Replication)),
        ("IMPORT FOREIGN SCHEMA", replicated(DdlKind::Foreign)),
        ("CREATE FOREIGN TABLE", replicated(DdlKind::Foreign)),
        ("CREATE USER MAPPING", not(NotReplicated::ForeignData)),
        ("GRANT ROLE", not(NotReplicated::GlobalObject)),
        ("ALTER SYSTEM", not(NotReplicated::GlobalObject)),
        ("REASSIGN OWNED", not(NotReplicated::RoleWide)),
        ("TRUNCATE TABLE", not(NotReplicated::Dml)),
        ("MERGE", not(NotReplicated::Dml)),
        ("REINDEX", not(NotReplicated::Maintenance)),
        // PostgreSQL 19's new tags.
        ("REPACK", not(NotReplicated::Maintenance)),
        ("WAIT", not(NotReplicated::Session)),
        ("LOCK TABLE", not(NotReplicated::TransactionControl)),
        ("DISCARD ALL", not(NotReplicated::Session)),
        ("DO", not(NotReplicated::Procedural)),
    ];
    for (tag, expected) in cases {
        assert_eq!(classify(tag), expected, "{tag}");
    }
}

#[test]
fn display() {
    assert_eq!(classify("CREATE INDEX").to_string(), "index");
    assert_eq!(classify("CREATE INDEX").kind(), Some(DdlKind::Index));
    assert_eq!(classify("VACUUM").kind(), None);
    assert_eq!(
        classify("VACUUM").to_string(),
        "not replicated: maintenance"
    );
    assert_eq!(
        classify("nope").to_string(),
        "not replicated: unknown command tag"
    );
}
