//! Adapters written in SQL: a row of `ddl_sync.adapter` (see sql/adapters.sql) names the
//! functions, and replay calls them with the statement and the context as `jsonb`.

use crate::replay::host;
use ddl_adapter::{Adapter, Context, Failure, Host, Outcome};
use ddl_server::errors::OrInternal;
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::Spi;

/// An enabled row of `ddl_sync.adapter`, with its functions as schema-qualified, quoted names.
pub struct SqlAdapter {
    name: String,
    dialect: String,
    execute: String,
    init: Option<String>,
    cleanup: Option<String>,
}

/// The quoted, qualified name of the function whose OID is in column `column` of `a`.
fn function_name(column: &str) -> String {
    format!(
        "(SELECT pg_catalog.format('%I.%I', n.nspname, p.proname)
            FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
           WHERE p.oid = a.{column})"
    )
}

/// The enabled SQL adapters, of `dialect` only when given.
pub fn enabled(dialect: Option<&str>) -> Vec<SqlAdapter> {
    // Every replayed event asks; almost no database has a row, and the query below, planned
    // each time, cost more than the statement it was asked for.
    // SAFETY: in the event's transaction.
    if !unsafe { ddl_server::extension_tables::has_rows(c"adapter") }.1 {
        return Vec::new();
    }
    let query = format!(
        "SELECT a.dialect, a.name, {}, {}, {} FROM ddl_sync.adapter a
          WHERE a.enabled AND ($1 IS NULL OR a.dialect = pg_catalog.lower($1))
          ORDER BY a.dialect",
        function_name("execute_function"),
        function_name("init_function"),
        function_name("cleanup_function"),
    );
    Spi::connect(|client| {
        let rows = client
            .select(&query, None, &[dialect.into()])
            .or_internal("cannot read ddl_sync.adapter");
        rows.filter_map(|row| {
            let text = |i: usize| row.get::<String>(i).ok().flatten();
            Some(SqlAdapter {
                dialect: text(1)?,
                name: text(2)?,
                // A function dropped while event triggers were disabled: no adapter.
                execute: text(3)?,
                init: text(4),
                cleanup: text(5),
            })
        })
        .collect()
    })
}

impl SqlAdapter {
    /// Calls `function` with the statement (for execute) and the context, and maps its
    /// `ddl_sync.adapter_result`. An ERROR it raises passes through, as any adapter's.
    fn call(&self, function: &str, sql: Option<&str>, ctx: &Context) -> Outcome {
        let context = "pg_catalog.jsonb_build_object('dialect', $1, 'database', $2,
                       'search_path', $3, 'role', $4, 'role_switched', $5)";
        let mut args: Vec<DatumWithOid> = vec![
            ctx.dialect.as_str().into(),
            ctx.database.as_str().into(),
            ctx.search_path.as_str().into(),
            ctx.role.as_str().into(),
            ctx.role_switched.into(),
        ];
        let call = match sql {
            Some(sql) => {
                args.push(sql.into());
                format!("{function}($6, {context})")
            }
            None => format!("{function}({context})"),
        };
        let result = Spi::get_two_with_args::<String, String>(
            &format!("SELECT r.result, r.message FROM {call} AS r"),
            &args,
        );
        let (result, message) = match result {
            Ok(row) => row,
            Err(e) => return Outcome::fatal(format!("adapter \"{}\": {e}", self.name)),
        };
        let why = || {
            message
                .clone()
                .unwrap_or_else(|| format!("adapter \"{}\" failed", self.name))
        };
        match result.as_deref() {
            None | Some("success") => Outcome::Success,
            Some("retryable") => Outcome::Retryable(Failure::new(why())),
            Some("fatal") => Outcome::fatal(why()),
            Some(other) => Outcome::fatal(format!(
                "adapter \"{}\" returned result \"{other}\" (valid: success, retryable, fatal)",
                self.name
            )),
        }
    }
}

impl Adapter for SqlAdapter {
    fn name(&self) -> &str {
        &self.name
    }
    fn dialect(&self) -> &str {
        &self.dialect
    }
    fn init_context(&self, ctx: &mut Context, _host: &mut dyn Host) -> Outcome {
        match &self.init {
            Some(init) => self.call(init, None, ctx),
            None => Outcome::Success,
        }
    }
    fn execute_ddl(&self, ctx: &mut Context, _host: &mut dyn Host, sql: &str) -> Outcome {
        self.call(&self.execute, Some(sql), ctx)
    }
    fn cleanup_context(&self, ctx: &mut Context, host: &mut dyn Host) -> Outcome {
        let cleanup = match &self.cleanup {
            Some(cleanup) => self.call(cleanup, None, ctx),
            None => Outcome::Success,
        };
        cleanup.and(ctx.restore_settings(host))
    }
}

/// `ddl_sync.adapter_execute(sql)`: for SQL adapters, runs a statement the way the built-in
/// adapters do (checked against the event, from its parse tree, CONCURRENTLY turned off).
/// Returns NULL when it ran, else why it was refused (the events row then says `refused`).
/// `EXECUTE` in an adapter would skip those checks.
#[pg_extern(volatile)]
fn adapter_execute(sql: &str) -> Option<String> {
    if !host::replaying() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "ddl_sync.adapter_execute() runs statements only for an adapter replaying a DDL event"
        );
    }
    match host::execute_claimed(sql) {
        Outcome::Success => None,
        // A failure that passes is the apply worker's to retry, not the adapter's to judge.
        Outcome::Retryable(why) => host::raise(&why, &why.message),
        Outcome::Fatal(why) => Some(why.message),
        _ => Some("an outcome this version does not know".to_string()),
    }
}
