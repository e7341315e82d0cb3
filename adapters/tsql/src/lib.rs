//! The built-in `tsql-simple` dialect adapter: runs T-SQL DDL captured on a Babelfish node by
//! switching `babelfishpg_tsql.sql_dialect` to `tsql` for the statement and restoring it after.
//!
//! It is deliberately simple: it knows nothing of T-SQL itself. An extension that understands
//! Babelfish fully registers its own adapter for dialect `tsql`, which replaces this one.
//!
//! ```
//! use ddl_adapter::Adapter;
//! let adapter = ddl_adapter_tsql::TsqlSimpleAdapter;
//! assert_eq!((adapter.name(), adapter.dialect()), ("tsql-simple", "tsql"));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use ddl_adapter::{Adapter, Context, Host, Outcome};

/// The setting Babelfish reads to choose its parser.
pub const DIALECT_SETTING: &str = "babelfishpg_tsql.sql_dialect";

/// Replays T-SQL DDL by switching the session's SQL dialect around the statement.
pub struct TsqlSimpleAdapter;

impl Adapter for TsqlSimpleAdapter {
    fn name(&self) -> &str {
        "tsql-simple"
    }
    fn dialect(&self) -> &str {
        "tsql"
    }
    fn init_context(&self, ctx: &mut Context, host: &mut dyn Host) -> Outcome {
        ctx.set_setting(host, DIALECT_SETTING, "tsql")
    }
    fn execute_ddl(&self, _ctx: &mut Context, host: &mut dyn Host, sql: &str) -> Outcome {
        host.execute(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the adapter asks of the host.
    #[derive(Default)]
    struct Recorder {
        dialect: String,
        log: Vec<String>,
        fail_execute: bool,
    }

    impl Host for Recorder {
        fn set_setting(&mut self, name: &str, value: &str) -> Result<Option<String>, String> {
            assert_eq!(name, DIALECT_SETTING);
            self.log.push(format!("set {value}"));
            Ok(Some(std::mem::replace(
                &mut self.dialect,
                value.to_string(),
            )))
        }
        fn execute(&mut self, sql: &str) -> Outcome {
            self.log.push(format!("exec[{}] {sql}", self.dialect));
            if self.fail_execute {
                Outcome::fatal("boom")
            } else {
                Outcome::Success
            }
        }
    }

    fn replay(host: &mut Recorder) -> Outcome {
        let a = TsqlSimpleAdapter;
        let mut ctx = Context::default();
        let init = a.init_context(&mut ctx, host);
        let exec = if init.is_success() {
            a.execute_ddl(&mut ctx, host, "CREATE TABLE t (a int)")
        } else {
            init
        };
        exec.and(a.cleanup_context(&mut ctx, host))
    }

    #[test]
    fn runs_the_statement_in_tsql_and_restores_the_dialect() {
        let mut host = Recorder {
            dialect: "postgres".into(),
            ..Default::default()
        };
        assert!(replay(&mut host).is_success());
        assert_eq!(
            host.log,
            [
                "set tsql",
                "exec[tsql] CREATE TABLE t (a int)",
                "set postgres"
            ]
        );
        assert_eq!(host.dialect, "postgres");
    }

    #[test]
    fn restores_the_dialect_after_a_failed_statement() {
        let mut host = Recorder {
            dialect: "postgres".into(),
            fail_execute: true,
            ..Default::default()
        };
        assert_eq!(replay(&mut host), Outcome::fatal("boom"));
        assert_eq!(host.dialect, "postgres");
    }
}
