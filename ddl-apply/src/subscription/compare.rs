//! On demand: `ddl_sync.describe_relation(regclass)` describes a relation as a replayed
//! statement's verification does (ddl-wire's `Description`, action `present`), and
//! `ddl_sync.compare_subscription(subscription)` compares the publisher's relations with this
//! database's, now, over the subscription's connection: what an operator runs before a
//! switchover or after maintenance, where verification only ever looked at what each
//! statement touched.
//!
//! The relations compared: every table the subscription's publications publish, every view,
//! materialized view and sequence in those tables' schemas, and every table the subscription
//! lists here (`pg_subscription_rel`). The extension's own schema is each node's own. The
//! publisher describes its side with its own `ddl_sync.describe_relation`, so both sides are
//! described by the same code from their own catalogs.

use crate::subscription::connection::{literal, Publisher};
use ddl_server::errors;
use ddl_wire::{differences, Description};
use pgrx::prelude::*;
use pgrx::spi::Spi;
use std::collections::BTreeMap;

/// The relation `relation` as it is now, as JSON; NULL when it is not a kind that is
/// described (an index, a foreign table), or its lock was not free within a second.
#[pg_extern(volatile, parallel_unsafe)]
fn describe_relation(relation: pg_sys::Oid) -> Option<String> {
    match ddl_server::describe::relation_now(relation) {
        Ok(description) => description.map(|d| d.to_json()),
        Err(e) => errors::raise(
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            format_args!("could not describe relation {}: {e}", relation.to_u32()),
        ),
    }
}

/// Every difference between the publisher's relations and this database's: the object, the
/// attribute, and each side's value (NULL: it has none; for a relation one side lacks, the
/// attribute is `presence`).
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, parallel_unsafe)]
fn compare_subscription(
    subscription: &str,
) -> TableIterator<
    'static,
    (
        name!(object, String),
        name!(attribute, String),
        name!(publisher, Option<String>),
        name!(subscriber, Option<String>),
    ),
> {
    let (subid, catalog, publisher) = super::publisher_of(subscription);
    let theirs = publisher_relations(&publisher, &catalog.publications);
    let ours = local_relations(theirs.keys().cloned().collect(), subid);
    let mut rows = Vec::new();
    let names: std::collections::BTreeSet<&String> = theirs.keys().chain(ours.keys()).collect();
    for name in names {
        match (theirs.get(name), ours.get(name)) {
            (Some(p), Some(s)) => rows.extend(
                differences(p, s)
                    .into_iter()
                    .map(|d| (d.object, d.attribute, d.publisher, d.subscriber)),
            ),
            (p, s) => {
                let kind = |d: Option<&Description>| {
                    d.and_then(|d| d.objects.first()).map(|o| o.kind.clone())
                };
                let object_kind = kind(p).or(kind(s)).unwrap_or_default();
                rows.push((
                    format!("{object_kind} {name}"),
                    "presence".into(),
                    p.map(|_| "present".into()),
                    s.map(|_| "present".into()),
                ));
            }
        }
    }
    TableIterator::new(rows)
}

/// The publisher's relations, by quoted qualified name, as its `ddl_sync.describe_relation`
/// describes them.
fn publisher_relations(
    publisher: &Publisher,
    publications: &[String],
) -> BTreeMap<String, Description> {
    let raise = |e: &dyn std::fmt::Display| -> ! {
        errors::raise(
            PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
            format_args!("could not describe the publisher's relations: {e}"),
        )
    };
    let can_describe = publisher
        .first_value(
            "SELECT pg_catalog.to_regprocedure('ddl_sync.describe_relation(oid)') IS NOT NULL",
            1,
        )
        .unwrap_or_else(|e| raise(&e));
    if can_describe != Some(Some("t".into())) {
        errors::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format_args!(
                "the publisher cannot describe its relations: compare_subscription needs \
                 extension ddl_sync 0.4.0 or later on the publisher"
            ),
        );
    }
    let names: Vec<String> = publications.iter().map(|p| literal(p)).collect();
    let sql = format!(
        "WITH published AS (
             SELECT DISTINCT schemaname, tablename FROM pg_catalog.pg_publication_tables
              WHERE pubname IN ({}))
         SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), ddl_sync.describe_relation(c.oid)
           FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname OPERATOR(pg_catalog.<>) 'ddl_sync'
            AND ((n.nspname, c.relname) IN (SELECT schemaname, tablename FROM published)
                 OR (c.relkind IN ('v', 'm', 'S')
                     AND n.nspname IN (SELECT schemaname FROM published)))",
        names.join(", ")
    );
    publisher
        .rows(&sql, 2)
        .unwrap_or_else(|e| raise(&e))
        .into_iter()
        .filter_map(|row| {
            let mut row = row.into_iter();
            let name = row.next()??;
            let description = Description::from_json(&row.next()??).unwrap_or_else(|e| raise(&e));
            Some((name, description))
        })
        .collect()
}

/// This database's relations named `names` (quoted qualified names), the views,
/// materialized views and sequences of their schemas, and the tables subscription `subid`
/// lists, described here.
fn local_relations(names: Vec<String>, subid: pg_sys::Oid) -> BTreeMap<String, Description> {
    // With an empty search_path: the caller's could resolve an operator of the query to
    // another's.
    let relations: Vec<(String, pg_sys::Oid)> = ddl_server::guc::with_search_path("", || {
        Spi::connect(|client| {
            let rows = client.select(
                "WITH named AS (
                 SELECT c.oid, c.relnamespace
                   FROM pg_catalog.unnest($1::pg_catalog.text[]) AS t(name)
                   JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(t.name))
             SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), c.oid
               FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname OPERATOR(pg_catalog.<>) 'ddl_sync'
                AND (c.oid IN (SELECT oid FROM named)
                     OR (c.relkind IN ('v', 'm', 'S')
                         AND c.relnamespace IN (SELECT relnamespace FROM named))
                     OR c.oid IN (SELECT srrelid FROM pg_catalog.pg_subscription_rel
                                   WHERE srsubid OPERATOR(pg_catalog.=) $2))
                -- 19 lists a subscription's sequences there too: they are compared as
                -- sequences of a compared schema, or not at all.
                AND (c.relkind OPERATOR(pg_catalog.<>) 'S'
                     OR c.relnamespace IN (SELECT relnamespace FROM named))",
                None,
                &[names.into(), subid.into()],
            )?;
            let mut out = Vec::new();
            for row in rows {
                if let (Some(name), Some(oid)) = (row.get::<String>(1)?, row.get::<pg_sys::Oid>(2)?)
                {
                    out.push((name, oid));
                }
            }
            Ok::<_, pgrx::spi::Error>(out)
        })
    })
    .unwrap_or_else(|e| {
        errors::raise(
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            format_args!("could not list this database's relations: {e}"),
        )
    });
    relations
        .into_iter()
        .filter_map(|(name, oid)| {
            let described = ddl_server::describe::relation_now(oid).unwrap_or_else(|e| {
                errors::raise(
                    PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                    format_args!("could not describe {name}: {e}"),
                )
            });
            Some((name, described?))
        })
        .collect()
}
