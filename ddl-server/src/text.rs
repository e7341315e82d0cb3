//! Server strings to UTF-8, and back. Records and the pure crates speak UTF-8 whatever the
//! database encoding, so every string read from the server for them is converted, never
//! reinterpreted: in a LATIN1 database `café` is the byte E9 in the middle, which read as UTF-8
//! becomes U+FFFD and names another object. A string that cannot be UTF-8 (bytes that are not
//! valid UTF-8 in a SQL_ASCII database) is PostgreSQL's ERROR `invalid byte sequence for
//! encoding "UTF8"`: the statement fails rather than being replicated as something else.

use pgrx::pg_sys;
use std::ffi::{c_char, CStr};

/// `s` (in the database encoding) in UTF-8.
///
/// # Safety
/// In a backend, with `s` from the server.
pub unsafe fn utf8(s: &CStr) -> String {
    // The server's strings are valid in its encoding: in a UTF-8 database, as they are (what
    // the conversion would return, without the call).
    if database_is_utf8() {
        return owned(s);
    }
    let len = s.to_bytes().len() as i32;
    // SAFETY: `s` is NUL-terminated and `len` long; the result is `s` itself or a new
    // NUL-terminated string in the current memory context.
    let converted =
        unsafe { pg_sys::pg_server_to_any(s.as_ptr(), len, pg_sys::pg_enc::PG_UTF8 as i32) };
    // SAFETY: as above, a NUL-terminated string. Converted (or checked, for SQL_ASCII), it is
    // valid UTF-8: nothing is lost by the lossy conversion.
    owned(unsafe { CStr::from_ptr(converted) })
}

/// `s`, valid UTF-8, as a `String`. (`to_string_lossy` checks it a character at a time, which
/// cost several times as much for the short names read for every record.)
fn owned(s: &CStr) -> String {
    match std::str::from_utf8(s.to_bytes()) {
        Ok(valid) => valid.to_owned(),
        Err(_) => s.to_string_lossy().into_owned(),
    }
}

/// Whether this backend's database is UTF-8, asked once the backend has one: its database,
/// and so its encoding, never changes after.
fn database_is_utf8() -> bool {
    thread_local! {
        static UTF8: std::cell::OnceCell<bool> = const { std::cell::OnceCell::new() };
    }
    UTF8.with(|cached| {
        if let Some(utf8) = cached.get() {
            return *utf8;
        }
        // SAFETY: backend globals, set when the backend connected to its database.
        let (connected, utf8) = unsafe {
            (
                pg_sys::MyDatabaseId != pg_sys::InvalidOid,
                pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_UTF8 as i32,
            )
        };
        if connected {
            let _ = cached.set(utf8);
        }
        utf8
    })
}

/// [`utf8`] of a NUL-terminated server string.
///
/// # Safety
/// `s` is a NUL-terminated string from the server, valid for the call.
pub unsafe fn utf8_ptr(s: *const c_char) -> String {
    // SAFETY: the caller's promise.
    unsafe { utf8(CStr::from_ptr(s)) }
}

/// `name` quoted as an identifier where it needs it (`quote_identifier`), in UTF-8.
///
/// # Safety
/// `name` is a NUL-terminated string in the database encoding, valid for the call.
pub unsafe fn utf8_identifier(name: *const c_char) -> String {
    // SAFETY: the caller's promise; the result is `name` itself or a new string.
    unsafe { utf8_ptr(pg_sys::quote_identifier(name)) }
}

/// `name` (UTF-8) quoted as an identifier where it needs it, as PostgreSQL's
/// `quote_identifier` decides (plain lowercase letters, digits and `_`, not a keyword that
/// needs quotes, `quote_all_identifiers` off) and writes it (`"` around, `"` doubled). Decided
/// here but for the keyword lookup, which is the server's: identifiers are quoted for every
/// record, most of them plain, and a round trip through a server string costs more than the
/// test. Not converted to the database encoding: any byte outside ASCII makes it quote, in
/// every encoding alike.
pub fn quote_identifier(name: &str) -> String {
    let plain = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    // SAFETY: a setting variable of this backend.
    if plain && !unsafe { pg_sys::quote_all_identifiers } && !is_quoted_keyword(name) {
        return name.to_string();
    }
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push('"');
    for c in name.chars() {
        if c == '"' {
            quoted.push('"');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

extern "C-unwind" {
    /// The server's own, not pgrx's binding, whose guard costs more than the lookup (a hash of
    /// a static table, which cannot fail), asked for most names of every record.
    #[link_name = "ScanKeywordLookup"]
    fn server_keyword_lookup(
        text: *const c_char,
        keywords: *const pg_sys::ScanKeywordList,
    ) -> std::ffi::c_int;
}

/// Whether `name` (plain lowercase ASCII) is a keyword that PostgreSQL quotes as an
/// identifier: any but an unreserved one.
fn is_quoted_keyword(name: &str) -> bool {
    // No keyword is as long as a name may be: a longer one is none.
    let mut text = [0u8; pg_sys::NAMEDATALEN as usize];
    if name.len() >= text.len() {
        return false;
    }
    text[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: a NUL-terminated string; the server's keyword list, and its categories, one per
    // keyword number.
    unsafe {
        let number = server_keyword_lookup(text.as_ptr().cast(), &raw const pg_sys::ScanKeywords);
        number >= 0
            && u32::from(*pg_sys::ScanKeywordCategories.as_ptr().add(number as usize))
                != pg_sys::UNRESERVED_KEYWORD
    }
}

/// A `text` datum from the server, detoasted and in UTF-8.
///
/// # Safety
/// `datum` is a `text` datum valid for the call; in a backend.
pub unsafe fn utf8_text(datum: pg_sys::Datum) -> String {
    // SAFETY: the caller's promise; text_to_cstring copies it (detoasted) into a server string
    // in the current memory context.
    unsafe { utf8_ptr(pg_sys::text_to_cstring(datum.cast_mut_ptr())) }
}

/// `s` (UTF-8, from a record) in the database encoding: a pointer and length valid for the
/// current memory context (`s` itself when nothing changes), not NUL-terminated. A character the
/// database encoding cannot hold is PostgreSQL's ERROR, as for any text converted into it.
///
/// # Safety
/// In a backend inside a transaction (a conversion may look up its function); the result may
/// point into `s`.
pub unsafe fn in_server_encoding(s: &str) -> (*const c_char, usize) {
    // SAFETY: reads `s.len()` bytes of `s`; the result is `s` itself or a new NUL-terminated
    // string.
    let converted = unsafe {
        pg_sys::pg_any_to_server(
            s.as_ptr().cast(),
            s.len() as i32,
            pg_sys::pg_enc::PG_UTF8 as i32,
        )
    };
    if converted.cast_const() == s.as_ptr().cast() {
        (converted, s.len())
    } else {
        // SAFETY: a conversion's result is a new NUL-terminated string.
        (
            converted,
            unsafe { CStr::from_ptr(converted) }.to_bytes().len(),
        )
    }
}

/// [`in_server_encoding`] as an owned NUL-terminated string, for catalog lookups by name;
/// `None` when the name holds a NUL byte (no catalog name does).
///
/// # Safety
/// In a backend inside a transaction.
pub unsafe fn server_cstring(s: &str) -> Option<std::ffi::CString> {
    // SAFETY: the caller's promise; the result is `len` bytes, copied at once.
    let bytes = unsafe {
        let (converted, len) = in_server_encoding(s);
        std::slice::from_raw_parts(converted.cast::<u8>(), len).to_vec()
    };
    std::ffi::CString::new(bytes).ok()
}

/// `lsn` as this server prints a `pg_lsn` (19 pads the low half to eight digits, 15 to 18 do
/// not), so that a message names an event as its row does.
pub fn lsn(lsn: ddl_wire::Lsn) -> String {
    // SAFETY: pg_lsn_out of a pg_lsn datum (passed by value) returns a palloc'd C string in
    // the current memory context, read and then freed.
    unsafe {
        let Some(out) = pgrx::fcinfo::direct_function_call_as_datum(
            pg_sys::pg_lsn_out,
            &[Some(pg_sys::Datum::from(lsn.0))],
        ) else {
            return lsn.to_string();
        };
        let text = CStr::from_ptr(out.cast_mut_ptr::<c_char>())
            .to_string_lossy()
            .into_owned();
        pg_sys::pfree(out.cast_mut_ptr());
        text
    }
}
