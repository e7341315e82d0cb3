//! Stored generated columns whose values the publisher sends.
//!
//! A replayed statement makes a generated column on the subscriber as it made it on the
//! publisher. By default a publication does not send generated columns, and the subscriber
//! computes them. PostgreSQL 18's `publish_generated_columns = stored`, or a column list that
//! names a generated column, sends their values instead, and the apply worker refuses a value
//! for a column that is generated here ("logical replication target relation ... has
//! incompatible generated column"), on every retry. So after a statement that made or changed
//! a stored generated column of a table in the subscription, each such column that the stream
//! sends (the event's `sent_generated_columns`, which the publisher's plugin fills for this
//! subscription's publications as of the statement: ddl-decode's `generated`) is turned into a
//! plain column (`ALTER TABLE ... ALTER COLUMN ... DROP EXPRESSION`), which takes the
//! publisher's values, as PostgreSQL requires of a subscriber of generated columns. The apply
//! log row says so.

use pgrx::pg_sys;
use pgrx::spi::Spi;

/// Makes plain the stored generated columns of `relid` that this transaction wrote and the
/// stream sends (`sent`, the event's field; `None` from a publisher that does not say); a note
/// for the apply log row for each change, or why it could not tell.
pub fn take_sent_values(relid: pg_sys::Oid, sent: Option<&str>) -> Vec<String> {
    let columns = written_generated_columns(relid);
    if columns.is_empty() {
        return Vec::new();
    }
    let sent = match sent.map(ddl_wire::parse_name_set).transpose() {
        Ok(Some(sent)) => sent,
        Ok(None) => {
            return vec![format!(
                "the publisher (ddl_sync older than 0.4.0) does not say whether it sends the \
                 values of generated column(s) {}; if it does, make them plain columns here \
                 (ALTER TABLE ... ALTER COLUMN ... DROP EXPRESSION)",
                columns.join(", ")
            )]
        }
        Err(e) => {
            return vec![format!(
                "the event's sent_generated_columns are damaged: {e}"
            )]
        }
    };
    columns
        .iter()
        .filter(|c| sent.contains(*c))
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
