//! The result of each adapter step.

/// How a replay step ended. The apply side maps it to the subscription's conflict policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Success,
    /// Failed for a reason that may pass (a lock timeout, a serialization failure): with policy
    /// `error` the apply worker errors and PostgreSQL retries the whole transaction.
    Retryable(String),
    /// Failed for a reason retrying will not fix (a syntax error, a missing object).
    Fatal(String),
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
}
