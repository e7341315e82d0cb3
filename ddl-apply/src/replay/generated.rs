//! Stored generated columns whose values the publisher sends.
//!
//! A replayed statement makes a generated column on the subscriber as it made it on the
//! publisher. By default a publication does not send generated columns, and the subscriber
//! computes them. PostgreSQL 18's `publish_generated_columns = stored`, or a column list that
//! names a generated column, sends their values instead, and the apply worker refuses a value
//! for a column that is generated here ("logical replication target relation ... has
//! incompatible generated column"), on every retry. So after a statement that made or changed
//! a stored generated column of a table in the subscription, the subscriber asks the publisher
//! which of those columns its publications send (`pg_publication_tables.attnames`) and turns
//! each of them into a plain column (`ALTER TABLE ... ALTER COLUMN ... DROP EXPRESSION`), which
//! takes the publisher's values, as PostgreSQL requires of a subscriber of generated columns.
//! The apply log row says so.
//!
//! Asking costs a connection to the publisher, made only for such statements (a table with
//! stored generated columns is rare, and a column made plain is not asked about again).

use crate::subscriber::applying::Subscription;
use crate::subscriber::connection::{literal, Publisher};
use pgrx::pg_sys;
use pgrx::spi::Spi;

/// Makes plain the stored generated columns of `relid` that this transaction wrote and the
/// publisher sends; a note for the apply log row for each change, or why it could not look.
pub fn take_published_values(relid: pg_sys::Oid, subscription: &Subscription) -> Vec<String> {
    let columns = written_generated_columns(relid);
    if columns.is_empty() {
        return Vec::new();
    }
    let published = match published_columns(relid, subscription) {
        Ok(published) => published,
        Err(why) => {
            return vec![format!(
                "could not ask the publisher whether it sends the values of generated column(s) \
                 {}: {why}",
                columns.join(", ")
            )]
        }
    };
    columns
        .iter()
        .filter(|c| published.contains(c))
        .map(|column| drop_expression(relid, column))
        .collect()
}

/// The stored generated columns of `relid` whose `pg_attribute` row this transaction wrote
/// (made, or changed by the statement), when the table is in a subscription.
fn written_generated_columns(relid: pg_sys::Oid) -> Vec<String> {
    // Most tables have none: the relcache says so without a query (every replayed CREATE and
    // ALTER TABLE asks).
    let has_generated = ddl_server::relcache::with_relation(relid, |rel| {
        // SAFETY: the open relation's descriptor and its constraints (NULL when none).
        unsafe {
            let constr = (*(*rel).rd_att).constr;
            !constr.is_null() && (*constr).has_generated_stored
        }
    });
    if has_generated != Some(true) {
        return Vec::new();
    }
    // SAFETY: the apply transaction's xid; the replayed statement wrote catalogs, so it has one.
    let top = unsafe { pg_sys::GetTopTransactionId() };
    let top = u32::from(top).to_string();
    Spi::connect(|client| {
        client
            .select(
                "SELECT a.attname::pg_catalog.text FROM pg_catalog.pg_attribute a
                  WHERE a.attrelid OPERATOR(pg_catalog.=) $1
                    AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
                    AND a.attgenerated OPERATOR(pg_catalog.=) 's'
                    AND pg_catalog.age(a.xmin) OPERATOR(pg_catalog.<=)
                        pg_catalog.age($2::pg_catalog.text::pg_catalog.xid)
                    AND EXISTS (SELECT FROM pg_catalog.pg_subscription_rel r
                                 WHERE r.srrelid OPERATOR(pg_catalog.=) $1)
                  ORDER BY a.attnum",
                None,
                &[relid.into(), top.as_str().into()],
            )
            .map(|rows| {
                rows.filter_map(|row| row.get::<String>(1).ok().flatten())
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// The columns of `relid` (by schema and name) that the subscription's publications send. A
/// publisher before 18 never sends generated columns, though its `attnames` lists them.
fn published_columns(
    relid: pg_sys::Oid,
    subscription: &Subscription,
) -> Result<Vec<String>, String> {
    let (conninfo, publications, schema, table) = Spi::connect(|client| {
        let mut rows = client
            .select(
                "SELECT s.subconninfo, s.subpublications::pg_catalog.text[], n.nspname::pg_catalog.text,
                        c.relname::pg_catalog.text
                   FROM pg_catalog.pg_subscription s, pg_catalog.pg_class c
                   JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                  WHERE s.oid OPERATOR(pg_catalog.=) $1 AND c.oid OPERATOR(pg_catalog.=) $2",
                None,
                &[subscription.oid.into(), relid.into()],
            )
            .map_err(|e| e.to_string())?;
        let row = rows.next().ok_or("the subscription or the table is gone")?;
        let text = |i: usize| {
            row.get::<String>(i)
                .ok()
                .flatten()
                .ok_or_else(|| format!("column {i} is NULL"))
        };
        let publications = row
            .get::<Vec<String>>(2)
            .ok()
            .flatten()
            .ok_or("the subscription has no publications")?;
        Ok::<_, String>((text(1)?, publications, text(3)?, text(4)?))
    })?;
    let names: Vec<String> = publications.iter().map(|p| literal(p)).collect();
    let publisher = Publisher::connect(&conninfo, &subscription.name)?;
    let rows = publisher
        .rows(
            &format!(
                "SELECT DISTINCT a FROM pg_catalog.pg_publication_tables t,
                        pg_catalog.unnest(t.attnames) a
                  WHERE t.pubname IN ({}) AND t.schemaname = {} AND t.tablename = {}
                    AND pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 180000",
                names.join(", "),
                literal(&schema),
                literal(&table)
            ),
            1,
        )
        .map_err(|e| e.to_string())?;
    Ok(rows
        .into_iter()
        .filter_map(|row| row.into_iter().next().flatten())
        .collect())
}

/// `ALTER TABLE ... ALTER COLUMN ... DROP EXPRESSION`, in a subtransaction; what happened.
fn drop_expression(relid: pg_sys::Oid, column: &str) -> String {
    // Built by format() from the OID and the name: no text of the event's in it. Run as the
    // subscription owner with pg_catalog's search_path, like the rest of the replay's own SQL.
    let attempt = || {
        let sql = Spi::get_one_with_args::<String>(
            "SELECT pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP EXPRESSION',
                                      $1::pg_catalog.regclass, $2)",
            &[relid.into(), column.into()],
        )?
        .unwrap_or_default();
        Spi::run(&sql)
    };
    let table = Spi::get_one_with_args::<String>(
        "SELECT $1::pg_catalog.regclass::pg_catalog.text",
        &[relid.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| relid.to_string());
    match ddl_server::xact::in_subtransaction(attempt, Result::is_ok) {
        Ok(Ok(())) => format!(
            "column {column} of {table} is a plain column here: the publisher sends its values \
             (publish_generated_columns or a column list), which a generated column cannot take"
        ),
        Ok(Err(e)) => format!("column {column} of {table} stays generated here ({e}): its values from the publisher cannot be applied"),
        Err(caught) => format!(
            "column {column} of {table} stays generated here ({}): its values from the publisher cannot be applied",
            caught.message
        ),
    }
}
