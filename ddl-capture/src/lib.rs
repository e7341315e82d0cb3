//! Capture of DDL statements on the publisher, inside the backend that runs them.
//!
//! Each captured statement becomes one transactional logical decoding message with prefix
//! `ddl_sync` whose payload is a `ddl_wire::DdlRecord`. Being transactional, the message is
//! decoded only if its (sub)transaction commits, in commit order with the rows around it, and a
//! failed statement or a rolled-back transaction leaves nothing.
//!
//! Three parts cooperate (see each module):
//! - the ProcessUtility hook ([`install_hook`]) remembers every utility statement while it
//!   runs, and takes the `ddl` option of CREATE/ALTER PUBLICATION;
//! - event triggers installed by the `ddl_sync` extension (`ddl_sync_capture_ddl_command_end`,
//!   `ddl_sync_capture_sql_drop`) classify the statement, check the publications' rules and
//!   write the record;
//! - [`rules`] decides which publications take a statement, for the capture and for the
//!   output plugin;
//! - [`stats`] counts, per publication, what was captured, filtered and emitted, in shared
//!   memory.
//!
//! This crate is linked into `ddl_pgoutput.so`, which must be in `shared_preload_libraries`.

mod collection;
mod definition;
mod direct;
mod early;
mod emit;
mod forget;
mod hook;
mod invalidation;
mod keyless;
mod objects;
mod partition_bound;
mod plugin_allowed;
mod publication;
mod renamed;
pub mod replay_origin;
pub mod rules;
pub mod seal;
mod shape;
mod statement;
pub mod stats;
mod trigger;
mod volatile;

pub use crate::hook::install as install_hook;
pub use crate::trigger::{ddl_sync_capture_ddl_command_end, ddl_sync_capture_sql_drop};
pub use ddl_server::log::forward_tracing;
