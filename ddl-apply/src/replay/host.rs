//! The server side of the adapter API: what an adapter may ask of PostgreSQL while it replays.

use crate::replay::statement::{self, Checked};
use crate::replay::{apply_code, bound, detach, tablespace};
use ddl_adapter::{Context, Failure, Host, Outcome, SqlState};
use ddl_server::guc::with_settings;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::rc::Rc;

/// What the event being replayed claims. Every statement an adapter runs, by whichever path (a
/// Rust adapter's `Host::execute`, a C adapter's `ctx->execute`, a SQL adapter's
/// `ddl_sync.adapter_execute`), is checked against it: an adapter may rewrite the text of a
/// statement from its dialect, never turn it into another command.
struct Claim {
    tag: String,
    kind: &'static str,
    /// The schema the subscription's rules judged the event by: a statement whose relation
    /// resolves to another one here is refused.
    schema: Option<String>,
    /// The search_path and settings the statement ran with on its origin (see `settings.rs`),
    /// set only while a claimed statement is checked and runs.
    settings: Vec<(String, String)>,
    /// Why a statement an adapter ran was refused: the row then says `refused`.
    refusal: Option<String>,
    /// What the replay changed in the statements it ran, by policy (a dropped tablespace
    /// clause): said on the row.
    notes: Vec<String>,
    /// What the statement bound by name on the publisher (`bound.rs`); `None` when not known.
    published: Option<Rc<BTreeSet<String>>>,
    /// The event's statement as its check parsed it, taken by the first statement run that
    /// is the same text.
    parsed: Option<statement::Parsed>,
}

thread_local! {
    static CLAIM: RefCell<Option<Claim>> = const { RefCell::new(None) };
}

/// Runs adapters' requests in the apply worker's transaction; the claim of the event holds
/// while it lives.
pub struct ServerHost {
    /// The claim of an enclosing replay, back when this one ends.
    outer: Option<Claim>,
    /// The user and security context to restore when a role was entered.
    saved_user: Option<(pg_sys::Oid, i32)>,
}

impl ServerHost {
    pub fn new(
        checked: &Checked,
        settings: Vec<(String, String)>,
        published: Option<BTreeSet<String>>,
    ) -> ServerHost {
        let claim = Claim {
            tag: checked.tag.clone(),
            kind: checked.kind.token(),
            schema: checked.schema.clone(),
            settings,
            refusal: None,
            notes: Vec::new(),
            published: published.map(Rc::new),
            parsed: checked.parsed.take(),
        };
        ServerHost {
            outer: CLAIM.replace(Some(claim)),
            saved_user: None,
        }
    }

    /// Why a statement an adapter ran was refused, if one was.
    pub fn refusal(&self) -> Option<String> {
        CLAIM.with_borrow(|c| c.as_ref().and_then(|c| c.refusal.clone()))
    }

    /// What the replay changed in the statements it ran, by policy.
    pub fn notes(&self) -> Vec<String> {
        CLAIM.with_borrow(|c| c.as_ref().map(|c| c.notes.clone()).unwrap_or_default())
    }

    /// Becomes `role`, or says why it cannot: the statement is then refused, never run as the
    /// subscription owner instead (a superuser on PostgreSQL 15: a role that exists only on the
    /// publisher would otherwise create, say, SECURITY DEFINER functions owned by a superuser).
    pub fn enter_role(
        &mut self,
        ctx: &mut Context,
        role: &str,
        publisher_rights: &str,
    ) -> Result<(), String> {
        let current = current_user_name();
        let Ok(name) = CString::new(role) else {
            return Err("the event's role name holds a NUL byte".into());
        };
        if role.is_empty() {
            return Err("the event names no role to run the statement as".into());
        }
        // SAFETY: a syscache lookup by a NUL-terminated name (missing_ok), in the replay's
        // transaction.
        let roleid = unsafe { pg_sys::get_role_oid(name.as_ptr(), true) };
        if roleid == pg_sys::InvalidOid {
            return Err(format!(
                "role \"{role}\" does not exist on this subscriber; create it (with the \
                 rights it should have here), or name a ddl_fallback_role, and the \
                 statement can be replayed"
            ));
        }
        // SAFETY: catalog lookups of two roles that exist, in the replay's transaction.
        if !unsafe { ddl_server::versions::may_set_role(pg_sys::GetUserId(), roleid) } {
            return Err(format!(
                "the subscription owner {current} may not become role \"{role}\""
            ));
        }
        // A name is all two nodes' roles share: the statement runs as this role only if it may
        // do nothing here that the publisher's could not (not known for older publishers; a
        // superuser's statement, the commonest, needs no lookup here).
        if !publisher_rights.is_empty() && !ddl_wire::has_every_right(publisher_rights) {
            // SAFETY: catalog cache lookups of a role that exists, in the replay's transaction.
            let here = unsafe { ddl_server::roles::rights(roleid) };
            let beyond = ddl_wire::rights_beyond(&here, publisher_rights);
            if !beyond.is_empty() {
                return Err(format!(
                    "role \"{role}\" may do more here than the publisher's role of that name \
                     could ({}): the same name does not make it the same role; give the roles \
                     of that name the same rights on both nodes",
                    beyond.join(", ")
                ));
            }
        }
        let mut user = pg_sys::InvalidOid;
        let mut sec = 0;
        // SAFETY: the user switch fmgr makes for SECURITY DEFINER, undone by `leave_role` or,
        // after an ERROR, by the (sub)transaction's abort.
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut user, &mut sec);
            pg_sys::SetUserIdAndSecContext(
                roleid,
                sec | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32,
            );
        }
        self.saved_user = Some((user, sec));
        ctx.role_switched = true;
        Ok(())
    }

    /// Becomes the subscription's fallback role for the statement of `missing`, a role that
    /// does not exist here; says why not (a fallback that became a superuser since is refused
    /// too). Returns the note for the row.
    pub fn enter_fallback(
        &mut self,
        ctx: &mut Context,
        missing: &str,
        fallback: &str,
    ) -> Result<String, String> {
        let Ok(name) = CString::new(fallback) else {
            return Err("the fallback role's name holds a NUL byte".into());
        };
        // SAFETY: syscache lookups by a NUL-terminated name (missing_ok), in the replay's
        // transaction.
        let superuser = unsafe {
            let roleid = pg_sys::get_role_oid(name.as_ptr(), true);
            roleid != pg_sys::InvalidOid && pg_sys::superuser_arg(roleid)
        };
        if superuser {
            return Err(format!(
                "role \"{missing}\" does not exist on this subscriber, and the fallback role \
                 \"{fallback}\" is a superuser: refused"
            ));
        }
        // The fallback is the subscriber's own choice of role for such statements: its rights
        // are not compared with the publisher's role's.
        self.enter_role(ctx, fallback, "").map_err(|e| {
            format!("role \"{missing}\" does not exist on this subscriber; fallback: {e}")
        })?;
        Ok(format!(
            "role \"{missing}\" does not exist on this subscriber; ran as the fallback role \
             \"{fallback}\""
        ))
    }

    /// Back to the subscription owner. (After an ERROR the transaction abort does it.)
    pub fn leave_role(&mut self) {
        if let Some((user, sec)) = self.saved_user.take() {
            // SAFETY: restores what enter_role saved.
            unsafe { pg_sys::SetUserIdAndSecContext(user, sec) }
        }
    }
}

/// The role a statement of `role` runs as here, as [`ServerHost::enter_role`] and
/// [`ServerHost::enter_fallback`] would choose it, without becoming it: `role` when it exists
/// and the subscription owner may become it, else the fallback role for a role missing here
/// (never a superuser); `None` when the statement would be refused.
pub fn replay_role(role: &str, fallback: Option<&str>) -> Option<String> {
    let may_become = |name: &str, superuser_ok: bool| {
        let Ok(name) = CString::new(name) else {
            return false;
        };
        // SAFETY: syscache lookups by a NUL-terminated name (missing_ok), in the replay's
        // transaction.
        unsafe {
            let roleid = pg_sys::get_role_oid(name.as_ptr(), true);
            roleid != pg_sys::InvalidOid
                && (superuser_ok || !pg_sys::superuser_arg(roleid))
                && ddl_server::versions::may_set_role(pg_sys::GetUserId(), roleid)
        }
    };
    if !role.is_empty() && may_become(role, true) {
        return Some(role.to_string());
    }
    match fallback {
        Some(fallback) if !role_exists(role) && may_become(fallback, false) => {
            Some(fallback.to_string())
        }
        _ => None,
    }
}

/// Whether a role named `role` exists here.
pub fn role_exists(role: &str) -> bool {
    let Ok(name) = CString::new(role) else {
        return false;
    };
    // SAFETY: a syscache lookup by a NUL-terminated name; missing_ok, so no ERROR.
    unsafe { pg_sys::get_role_oid(name.as_ptr(), true) != pg_sys::InvalidOid }
}

/// The current user's name.
pub fn current_user_name() -> String {
    // SAFETY: a syscache lookup of the current user (noerr: NULL rather than an ERROR); the
    // name is a palloc'd NUL-terminated copy.
    unsafe {
        let name = pg_sys::GetUserNameFromId(pg_sys::GetUserId(), true);
        if name.is_null() {
            String::new()
        } else {
            ddl_server::text::utf8_ptr(name)
        }
    }
}

impl Drop for ServerHost {
    fn drop(&mut self) {
        CLAIM.set(self.outer.take());
    }
}

impl Host for ServerHost {
    fn set_setting(&mut self, name: &str, value: &str) -> Result<Option<String>, String> {
        let previous = Spi::get_one_with_args::<String>(
            "SELECT pg_catalog.current_setting($1, true)",
            &[name.into()],
        )
        .map_err(|e| e.to_string())?;
        let previous = match previous {
            Some(p) => p,
            // An extension's setting that is not loaded here is a placeholder, which set_config
            // creates (e.g. babelfishpg_tsql.sql_dialect on stock PostgreSQL).
            None if name.contains('.') => String::new(),
            None => return Ok(None),
        };
        // is_local: the setting ends with the transaction (or subtransaction) at the latest.
        Spi::run_with_args(
            "SELECT pg_catalog.set_config($1, $2, true)",
            &[name.into(), value.into()],
        )
        .map_err(|e| e.to_string())?;
        Ok(Some(previous))
    }

    fn execute(&mut self, sql: &str) -> Outcome {
        execute_claimed(sql)
    }
}

/// Whether a DDL event is being replayed in this backend.
pub fn replaying() -> bool {
    CLAIM.with_borrow(Option::is_some)
}

/// Checks `sql` against the claim of the event being replayed and runs it from its parse tree.
/// A refused statement is not run: the outcome is fatal and the row will say `refused`.
pub fn execute_claimed(sql: &str) -> Outcome {
    let Some((tag, kind, schema, settings, published)) = CLAIM.with_borrow(|c| {
        c.as_ref().map(|c| {
            (
                c.tag.clone(),
                c.kind,
                c.schema.clone(),
                c.settings.clone(),
                c.published.clone(),
            )
        })
    }) else {
        return Outcome::fatal("no DDL event is being replayed");
    };
    let settings: Vec<(&str, &str)> = settings
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    // The event's own text was parsed by its check, with the same settings: parsing depends
    // on nothing else (the checks below depend on the role, which has changed since).
    let parsed = CLAIM.with_borrow_mut(|c| {
        c.as_mut()
            .and_then(|c| c.parsed.take())
            .filter(|p| p.is_of(sql))
    });
    // Names resolve, and literals parse, as the statement will: with the event's settings.
    let checked = with_settings(&settings, || {
        let parsed = match parsed {
            Some(parsed) => parsed,
            None => statement::parse_one(sql)?,
        };
        let here = statement::check_parsed(&parsed, &tag, kind)?.schema;
        match (&here, &schema) {
            (Some(here), judged) if judged.as_ref() != Some(here) => Err(format!(
                "its relation is in schema \"{here}\" here, but the event was judged as {}",
                judged
                    .as_ref()
                    .map_or("naming no schema".to_string(), |j| format!(
                        "in schema \"{j}\""
                    ))
            )),
            _ => Ok(parsed),
        }
    });
    let parsed = match checked {
        Ok(parsed) => parsed,
        Err(reason) => {
            let reason = format!("the adapter's statement \"{sql}\" is refused: {reason}");
            CLAIM.with_borrow_mut(|c| {
                if let Some(c) = c {
                    c.refusal.get_or_insert_with(|| reason.clone());
                }
            });
            return Outcome::fatal(reason);
        }
    };
    let Ok(text) = CString::new(sql) else {
        return Outcome::fatal("the statement contains a NUL byte");
    };
    // SAFETY: reads the current user's catalog row.
    let judge_code =
        !unsafe { pg_sys::superuser() } && apply_code::rows_applied_as_subscription_owner();
    if published.is_none() && !judge_code {
        run_parsed(&parsed, &text, sql, &settings);
        return Outcome::Success;
    }
    // The statement runs in a subtransaction of its own, undone when it bound here what it
    // did not bind on the publisher (`bound.rs`), or when a role that is not a superuser here,
    // on a subscription whose rows are applied as its owner, left behind code that would run
    // as the subscription owner during apply (`apply_code.rs`).
    let attempt = || {
        // SAFETY: assigns this subtransaction's xid (it writes catalogs anyway), so that the
        // rows the statement writes can be told from older ones.
        let since = unsafe { pg_sys::GetCurrentTransactionId() };
        let ((), unbound) = bound::checking(published.clone(), || {
            run_parsed(&parsed, &text, sql, &settings)
        });
        unbound.or_else(|| judge_code.then(|| apply_code::refusal(since)).flatten())
    };
    let refuse = |reason: String| {
        let reason = format!("\"{sql}\" is refused: {reason}");
        CLAIM.with_borrow_mut(|c| {
            if let Some(c) = c {
                c.refusal.get_or_insert_with(|| reason.clone());
            }
        });
        Outcome::fatal(reason)
    };
    match ddl_server::xact::in_subtransaction(attempt, Option::is_none) {
        Ok(None) => Outcome::Success,
        Ok(Some(reason)) => refuse(reason),
        Err(caught) => match bound::take_stopped() {
            Some(reason) => refuse(reason),
            None => outcome_of(caught),
        },
    }
}

/// The outcome of a statement that raised `caught`: retryable when its SQLSTATE passes.
pub fn outcome_of(caught: ddl_server::xact::CaughtError) -> Outcome {
    Outcome::failed(SqlState::from_packed(caught.sqlstate), caught.message)
}

/// Raises `message` as an ERROR with `failure`'s SQLSTATE (`XX000` when it has none).
pub fn raise(failure: &Failure, message: &str) -> ! {
    let code = failure
        .sqlstate
        .map_or(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, |s| {
            PgSqlErrorCode::from(s.packed())
        });
    ereport!(ERROR, code, message.to_string());
    // ereport(ERROR) does not return; pgrx's macro is not typed `!`.
    #[allow(unreachable_code)]
    {
        unreachable!()
    }
}

/// Runs a checked statement with the event's settings, and what a concurrent detach leaves.
/// Function bodies are not checked, as pg_restore does not: the body was (or was knowingly
/// not) checked where the statement first ran, and what it names may not exist here yet.
fn run_parsed(parsed: &statement::Parsed, text: &CStr, sql: &str, settings: &[(&str, &str)]) {
    let mut settings = settings.to_vec();
    settings.push(("check_function_bodies", "off"));
    let node = parsed.tree();
    let detach = with_settings(&settings, || {
        // Read before the detach takes the partition constraint away.
        // SAFETY: the raw tree the caller just parsed (and checked) from `text`, which nothing
        // else holds; in the apply worker's transaction, with the event's settings.
        let detach = unsafe { detach::concurrent_detach(node) };
        // SAFETY: as above; the tree is ours to change.
        if unsafe { statement::make_transactional(node) } {
            notice!(
                "ddl_sync: replaying \"{sql}\" without CONCURRENTLY, inside the apply transaction"
            );
        }
        // SAFETY: as above.
        let dropped = unsafe {
            statement::create_empty(node);
            tablespace::drop_missing(node)
        };
        if !dropped.nothing_left {
            // SAFETY: as above, `parsed` from `text`; the apply worker's transaction has an
            // active snapshot.
            unsafe { statement::execute(parsed, text) };
        }
        CLAIM.with_borrow_mut(|c| {
            if let Some(c) = c {
                c.notes.extend(dropped.notes);
            }
        });
        detach
    });
    if let Some(check) = detach {
        // SAFETY: in the transaction that ran the detach.
        unsafe { check.add() };
    }
}

/// Tells the capture (`ddl_pgoutput.so`, when this node publishes DDL too) where the statement
/// being replayed first ran, or that none is (`None`). A function of that library, not a
/// setting: nothing a replayed statement runs can change it.
pub fn set_replay_origin(origin: Option<(i64, u64)>) {
    let Some(setter) = ddl_server::contract::set_replay_origin() else {
        return;
    };
    let (sysid, lsn) = origin.unwrap_or_default();
    // SAFETY: the plugin library's function of that type, in the replay's transaction.
    unsafe { setter(origin.is_some(), sysid as u64, lsn) };
}

#[cfg(any(test, feature = "pg_test"))]
#[path = "host_tests.rs"]
mod host_tests;
