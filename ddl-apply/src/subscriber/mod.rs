//! What every job on a subscriber shares: the subscription whose apply worker runs
//! ([`applying`]), its DDL configuration, with its one writer ([`config`]), what the apply
//! worker shows it is doing ([`activity`]), and
//! the apply-time code check ([`apply_code`], with [`caller_rights`]), which both the replay
//! and the schema copy apply. The replay engine (`replay`) and the subscription statements
//! (`subscription`) build on it and never on each other.

pub(crate) mod activity;
pub(crate) mod apply_code;
pub(crate) mod applying;
pub(crate) mod caller_rights;
pub(crate) mod config;
