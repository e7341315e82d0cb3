//! The one error type of the crate.

use std::fmt;

/// What went wrong, coarsely; the message says the rest.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A file or directory operation failed (temp dir, log file, output file).
    Io,
    /// A program could not be started, or exited with an error (initdb, pg_ctl, pg_recvlogical).
    Command,
    /// The server did not start; the message carries the tail of its log.
    Start,
    /// psql reported an error; the message carries psql's stderr.
    Sql,
    /// A program did not finish in time and was killed.
    Timeout,
}

/// An error from the test kit: a [`kind`](Error::kind) and a message meant for a test failure.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn io(what: impl fmt::Display, err: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, format!("{what}: {err}"))
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The full message (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
