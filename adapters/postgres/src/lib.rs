//! The built-in `postgres` dialect adapter: the statement is PostgreSQL SQL, so it is handed to
//! the host, which parses it with the subscriber's own parser and executes the parse tree.
//!
//! ```
//! use ddl_adapter::Adapter;
//! let adapter = ddl_adapter_postgres::PostgresAdapter;
//! assert_eq!(adapter.dialect(), "postgres");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use ddl_adapter::{Adapter, Context, Host, Outcome};

/// Replays PostgreSQL-dialect DDL as it is.
pub struct PostgresAdapter;

impl Adapter for PostgresAdapter {
    fn name(&self) -> &str {
        "postgres"
    }
    fn dialect(&self) -> &str {
        "postgres"
    }
    fn execute_ddl(&self, _ctx: &mut Context, host: &mut dyn Host, sql: &str) -> Outcome {
        host.execute(sql)
    }
}
