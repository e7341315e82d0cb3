//! Unit tests on archives built here byte by byte (the real ones are in tests/).

use super::*;

/// An archive of version `version` with `entries`, each given as its fields after the dump
/// ID, in pg_dump's order.
struct Builder {
    out: Vec<u8>,
}

impl Builder {
    fn new(version: Version) -> Builder {
        let mut b = Builder {
            out: b"PGDMP".to_vec(),
        };
        b.out
            .extend([version.0, version.1, version.2, 4, 8, FORMAT_CUSTOM]);
        if version >= Version::COMPRESSION_ALGORITHM {
            b.out.push(0);
        } else {
            b.int(0);
        }
        for _ in 0..7 {
            b.int(1);
        }
        b.string(Some("postgres"));
        b.string(Some("15.18"));
        b.string(Some("15.18"));
        b
    }

    fn int(&mut self, v: i32) {
        self.out.push(u8::from(v < 0));
        self.out.extend(v.unsigned_abs().to_le_bytes());
    }

    fn string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.int(i32::try_from(s.len()).unwrap());
                self.out.extend(s.as_bytes());
            }
            None => self.int(-1),
        }
    }

    fn entry(&mut self, version: Version, id: i32, desc: &str, tag: &str, defn: &str) {
        self.int(id);
        self.int(0);
        self.string(Some("0"));
        self.string(Some("0"));
        self.string(Some(tag));
        self.string(Some(desc));
        self.int(2);
        self.string(Some(defn));
        self.string(Some(""));
        self.string(None);
        self.string(Some("shop"));
        self.string(None);
        if version >= Version::TABLE_AM {
            self.string(Some("heap"));
        }
        if version >= Version::RELKIND {
            self.int(i32::from(b'r'));
        }
        self.string(Some("app"));
        self.string(Some("false"));
        self.string(Some("1"));
        self.string(None);
        self.out.push(3);
        self.out.extend([0; 8]);
    }
}

fn archive(version: Version) -> Vec<u8> {
    let mut b = Builder::new(version);
    b.int(2);
    b.entry(version, 1, "SCHEMA", "shop", "CREATE SCHEMA shop;\n");
    b.entry(
        version,
        2,
        "TABLE",
        "t",
        "CREATE TABLE shop.t (\n--\n-- Name: x; Type: TABLE; Schema: -; Owner: -\n--\n);\n",
    );
    b.out
}

#[test]
fn every_version_it_reads_gives_the_same_entries() {
    for version in [
        Version(1, 10, 0),
        Version(1, 13, 0),
        Version(1, 14, 0),
        Version(1, 15, 0),
        Version(1, 16, 0),
    ] {
        let bytes = archive(version);
        let a = Archive::parse(&bytes).unwrap_or_else(|e| panic!("{version}: {e}"));
        assert_eq!(a.version, version);
        assert_eq!(a.database, Some("postgres"));
        let keys: Vec<Key> = a.entries.iter().map(Entry::key).collect();
        assert_eq!(
            keys,
            [
                ("SCHEMA", Some("shop"), "shop"),
                ("TABLE", Some("shop"), "t")
            ]
        );
        let t = &a.entries[1];
        assert!(
            t.definition.unwrap().contains("-- Name: x"),
            "a field, never a header"
        );
        assert_eq!(t.owner, Some("app"));
        assert_eq!(t.dependencies, [1]);
        assert_eq!(t.table_am, (version >= Version::TABLE_AM).then_some("heap"));
    }
}

#[test]
fn versions_it_does_not_know_are_refused_by_name() {
    for (version, said) in [
        (Version(1, 9, 0), "archive version 1.9.0"),
        (Version(1, 17, 0), "archive version 1.17.0"),
        (Version(2, 0, 0), "archive version 2.0.0"),
    ] {
        let e = Archive::parse(&archive(version)).unwrap_err();
        assert!(e.what.contains(said), "{e}");
    }
}

#[test]
fn a_cut_archive_says_where_it_ends() {
    let bytes = archive(Version(1, 14, 0));
    for cut in 0..bytes.len() {
        let e = Archive::parse(&bytes[..cut]).unwrap_err();
        assert!(e.offset <= cut, "{cut}: {e}");
    }
}

#[test]
fn other_formats_and_absurd_sizes_are_refused() {
    let mut bytes = archive(Version(1, 14, 0));
    bytes[10] = 3; // the directory format
    assert!(Archive::parse(&bytes)
        .unwrap_err()
        .what
        .contains("format 3"));
    let mut bytes = archive(Version(1, 14, 0));
    bytes[8] = 0; // integer size
    assert!(Archive::parse(&bytes)
        .unwrap_err()
        .what
        .contains("integer size 0"));
    assert!(Archive::parse(b"PGDMX").is_err());
}

#[test]
fn a_use_list_has_only_dump_ids() {
    assert_eq!(use_list([3, 1, 20]), "3\n1\n20\n");
    assert_eq!(use_list([]), "");
}
