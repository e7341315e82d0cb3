//! Comparing two nodes after replication: their schema as `pg_dump` prints it, their rows, and
//! the subscriber's apply log.

use crate::replication::query;
use ddl_testkit::Cluster;
use pg_dump_script::Script;
use std::collections::BTreeMap;

/// `pg_dump --schema-only` of database `postgres`, cut into pg_dump's blocks (one object each,
/// starting at its `-- Name: ...; Type: ...` header), without what is each node's own.
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
    let mut blocks = dump_blocks(pg, db);
    blocks.retain(|b| !node_local(b));
    blocks
}

/// `pg_dump --schema-only` of database `db`, cut into pg_dump's blocks (see [`schema`]), without
/// the `\restrict`/`\unrestrict` lines: pg_dump (15.14 and later) writes a random key there on
/// every run.
pub fn dump_blocks(pg: &Cluster, db: &str) -> Vec<String> {
    let out = std::process::Command::new(pg.bin("pg_dump"))
        .args(["--schema-only", "--no-password", "-d"])
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
    blocks(&String::from_utf8_lossy(&out.stdout))
}

/// The preamble, then each block with the settings pg_dump wrote before it (a table's access
/// method is one).
fn blocks(dump: &str) -> Vec<String> {
    let script = Script::parse(dump);
    std::iter::once(script.preamble)
        .chain(script.blocks.into_iter().map(|b| b.context + &b.text))
        .collect()
}

/// Whether a block is one of the objects [`schema`] leaves out.
fn node_local(block: &str) -> bool {
    let Some(block) = Script::parse(block).blocks.pop() else {
        return false;
    };
    block.kind.starts_with("PUBLICATION")
        || block.kind == "SUBSCRIPTION"
        || block.schema.as_deref() == Some("ddl_sync")
        || block.name == "ddl_sync"
        || block.name == "EXTENSION ddl_sync"
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

    #[test]
    fn node_local_blocks_and_restrict_keys_go() {
        let dump = "--\n-- PostgreSQL database dump\n--\n\n\\restrict abc\n\nSET x = 0;\n\n\
            --\n-- Name: ddl_sync; Type: EXTENSION; Schema: -; Owner: -\n--\n\nCREATE EXTENSION ddl_sync;\n\n\
            --\n-- Name: EXTENSION ddl_sync; Type: COMMENT; Schema: -; Owner: \n--\n\nCOMMENT ON EXTENSION ddl_sync IS 'x';\n\n\
            --\n-- Name: t; Type: TABLE; Schema: public; Owner: postgres\n--\n\nCREATE TABLE public.t (a int);\n\n\
            --\n-- Name: p; Type: PUBLICATION; Schema: -; Owner: postgres\n--\n\nCREATE PUBLICATION p;\n\n\
            \\unrestrict abc\n";
        let mut got = blocks(dump);
        assert_eq!(got.len(), 5, "{got:#?}");
        got.retain(|b| !node_local(b));
        assert_eq!(got.len(), 2, "{got:#?}");
        assert!(got[0].contains("SET x = 0;") && !got[0].contains("restrict"));
        assert!(got[1].starts_with("--\n-- Name: t; Type: TABLE;"));
    }
}
