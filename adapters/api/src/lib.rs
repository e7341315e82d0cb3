//! The dialect adapter API of `ddl_sync`'s DDL replay.
//!
//! A subscriber replays each DDL event with the adapter registered for the event's SQL dialect
//! (`postgres`, `tsql`, ...). An adapter never talks to PostgreSQL directly: it asks the
//! [`Host`] (implemented by the `ddl_sync` extension inside the apply worker) to change a setting
//! or run a statement. That keeps adapters small, free of pgrx, and testable on their own.
//!
//! The replay of one event is always `init_context` → `execute_ddl` → `cleanup_context`, and
//! `cleanup_context` runs even when `execute_ddl` failed, so every setting an adapter changed is
//! restored.
//!
//! ```
//! use ddl_adapter::{Adapter, Context, Host, Outcome, Registry};
//!
//! struct Upper;
//! impl Adapter for Upper {
//!     fn name(&self) -> &str { "upper" }
//!     fn dialect(&self) -> &str { "shouty" }
//!     fn execute_ddl(&self, _ctx: &mut Context, host: &mut dyn Host, sql: &str) -> Outcome {
//!         host.execute(&sql.to_uppercase())
//!     }
//! }
//!
//! let mut registry = Registry::new();
//! registry.register(Box::new(Upper));
//! assert_eq!(registry.get("shouty").map(|a| a.name()), Some("upper"));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod context;
mod outcome;
mod registry;

pub use crate::context::{Context, SavedSetting};
pub use crate::outcome::{Failure, Outcome, SqlState};
pub use crate::registry::{Registry, Replaced};

/// What an adapter may ask of the server it replays on.
pub trait Host {
    /// Sets a configuration parameter for the rest of the transaction and returns its previous
    /// value, `None` when the parameter does not exist.
    fn set_setting(&mut self, name: &str, value: &str) -> Result<Option<String>, String>;
    /// Parses `sql` with the server's parser (exactly one statement) and executes it.
    fn execute(&mut self, sql: &str) -> Outcome;
}

/// A replay strategy for one SQL dialect.
pub trait Adapter: Send + Sync {
    /// The adapter's name, recorded on every events row it replays.
    fn name(&self) -> &str;
    /// The dialect it replays, as captured records name it (`postgres`, `tsql`, ...).
    fn dialect(&self) -> &str;
    /// Prepares the session (settings the dialect needs). The default changes nothing.
    fn init_context(&self, _ctx: &mut Context, _host: &mut dyn Host) -> Outcome {
        Outcome::Success
    }
    /// Replays one statement.
    fn execute_ddl(&self, ctx: &mut Context, host: &mut dyn Host, sql: &str) -> Outcome;
    /// Undoes what `init_context` did; runs even after a failed `execute_ddl`. The default
    /// restores every setting saved in the context, newest first.
    fn cleanup_context(&self, ctx: &mut Context, host: &mut dyn Host) -> Outcome {
        ctx.restore_settings(host)
    }
}
