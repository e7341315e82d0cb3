//! The `ddl`, `ddl_conflict`, `schema_mode`, `ddl_fallback_role` and `ddl_divergence` options
//! of CREATE/ALTER SUBSCRIPTION, taken out of the statement before PostgreSQL parses it (it
//! rejects options it does not know), and the slot plan of a CREATE SUBSCRIPTION that
//! replicates DDL.

use crate::subscriber::config::{conflict_policy, divergence_policy, fallback_role, schema_mode};
use ddl_filter::DdlKinds;
use ddl_server::errors;
use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::c_char;

/// What a CREATE SUBSCRIPTION with `ddl` does besides PostgreSQL's own work.
pub(super) struct Create {
    /// `connect` (default true): PostgreSQL reaches the publisher, and so do we.
    pub connect: bool,
    /// We create the slot, with plugin `ddl_pgoutput`; PostgreSQL was told `create_slot = false`.
    pub create_slot: bool,
    pub two_phase: bool,
    pub copy_data: bool,
    /// `copy_schema = true`: the publisher's schema is copied here first (see `copy_schema.rs`).
    pub copy_schema: bool,
    /// The slot's name (`slot_name`, else the subscription's).
    pub slot_name: String,
    /// `failover = true` (17 and later).
    pub failover: bool,
    /// Whether the subscription will apply rows as its owner (PostgreSQL 15, or `run_as_owner =
    /// true`): the copied schema is then checked for code that would run with the owner's rights.
    pub runs_as_owner: bool,
    /// What `copy_schema` did, once it did it (before PostgreSQL runs the statement).
    pub copied: Option<super::copy_schema::Copied>,
    /// The connection string and publications, for the strict check before PostgreSQL runs.
    pub conninfo: String,
    pub publications: Vec<String>,
}

/// Our options, taken from a subscription statement.
pub(super) struct Request {
    /// The statement to run: a copy without our options when the original tree was read-only.
    pub pstmt: *mut pg_sys::PlannedStmt,
    /// Whether anything is left for PostgreSQL: `ALTER SUBSCRIPTION s SET (ddl = '...')` alone
    /// is ours entirely.
    pub run_statement: bool,
    pub subscription: String,
    pub kinds: Option<DdlKinds>,
    /// Whether `ddl` said `all` (every kind the publications send, see `publisher.rs`).
    pub all: bool,
    pub conflict: Option<&'static str>,
    pub schema_mode: Option<&'static str>,
    /// `Some(None)`: no fallback role.
    pub fallback_role: Option<Option<String>>,
    pub divergence: Option<&'static str>,
    /// `Some` for CREATE SUBSCRIPTION.
    pub create: Option<Create>,
}

/// The options list and name of a CREATE SUBSCRIPTION or an ALTER SUBSCRIPTION ... SET (...).
///
/// # Safety
/// `node` is NULL or a utility statement's tree; the pointers returned point into it.
unsafe fn options_of(
    node: *mut pg_sys::Node,
) -> Option<(*mut *mut pg_sys::List, *mut c_char, bool)> {
    if node.is_null() {
        return None;
    }
    // SAFETY: the caller's promise: a statement's tree, whose tag says which it is.
    let tag = unsafe { (*node).type_ };
    match tag {
        pg_sys::NodeTag::T_CreateSubscriptionStmt => {
            let stmt = node.cast::<pg_sys::CreateSubscriptionStmt>();
            // SAFETY: the tag says CreateSubscriptionStmt.
            Some(unsafe { (&raw mut (*stmt).options, (*stmt).subname, true) })
        }
        pg_sys::NodeTag::T_AlterSubscriptionStmt => {
            let stmt = node.cast::<pg_sys::AlterSubscriptionStmt>();
            // SAFETY: the tag says AlterSubscriptionStmt.
            unsafe {
                ((*stmt).kind == pg_sys::AlterSubscriptionType::ALTER_SUBSCRIPTION_OPTIONS)
                    .then_some((&raw mut (*stmt).options, (*stmt).subname, false))
            }
        }
        _ => None,
    }
}

use ddl_server::options::{bool_value, find, remove, string_value};

/// The boolean option `name` of `options`, if it is there.
///
/// # Safety
/// `options` is a statement's list of `DefElem`s (or NIL); in a backend.
unsafe fn bool_option(options: *mut pg_sys::List, name: &str) -> Option<bool> {
    // SAFETY: the caller's promise; `def` is one of that list.
    unsafe { find(options, name).map(|def| bool_value(def)) }
}

fn invalid(parameter: &str, problem: impl std::fmt::Display) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("invalid value for subscription parameter \"{parameter}\": {problem}")
    );
}

/// The options this module takes.
const OURS: [&str; 6] = [
    "ddl",
    "ddl_conflict",
    "schema_mode",
    "ddl_fallback_role",
    "ddl_divergence",
    "copy_schema",
];

/// Takes our options out of a CREATE SUBSCRIPTION or ALTER SUBSCRIPTION ... SET, after
/// validating them; `None` when the statement has none.
///
/// # Safety
/// `pstmt` is the statement ProcessUtility was given, `read_only_tree` its flag.
pub(super) unsafe fn take(
    pstmt: *mut pg_sys::PlannedStmt,
    read_only_tree: bool,
) -> Option<Request> {
    // SAFETY: the caller's promise: a utility PlannedStmt, whose `utilityStmt` is the
    // statement; `*options` is its list of DefElems.
    let (ddl, conflict, mode, fallback, divergence, copy_schema, is_create) = unsafe {
        let (options, _, is_create) = options_of((*pstmt).utilityStmt)?;
        (
            find(*options, "ddl"),
            find(*options, "ddl_conflict"),
            find(*options, "schema_mode"),
            find(*options, "ddl_fallback_role"),
            find(*options, "ddl_divergence"),
            find(*options, "copy_schema"),
            is_create,
        )
    };
    if ddl.is_none()
        && conflict.is_none()
        && mode.is_none()
        && fallback.is_none()
        && divergence.is_none()
        && copy_schema.is_none()
    {
        return None;
    }
    if copy_schema.is_some() && !is_create {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
            "unrecognized subscription parameter: \"copy_schema\"",
            "copy_schema is an option of CREATE SUBSCRIPTION only."
        );
    }
    // SAFETY: a DefElem of the statement.
    let copy_schema = copy_schema.is_some_and(|def| unsafe { bool_value(def) });
    // SAFETY: every `def` below is one `find` just gave, a DefElem of the statement.
    let string = |def| unsafe { string_value(def) };
    let ddl_text = ddl.map(string);
    let kinds = ddl_text
        .as_deref()
        .map(|text| DdlKinds::parse(text).unwrap_or_else(|e| invalid("ddl", e)));
    let all = ddl_text.as_deref().is_some_and(|text| {
        text.split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("all"))
    });
    let conflict = conflict
        .map(|def| conflict_policy(&string(def)).unwrap_or_else(|e| invalid("ddl_conflict", e)));
    let mode =
        mode.map(|def| schema_mode(&string(def)).unwrap_or_else(|e| invalid("schema_mode", e)));
    let divergence = divergence.map(|def| {
        divergence_policy(&string(def)).unwrap_or_else(|e| invalid("ddl_divergence", e))
    });
    let other = if fallback.is_some() {
        "ddl_fallback_role"
    } else if divergence.is_some() {
        "ddl_divergence"
    } else {
        "copy_schema"
    };
    require_extension(match (&kinds, conflict, mode) {
        (Some(_), _, _) => "ddl",
        (None, Some(_), _) => "ddl_conflict",
        (None, None, Some(_)) => "schema_mode",
        (None, None, None) => other,
    });
    // Read only once the extension is known to exist (its catalog lookups need nothing of it,
    // but the error above is the clearer one).
    let fallback = fallback
        .map(|def| fallback_role(&string(def)).unwrap_or_else(|e| invalid("ddl_fallback_role", e)));
    if is_create && kinds.is_none() {
        let parameter = match (conflict, mode) {
            (Some(_), _) => "ddl_conflict",
            (None, Some(_)) => "schema_mode",
            (None, None) => other,
        };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("subscription parameter \"{parameter}\" requires \"ddl\"")
        );
    }
    // SAFETY: the caller's promise; from here on the statement is `writable`'s, a tree we may
    // change (the original, or a copy of a read-only one), of the same type as above.
    let (pstmt, options, subname) = unsafe {
        let pstmt = ddl_server::options::writable(pstmt, read_only_tree);
        let (options, subname, _) = options_of((*pstmt).utilityStmt)?;
        for name in OURS {
            ddl_server::options::remove(options, name);
        }
        (pstmt, options, subname)
    };
    let create = is_create.then(|| {
        // SAFETY: as above, a CREATE SUBSCRIPTION, and `options` points to its list.
        unsafe { plan_create(options, (*pstmt).utilityStmt.cast(), copy_schema) }
    });
    // SAFETY: as above; `subname` is the statement's NUL-terminated name.
    let (run_statement, subscription) = unsafe {
        (
            is_create || !(*options).is_null(),
            ddl_server::text::utf8_ptr(subname),
        )
    };
    Some(Request {
        pstmt,
        run_statement,
        subscription,
        kinds,
        all,
        conflict,
        schema_mode: mode,
        fallback_role: fallback,
        divergence,
        create,
    })
}

/// Our subscription `parameter` needs the extension in this database: an ERROR when it is not.
pub(super) fn require_extension(parameter: &str) {
    // SAFETY: a syscache lookup in the statement's transaction; missing_ok, so a missing
    // extension is an answer.
    if unsafe { pg_sys::get_extension_oid(c"ddl_sync".as_ptr(), true) } == pg_sys::InvalidOid {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("subscription parameter \"{parameter}\" requires the ddl_sync extension"),
            "Run CREATE EXTENSION ddl_sync in this database first."
        );
    }
}

/// A copy of the CREATE SUBSCRIPTION `pstmt` (whose options are PostgreSQL's only, after
/// [`take`]) that PostgreSQL can run without reaching the publisher, for its own checks of the
/// statement: `connect = false`, and without the options it refuses beside that (`create_slot`,
/// `copy_data`, `enabled`), each read first as PostgreSQL reads it.
///
/// # Safety
/// `pstmt` is a CREATE SUBSCRIPTION's PlannedStmt; in a transaction (the copy is made in the
/// current memory context).
pub(super) unsafe fn unconnected_copy(pstmt: *mut pg_sys::PlannedStmt) -> *mut pg_sys::PlannedStmt {
    // SAFETY: the caller's promise; copyObject copies the whole tree, which is then ours.
    unsafe {
        let copy = pg_sys::copyObjectImpl(pstmt.cast()).cast::<pg_sys::PlannedStmt>();
        let Some((options, _, true)) = options_of((*copy).utilityStmt) else {
            errors::internal("not a CREATE SUBSCRIPTION");
        };
        for name in ["connect", "create_slot", "copy_data", "enabled"] {
            // An invalid value, or a second one, is PostgreSQL's ERROR here as there.
            if let Some(def) = find(*options, name) {
                bool_value(def);
            }
            remove(options, name);
        }
        let off = pg_sys::makeDefElem(
            pg_sys::pstrdup(c"connect".as_ptr()),
            pg_sys::makeString(pg_sys::pstrdup(c"false".as_ptr())).cast(),
            -1,
        );
        *options = pg_sys::lappend(*options, off.cast());
        copy
    }
}

/// Reads the options that decide about the slot, as PostgreSQL will, and when PostgreSQL would
/// create the slot (with plugin pgoutput, the only one PostgreSQL 15 asks for), tells it not to:
/// we create it with `ddl_pgoutput` after the subscription exists.
///
/// # Safety
/// `stmt` is a CreateSubscriptionStmt this backend may change, and `options` points to its
/// `options`; in a transaction.
unsafe fn plan_create(
    options: *mut *mut pg_sys::List,
    stmt: *mut pg_sys::CreateSubscriptionStmt,
    copy_schema: bool,
) -> Create {
    // SAFETY: the caller's promise: `*options` is the statement's DefElem list, and `def` one
    // of it.
    let (connect, create_slot_def, create_slot, no_slot) = unsafe {
        let connect = bool_option(*options, "connect").unwrap_or(true);
        let create_slot_def = find(*options, "create_slot");
        let create_slot = create_slot_def.map_or(connect, |def| bool_value(def));
        // slot_name = NONE with create_slot is PostgreSQL's error to give: leave it the options.
        let no_slot = find(*options, "slot_name").is_some_and(|def| string_value(def) == "none");
        (connect, create_slot_def, create_slot, no_slot)
    };
    let ours = connect && create_slot && !no_slot;
    if ours {
        // SAFETY: as above; the list is ours to change, and the DefElem replacing `create_slot`
        // is made in the current memory context, as the parser makes the statement's.
        unsafe {
            if let Some(def) = create_slot_def {
                *options = pg_sys::list_delete_ptr(*options, def.cast());
            }
            let off = pg_sys::makeDefElem(
                pg_sys::pstrdup(c"create_slot".as_ptr()),
                pg_sys::makeString(pg_sys::pstrdup(c"false".as_ptr())).cast(),
                -1,
            );
            *options = pg_sys::lappend(*options, off.cast());
        }
    }
    // SAFETY: as above; the parser always sets `subname`, NUL-terminated.
    let (two_phase, copy_data, failover, run_as_owner, slot_name) = unsafe {
        (
            bool_option(*options, "two_phase").unwrap_or(false),
            bool_option(*options, "copy_data").unwrap_or(true),
            bool_option(*options, "failover").unwrap_or(false),
            bool_option(*options, "run_as_owner"),
            find(*options, "slot_name")
                .map(|def| string_value(def))
                .unwrap_or_else(|| ddl_server::text::utf8_ptr((*stmt).subname)),
        )
    };
    // SAFETY: the caller's promise: a CreateSubscriptionStmt.
    if unsafe { (*stmt).conninfo }.is_null() {
        // 19's CREATE SUBSCRIPTION ... SERVER: the connection string is the foreign server's
        // and its user mapping's, which copy_schema, strict mode and the slot would have to
        // build as libpqwalreceiver does.
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "ddl_sync: a subscription with \"ddl\" cannot connect through a foreign server yet",
            "Give the publisher's connection string with CONNECTION '...'."
        );
    }
    // SAFETY: the caller's promise: the parser sets `publication`, a List of String nodes,
    // and (checked above) `conninfo`; the strings are NUL-terminated.
    let (conninfo, publications) = unsafe {
        (
            ddl_server::text::utf8_ptr((*stmt).conninfo),
            PgList::<pg_sys::String>::from_pg((*stmt).publication)
                .iter_ptr()
                .map(|name| ddl_server::text::utf8_ptr((*name).sval))
                .collect(),
        )
    };
    Create {
        connect,
        create_slot: ours,
        two_phase,
        copy_data,
        copy_schema,
        slot_name,
        failover,
        runs_as_owner: ddl_server::versions::new_subscription_runs_as_owner(run_as_owner),
        copied: None,
        conninfo,
        publications,
    }
}
