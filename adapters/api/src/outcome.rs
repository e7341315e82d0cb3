//! The result of each adapter step.

use std::fmt;

/// How a replay step ended. The apply side maps it to the subscription's conflict policy.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Done.
    Success,
    /// Failed for a reason that passes (a lock timeout, a serialization failure, a deadlock):
    /// the apply worker stops and PostgreSQL retries the whole transaction, whatever the
    /// subscription's conflict policy. Nothing is recorded as failed.
    Retryable(Failure),
    /// Failed for a reason retrying will not fix (a syntax error, a missing object): the
    /// conflict policy decides (`error` stops and retries, `skip` records it and goes on).
    Fatal(Failure),
}

impl Outcome {
    /// Whether the step succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success)
    }

    /// The first failure of two steps, for "run cleanup even after a failure, report the first".
    pub fn and(self, later: Outcome) -> Outcome {
        if self.is_success() {
            later
        } else {
            self
        }
    }

    /// A failure with this SQLSTATE and message: [`Outcome::Retryable`] when the SQLSTATE says
    /// the error passes ([`SqlState::is_transient`]), else [`Outcome::Fatal`].
    pub fn failed(sqlstate: Option<SqlState>, message: impl Into<String>) -> Outcome {
        let failure = Failure {
            sqlstate,
            message: message.into(),
        };
        if sqlstate.is_some_and(SqlState::is_transient) {
            Outcome::Retryable(failure)
        } else {
            Outcome::Fatal(failure)
        }
    }

    /// A fatal failure with no SQLSTATE (one the adapter itself found).
    pub fn fatal(message: impl Into<String>) -> Outcome {
        Outcome::Fatal(Failure::new(message))
    }
}

/// Why a step failed: the message, and PostgreSQL's SQLSTATE when the failure is a server
/// error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The error's SQLSTATE, when there is one.
    pub sqlstate: Option<SqlState>,
    /// What went wrong, as the apply log shows it.
    pub message: String,
}

impl Failure {
    /// A failure without a SQLSTATE.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            sqlstate: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A five-character SQLSTATE (`42P01`), as PostgreSQL's `errcodes.txt` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SqlState([u8; 5]);

impl SqlState {
    /// `None` unless `code` is five digits or upper-case ASCII letters.
    pub fn new(code: &str) -> Option<SqlState> {
        let bytes: [u8; 5] = code.as_bytes().try_into().ok()?;
        bytes
            .iter()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            .then_some(SqlState(bytes))
    }

    /// The SQLSTATE packed as PostgreSQL's `MAKE_SQLSTATE` packs it (an `ErrorData.sqlerrcode`);
    /// `None` for a value no SQLSTATE packs to.
    pub fn from_packed(packed: i32) -> Option<SqlState> {
        let mut code = [0u8; 5];
        for (i, c) in code.iter_mut().enumerate() {
            // PGUNSIXBIT: six bits per character, the first in the lowest bits.
            *c = (((packed >> (6 * i)) & 0x3F) as u8).wrapping_add(b'0');
        }
        let code = SqlState(code);
        (packed >> 30 == 0 && SqlState::new(code.as_str()).is_some()).then_some(code)
    }

    /// PostgreSQL's `MAKE_SQLSTATE` of it.
    pub fn packed(self) -> i32 {
        self.0
            .iter()
            .enumerate()
            .map(|(i, &c)| (i32::from(c.wrapping_sub(b'0')) & 0x3F) << (6 * i))
            .sum()
    }

    /// The code, e.g. `40001`.
    pub fn as_str(&self) -> &str {
        // Only ASCII digits and letters get in.
        std::str::from_utf8(&self.0).unwrap_or("?????")
    }

    /// Whether an error of this SQLSTATE passes if the transaction is tried again: class 40
    /// (transaction rollback: serialization failure, deadlock), `55P03` lock not available
    /// (`lock_timeout`), `57014` query canceled (`statement_timeout`).
    pub fn is_transient(self) -> bool {
        self.0.starts_with(b"40") || &self.0 == b"55P03" || &self.0 == b"57014"
    }
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_pack_as_postgresql_does() {
        // ERRCODE_UNDEFINED_TABLE, MAKE_SQLSTATE('4','2','P','0','1') in errcodes.h's terms.
        let undefined_table = SqlState::new("42P01").unwrap();
        assert_eq!(undefined_table.packed(), 16_908_420);
        assert_eq!(SqlState::from_packed(16_908_420), Some(undefined_table));
        for code in ["00000", "40001", "55P03", "XX000", "2BP01"] {
            let s = SqlState::new(code).unwrap();
            assert_eq!(SqlState::from_packed(s.packed()), Some(s), "{code}");
            assert_eq!(s.to_string(), code);
        }
        assert_eq!(SqlState::new("4200"), None);
        assert_eq!(SqlState::new("42p01"), None);
        assert_eq!(SqlState::from_packed(-1), None);
    }

    #[test]
    fn transient_errors_are_retried_the_rest_is_fatal() {
        let state = |c| SqlState::new(c);
        for code in ["40001", "40P01", "55P03", "57014"] {
            assert!(matches!(
                Outcome::failed(state(code), "x"),
                Outcome::Retryable(_)
            ));
        }
        for code in [Some("42P01"), Some("42501"), None] {
            assert!(matches!(
                Outcome::failed(code.and_then(state), "x"),
                Outcome::Fatal(_)
            ));
        }
    }
}
