//! Settings changed for a scope, and nothing of them left after it.

use pgrx::pg_sys;
use std::ffi::CString;

/// Runs `f` with `path` as search_path, then undoes every setting changed inside (an ERROR
/// inside leaves that to the abort of the (sub)transaction).
///
/// Why "every setting": the level is popped as on abort, as PostgreSQL's index builds do, not
/// as a function's `SET` clause is. Code that runs inside (a function in an expression, say)
/// may call `set_config(..., false)`, which a committed level would keep for the rest of the
/// session, its search_path included.
pub fn with_search_path<R>(path: &str, f: impl FnOnce() -> R) -> R {
    with_settings(&[("search_path", path)], f)
}

/// Runs `f` with each `(name, value)` of `settings` set (as a session would `SET` them), then
/// undoes every setting changed inside, as [`with_search_path`] does. A setting whose current
/// value PostgreSQL shows as exactly `value` is left as it is: setting it costs more than the
/// comparison (a value written another way, `1s` for `1000`, is set, to the same effect).
pub fn with_settings<R>(settings: &[(&str, &str)], f: impl FnOnce() -> R) -> R {
    // SQL text never holds NUL; a value that does is replaced by the empty string.
    let settings: Vec<(CString, CString)> = settings
        .iter()
        .map(|(name, value)| {
            (
                CString::new(*name).unwrap_or_default(),
                CString::new(*value).unwrap_or_default(),
            )
        })
        .collect();
    // SAFETY: a new GUC nest level, the settings saved in it, and the level popped after; an
    // ERROR in between unwinds to a (sub)transaction abort, which pops it.
    unsafe {
        let nest = pg_sys::NewGUCNestLevel();
        for (name, value) in &settings {
            if shows(name, value.to_bytes()) {
                continue;
            }
            // elevel 0: an invalid value is PostgreSQL's ERROR, as for a session's SET.
            session_set(name, value, true, 0);
        }
        let result = f();
        pg_sys::AtEOXact_GUC(false, nest);
        result
    }
}

/// Whether PostgreSQL shows setting `name`'s current value as exactly `value` (an unknown
/// name: no). Setting such a value changes nothing, and checking it proves nothing new.
pub fn has_value(name: &str, value: &str) -> bool {
    CString::new(name).is_ok_and(|name| shows(&name, value.as_bytes()))
}

fn shows(name: &std::ffi::CStr, value: &[u8]) -> bool {
    // SAFETY: missing_ok: NULL for an unknown name; the value is read at once (valid until the
    // next GetConfigOption).
    unsafe {
        let current = pg_sys::GetConfigOption(name.as_ptr(), true, false);
        !current.is_null() && std::ffi::CStr::from_ptr(current).to_bytes() == value
    }
}

/// The current value of setting `name` as `SHOW` writes it; `None` for a setting this server
/// does not know.
pub fn current(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    // SAFETY: missing_ok: NULL for an unknown name; the value is copied at once (valid until
    // the next GetConfigOption).
    unsafe {
        let value = pg_sys::GetConfigOption(name.as_ptr(), true, false);
        (!value.is_null()).then(|| {
            std::ffi::CStr::from_ptr(value)
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// Whether `name` may be set to `value` here as a session's `SET` would set it: checked (its
/// check hook included), not set. An invalid value, or a name this server does not know, is
/// `false` (said at DEBUG1), never an ERROR.
pub fn valid(name: &str, value: &str) -> bool {
    let (Ok(name), Ok(value)) = (CString::new(name), CString::new(value)) else {
        return false;
    };
    // SAFETY: changeVal = false only validates; elevel DEBUG1 reports a bad name or value at
    // that level and returns 0 instead of raising it. A valid one returns -1 ("not applied
    // because of changeVal"), as +1 would say it was applied.
    unsafe { session_set(&name, &value, false, pg_sys::DEBUG1 as i32) != 0 }
}

/// `set_config_option` as a session's `SET` calls it; `change` false only checks.
///
/// # Safety
/// In a backend, with a GUC nest level to save into when `change` is true.
unsafe fn session_set(name: &CString, value: &CString, change: bool, elevel: i32) -> i32 {
    // SAFETY: the caller's promise; both strings are NUL-terminated.
    unsafe {
        pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            change,
            elevel,
            false,
        )
    }
}
