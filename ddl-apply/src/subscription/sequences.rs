//! `ddl_sync.sync_sequences(subscription)`: this database's sequences brought up to the
//! publisher's.
//!
//! PostgreSQL before 19 never replicates sequence values: rows arrive with the ids the
//! publisher drew, but the subscriber's sequences stay where they were, and a subscriber
//! promoted after a failover would hand out ids that exist. `copy_schema` copies the values once;
//! this function reads the publisher's current values over the subscription's connection and
//! moves every sequence of the same name that is behind (never back). Run it just before a
//! switchover, with writes on the publisher stopped, and the subscriber's sequences are at
//! least the publisher's. On 19, beside PostgreSQL's own sequence synchronisation, it only ever
//! moves a sequence that is still behind.

use crate::subscription::connection::Publisher;
use ddl_server::errors;
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// The sequences it moved: name, the publisher's value, the value here before.
#[pg_extern(volatile, parallel_unsafe)]
fn sync_sequences(
    subscription: &str,
) -> TableIterator<
    'static,
    (
        name!(sequence, String),
        name!(publisher_value, i64),
        name!(previous_value, Option<i64>),
    ),
> {
    let (_, _, publisher) = super::publisher_of(subscription);
    let moved: Vec<(String, i64, Option<i64>)> = publisher_values(&publisher)
        .into_iter()
        .filter_map(|(schema, name, value)| move_up(&schema, &name, value))
        .collect();
    TableIterator::new(moved)
}

/// The publisher's sequences that have a value: schema, name, last value (not ddl_sync's own,
/// which are node-local).
pub(super) fn publisher_values(publisher: &Publisher) -> Vec<(String, String, i64)> {
    publisher
        .rows(
            "SELECT schemaname::pg_catalog.text, sequencename::pg_catalog.text,
                    last_value::pg_catalog.text
               FROM pg_catalog.pg_sequences
              WHERE last_value IS NOT NULL AND schemaname OPERATOR(pg_catalog.<>) 'ddl_sync'",
            3,
        )
        .unwrap_or_else(|e| {
            errors::raise(
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format_args!("could not read the publisher's sequences: {e}"),
            )
        })
        .into_iter()
        .filter_map(|row| {
            let mut row = row.into_iter();
            Some((row.next()??, row.next()??, row.next()??.parse().ok()?))
        })
        .collect()
}

/// Sets sequence `schema.name` here to `value` when it exists and is behind; what it did.
pub(super) fn move_up(schema: &str, name: &str, value: i64) -> Option<(String, i64, Option<i64>)> {
    Spi::connect_mut(|client| {
        let mut rows = client
            .update(
                "SELECT pg_catalog.format('%I.%I', s.schemaname, s.sequencename), s.last_value,
                        CASE WHEN s.last_value IS NULL OR s.last_value OPERATOR(pg_catalog.<) $3
                             THEN pg_catalog.setval(pg_catalog.format('%I.%I', s.schemaname, s.sequencename)::pg_catalog.regclass, $3, true)
                        END
                   FROM pg_catalog.pg_sequences s
                  WHERE s.schemaname OPERATOR(pg_catalog.=) $1
                    AND s.sequencename OPERATOR(pg_catalog.=) $2",
                None,
                &[schema.into(), name.into(), value.into()],
            )
            .ok()?;
        let row = rows.next()?;
        let moved = row.get::<i64>(3).ok().flatten()?;
        Some((
            row.get::<String>(1).ok().flatten()?,
            moved,
            row.get::<i64>(2).ok().flatten(),
        ))
    })
}
