//! The `ddl`, `ddl_conflict`, `schema_mode` and `ddl_fallback_role` options of CREATE/ALTER
//! SUBSCRIPTION, taken out
//! of the statement before PostgreSQL parses it (it rejects options it does not know), and the
//! slot plan of a CREATE SUBSCRIPTION that replicates DDL.

use super::config::{conflict_policy, fallback_role, schema_mode};
use ddl_filter::DdlKinds;
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
    /// `Some` for CREATE SUBSCRIPTION.
    pub create: Option<Create>,
}

/// The options list and name of a CREATE SUBSCRIPTION or an ALTER SUBSCRIPTION ... SET (...).
unsafe fn options_of(
    node: *mut pg_sys::Node,
) -> Option<(*mut *mut pg_sys::List, *mut c_char, bool)> {
    if node.is_null() {
        return None;
    }
    match (*node).type_ {
        pg_sys::NodeTag::T_CreateSubscriptionStmt => {
            let stmt = node as *mut pg_sys::CreateSubscriptionStmt;
            Some((&mut (*stmt).options, (*stmt).subname, true))
        }
        pg_sys::NodeTag::T_AlterSubscriptionStmt => {
            let stmt = node as *mut pg_sys::AlterSubscriptionStmt;
            ((*stmt).kind == pg_sys::AlterSubscriptionType::ALTER_SUBSCRIPTION_OPTIONS).then_some((
                &mut (*stmt).options,
                (*stmt).subname,
                false,
            ))
        }
        _ => None,
    }
}

use ddl_server::options::{bool_value, find, string_value};

unsafe fn bool_option(options: *mut pg_sys::List, name: &str) -> Option<bool> {
    find(options, name).map(|def| bool_value(def))
}

fn invalid(parameter: &str, problem: impl std::fmt::Display) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("invalid value for subscription parameter \"{parameter}\": {problem}")
    );
}

/// The options this module takes.
const OURS: [&str; 4] = ["ddl", "ddl_conflict", "schema_mode", "ddl_fallback_role"];

/// Takes our options out of a CREATE SUBSCRIPTION or ALTER SUBSCRIPTION ... SET, after
/// validating them; `None` when the statement has none.
///
/// # Safety
/// `pstmt` is the statement ProcessUtility was given.
pub(super) unsafe fn take(
    pstmt: *mut pg_sys::PlannedStmt,
    read_only_tree: bool,
) -> Option<Request> {
    let (options, _, is_create) = options_of((*pstmt).utilityStmt)?;
    let ddl = find(*options, "ddl");
    let conflict = find(*options, "ddl_conflict");
    let mode = find(*options, "schema_mode");
    let fallback = find(*options, "ddl_fallback_role");
    if ddl.is_none() && conflict.is_none() && mode.is_none() && fallback.is_none() {
        return None;
    }
    let ddl_text = ddl.map(|def| string_value(def));
    let kinds = ddl_text
        .as_deref()
        .map(|text| DdlKinds::parse(text).unwrap_or_else(|e| invalid("ddl", e)));
    let all = ddl_text.as_deref().is_some_and(|text| {
        text.split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("all"))
    });
    let conflict = conflict.map(|def| {
        conflict_policy(&string_value(def)).unwrap_or_else(|e| invalid("ddl_conflict", e))
    });
    let mode = mode
        .map(|def| schema_mode(&string_value(def)).unwrap_or_else(|e| invalid("schema_mode", e)));
    if pg_sys::get_extension_oid(c"ddl_sync".as_ptr(), true) == pg_sys::InvalidOid {
        let parameter = match (&kinds, conflict, mode) {
            (Some(_), _, _) => "ddl",
            (None, Some(_), _) => "ddl_conflict",
            (None, None, Some(_)) => "schema_mode",
            (None, None, None) => "ddl_fallback_role",
        };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("subscription parameter \"{parameter}\" requires the ddl_sync extension"),
            "Run CREATE EXTENSION ddl_sync in this database first."
        );
    }
    // Read only once the extension is known to exist (its catalog lookups need nothing of it,
    // but the error above is the clearer one).
    let fallback = fallback.map(|def| {
        fallback_role(&string_value(def)).unwrap_or_else(|e| invalid("ddl_fallback_role", e))
    });
    if is_create && kinds.is_none() {
        let parameter = match (conflict, mode) {
            (Some(_), _) => "ddl_conflict",
            (None, Some(_)) => "schema_mode",
            (None, None) => "ddl_fallback_role",
        };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("subscription parameter \"{parameter}\" requires \"ddl\"")
        );
    }
    let pstmt = ddl_server::options::writable(pstmt, read_only_tree);
    let (options, subname, _) = options_of((*pstmt).utilityStmt)?;
    for name in OURS {
        ddl_server::options::remove(options, name);
    }
    let create = is_create.then(|| {
        let stmt = (*pstmt).utilityStmt as *mut pg_sys::CreateSubscriptionStmt;
        plan_create(options, stmt)
    });
    Some(Request {
        pstmt,
        run_statement: is_create || !(*options).is_null(),
        subscription: ddl_server::text::utf8_ptr(subname),
        kinds,
        all,
        conflict,
        schema_mode: mode,
        fallback_role: fallback,
        create,
    })
}

/// Reads the options that decide about the slot, as PostgreSQL will, and when PostgreSQL would
/// create the slot (with plugin pgoutput, the only one PostgreSQL 15 asks for), tells it not to:
/// we create it with `ddl_pgoutput` after the subscription exists.
unsafe fn plan_create(
    options: *mut *mut pg_sys::List,
    stmt: *mut pg_sys::CreateSubscriptionStmt,
) -> Create {
    let connect = bool_option(*options, "connect").unwrap_or(true);
    let create_slot_def = find(*options, "create_slot");
    let create_slot = create_slot_def.map_or(connect, |def| bool_value(def));
    // slot_name = NONE with create_slot is PostgreSQL's error to give: leave it the options.
    let no_slot = find(*options, "slot_name").is_some_and(|def| string_value(def) == "none");
    let ours = connect && create_slot && !no_slot;
    if ours {
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
    Create {
        connect,
        create_slot: ours,
        two_phase: bool_option(*options, "two_phase").unwrap_or(false),
        copy_data: bool_option(*options, "copy_data").unwrap_or(true),
        conninfo: ddl_server::text::utf8_ptr((*stmt).conninfo),
        publications: PgList::<pg_sys::String>::from_pg((*stmt).publication)
            .iter_ptr()
            .map(|name| ddl_server::text::utf8_ptr((*name).sval))
            .collect(),
    }
}
