//! The statements being executed in this backend, innermost last.
//!
//! The ProcessUtility hook knows a statement's text (its slice of the query string) and whether
//! the client sent it or a function ran it; the event triggers know what it did to which object.
//! The hook pushes a [`Statement`] before running the statement and pops it after (also when it
//! fails), and the triggers, which fire inside that run, read the innermost one.

use std::cell::RefCell;

/// An object a DROP statement removed, as `pg_event_trigger_dropped_objects()` reports it.
#[derive(Clone, Debug)]
pub struct Dropped {
    pub class_id: u32,
    pub object_id: u32,
    /// A column's number, 0 for a whole object.
    pub sub_id: i32,
    /// Dropped by the statement itself, not because it depended on what was.
    pub original: bool,
    pub schema: String,
    pub identity: String,
    pub object_type: String,
    pub temporary: bool,
}

/// One statement under execution. The hook runs for every utility statement, so it only
/// keeps pointers; the text is cut and converted when a trigger captures the statement.
#[derive(Debug)]
pub struct Statement {
    /// The query string the statement is part of; valid while the statement runs.
    pub query: *const std::ffi::c_char,
    /// `PlannedStmt.stmt_location`: where the statement starts, -1 if unknown.
    pub location: i32,
    /// `PlannedStmt.stmt_len`: its length, 0 for "to the end".
    pub len: i32,
    /// Sent by the client, not run by a function, DO block or extension script.
    pub top_level: bool,
    /// A DROP ... CASCADE.
    pub cascade: bool,
    /// What `sql_drop` reported for it.
    pub dropped: Vec<Dropped>,
    /// Captured before it ran (see `early.rs`): `ddl_command_end` must not capture it again.
    pub captured: bool,
    /// Values to replicate as rows once it has run (see `volatile.rs`).
    pub refills: Vec<crate::volatile::Refill>,
}

thread_local! {
    static STACK: RefCell<Vec<Statement>> = const { RefCell::new(Vec::new()) };
}

/// Pops the statement when dropped, so an ERROR (a Rust panic unwinding through the hook)
/// cannot leave it behind for the next statement.
pub struct Running(());

impl Drop for Running {
    fn drop(&mut self) {
        STACK.with(|s| s.borrow_mut().pop());
    }
}

/// Pushes `statement` until the returned guard is dropped.
pub fn enter(statement: Statement) -> Running {
    STACK.with(|s| s.borrow_mut().push(statement));
    Running(())
}

/// Runs `f` on the innermost statement, if the hook saw one.
pub fn with_innermost<R>(f: impl FnOnce(&mut Statement) -> R) -> Option<R> {
    STACK.with(|s| s.borrow_mut().last_mut().map(f))
}

/// The statement at `location`/`len` of `query` as PostgreSQL's parser marked it: location -1
/// means the whole string, len 0 "to the end". Surrounding blanks and the final semicolon go.
pub fn cut(query: &str, location: i32, len: i32) -> &str {
    let start = usize::try_from(location).unwrap_or(0).min(query.len());
    let end = match usize::try_from(len) {
        Ok(0) | Err(_) => query.len(),
        Ok(n) => start.saturating_add(n).min(query.len()),
    };
    let text = query.get(start..end).unwrap_or(query);
    text.trim().trim_end_matches(';').trim_end()
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cuts_one_statement_from_a_multi_statement_string() {
        let q = "CREATE TABLE a (x int); INSERT INTO a VALUES (1);\n ALTER TABLE a ADD y int ;";
        assert_eq!(cut(q, 0, 22), "CREATE TABLE a (x int)");
        assert_eq!(cut(q, 50, 0), "ALTER TABLE a ADD y int");
        assert_eq!(cut(q, -1, 0), q.trim().trim_end_matches(';').trim_end());
        assert_eq!(cut(q, 500, 3), "");
    }
}
