//! The run-time contract between the two libraries: what `ddl_sync.so` (ddl-apply, with the
//! extension's SQL) and `ddl_pgoutput.so` (ddl-decode and ddl-capture) name of each other,
//! which no linker checks. Both sides take the names from here, and ddl-apply's
//! `contract_tests` checks them against an installed server, so neither can drift alone.
//!
//! Why a subscriber needs the plugin library too: the extension is one install for every
//! node, and its SQL declares the capture's event triggers and the publication counters as
//! functions of `ddl_pgoutput.so` ([`PLUGIN_SQL_SYMBOLS`]), so `CREATE EXTENSION` loads that
//! library to check them; on a node that also publishes, the replay tells the capture where a
//! replayed statement first ran ([`SET_REPLAY_ORIGIN`]). The event row itself is the third part
//! of the contract: ddl-wire's event schema, which the plugin forms and the replay reads.

use pgrx::pg_sys;
use std::ffi::CStr;
use std::sync::OnceLock;

/// The plugin library, as the extension's SQL and `ddl_sync.so` name it.
pub const PLUGIN_LIBRARY: &CStr = c"$libdir/ddl_pgoutput";

/// The C functions of [`PLUGIN_LIBRARY`] that the extension's SQL declares (`LANGUAGE c AS
/// '$libdir/ddl_pgoutput', '<symbol>'`, in `sql/capture.sql` and `sql/stats.sql`).
pub const PLUGIN_SQL_SYMBOLS: &[&str] = &[
    "ddl_sync_capture_ddl_command_end",
    "ddl_sync_capture_sql_drop",
    "ddl_sync_publication_stats_wrapper",
    "ddl_sync_publication_rejected_stats_wrapper",
    "ddl_sync_publication_rule_stats_wrapper",
    "ddl_sync_reset_publication_stats_wrapper",
];

/// The function of [`PLUGIN_LIBRARY`] that `ddl_sync.so` looks up by name: where the statement
/// being replayed first ran, `(active, system identifier, LSN)`; `active` false clears it.
pub const SET_REPLAY_ORIGIN: &CStr = c"ddl_sync_set_replay_origin";

/// The type of [`SET_REPLAY_ORIGIN`] (ddl-capture's `replay_origin.rs` defines it, and is
/// checked against this type at build time).
pub type SetReplayOrigin = unsafe extern "C-unwind" fn(bool, u64, u64);

/// The columns of `ddl_sync.publication_sync` the capture reads without SPI, in this order
/// (ddl-capture's `rules.rs`).
pub const PUBLICATION_SYNC_COLUMNS: [&CStr; 9] = [
    c"oid",
    c"pfsyncpubid",
    c"pfsynckind",
    c"pfsyncnspid",
    c"pfsyncrelid",
    c"pfsyncobjid",
    c"pfsyncenabled",
    c"pfsyncddl",
    c"pfsyncextra",
];

/// The columns of `ddl_sync.adapter` the capture reads without SPI (to forget the SQL adapters
/// of dropped functions, ddl-capture's `forget.rs`).
pub const ADAPTER_FUNCTION_COLUMNS: [&CStr; 3] =
    [c"execute_function", c"init_function", c"cleanup_function"];

/// The tables of the extension that `ddl_pgoutput.so` scans without SPI, with the columns it
/// reads. (It also forms rows of `events`, by ddl-wire's event schema.)
pub const PLUGIN_READS: [(&CStr, &[&CStr]); 2] = [
    (c"publication_sync", &PUBLICATION_SYNC_COLUMNS),
    (c"adapter", &ADAPTER_FUNCTION_COLUMNS),
];

/// [`SET_REPLAY_ORIGIN`] of the plugin library, when it has it. Looked up once per process (a
/// loaded library is never unloaded): each lookup checks the file on disk, and the replay
/// calls it twice per event.
pub fn set_replay_origin() -> Option<SetReplayOrigin> {
    static SETTER: OnceLock<Option<SetReplayOrigin>> = OnceLock::new();
    // SAFETY: looks up a function the library exports with this signature (checked where it
    // is defined); with signalNotFound false a missing symbol gives NULL, not an ERROR.
    *SETTER.get_or_init(|| unsafe {
        let f = pg_sys::load_external_function(
            PLUGIN_LIBRARY.as_ptr(),
            SET_REPLAY_ORIGIN.as_ptr(),
            false,
            std::ptr::null_mut(),
        );
        (!f.is_null()).then(|| std::mem::transmute::<*mut std::ffi::c_void, SetReplayOrigin>(f))
    })
}
