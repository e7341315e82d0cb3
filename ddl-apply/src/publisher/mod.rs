//! The publisher's configuration: which DDL each publication replicates
//! ([`publication_sync`], the functions that change `ddl_sync.publication_sync`), the text forms
//! of kinds and rules ([`kinds`], ddl-filter's), and the capture's event triggers, enabled only
//! while a publication takes DDL ([`event_triggers`]).

pub(crate) mod event_triggers;
pub mod kinds;
pub mod publication_sync;
#[cfg(any(test, feature = "pg_test"))]
mod publication_sync_tests;
