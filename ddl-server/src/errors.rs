//! The ERRORs the server libraries raise themselves: each with a SQLSTATE that says whose fault
//! it is, and every message prefixed `ddl_sync: `.
//!
//! - [`internal`] (`XX000`) is for faults of our own: what cannot happen, an SPI call of a query
//!   of ours that fails as a call, a catalog that lacks what PostgreSQL always writes. Never for
//!   what a user did, which a client may want to tell apart by its code;
//! - [`raise`] (any other SQLSTATE) is for everything else: the user's input or configuration,
//!   the state the user left an object in, the system (files, programs), the publisher;
//! - [`io`] is [`raise`] with the SQLSTATE PostgreSQL gives a failed file access;
//! - [`Error`] adds a DETAIL or HINT; [`OrInternal`] turns a `Result` or `Option` that holds
//!   a fault of ours into its value or the [`internal`] ERROR.
//!
//! The functions raise through pgrx's `ErrorReport` (what `pgrx::ereport!` expands to, which
//! has no HINT) and are `#[track_caller]`: the ERROR's location is the caller's line.
//! `cargo xtask tidy` refuses a bare `error!` (always `XX000`) or `.expect(` in the server crates.

use std::fmt::Display;

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// What every message raised here starts with.
pub const PREFIX: &str = "ddl_sync: ";

/// `message` with [`PREFIX`] in front (not twice).
pub fn prefixed(message: impl Display) -> String {
    let message = message.to_string();
    if message.starts_with(PREFIX) {
        message
    } else {
        format!("{PREFIX}{message}")
    }
}

/// Raises an ERROR with `ERRCODE_INTERNAL_ERROR` (`XX000`): for faults of our own (what cannot
/// happen, an SPI failure of a query of ours), not for anything the user's input or settings
/// caused. Say in `message` what failed.
#[track_caller]
pub fn internal(message: impl Display) -> ! {
    Error::new(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, message).raise()
}

/// Raises an ERROR with SQLSTATE `code`: what the user, the system or the publisher caused.
#[track_caller]
pub fn raise(code: PgSqlErrorCode, message: impl Display) -> ! {
    Error::new(code, message).raise()
}

/// Raises an ERROR for a failed file or directory access, with the SQLSTATE PostgreSQL's
/// `errcode_for_file_access` gives the same failure (`58030`, `ERRCODE_IO_ERROR`, for the rest).
#[track_caller]
pub fn io(error: &std::io::Error, message: impl Display) -> ! {
    raise(file_access_code(error.kind()), message)
}

/// The SQLSTATE of a failed file access, as `errcode_for_file_access` maps errno.
fn file_access_code(kind: std::io::ErrorKind) -> PgSqlErrorCode {
    use std::io::ErrorKind;
    match kind {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE
        }
        ErrorKind::NotFound => PgSqlErrorCode::ERRCODE_UNDEFINED_FILE,
        ErrorKind::AlreadyExists => PgSqlErrorCode::ERRCODE_DUPLICATE_FILE,
        ErrorKind::NotADirectory | ErrorKind::IsADirectory | ErrorKind::DirectoryNotEmpty => {
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE
        }
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => PgSqlErrorCode::ERRCODE_DISK_FULL,
        _ => PgSqlErrorCode::ERRCODE_IO_ERROR,
    }
}

/// An ERROR with a DETAIL or HINT, raised by [`Error::raise`].
#[must_use = "an Error does nothing until raised"]
pub struct Error {
    code: PgSqlErrorCode,
    message: String,
    detail: Option<String>,
    hint: Option<String>,
}

impl Error {
    /// An ERROR with SQLSTATE `code` and `message` (prefixed).
    pub fn new(code: PgSqlErrorCode, message: impl Display) -> Error {
        Error {
            code,
            message: prefixed(message),
            detail: None,
            hint: None,
        }
    }

    /// The DETAIL line: facts about this failure.
    pub fn detail(mut self, detail: impl Display) -> Error {
        self.detail = Some(detail.to_string());
        self
    }

    /// The HINT line: what to do about it.
    pub fn hint(mut self, hint: impl Display) -> Error {
        self.hint = Some(hint.to_string());
        self
    }

    /// Raises it: does not return (PostgreSQL's ERROR unwinds to the nearest guard).
    #[track_caller]
    pub fn raise(self) -> ! {
        let mut report = ErrorReport::new(self.code, self.message, "ddl_sync");
        if let Some(detail) = self.detail {
            report = report.set_detail(detail);
        }
        if let Some(hint) = self.hint {
            report = report.set_hint(hint);
        }
        report.report(PgLogLevel::ERROR);
        unreachable!("an ERROR returned");
    }
}

/// A `Result` or `Option` whose failure is a fault of ours: [`OrInternal::or_internal`] gives
/// its value, or raises [`internal`] with `what` (and the `Err`'s text, after a colon).
pub trait OrInternal<T> {
    /// The value; otherwise the [`internal`] ERROR "`ddl_sync: {what}: {error}`" (`Err`) or
    /// "`ddl_sync: {what}`" (`None`).
    fn or_internal(self, what: &str) -> T;
}

impl<T, E: Display> OrInternal<T> for Result<T, E> {
    #[track_caller]
    fn or_internal(self, what: &str) -> T {
        match self {
            Ok(value) => value,
            Err(e) => internal(format_args!("{what}: {e}")),
        }
    }
}

impl<T> OrInternal<T> for Option<T> {
    #[track_caller]
    fn or_internal(self, what: &str) -> T {
        match self {
            Some(value) => value,
            None => internal(what),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn the_prefix_comes_once() {
        assert_eq!(prefixed("cannot read x"), "ddl_sync: cannot read x");
        assert_eq!(
            prefixed("ddl_sync: cannot read x"),
            "ddl_sync: cannot read x"
        );
        assert_eq!(
            Error::new(PgSqlErrorCode::ERRCODE_IO_ERROR, format_args!("{}", 1)).message,
            "ddl_sync: 1"
        );
    }

    #[test]
    fn file_failures_have_postgresql_s_codes() {
        assert_eq!(
            file_access_code(ErrorKind::NotFound),
            PgSqlErrorCode::ERRCODE_UNDEFINED_FILE
        );
        assert_eq!(
            file_access_code(ErrorKind::PermissionDenied),
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE
        );
        assert_eq!(
            file_access_code(ErrorKind::StorageFull),
            PgSqlErrorCode::ERRCODE_DISK_FULL
        );
        assert_eq!(
            file_access_code(ErrorKind::UnexpectedEof),
            PgSqlErrorCode::ERRCODE_IO_ERROR
        );
    }
}
