//! The pure crates' `tracing` events, in the server log.
//!
//! `ddl-filter` (and any pure crate after it) logs through `tracing`, which knows nothing of
//! PostgreSQL. Inside a backend this subscriber turns each event into an `elog` line at the
//! matching level, so `log_min_messages` and `client_min_messages` decide what is shown, as for
//! the server's own messages. Never at ERROR: a log line must not abort the statement that
//! wrote it (an `error!` event becomes a WARNING).

use pgrx::prelude::*;
use std::fmt::Write;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Makes [`ServerLog`] the process's `tracing` subscriber; does nothing when one is set (two
/// libraries of ours in one backend each try).
pub fn forward_tracing() {
    let _ = tracing::subscriber::set_global_default(ServerLog);
}

/// A `tracing` subscriber that writes events to the server log. Spans are not kept.
pub struct ServerLog;

/// The server's level for a `tracing` level.
fn elevel(level: &Level) -> PgLogLevel {
    match *level {
        Level::ERROR | Level::WARN => PgLogLevel::WARNING,
        Level::INFO => PgLogLevel::LOG,
        Level::DEBUG => PgLogLevel::DEBUG1,
        Level::TRACE => PgLogLevel::DEBUG2,
    }
}

extern "C-unwind" {
    #[link_name = "message_level_is_interesting"]
    fn server_message_level_is_interesting(elevel: std::ffi::c_int) -> bool;
}

/// Whether a message at `level` would be written to the server log or sent to the client.
/// The server's own function rather than pgrx's binding, whose guard costs more than the call:
/// it reads two settings and cannot fail, and it is asked for every captured statement.
pub fn interesting(level: PgLogLevel) -> bool {
    // SAFETY: reads the logging settings; no allocation, no ERROR.
    unsafe { server_message_level_is_interesting(level as i32) }
}

impl Subscriber for ServerLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        interesting(elevel(metadata.level()))
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = Line(String::new());
        event.record(&mut line);
        let target = event.metadata().target();
        ereport!(
            elevel(event.metadata().level()),
            PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            format!("{target}: {}", line.0.trim_start())
        );
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// An event's fields as `message key=value ...`.
struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}
