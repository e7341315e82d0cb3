//! The statements being executed in this backend, innermost last.
//!
//! The ProcessUtility hook knows a statement's text (its slice of the query string) and whether
//! the client sent it or a function ran it; the event triggers know what it did to which object.
//! The hook pushes a [`Statement`] before running the statement and takes it back after; one
//! that fails is forgotten when its (sub)transaction aborts. The triggers, which fire inside
//! that run, read the innermost one.

use ddl_server::utility::StatementStack;
use pgrx::pg_sys;
use std::cell::RefCell;

/// An object a statement dropped, as `pg_event_trigger_dropped_objects()` reports it (see
/// `dropped.rs`).
#[derive(Clone, Debug)]
pub struct Dropped {
    pub class_id: u32,
    pub object_id: u32,
    /// A column's number, 0 for a whole object.
    pub sub_id: i32,
    /// Dropped by the statement itself, not because it depended on what was.
    pub original: bool,
    /// The names, of an original object (the one a record names) and of a table or view
    /// dropped with it (which the record's description lists): empty for the others, which the
    /// capture only compares by OID.
    pub schema: String,
    /// The OID of `schema`, when the hook read it (0: look it up by name).
    pub namespace_id: u32,
    pub identity: String,
    pub object_type: String,
    pub temporary: bool,
}

impl Dropped {
    /// An object the statement did not name, which the capture only compares by address.
    pub fn unnamed((class_id, object_id, sub_id): crate::objects::Address) -> Dropped {
        Dropped {
            class_id,
            object_id,
            sub_id,
            original: false,
            schema: String::new(),
            namespace_id: 0,
            identity: String::new(),
            object_type: String::new(),
            temporary: false,
        }
    }
}

/// One statement under execution. The hook runs for every utility statement, so it only
/// keeps pointers; the text is cut and converted when a trigger captures the statement.
pub struct Statement {
    /// The query string the statement is part of; valid while the statement runs.
    pub query: *const std::ffi::c_char,
    /// `PlannedStmt.stmt_location`: where the statement starts, -1 if unknown.
    pub location: i32,
    /// `PlannedStmt.stmt_len`: its length, 0 for "to the end".
    pub len: i32,
    /// Sent by the client, not run by a function, DO block or extension script.
    pub top_level: bool,
    /// What it dropped, in order (see `objects.rs`).
    pub dropped: Vec<Dropped>,
    /// The relations (column 0) and columns it made itself, in order: not a table's TOAST
    /// table, nor what the statements it ran made.
    pub created_relations: Vec<(pg_sys::Oid, i32)>,
    /// The objects it made or changed that keep what a name found (`ddl_server::bindings`),
    /// its own and those of the statements it ran.
    pub holders: Vec<pg_sys::ObjectAddress>,
    /// The functions it ran that are not built in, once each.
    pub ran: Vec<pg_sys::Oid>,
    /// Whether its drops are kept, with the objects it names (`None` before its first drop).
    pub watch: Option<crate::objects::Watch>,
    /// Captured before it ran (see `early.rs`): `ddl_command_end` must not capture it again.
    pub captured: bool,
    /// Values to replicate as rows once it has run (see `volatile.rs`).
    pub refills: Vec<crate::volatile::Refill>,
    /// Relations to give a replica identity once it has run (see `keyless.rs`).
    pub keyless: crate::keyless::Candidates,
    /// The tree that runs (the hook's copy when it took the `ddl` option out).
    pub pstmt: *mut pg_sys::PlannedStmt,
    /// The `ddl` option of a CREATE/ALTER PUBLICATION, stored once the statement has run.
    pub request: Option<crate::publication::Request>,
    /// For a rename or a move, the object's identity before it ran (see `renamed.rs`).
    pub renamed_from: Option<String>,
}

impl Statement {
    /// The statement as a DROP of objects by name, if it is one.
    pub fn drop_stmt(&self) -> Option<&pg_sys::DropStmt> {
        // SAFETY: the hook's PlannedStmt, alive while the statement runs; its tree a node, a
        // DropStmt by its tag.
        unsafe {
            let node = (*self.pstmt).utilityStmt;
            (!node.is_null() && (*node).type_ == pg_sys::NodeTag::T_DropStmt)
                .then(|| &*(node as *const pg_sys::DropStmt))
        }
    }

    /// A `DROP ... CASCADE` (needed to rewrite a partly temporary DROP).
    pub fn cascade(&self) -> bool {
        self.drop_stmt()
            .is_some_and(|d| d.behavior == pg_sys::DropBehavior::DROP_CASCADE)
    }
}

thread_local! {
    static STACK: RefCell<StatementStack<Statement>> = const { RefCell::new(StatementStack::new()) };
}

/// Pushes `statement` before it runs; returns its depth, for [`take`].
pub fn push(statement: Statement) -> usize {
    STACK.with_borrow_mut(|s| s.push(statement))
}

/// The statement pushed at `depth`, once it has run.
pub fn take(depth: usize) -> Option<Statement> {
    STACK.with_borrow_mut(|s| s.take(depth))
}

/// Runs `f` on the innermost statement, if the hook saw one.
pub fn with_innermost<R>(f: impl FnOnce(&mut Statement) -> R) -> Option<R> {
    STACK.with_borrow_mut(|s| s.innermost().map(f))
}

/// Statements that ended in an ERROR are never taken back by the hook: forget them when their
/// (sub)transaction aborts, so that an event trigger never reads one of them as the statement
/// it fires for.
///
/// # Safety
/// Call once per process, from `_PG_init`.
pub unsafe fn forget_aborted_statements() {
    // SAFETY: the caller's promise; the listener raises no ERROR.
    unsafe { ddl_server::xact::at_end(|end| STACK.with_borrow_mut(|s| s.forget(end))) };
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
