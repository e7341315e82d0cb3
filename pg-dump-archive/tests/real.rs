//! Archives written by real pg_dump binaries (15: archive 1.14; 18: archive 1.16) of the
//! schema in `fixtures/schema.sql`, whose comment, names and function body hold the text of
//! pg_dump's own script headers, its closing comment and a `\restrict` line. Made with
//! `pg_dump --schema-only --format=custom` of a new cluster's `postgres` database after
//! `psql -f fixtures/schema.sql`, with Debian's 15.18 and the 18.6 that `cargo xtask setup --pg
//! 18` builds.

use pg_dump_archive::{Archive, Entry, Version};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn entry<'a>(a: &'a Archive<'a>, desc: &str, tag: &str) -> &'a Entry<'a> {
    a.entries
        .iter()
        .find(|e| e.desc == desc && e.tag == tag)
        .unwrap_or_else(|| panic!("no {desc} {tag} in {:#?}", a.entries))
}

#[test]
fn real_archives_read_as_pg_dump_wrote_them() {
    for (file, version, major) in [
        ("schema-15.dump", Version(1, 14, 0), "15."),
        ("schema-18.dump", Version(1, 16, 0), "18."),
    ] {
        let bytes = fixture(file);
        let a = Archive::parse(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(a.version, version, "{file}");
        assert!(a.pg_dump_version.unwrap().starts_with(major), "{file}");
        // The comment's SQL is one entry, whatever lines it holds.
        let comment = entry(&a, "COMMENT", "TABLE customers");
        let text = comment.definition.unwrap();
        assert!(
            text.contains("\n\\restrict not-pg-dumps\n"),
            "{file}: {text}"
        );
        assert!(text.contains("Type: ROW SECURITY"), "{file}: {text}");
        assert!(
            !a.entries.iter().any(|e| e.desc == "ROW SECURITY"),
            "{file}: no entry the comment's text could fake"
        );
        // A name that is SQL stays a name.
        let odd = entry(&a, "TABLE", "odd';SELECT 1--");
        assert_eq!(odd.namespace, Some("shop"));
        assert_eq!(odd.owner, Some("postgres"));
        assert_eq!(odd.table_am, Some("heap"));
        // The body holding pg_dump's closing comment is all there.
        let f = entry(&a, "FUNCTION", "f(integer)");
        assert!(
            f.definition
                .unwrap()
                .contains("-- PostgreSQL database dump complete\n--\nSELECT a"),
            "{file}"
        );
        let customers = entry(&a, "TABLE", "customers");
        assert!(comment.dependencies.contains(&customers.id), "{file}");
        assert!(entry(&a, "ENCODING", "ENCODING").is_setting());
        assert!(!customers.is_setting() && !customers.is_database());
        assert!(entry(&a, "DATABASE", "postgres").is_database());
        assert!(entry(&a, "ACL", "TABLE customers")
            .definition
            .unwrap()
            .contains("GRANT SELECT ON TABLE shop.customers TO PUBLIC;"));
        for e in &a.entries {
            assert!(e.id > 0 && e.dependencies.iter().all(|d| *d > 0), "{file}");
        }
        // The same objects in both versions' archives.
        let keys: Vec<_> = a.entries.iter().map(Entry::key).collect();
        let other = fixture("schema-15.dump");
        let other = Archive::parse(&other).unwrap();
        assert_eq!(
            keys,
            other.entries.iter().map(Entry::key).collect::<Vec<_>>()
        );
    }
}
