//! PostgreSQL's statement timeout, armed around a stretch of our own work in a process that
//! has no client statement to time (the apply worker): `statement_timeout` the setting is only
//! read when a client's statement starts (`start_xact_command`), so setting it there bounds
//! nothing. The timer raises PostgreSQL's own ERROR ("canceling statement due to statement
//! timeout", `57014`) at the next interrupt check once it fires.

use std::ffi::c_int;

/// `STATEMENT_TIMEOUT` of `TimeoutId` (utils/timeout.h): the fourth reason in 15 to 18.
const STATEMENT_TIMEOUT: c_int = 3;

unsafe extern "C-unwind" {
    // utils/timeout.h, which pgrx's bindings leave out.
    fn enable_timeout_after(id: c_int, delay_ms: c_int);
    fn disable_timeout(id: c_int, keep_indicator: bool);
}

/// The statement timer, armed for `ms` milliseconds while this lives (not at all for 0).
pub struct StatementTimer {
    armed: bool,
}

impl StatementTimer {
    pub fn arm(ms: i32) -> StatementTimer {
        let armed = ms > 0;
        if armed {
            // SAFETY: a timeout reason every backend registers (InitPostgres), armed in this
            // process; an ERROR it raises (none in practice) comes through the guard.
            unsafe {
                pgrx::pg_sys::ffi::pg_guard_ffi_boundary(|| {
                    enable_timeout_after(STATEMENT_TIMEOUT, ms)
                })
            };
        }
        StatementTimer { armed }
    }
}

impl Drop for StatementTimer {
    fn drop(&mut self) {
        if self.armed {
            // SAFETY: disarms the timer armed above (keeping no indicator: a timeout that
            // fired has raised its ERROR already, or will not matter any more).
            unsafe {
                pgrx::pg_sys::ffi::pg_guard_ffi_boundary(|| {
                    disable_timeout(STATEMENT_TIMEOUT, false)
                })
            };
        }
    }
}
