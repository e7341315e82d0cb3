//! `schema_mode = strict`: the published tables must have the same shape on both sides.
//!
//! Checked when a strict subscription is created (before PostgreSQL creates it, so that a
//! missing table is one line of the list, not PostgreSQL's first error), enabled, or switched
//! to strict, over the connection to the publisher the hook opens anyway. The same query runs
//! on both sides (with an empty search_path, so type names are written the same way) and
//! describes each table:
//! - its columns by name (dropped ones ignored, order ignored: logical replication matches
//!   columns by name): type with typmod, NOT NULL, and the generation expression;
//! - its replica identity as the key subscribers find rows by (`primary key (id)`, `index
//!   (a, b)`, `full`, `nothing`) and its primary key.
//!
//! The tables are the publications' (`pg_publication_tables`) and, on the subscriber, those
//! the subscription lists in `pg_subscription_rel`. Every difference is one line of the error's
//! DETAIL: the table, the column, what the publisher says and what the subscriber says.

use crate::subscription::connection::{literal, Publisher};
use ddl_server::errors::OrInternal;
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::PgLogLevel;
use std::collections::{BTreeMap, BTreeSet};

/// `(table, column or None for the table itself, attribute)` → value.
type Shape = BTreeMap<(String, Option<String>, String), String>;

/// The description of the tables of CTE `t(schemaname, tablename)`, given by `tables`: rows of
/// (quoted qualified table, quoted column or NULL, attribute, value). Catalog names are
/// qualified: the subscriber runs it with an empty search_path, but the publisher's session
/// is only as safe as libpqwalreceiver made it.
fn shape_query(tables: &str) -> String {
    format!(
        "WITH t(schemaname, tablename) AS ({tables}),
         r AS (
             SELECT c.oid, c.relreplident,
                    pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) AS name
               FROM t
               JOIN pg_catalog.pg_namespace n ON n.nspname = t.schemaname
               JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.tablename
              WHERE c.relkind IN ('r', 'p')),
         k AS (
             SELECT x.indrelid, x.indisprimary, x.indisreplident,
                    '(' || pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY o.n) || ')' AS columns
               FROM r
               JOIN pg_catalog.pg_index x ON x.indrelid = r.oid AND (x.indisprimary OR x.indisreplident)
               CROSS JOIN LATERAL pg_catalog.unnest(x.indkey::pg_catalog.int2[]) WITH ORDINALITY AS o(attnum, n)
               JOIN pg_catalog.pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = o.attnum
              GROUP BY x.indexrelid, x.indrelid, x.indisprimary, x.indisreplident)
         SELECT r.name, NULL::text, v.attribute, v.value
           FROM r
           CROSS JOIN LATERAL (VALUES
               ('replica identity',
                CASE r.relreplident
                    WHEN 'd' THEN coalesce('primary key ' || (SELECT k.columns FROM k WHERE k.indrelid = r.oid AND k.indisprimary),
                                           'default, without a primary key')
                    WHEN 'i' THEN 'index ' || coalesce((SELECT k.columns FROM k WHERE k.indrelid = r.oid AND k.indisreplident), '(none)')
                    WHEN 'f' THEN 'full'
                    ELSE 'nothing'
                END),
               ('primary key',
                coalesce((SELECT k.columns FROM k WHERE k.indrelid = r.oid AND k.indisprimary), 'none'))
           ) AS v(attribute, value)
         UNION ALL
         SELECT r.name, pg_catalog.quote_ident(a.attname), v.attribute, v.value
           FROM r
           JOIN pg_catalog.pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
           LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
           CROSS JOIN LATERAL (VALUES
               ('type', pg_catalog.format_type(a.atttypid, a.atttypmod)),
               ('not null', CASE WHEN a.attnotnull THEN 'NOT NULL' ELSE 'nullable' END),
               ('generated',
                CASE WHEN a.attgenerated = 's'
                     THEN 'GENERATED ALWAYS AS (' || pg_catalog.pg_get_expr(d.adbin, d.adrelid) || ') STORED'
                     ELSE 'not generated'
                END)
           ) AS v(attribute, value)"
    )
}

/// Compares the tables of `publications` on the publisher with this database's (and with the
/// tables subscription `subid` lists, once it exists); an ERROR listing every difference.
pub(super) fn check(
    publisher: &Publisher,
    subscription: &str,
    publications: &[String],
    subid: Option<pg_sys::Oid>,
) {
    let names: Vec<String> = publications.iter().map(|p| literal(p)).collect();
    let published = format!(
        "SELECT DISTINCT schemaname::text, tablename::text FROM pg_catalog.pg_publication_tables
          WHERE pubname IN ({})",
        names.join(", ")
    );
    let read = |sql: &str, columns: usize| {
        publisher.rows(sql, columns).unwrap_or_else(|e| {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!("could not read the published tables from the publisher: {e}")
            );
        })
    };
    let tables = read(&published, 2);
    let theirs = shape(read(&shape_query(&published), 4));
    let (schemas, relnames): (Vec<String>, Vec<String>) = tables
        .into_iter()
        .map(|row| {
            let mut row = row.into_iter().map(Option::unwrap_or_default);
            (
                row.next().unwrap_or_default(),
                row.next().unwrap_or_default(),
            )
        })
        .unzip();
    let ours = local_shape(schemas, relnames, subid.unwrap_or(pg_sys::InvalidOid));
    let differences = differences(&theirs, &ours);
    if differences.is_empty() {
        return;
    }
    let count = differences.len();
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "subscription \"{subscription}\" has schema_mode = strict, and its tables differ from the publisher's ({count} difference{})",
            if count == 1 { "" } else { "s" }
        ),
        "ddl_sync",
    )
    .set_detail(differences.join("\n"))
    .set_hint(
        "Make the subscriber's tables match the publisher's (pg_dump --schema-only of the \
         published tables shows them), or use schema_mode = 'relaxed'.",
    )
    .report(PgLogLevel::ERROR);
}

fn shape(rows: Vec<Vec<Option<String>>>) -> Shape {
    rows.into_iter()
        .filter_map(|row| {
            let mut row = row.into_iter();
            let table = row.next()??;
            let column = row.next()?;
            let attribute = row.next()??;
            let value = row.next()?.unwrap_or_default();
            Some(((table, column, attribute), value))
        })
        .collect()
}

/// This database's side: the published tables by name, and those the subscription lists.
fn local_shape(schemas: Vec<String>, relnames: Vec<String>, subid: pg_sys::Oid) -> Shape {
    let sql = shape_query(
        "SELECT * FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]),
                                  pg_catalog.unnest($2::pg_catalog.text[]))
         UNION
         SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text
           FROM pg_catalog.pg_subscription_rel s
           JOIN pg_catalog.pg_class c ON c.oid = s.srrelid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          -- Tables only: 19 lists a subscription's sequences here too.
          WHERE s.srsubid = $3 AND c.relkind OPERATOR(pg_catalog.<>) 'S'",
    );
    ddl_server::guc::with_search_path("", || {
        Spi::connect(|client| {
            let table =
                client.select(&sql, None, &[schemas.into(), relnames.into(), subid.into()])?;
            let mut rows = Vec::new();
            for row in table {
                rows.push(vec![
                    row.get::<String>(1)?,
                    row.get::<String>(2)?,
                    row.get::<String>(3)?,
                    row.get::<String>(4)?,
                ]);
            }
            Ok::<_, pgrx::spi::Error>(shape(rows))
        })
        .or_internal("cannot describe the subscribed tables")
    })
}

/// One line per difference, by table, then column (the table's own attributes first).
fn differences(publisher: &Shape, subscriber: &Shape) -> Vec<String> {
    let tables =
        |shape: &Shape| -> BTreeSet<String> { shape.keys().map(|k| k.0.clone()).collect() };
    let (theirs, ours) = (tables(publisher), tables(subscriber));
    let mut lines = Vec::new();
    for table in theirs.union(&ours) {
        match (theirs.contains(table), ours.contains(table)) {
            (true, false) => {
                lines.push(format!(
                    "table {table}: published, missing on the subscriber"
                ));
                continue;
            }
            (false, true) => {
                lines.push(format!(
                    "table {table}: in the subscription, not published by the publisher"
                ));
                continue;
            }
            _ => {}
        }
        let columns = |shape: &Shape| -> BTreeSet<Option<String>> {
            shape
                .keys()
                .filter(|k| &k.0 == table)
                .map(|k| k.1.clone())
                .collect()
        };
        for column in columns(publisher).union(&columns(subscriber)) {
            let place = match column {
                Some(column) => format!("table {table}, column {column}"),
                None => format!("table {table}"),
            };
            let type_of = |shape: &Shape| {
                shape
                    .get(&(table.clone(), column.clone(), "type".to_owned()))
                    .cloned()
            };
            match (type_of(publisher), type_of(subscriber)) {
                (Some(t), None) if column.is_some() => {
                    lines.push(format!(
                        "{place}: missing on the subscriber (publisher says {t})"
                    ));
                    continue;
                }
                (None, Some(t)) if column.is_some() => {
                    lines.push(format!(
                        "{place}: missing on the publisher (subscriber says {t})"
                    ));
                    continue;
                }
                _ => {}
            }
            let attributes = publisher
                .iter()
                .chain(subscriber.iter())
                .filter(|((t, c, _), _)| t == table && c == column)
                .map(|((_, _, a), _)| a.clone())
                .collect::<BTreeSet<_>>();
            // In the order a reader expects: type first.
            let mut attributes: Vec<String> = attributes.into_iter().collect();
            attributes.sort_by_key(|a| (a != "type", a.clone()));
            for attribute in attributes {
                let key = (table.clone(), column.clone(), attribute.clone());
                let (p, s) = (publisher.get(&key), subscriber.get(&key));
                if p != s {
                    let missing = "nothing".to_owned();
                    lines.push(format!(
                        "{place}: {attribute}: publisher says {}, subscriber says {}",
                        p.unwrap_or(&missing),
                        s.unwrap_or(&missing)
                    ));
                }
            }
        }
    }
    lines
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use super::{differences, Shape};

    fn shape(items: &[(&str, Option<&str>, &str, &str)]) -> Shape {
        items
            .iter()
            .map(|(t, c, a, v)| {
                (
                    (t.to_string(), c.map(str::to_owned), a.to_string()),
                    v.to_string(),
                )
            })
            .collect()
    }

    #[pgrx::pg_test]
    fn differences_name_table_column_and_both_values() {
        let publisher = shape(&[
            ("public.a", None, "primary key", "(id)"),
            ("public.a", None, "replica identity", "primary key (id)"),
            ("public.a", Some("id"), "type", "integer"),
            ("public.a", Some("id"), "not null", "NOT NULL"),
            ("public.a", Some("x"), "type", "integer"),
            ("public.a", Some("gone"), "type", "text"),
            ("public.only_there", None, "primary key", "none"),
        ]);
        let subscriber = shape(&[
            ("public.a", None, "primary key", "none"),
            ("public.a", None, "replica identity", "full"),
            ("public.a", Some("id"), "type", "bigint"),
            ("public.a", Some("id"), "not null", "NOT NULL"),
            ("public.a", Some("x"), "type", "integer"),
            ("public.a", Some("extra"), "type", "date"),
            ("public.only_here", None, "primary key", "none"),
        ]);
        assert_eq!(
            differences(&publisher, &subscriber),
            [
                "table public.a: primary key: publisher says (id), subscriber says none",
                "table public.a: replica identity: publisher says primary key (id), subscriber says full",
                "table public.a, column extra: missing on the publisher (subscriber says date)",
                "table public.a, column gone: missing on the subscriber (publisher says text)",
                "table public.a, column id: type: publisher says integer, subscriber says bigint",
                "table public.only_here: in the subscription, not published by the publisher",
                "table public.only_there: published, missing on the subscriber",
            ]
        );
        assert!(differences(&publisher, &publisher).is_empty());
    }

    #[pgrx::pg_test]
    fn set_subscription_ddl_stores_the_schema_mode_like_the_conflict_policy() {
        use crate::tests::{error_of, install_error_of};
        use pgrx::prelude::*;
        install_error_of();
        Spi::run(
            "CREATE SUBSCRIPTION ddl_sync_t_strict CONNECTION 'dbname=ddl_sync_t_nowhere'
                 PUBLICATION p WITH (connect = false);
             SELECT ddl_sync.set_subscription_ddl('ddl_sync_t_strict', 'table', schema_mode => 'strict');",
        )
        .expect("configured");
        let mode = || {
            Spi::get_one::<String>(
                "SELECT d.schema_mode FROM ddl_sync.subscription_ddl d
                   JOIN pg_subscription s ON s.oid = d.subid WHERE s.subname = 'ddl_sync_t_strict'",
            )
            .expect("query ran")
        };
        assert_eq!(mode().as_deref(), Some("strict"));
        // Left out, it is reset to its default, as the conflict policy is.
        Spi::run("SELECT ddl_sync.set_subscription_ddl('ddl_sync_t_strict', 'table')")
            .expect("configured");
        assert_eq!(mode().as_deref(), Some("relaxed"));
        assert_eq!(
            error_of(
                "SELECT ddl_sync.set_subscription_ddl('ddl_sync_t_strict', 'table', schema_mode => 'lax')"
            )
            .as_deref(),
            Some("22023: unknown schema mode \"lax\" (valid: strict, relaxed)")
        );
    }
}
