//! The publisher of a subscription, reached the way PostgreSQL's own CREATE SUBSCRIPTION reaches
//! it: a logical replication connection made by libpqwalreceiver, on which both replication
//! commands and SQL run.

use ddl_filter::DdlKinds;
use ddl_server::errors::{self, OrInternal};
use pgrx::pg_sys;
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use std::ffi::{CStr, CString};

/// The output plugin a DDL-replicating subscription's slot must use.
pub(crate) const PLUGIN: &str = "ddl_pgoutput";

/// An open connection; closed on drop, also when an error unwinds.
pub(crate) struct Publisher {
    conn: *mut pg_sys::WalReceiverConn,
    functions: &'static pg_sys::WalReceiverFunctionsType,
}

/// What the publisher answered to a command it did not run: its SQLSTATE (packed, as
/// `WalRcvExecResult` carries it) and message.
pub(crate) struct Refused {
    sqlstate: i32,
    message: String,
}

impl Refused {
    /// The publisher's message without its severity prefix and without the lines (DETAIL,
    /// HINT) libpq adds after it.
    fn first_line(&self) -> &str {
        let line = self.message.lines().next().unwrap_or("");
        line.strip_prefix("ERROR:").map_or(line, str::trim_start)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn c_string(text: &str) -> CString {
    CString::new(text).unwrap_or_else(|_| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "a NUL character in a value sent to the publisher"
        );
    })
}

/// `'text'` as an SQL literal, quoted by PostgreSQL (escapes and backslashes included).
pub(crate) fn literal(text: &str) -> String {
    let text = c_string(text);
    // SAFETY: a NUL-terminated string; the result is palloc'd in the current context. Not
    // converted from the database encoding: quote_literal_cstr only adds quotes (and an `E`)
    // around, and doubles quotes and backslashes in, the bytes it was given, our UTF-8.
    unsafe { CStr::from_ptr(pg_sys::quote_literal_cstr(text.as_ptr())) }
        .to_string_lossy()
        .into_owned()
}

impl Publisher {
    /// Connects like the subscription's workers will (`conninfo`, application name the
    /// subscription's). `Err` carries libpq's message.
    pub(crate) fn connect(conninfo: &str, subscription: &str) -> Result<Publisher, String> {
        let conninfo = c_string(conninfo);
        let appname = c_string(subscription);
        // SAFETY: loading the library sets WalReceiverFunctions, as for PostgreSQL's own
        // CREATE SUBSCRIPTION; a library is never unloaded, so the functions stay.
        let functions: Option<&'static pg_sys::WalReceiverFunctionsType> = unsafe {
            pg_sys::load_file(c"libpqwalreceiver".as_ptr(), false);
            pg_sys::WalReceiverFunctions.as_ref()
        };
        let functions = functions.or_internal("libpqwalreceiver did not register its functions");
        let mut err: *mut std::ffi::c_char = std::ptr::null_mut();
        // SAFETY: libpqwalreceiver's connect, with NUL-terminated strings; raw C, so guarded
        // (its ERROR is raised again as ours).
        let conn = unsafe {
            pg_guard_ffi_boundary(|| {
                ddl_server::versions::walrcv_connect(
                    functions,
                    conninfo.as_ptr(),
                    appname.as_ptr(),
                    &mut err,
                )
            })
        };
        if conn.is_null() {
            return Err(if err.is_null() {
                "unknown error".to_owned()
            } else {
                // SAFETY: libpqwalreceiver's palloc'd, NUL-terminated message.
                unsafe { ddl_server::text::utf8_ptr(err) }
            });
        }
        Ok(Publisher { conn, functions })
    }

    /// Runs `command` (SQL or a replication command) that returns `columns` columns; the first
    /// column of its first row (`None`: no row; `Some(None)`: NULL). `Err` carries the
    /// publisher's message.
    pub(crate) fn first_value(
        &self,
        command: &str,
        columns: usize,
    ) -> Result<Option<Option<String>>, Refused> {
        Ok(self
            .rows(command, columns)?
            .into_iter()
            .next()
            .map(|row| row.into_iter().next().flatten()))
    }

    /// Runs `command` that returns `columns` columns; every row, each value as text (`None`:
    /// NULL). `Err` carries the publisher's message.
    pub(crate) fn rows(
        &self,
        command: &str,
        columns: usize,
    ) -> Result<Vec<Vec<Option<String>>>, Refused> {
        let res = self.exec(command, columns, pg_sys::WalRcvExecStatus::WALRCV_OK_TUPLES)?;
        // SAFETY: a result with tuples: its descriptor and store (of `columns` text columns,
        // converted to this database's encoding by the connection) are read through one slot,
        // dropped before the result is cleared.
        unsafe {
            let slot =
                pg_sys::MakeSingleTupleTableSlot((*res).tupledesc, &pg_sys::TTSOpsMinimalTuple);
            let mut rows = Vec::new();
            while pg_sys::tuplestore_gettupleslot((*res).tuplestore, true, false, slot) {
                let row = (1..=columns as i32)
                    .map(|at| {
                        let mut isnull = false;
                        let datum = pg_sys::slot_getattr(slot, at, &mut isnull);
                        (!isnull).then(|| ddl_server::text::utf8_text(datum))
                    })
                    .collect();
                rows.push(row);
            }
            pg_sys::ExecDropSingleTupleTableSlot(slot);
            pg_sys::walrcv_clear_result(res);
            Ok(rows)
        }
    }

    /// Runs `command`, which returns no rows. `Err` carries the publisher's message.
    fn command(&self, command: &str) -> Result<(), Refused> {
        let res = self.exec(command, 0, pg_sys::WalRcvExecStatus::WALRCV_OK_COMMAND)?;
        // SAFETY: walrcv_exec's result, cleared once.
        unsafe { pg_sys::walrcv_clear_result(res) };
        Ok(())
    }

    /// walrcv_exec of `command` (`columns` text columns), whose result must have status
    /// `expected`; the result, for the caller to clear.
    fn exec(
        &self,
        command: &str,
        columns: usize,
        expected: pg_sys::WalRcvExecStatus::Type,
    ) -> Result<*mut pg_sys::WalRcvExecResult, Refused> {
        let command = c_string(command);
        let types = vec![pg_sys::TEXTOID; columns];
        let exec = self
            .functions
            .walrcv_exec
            .or_internal("libpqwalreceiver registered no walrcv_exec");
        // SAFETY: a live connection (open until drop), a NUL-terminated command and one type
        // per column; raw C, so guarded (its ERROR is raised again as ours).
        let res = unsafe {
            pg_guard_ffi_boundary(|| {
                exec(self.conn, command.as_ptr(), columns as i32, types.as_ptr())
            })
        };
        // SAFETY: walrcv_exec's result, cleared here on failure (an ERROR in between leaves it
        // to the memory context, as PostgreSQL's own callers do); `err` is NULL or its
        // NUL-terminated message.
        unsafe {
            if (*res).status != expected {
                let message = if (*res).err.is_null() {
                    "unexpected result".to_owned()
                } else {
                    ddl_server::text::utf8_ptr((*res).err)
                };
                let sqlstate = (*res).sqlstate;
                pg_sys::walrcv_clear_result(res);
                return Err(Refused { sqlstate, message });
            }
        }
        Ok(res)
    }

    /// A one-column query that returns one row; its error is the publisher's.
    fn value(&self, sql: &str, what: &str) -> Option<String> {
        self.first_value(sql, 1)
            .unwrap_or_else(|e| {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                    format!("could not read {what} from the publisher: {e}")
                );
            })
            .flatten()
    }

    /// Which DDL kinds the publications `publications` replicate, every rule of theirs counted
    /// (a schema rule may send kinds the publication row does not); `None` when the publisher
    /// has no `ddl_sync` extension in this database.
    pub(crate) fn offered_kinds(&self, publications: &[String]) -> Option<DdlKinds> {
        let installed = self.value(
            "SELECT count(*)::text FROM pg_catalog.pg_extension WHERE extname = 'ddl_sync'",
            "its extensions",
        );
        if installed.as_deref() != Some("1") {
            return None;
        }
        let names: Vec<String> = publications.iter().map(|p| literal(p)).collect();
        let bits = self.value(
            &format!(
                "SELECT coalesce(bit_or(s.pfsyncddl), 0)::text
                   FROM ddl_sync.publication_sync s
                   JOIN pg_catalog.pg_publication p ON p.oid = s.pfsyncpubid
                  WHERE s.pfsyncenabled AND p.pubname IN ({})",
                names.join(", ")
            ),
            "the DDL configuration of the publications",
        );
        Some(DdlKinds::from_bits_truncate(
            bits.and_then(|b| b.parse().ok()).unwrap_or(0),
        ))
    }

    /// The output plugin of slot `slot`; `None` when the slot does not exist.
    pub(crate) fn slot_plugin(&self, slot: &str) -> Option<String> {
        self.value(
            &format!(
                "SELECT plugin::text FROM pg_catalog.pg_replication_slots WHERE slot_name = {}",
                literal(slot)
            ),
            "its replication slots",
        )
    }

    /// Creates logical slot `slot` with plugin `ddl_pgoutput`, as PostgreSQL's
    /// walrcv_create_slot does with pgoutput (no snapshot; two-phase and failover when asked),
    /// and with the same error.
    pub(crate) fn create_slot(&self, slot: &str, two_phase: bool, failover: bool) {
        self.create_slot_row(slot, "nothing", two_phase, failover);
    }

    /// Creates slot `slot` as [`create_slot`](Self::create_slot) does, exporting the snapshot it
    /// starts at; returns the snapshot's name, valid while this connection runs nothing else,
    /// and the LSN the slot starts at.
    pub(crate) fn create_slot_exporting_snapshot(
        &self,
        slot: &str,
        failover: bool,
    ) -> (String, Option<String>) {
        // slot_name, consistent_point, snapshot_name, output_plugin
        let mut row = self
            .create_slot_row(slot, "export", false, failover)
            .into_iter();
        let lsn = row.nth(1).flatten();
        let snapshot = row.next().flatten().unwrap_or_else(|| {
            errors::raise(
                PgSqlErrorCode::ERRCODE_PROTOCOL_VIOLATION,
                format_args!("the publisher exported no snapshot for replication slot \"{slot}\""),
            )
        });
        (snapshot, lsn)
    }

    /// Drops slot `slot`, which this connection made; a failure is a WARNING (the slot is left
    /// for the administrator, who is told its name).
    pub(crate) fn drop_slot(&self, slot: &str) {
        if let Err(e) = self.command(&format!("DROP_REPLICATION_SLOT \"{slot}\" WAIT")) {
            warning!("could not drop replication slot \"{slot}\" on the publisher: {e}");
        }
    }

    fn create_slot_row(
        &self,
        slot: &str,
        snapshot: &str,
        two_phase: bool,
        failover: bool,
    ) -> Vec<Option<String>> {
        // The name passed ReplicationSlotValidateName in CREATE SUBSCRIPTION: [a-z0-9_] only.
        let command = format!(
            "CREATE_REPLICATION_SLOT \"{slot}\" LOGICAL {PLUGIN} (SNAPSHOT '{snapshot}'{}{})",
            if two_phase { ", TWO_PHASE" } else { "" },
            if failover { ", FAILOVER" } else { "" }
        );
        let e = match self.rows(&command, 4) {
            Ok(rows) => return rows.into_iter().next().unwrap_or_default(),
            Err(e) => e,
        };
        // Servers updated since August 2026 load only the output plugins that
        // output_plugin_libraries lists; the refusal is this SQLSTATE, and nothing else about
        // creating a slot on a replication connection (which already has REPLICATION) is.
        if e.sqlstate == PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE as i32 {
            ErrorReport::new(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!(
                    "the publisher does not allow output plugin \"{PLUGIN}\" for slot \"{slot}\""
                ),
                "ddl_sync",
            )
            .set_detail(format!("The publisher said: {}", e.first_line()))
            .set_hint(format!(
                "On the publisher, add {PLUGIN} to output_plugin_libraries (PostgreSQL 15.19, \
                 16.15, 17.11, 18.6 and later), keeping the plugins it lists, e.g. \
                 output_plugin_libraries = 'pgoutput, test_decoding, {PLUGIN}', and reload \
                 its configuration."
            ))
            .report(PgLogLevel::ERROR);
        }
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_PROTOCOL_VIOLATION,
            format!("could not create replication slot \"{slot}\": {e}")
        );
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if let Some(disconnect) = self.functions.walrcv_disconnect {
            // SAFETY: the connection is open and closed once; PQfinish raises no ERROR.
            unsafe { disconnect(self.conn) };
        }
    }
}
