//! What operators see of a replay in `pg_stat_activity`: while the apply worker replays a
//! statement, its `query` is that statement, prefixed with where it came from
//! (`/* ddl_sync replay <system identifier> <LSN> */ ALTER TABLE ...`), and its `state` is
//! `active`. A replay waiting on a lock a local session holds then shows what it waits for in
//! the usual place: `wait_event_type = 'Lock'` and `pg_blocking_pids()` of the worker, with the
//! statement next to them. Afterwards the worker's previous state and query come back. A
//! long CREATE SUBSCRIPTION ... WITH (copy_schema = true) shows its current step the same way.

use pgrx::pg_sys;
use std::ffi::{CStr, CString};

/// The report in force; dropping it (also while an ERROR unwinds) restores the previous one.
pub(crate) struct Activity {
    previous: Option<(pg_sys::BackendState::Type, CString)>,
}

impl Activity {
    /// Reports `sql`, replayed from `origin` (`"<system identifier> <LSN>"`), as this backend's
    /// running statement. pgstat clips it to `track_activity_query_size`.
    pub(crate) fn report(origin: &str, sql: &str) -> Activity {
        // A statement cannot hold NUL (it came through a text column); if it did, the prefix
        // alone still says a replay is running.
        let text = format!("/* ddl_sync replay {origin} */ {sql}");
        let shown = Activity::show(&text);
        if text.contains('\0') {
            shown.set(&format!("/* ddl_sync replay {origin} */"));
        }
        shown
    }

    /// Reports `text` as this backend's running statement, until dropped.
    pub(crate) fn show(text: &str) -> Activity {
        // SAFETY: MyBEEntry is this backend's own status entry (NULL in processes without one),
        // and st_activity_raw a NUL-terminated buffer of it; only this backend writes either.
        let previous = unsafe {
            let entry = pg_sys::MyBEEntry;
            (!entry.is_null() && !(*entry).st_activity_raw.is_null()).then(|| {
                (
                    (*entry).st_state,
                    CStr::from_ptr((*entry).st_activity_raw).to_owned(),
                )
            })
        };
        let shown = Activity { previous };
        shown.set(text);
        shown
    }

    /// Replaces the text shown (a text holding NUL shows nothing new).
    pub(crate) fn set(&self, text: &str) {
        let Ok(text) = CString::new(text) else {
            return;
        };
        // SAFETY: a valid C string; pgstat copies it into shared memory.
        unsafe {
            pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_RUNNING, text.as_ptr())
        };
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        if let Some((state, query)) = &self.previous {
            // SAFETY: as in `report`; pgstat_report_activity raises no ERROR.
            unsafe { pg_sys::pgstat_report_activity(*state, query.as_ptr()) };
        }
    }
}
