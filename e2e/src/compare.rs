//! Comparing two nodes after replication: their schema as `pg_dump` prints it, their rows, and
//! the subscriber's apply log.

use crate::replication::query;
use ddl_testkit::Cluster;
use pg_dump_archive::{Archive, Entry};
use std::collections::BTreeMap;

/// `pg_dump --schema-only` of database `postgres` as pg_dump's blocks (one archive entry each:
/// see [`dump_blocks`]), without what is each node's own.
///
/// Taken out, and why:
/// - publications and subscriptions: the replication set-up, different on each side by design;
/// - the `ddl_sync` extension itself (its objects are extension members, which pg_dump leaves
///   out anyway): installed on each node by hand, never replicated.
///
/// Nothing else is normalised: the replicated objects must print the same, byte for byte.
pub fn schema(pg: &Cluster) -> Vec<String> {
    schema_in(pg, "postgres")
}

/// [`schema`] of database `db`.
pub fn schema_in(pg: &Cluster, db: &str) -> Vec<String> {
    dump_blocks_where(pg, db, |e| !node_local(e))
}

/// `pg_dump --schema-only` of database `db` as one block per entry of its archive's table of
/// contents (`--format=custom`): the entry's type, schema, name, owner, tablespace and access
/// method, then its SQL, as pg_dump wrote it.
pub fn dump_blocks(pg: &Cluster, db: &str) -> Vec<String> {
    dump_blocks_where(pg, db, |_| true)
}

fn dump_blocks_where(pg: &Cluster, db: &str, keep: impl Fn(&Entry<'_>) -> bool) -> Vec<String> {
    let out = std::process::Command::new(pg.bin("pg_dump"))
        .args(["--schema-only", "--format=custom", "--no-password", "-d"])
        .arg(pg.connstr(db))
        .output()
        .unwrap_or_else(|e| panic!("cannot run pg_dump: {e}"));
    assert!(
        out.status.success(),
        "pg_dump of {} (database {db}) failed ({}): {}",
        pg.name(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let archive = Archive::parse(&out.stdout)
        .unwrap_or_else(|e| panic!("pg_dump of {} (database {db}): {e}", pg.name()));
    // The database's own entries are what `pg_dump` without `--create` leaves out.
    archive
        .entries
        .iter()
        .filter(|e| !e.is_database() && keep(e))
        .map(block)
        .collect()
}

/// An entry as a block of text: a header line with its fields, then its SQL.
fn block(e: &Entry<'_>) -> String {
    let field = |v: Option<&str>| v.unwrap_or("-").to_string();
    format!(
        "-- {}; Owner: {}; Tablespace: {}; Access method: {}\n{}\n",
        e.describe(),
        field(e.owner),
        field(e.tablespace),
        field(e.table_am),
        e.definition.unwrap_or_default()
    )
}

/// Whether an entry is one of the objects [`schema`] leaves out.
fn node_local(e: &Entry<'_>) -> bool {
    e.desc.starts_with("PUBLICATION")
        || e.desc == "SUBSCRIPTION"
        || e.namespace == Some("ddl_sync")
        || e.tag == "ddl_sync"
        || e.tag == "EXTENSION ddl_sync"
}

/// Panics, showing the differences, unless both nodes' [`schema`] are equal.
pub fn assert_same_schema(publisher: &Cluster, subscriber: &Cluster) {
    if let Some(difference) = schema_difference(publisher, subscriber) {
        panic!("{difference}");
    }
}

/// `None` when both nodes' [`schema`] are equal, else the blocks only one side has (at most
/// eight of each).
pub fn schema_difference(publisher: &Cluster, subscriber: &Cluster) -> Option<String> {
    blocks_difference(
        ("the publisher", &schema(publisher)),
        ("the subscriber", &schema(subscriber)),
    )
}

/// Panics, showing the blocks only one side has (at most 8 each), unless both lists of dump
/// blocks are equal; each side is named for the message.
pub fn assert_same_blocks(a: (&str, &[String]), b: (&str, &[String])) {
    if let Some(difference) = blocks_difference(a, b) {
        panic!("{difference}");
    }
}

/// `None` when both lists of dump blocks are equal, else the blocks only one side has (at most
/// eight of each); each side is named for the message.
fn blocks_difference(a: (&str, &[String]), b: (&str, &[String])) -> Option<String> {
    let ((a_name, a), (b_name, b)) = (a, b);
    if a == b {
        return None;
    }
    let only = |x: &[String], y: &[String]| -> String {
        x.iter()
            .filter(|blk| !y.contains(blk))
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("")
    };
    Some(format!(
        "pg_dump differs ({} blocks on {a_name}, {} on {b_name})\n\
         === only on {a_name} ===\n{}\n=== only on {b_name} ===\n{}",
        a.len(),
        b.len(),
        only(a, b),
        only(b, a)
    ))
}

/// A table's rows as `<count> <md5 of their sorted text forms>`, over a table aliased `r`.
pub(crate) const ROWS_CHECKSUM: &str =
    "count(*) || ' ' || md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), ''))";

/// For every ordinary table outside the system schemas and `ddl_sync`: its row count and the md5
/// of its rows in text form, sorted, as `count md5`, keyed by the quoted table name.
pub fn rows(pg: &Cluster) -> BTreeMap<String, String> {
    let tables = query(
        pg,
        "SELECT format('%I.%I', n.nspname, c.relname)
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind = 'r'
            AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'ddl_sync')
            AND n.nspname NOT LIKE 'pg\\_toast%'
          ORDER BY 1",
    );
    if tables.is_empty() {
        return BTreeMap::new();
    }
    let sql: Vec<String> = tables
        .lines()
        .map(|t| {
            format!(
                "SELECT '{}', {} FROM {t} r",
                t.replace('\'', "''"),
                ROWS_CHECKSUM
            )
        })
        .collect();
    query(pg, &sql.join("\nUNION ALL\n"))
        .lines()
        .map(|l| {
            let (table, sum) = l.split_once('|').expect("table|sum");
            (table.to_string(), sum.to_string())
        })
        .collect()
}

/// Panics unless both nodes have the same tables with the same rows (see [`rows`]); returns the
/// publisher's checksums.
pub fn assert_same_rows(publisher: &Cluster, subscriber: &Cluster) -> BTreeMap<String, String> {
    match compare_rows(publisher, subscriber) {
        Ok(sums) => sums,
        Err(difference) => panic!("{difference}"),
    }
}

/// `None` when both nodes have the same tables with the same rows, else the tables that differ.
pub fn rows_difference(publisher: &Cluster, subscriber: &Cluster) -> Option<String> {
    compare_rows(publisher, subscriber).err()
}

fn compare_rows(
    publisher: &Cluster,
    subscriber: &Cluster,
) -> Result<BTreeMap<String, String>, String> {
    let (a, b) = (rows(publisher), rows(subscriber));
    let differing: Vec<String> = a
        .keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("{k}: publisher {:?}, subscriber {:?}", a.get(k), b.get(k)))
        .collect();
    if differing.is_empty() {
        Ok(a)
    } else {
        Err(format!("rows differ:\n{}", differing.join("\n")))
    }
}

/// Panics listing the subscriber's apply log rows that are not `applied`.
pub fn assert_all_applied(subscriber: &Cluster) {
    let bad = query(
        subscriber,
        "SELECT origin_lsn || ' ' || apply_status || ' ' || command_tag || ': ' || sql
                || ' -- ' || coalesce(apply_detail, '')
           FROM ddl_sync.events WHERE apply_status IS DISTINCT FROM 'applied' ORDER BY origin_lsn",
    );
    assert!(bad.is_empty(), "apply log rows not applied:\n{bad}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(desc: &'a str, namespace: Option<&'a str>, tag: &'a str) -> Entry<'a> {
        Entry {
            id: 1,
            desc,
            tag,
            namespace,
            owner: Some("postgres"),
            tablespace: None,
            table_am: None,
            section: pg_dump_archive::Section::PreData,
            definition: Some("CREATE ...;\n"),
            drop_statement: None,
            dependencies: Vec::new(),
        }
    }

    #[test]
    fn node_local_entries_go() {
        for e in [
            entry("EXTENSION", None, "ddl_sync"),
            entry("COMMENT", None, "EXTENSION ddl_sync"),
            entry("PUBLICATION", None, "p"),
            entry("PUBLICATION TABLE", Some("public"), "p t"),
            entry("TABLE", Some("ddl_sync"), "events"),
        ] {
            assert!(node_local(&e), "{e:?}");
        }
        let t = entry("TABLE", Some("public"), "t");
        assert!(!node_local(&t));
        assert_eq!(
            block(&t),
            "-- TABLE public.t; Owner: postgres; Tablespace: -; Access method: -\nCREATE ...;\n\n"
        );
    }
}
