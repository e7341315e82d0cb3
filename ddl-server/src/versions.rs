//! What differs between the PostgreSQL majors we build for (15 to 19), each behind one function
//! so that the rest of the code has no `#[cfg(feature = "pgNN")]`.

use crate::errors::OrInternal;
use pgrx::pg_sys;
use std::ffi::c_char;

extern "C-unwind" {
    // catalog/pg_subscription_rel.h; not in pgrx's bindings. 17 added `retain_lock` (true: keep
    // the catalog's and the subscription's locks to the end of the transaction, as 15 and 16
    // always do); 18 added `already_locked` to the update (false: take the subscription's lock,
    // as 15 to 17 always do).
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    fn AddSubscriptionRelState(
        subid: pg_sys::Oid,
        relid: pg_sys::Oid,
        state: c_char,
        sublsn: pg_sys::XLogRecPtr,
    );
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    fn AddSubscriptionRelState(
        subid: pg_sys::Oid,
        relid: pg_sys::Oid,
        state: c_char,
        sublsn: pg_sys::XLogRecPtr,
        retain_lock: bool,
    );
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    fn UpdateSubscriptionRelState(
        subid: pg_sys::Oid,
        relid: pg_sys::Oid,
        state: c_char,
        sublsn: pg_sys::XLogRecPtr,
    );
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
    fn UpdateSubscriptionRelState(
        subid: pg_sys::Oid,
        relid: pg_sys::Oid,
        state: c_char,
        sublsn: pg_sys::XLogRecPtr,
        already_locked: bool,
    );
    // replication/message.h; not in pgrx's bindings. 17 added `flush` (for non-transactional
    // messages only).
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    fn LogLogicalMessage(
        prefix: *const c_char,
        message: *const c_char,
        size: pg_sys::Size,
        transactional: bool,
    ) -> pg_sys::XLogRecPtr;
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    fn LogLogicalMessage(
        prefix: *const c_char,
        message: *const c_char,
        size: pg_sys::Size,
        transactional: bool,
        flush: bool,
    ) -> pg_sys::XLogRecPtr;
}

/// `AddSubscriptionRelState`: a new pg_subscription_rel row, its locks kept to the end of the
/// transaction on every major.
///
/// # Safety
/// In a backend inside a transaction; errors are PostgreSQL's (the caller guards the boundary).
pub unsafe fn add_subscription_rel_state(
    subid: pg_sys::Oid,
    relid: pg_sys::Oid,
    state: c_char,
    sublsn: pg_sys::XLogRecPtr,
) {
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    // SAFETY: the caller's promise.
    unsafe {
        AddSubscriptionRelState(subid, relid, state, sublsn)
    };
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    // SAFETY: the caller's promise.
    unsafe {
        AddSubscriptionRelState(subid, relid, state, sublsn, true)
    };
}

/// `UpdateSubscriptionRelState`, taking the subscription's lock itself on every major.
///
/// # Safety
/// As [`add_subscription_rel_state`].
pub unsafe fn update_subscription_rel_state(
    subid: pg_sys::Oid,
    relid: pg_sys::Oid,
    state: c_char,
    sublsn: pg_sys::XLogRecPtr,
) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: the caller's promise.
    unsafe {
        UpdateSubscriptionRelState(subid, relid, state, sublsn)
    };
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
    // SAFETY: the caller's promise.
    unsafe {
        UpdateSubscriptionRelState(subid, relid, state, sublsn, false)
    };
}

/// `LogLogicalMessage`: `size` bytes at `message` under `prefix` (NUL-terminated), written to
/// WAL with the transaction (`transactional`) or on its own, unflushed; where the WAL record
/// ends.
///
/// # Safety
/// Both pointers valid for the call, in a backend inside a transaction; errors are
/// PostgreSQL's (the caller guards the boundary).
pub unsafe fn log_message(
    prefix: *const c_char,
    message: *const c_char,
    size: usize,
    transactional: bool,
) -> pg_sys::XLogRecPtr {
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    // SAFETY: the caller's promise.
    return unsafe { LogLogicalMessage(prefix, message, size, transactional) };
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    // SAFETY: the caller's promise.
    return unsafe { LogLogicalMessage(prefix, message, size, transactional, false) };
}

/// Whether `role` owns publication `pubid` (or is a member of its owner, or a superuser).
///
/// # Safety
/// In a backend inside a transaction.
pub unsafe fn owns_publication(pubid: pg_sys::Oid, role: pg_sys::Oid) -> bool {
    // SAFETY: a catalog lookup by OID, the caller's promise.
    #[cfg(feature = "pg15")]
    unsafe {
        pg_sys::pg_publication_ownercheck(pubid, role)
    }
    // SAFETY: as above; 16 replaced the per-catalog checks with one.
    #[cfg(not(feature = "pg15"))]
    unsafe {
        pg_sys::object_ownercheck(pg_sys::PublicationRelationId, pubid, role)
    }
}

/// Whether `role` owns relation `relid` (or is a member of its owner, or a superuser).
///
/// # Safety
/// In a backend inside a transaction.
pub unsafe fn owns_relation(relid: pg_sys::Oid, role: pg_sys::Oid) -> bool {
    // SAFETY: a catalog lookup by OID, the caller's promise.
    #[cfg(feature = "pg15")]
    unsafe {
        pg_sys::pg_class_ownercheck(relid, role)
    }
    // SAFETY: as above; 16 replaced the per-catalog checks with one.
    #[cfg(not(feature = "pg15"))]
    unsafe {
        pg_sys::object_ownercheck(pg_sys::RelationRelationId, relid, role)
    }
}

/// Whether `member` may `SET ROLE role` (a superuser may become any role). PostgreSQL 16 made
/// a membership's right to SET ROLE an option of its own (`GRANT ... WITH SET FALSE`), which
/// `is_member_of_role` does not read: becoming a role by its membership alone would let a
/// subscription owner act as a role it was granted only to inherit rights from (or nothing).
///
/// # Safety
/// In a backend inside a transaction; both roles exist.
pub unsafe fn may_set_role(member: pg_sys::Oid, role: pg_sys::Oid) -> bool {
    // SAFETY: catalog cache lookups of two roles, the caller's promise.
    #[cfg(feature = "pg15")]
    unsafe {
        pg_sys::is_member_of_role(member, role)
    }
    // SAFETY: as above.
    #[cfg(not(feature = "pg15"))]
    unsafe {
        pg_sys::member_can_set_role(member, role)
    }
}

/// libpqwalreceiver's `walrcv_connect`: a logical replication connection to `conninfo`, as a
/// subscription's own workers make it. On 16+, a role that is not a superuser must then
/// authenticate with a password, as PostgreSQL requires of a subscription it owns.
///
/// # Safety
/// In a backend, `functions` registered by libpqwalreceiver; NUL-terminated strings; `err`
/// receives a palloc'd message when the result is null. The call is raw C: guard it where an
/// ERROR may escape.
pub unsafe fn walrcv_connect(
    functions: &pg_sys::WalReceiverFunctionsType,
    conninfo: *const c_char,
    appname: *const c_char,
    err: *mut *mut c_char,
) -> *mut pg_sys::WalReceiverConn {
    let connect = functions
        .walrcv_connect
        .or_internal("libpqwalreceiver registered no walrcv_connect");
    #[cfg(feature = "pg15")]
    // SAFETY: the caller's promise; 15's signature is (conninfo, logical, appname, err).
    unsafe {
        connect(conninfo, true, appname, err)
    }
    #[cfg(feature = "pg16")]
    {
        // SAFETY: a catalog lookup of the current role, in the caller's backend.
        let must_use_password = !unsafe { pg_sys::superuser() };
        // SAFETY: the caller's promise; 16's signature is (conninfo, logical,
        // must_use_password, appname, err).
        unsafe { connect(conninfo, true, must_use_password, appname, err) }
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    {
        // SAFETY: a catalog lookup of the current role, in the caller's backend.
        let must_use_password = !unsafe { pg_sys::superuser() };
        // SAFETY: the caller's promise; 17's signature is (conninfo, replication, logical,
        // must_use_password, appname, err).
        unsafe { connect(conninfo, true, true, must_use_password, appname, err) }
    }
}

/// The attributes of `desc`, in order. 18 keeps them after a new array of compact attributes,
/// reached through `TupleDescAttr`; 15 to 17 as a trailing array of the descriptor.
///
/// # Safety
/// `desc` is a valid tuple descriptor that outlives the slice and is not changed meanwhile.
pub unsafe fn attributes<'a>(desc: pg_sys::TupleDesc) -> &'a [pg_sys::FormData_pg_attribute] {
    // SAFETY: the caller's promise; `natts` is the number of attributes.
    let natts = unsafe { (*desc).natts } as usize;
    if natts == 0 {
        return &[];
    }
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: `attrs` holds `natts` attributes, as long as the descriptor lives.
    unsafe {
        (*desc).attrs.as_slice(natts)
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
    // SAFETY: the attributes are one contiguous array of `natts` (TupleDescAttr indexes it), as
    // long as the descriptor lives.
    unsafe {
        std::slice::from_raw_parts(pg_sys::TupleDescAttr(desc, 0), natts)
    }
}

/// The ALTER TABLE subcommand types that add a column: 15 has a second one for the recursion
/// into inheritance children, which 16 folded into a flag.
#[cfg(feature = "pg15")]
pub const ADD_COLUMN: &[pg_sys::AlterTableType::Type] = &[
    pg_sys::AlterTableType::AT_AddColumn,
    pg_sys::AlterTableType::AT_AddColumnRecurse,
];
/// The ALTER TABLE subcommand types that add a column: 15 has a second one for the recursion
/// into inheritance children, which 16 folded into a flag.
#[cfg(not(feature = "pg15"))]
pub const ADD_COLUMN: &[pg_sys::AlterTableType::Type] = &[pg_sys::AlterTableType::AT_AddColumn];

/// A zeroed change of the reorder buffer `rb`, given back with [`free_change`] (18 renamed
/// ReorderBufferGetChange to ReorderBufferAllocChange).
///
/// # Safety
/// `rb` is the live reorder buffer of the decoding context.
pub unsafe fn alloc_change(rb: *mut pg_sys::ReorderBuffer) -> *mut pg_sys::ReorderBufferChange {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: the caller's promise.
    unsafe {
        pg_sys::ReorderBufferGetChange(rb)
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
    // SAFETY: the caller's promise.
    unsafe {
        pg_sys::ReorderBufferAllocChange(rb)
    }
}

/// Gives back a change of [`alloc_change`] that the reorder buffer never counted, with its
/// tuples.
///
/// # Safety
/// `change` came from [`alloc_change`] on `rb` and is given back once.
pub unsafe fn free_change(
    rb: *mut pg_sys::ReorderBuffer,
    change: *mut pg_sys::ReorderBufferChange,
) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: the caller's promise; `false`: never added to the buffer's memory accounting.
    unsafe {
        pg_sys::ReorderBufferReturnChange(rb, change, false)
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
    // SAFETY: the caller's promise; `false`: never added to the buffer's memory accounting.
    unsafe {
        pg_sys::ReorderBufferFreeChange(rb, change, false)
    }
}

/// Makes `change` an INSERT into `rel` of a copy of `tuple`, allocated in `rb` and laid out as
/// decode.c lays out a decoded tuple (no item pointer, no table OID); [`free_change`] frees it.
/// 16 names the relation by `RelFileLocator` instead of `RelFileNode`; 17 made the tuple a plain
/// `HeapTuple` instead of a `ReorderBufferTupleBuf`; 18 renamed ReorderBufferGetTupleBuf to
/// ReorderBufferAllocTupleBuf.
///
/// # Safety
/// `rb` is the live reorder buffer, `change` from [`alloc_change`] on it, `rel` open, `tuple` a
/// formed heap tuple.
pub unsafe fn set_insert(
    rb: *mut pg_sys::ReorderBuffer,
    change: *mut pg_sys::ReorderBufferChange,
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
) {
    // SizeofHeapTupleHeader: what the allocators add to the length they are given.
    let header = std::mem::offset_of!(pg_sys::HeapTupleHeaderData, t_bits);
    // SAFETY: the caller's promise: `t_len` bytes at `t_data`, its header included.
    let (data, len) = unsafe { ((*tuple).t_data, (*tuple).t_len as usize) };
    // SAFETY: `copy` has room for `len` bytes at its `t_data` (allocated for `len - header`
    // after a header), which the copy fills.
    let fill = |copy: *mut pg_sys::HeapTupleData| unsafe {
        std::ptr::copy_nonoverlapping(data as *const u8, (*copy).t_data as *mut u8, len);
        (*copy).t_len = len as u32;
        // ItemPointerSetInvalid, and no table OID, as for a decoded tuple.
        (*copy).t_self.ip_blkid.bi_hi = 0xFFFF;
        (*copy).t_self.ip_blkid.bi_lo = 0xFFFF;
        (*copy).t_self.ip_posid = 0;
        (*copy).t_tableOid = pg_sys::InvalidOid;
    };
    #[cfg(feature = "pg15")]
    // SAFETY: the caller's promise; a tuple buffer of `rb`, filled before the change holds it.
    unsafe {
        let buf = pg_sys::ReorderBufferGetTupleBuf(rb, len - header);
        fill(&mut (*buf).tuple);
        (*change).data.tp = pg_sys::ReorderBufferChange__bindgen_ty_1__bindgen_ty_1 {
            relnode: (*rel).rd_node,
            clear_toast_afterwards: true,
            oldtuple: std::ptr::null_mut(),
            newtuple: buf,
        };
    }
    #[cfg(feature = "pg16")]
    // SAFETY: the caller's promise; a tuple buffer of `rb`, filled before the change holds it.
    unsafe {
        let buf = pg_sys::ReorderBufferGetTupleBuf(rb, len - header);
        fill(&mut (*buf).tuple);
        (*change).data.tp = pg_sys::ReorderBufferChange__bindgen_ty_1__bindgen_ty_1 {
            rlocator: (*rel).rd_locator,
            clear_toast_afterwards: true,
            oldtuple: std::ptr::null_mut(),
            newtuple: buf,
        };
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    // SAFETY: the caller's promise; a tuple of `rb`, filled before the change holds it.
    unsafe {
        #[cfg(feature = "pg17")]
        let copy = pg_sys::ReorderBufferGetTupleBuf(rb, len - header);
        #[cfg(not(feature = "pg17"))]
        let copy = pg_sys::ReorderBufferAllocTupleBuf(rb, len - header);
        fill(copy);
        (*change).data.tp = pg_sys::ReorderBufferChange__bindgen_ty_1__bindgen_ty_1 {
            rlocator: (*rel).rd_locator,
            clear_toast_afterwards: true,
            oldtuple: std::ptr::null_mut(),
            newtuple: copy,
        };
    }
}

/// A CHECK constraint node already cooked (`cooked_expr`), valid and not to be validated, as
/// ALTER TABLE's own code passes one to AddRelationNewConstraints; 18 added `is_enforced`,
/// which a zeroed node would leave false (NOT ENFORCED).
///
/// # Safety
/// In a backend; `name` is null or a NUL-terminated string, `cooked_expr` a NUL-terminated
/// node string, both living as long as the node (the current memory context).
pub unsafe fn cooked_check_constraint(
    name: *mut c_char,
    cooked_expr: *mut c_char,
) -> *mut pg_sys::Constraint {
    // SAFETY: a zeroed node of the right size, in the current memory context, filled before
    // anyone reads it.
    unsafe {
        let constraint =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::Constraint>()).cast::<pg_sys::Constraint>();
        (*constraint).type_ = pg_sys::NodeTag::T_Constraint;
        (*constraint).contype = pg_sys::ConstrType::CONSTR_CHECK;
        (*constraint).conname = name;
        (*constraint).location = -1;
        (*constraint).cooked_expr = cooked_expr;
        (*constraint).initially_valid = true;
        (*constraint).skip_validation = true;
        #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
        {
            (*constraint).is_enforced = true;
        }
        constraint
    }
}

/// `pg_subscription`'s failover flag as an SQL expression on `s` (the catalog row): 17 added
/// failover slots; before, no slot fails over.
#[cfg(any(feature = "pg15", feature = "pg16"))]
pub const SUBSCRIPTION_FAILOVER_SQL: &str = "false";
/// `pg_subscription`'s failover flag as an SQL expression on `s` (the catalog row): 17 added
/// failover slots; before, no slot fails over.
#[cfg(not(any(feature = "pg15", feature = "pg16")))]
pub const SUBSCRIPTION_FAILOVER_SQL: &str = "s.subfailover";

/// Whether a subscription's apply worker applies rows as the subscription owner, as an SQL
/// expression on `s` (the `pg_subscription` row): always before 16; from 16 on it applies them
/// as each table's owner unless `run_as_owner = true`.
#[cfg(feature = "pg15")]
pub const SUBSCRIPTION_RUNS_AS_OWNER_SQL: &str = "true";
/// Whether a subscription's apply worker applies rows as the subscription owner, as an SQL
/// expression on `s` (the `pg_subscription` row): always before 16; from 16 on it applies them
/// as each table's owner unless `run_as_owner = true`.
#[cfg(not(feature = "pg15"))]
pub const SUBSCRIPTION_RUNS_AS_OWNER_SQL: &str = "s.subrunasowner";

/// Whether a subscription made with `run_as_owner` set as given (`None`: not given) will apply
/// rows as its owner: always before 16, which has no such option; from 16 on only with
/// `run_as_owner = true` (the default is false).
#[cfg(feature = "pg15")]
pub fn new_subscription_runs_as_owner(_run_as_owner: Option<bool>) -> bool {
    true
}
/// Whether a subscription made with `run_as_owner` set as given (`None`: not given) will apply
/// rows as its owner: always before 16, which has no such option; from 16 on only with
/// `run_as_owner = true` (the default is false).
#[cfg(not(feature = "pg15"))]
pub fn new_subscription_runs_as_owner(run_as_owner: Option<bool>) -> bool {
    run_as_owner.unwrap_or(false)
}

/// Whether a subscription takes only the changes that originated on its publisher (`origin =
/// none`), as an SQL expression on `s` (the `pg_subscription` row): 16 added the option.
#[cfg(feature = "pg15")]
pub const SUBSCRIPTION_ORIGIN_NONE_SQL: &str = "false";
/// Whether a subscription takes only the changes that originated on its publisher (`origin =
/// none`), as an SQL expression on `s` (the `pg_subscription` row): 16 added the option.
#[cfg(not(feature = "pg15"))]
pub const SUBSCRIPTION_ORIGIN_NONE_SQL: &str = "s.suborigin OPERATOR(pg_catalog.=) 'none'";

/// Whether the `pg_subscription` row `tuple` (from the SUBSCRIPTIONNAME catalog cache) takes
/// only the changes that originated on its publisher (`origin = none`): 16 added the option.
///
/// # Safety
/// `tuple` is a catalog cache tuple of pg_subscription; in a transaction.
#[cfg(feature = "pg15")]
pub unsafe fn takes_only_local_origin(_tuple: pg_sys::HeapTuple) -> bool {
    false
}
/// Whether the `pg_subscription` row `tuple` (from the SUBSCRIPTIONNAME catalog cache) takes
/// only the changes that originated on its publisher (`origin = none`): 16 added the option.
///
/// # Safety
/// `tuple` is a catalog cache tuple of pg_subscription; in a transaction.
#[cfg(not(feature = "pg15"))]
pub unsafe fn takes_only_local_origin(tuple: pg_sys::HeapTuple) -> bool {
    // SAFETY: the caller's promise; the column is a text (detoasted by text_to_cstring), and
    // its number is looked up by name (pgrx has no constant for it).
    unsafe {
        // SubscriptionRelationId (catalog/pg_subscription.h), which pgrx does not bind.
        let pg_subscription = pg_sys::Oid::from(6100u32);
        let attnum = pg_sys::get_attnum(pg_subscription, c"suborigin".as_ptr());
        let mut isnull = false;
        let origin = pg_sys::SysCacheGetAttr(
            syscache(pg_sys::SysCacheIdentifier::SUBSCRIPTIONNAME),
            tuple,
            attnum,
            &mut isnull,
        );
        !isnull
            && std::ffi::CStr::from_ptr(pg_sys::text_to_cstring(origin.cast_mut_ptr())).to_bytes()
                == b"none"
    }
}

/// A catalog cache's identifier as the syscache functions take it: 19 made the identifiers a C
/// enum (`int`); before, pgrx bound them as unsigned constants.
#[allow(clippy::unnecessary_cast)] // a cast on 15 to 18, none on 19
pub const fn syscache(id: pg_sys::SysCacheIdentifier::Type) -> std::ffi::c_int {
    id as std::ffi::c_int
}

/// Whether `DETACH PARTITION ... CONCURRENTLY` leaves on the detached table a CHECK constraint
/// equal to its partition constraint (`DetachAddConstraintIfNeeded`): 15 to 18 add one, 19 no
/// longer does.
pub const DETACH_CONCURRENTLY_ADDS_CHECK: bool = cfg!(any(
    feature = "pg15",
    feature = "pg16",
    feature = "pg17",
    feature = "pg18"
));

/// The replication origin of this session's transaction (an apply worker's origin; 0,
/// `InvalidRepOriginId`, elsewhere): 19 moved it into `replorigin_xact_state`.
pub fn session_origin() -> u16 {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
    // SAFETY: a variable of this backend, read in it.
    unsafe {
        pg_sys::replorigin_session_origin
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18")))]
    // SAFETY: as above.
    unsafe {
        pg_sys::replorigin_xact_state.origin
    }
}

/// Whether string literals are read as the standard says (backslashes literal): a setting
/// before 19, always so from 19 on, which removed the variable (and the setting's `off`).
pub fn standard_conforming_strings() -> bool {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
    // SAFETY: a variable of this backend, read in it.
    unsafe {
        pg_sys::standard_conforming_strings
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18")))]
    true
}

/// The variable that holds the value of string setting `name`, as the setting's definition
/// names it (read `*variable`, a C string or NULL); `None` for a name this server does not
/// define (a placeholder included: an undefined custom setting's value lives elsewhere, and the
/// placeholder is freed when a library defines it) or a setting that is not a string.
/// A defined setting's variable stays where it is for the life of the process (built-in ones
/// are static; a library's are never freed), so the caller may keep it: reading it costs
/// nothing, where a lookup by name hashes the name.
///
/// # Safety
/// In a backend; `name` is NUL-terminated.
pub unsafe fn string_setting_variable(name: &std::ffi::CStr) -> Option<*mut *mut c_char> {
    #[cfg(feature = "pg15")]
    // SAFETY: the caller's promise; 15 keeps the settings in an array of that many entries.
    let found = unsafe {
        let count = usize::try_from(pg_sys::GetNumConfigOptions()).unwrap_or(0);
        let all = pg_sys::get_guc_variables();
        (0..count).map(|i| *all.add(i)).find(|&g| {
            std::ffi::CStr::from_ptr((*g).name)
                .to_bytes()
                .eq_ignore_ascii_case(name.to_bytes())
        })
    };
    #[cfg(not(feature = "pg15"))]
    // SAFETY: the caller's promise; skip_errors: NULL for an unknown name.
    let found = unsafe {
        Some(pg_sys::find_option(
            name.as_ptr(),
            false,
            true,
            pgrx::PgLogLevel::ERROR as i32,
        ))
        .filter(|g| !g.is_null())
    };
    let generic = found?;
    // SAFETY: a setting's definition, alive for the process.
    unsafe {
        let defined =
            u32::try_from((*generic).flags).is_ok_and(|f| f & pg_sys::GUC_CUSTOM_PLACEHOLDER == 0);
        if !defined || (*generic).vartype != pg_sys::config_type::PGC_STRING {
            return None;
        }
        #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
        // Before 19 a string setting's definition begins with its generic part.
        return Some((*generic.cast::<pg_sys::config_string>()).variable);
        #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18")))]
        // From 19 on the generic part holds the typed part.
        return Some((*generic).__bindgen_anon_1._string.variable);
    }
}

/// Turns off the scanner's warning about backslashes in ordinary literals for `extra` (its
/// client was warned when the statement was first parsed); 19 has no such warning.
///
/// # Safety
/// `extra` is the scanner state of a scanner this backend started.
pub unsafe fn quiet_escape_string_warning(extra: *mut pg_sys::core_yy_extra_type) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
    // SAFETY: the caller's promise.
    unsafe {
        (*extra).escape_string_warning = false;
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18")))]
    let _ = extra;
}

/// The ALTER SUBSCRIPTION kind that refreshes the publications' tables (`REFRESH
/// PUBLICATION`): 19 renamed it, beside its new `REFRESH SEQUENCES` and `SERVER`.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
pub const ALTER_SUBSCRIPTION_REFRESH_PUBLICATION: pg_sys::AlterSubscriptionType::Type =
    pg_sys::AlterSubscriptionType::ALTER_SUBSCRIPTION_REFRESH;
/// The ALTER SUBSCRIPTION kind that refreshes the publications' tables (`REFRESH
/// PUBLICATION`): 19 renamed it, beside its new `REFRESH SEQUENCES` and `SERVER`.
#[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18")))]
pub const ALTER_SUBSCRIPTION_REFRESH_PUBLICATION: pg_sys::AlterSubscriptionType::Type =
    pg_sys::AlterSubscriptionType::ALTER_SUBSCRIPTION_REFRESH_PUBLICATION;

/// Whether a publication can send the values of stored generated columns (18 added
/// `publish_generated_columns` and generated columns in column lists).
pub const PUBLICATIONS_SEND_GENERATED_COLUMNS: bool = cfg!(not(any(
    feature = "pg15",
    feature = "pg16",
    feature = "pg17"
)));

/// Whether publication `publication` sends the stored generated columns of a table it has no
/// column list for (`publish_generated_columns = stored`, new in 18).
///
/// # Safety
/// `publication` is a live `Publication` (`GetPublicationByName`).
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn publishes_stored_generated(_publication: *mut pg_sys::Publication) -> bool {
    false
}
/// Whether publication `publication` sends the stored generated columns of a table it has no
/// column list for (`publish_generated_columns = stored`, new in 18).
///
/// # Safety
/// `publication` is a live `Publication` (`GetPublicationByName`).
#[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
pub unsafe fn publishes_stored_generated(publication: *mut pg_sys::Publication) -> bool {
    // SAFETY: the caller's promise.
    let kind = unsafe { (*publication).pubgencols_type };
    kind == pg_sys::PublishGencolsType::PUBLISH_GENCOLS_STORED
}

/// The column list (attribute numbers) publication `publication` has for relation `relid`, in
/// the current memory context; `None` when it has none. Before 18 a column list cannot name a
/// generated column, the one use of this: `None`.
///
/// # Safety
/// `publication` is a live `Publication`; in a transaction.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn column_list(
    _publication: *mut pg_sys::Publication,
    _relid: pg_sys::Oid,
) -> Option<*mut pg_sys::Bitmapset> {
    None
}
/// The column list (attribute numbers) publication `publication` has for relation `relid`, in
/// the current memory context; `None` when it has none. Before 18 a column list cannot name a
/// generated column, the one use of this: `None`.
///
/// # Safety
/// `publication` is a live `Publication`; in a transaction.
#[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
pub unsafe fn column_list(
    publication: *mut pg_sys::Publication,
    relid: pg_sys::Oid,
) -> Option<*mut pg_sys::Bitmapset> {
    let mut columns: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    // SAFETY: the caller's promise; a catalog cache lookup of (relid, publication).
    let has = unsafe {
        pg_sys::check_and_fetch_column_list(
            publication,
            relid,
            pg_sys::CurrentMemoryContext,
            &mut columns,
        )
    };
    has.then_some(columns)
}

/// The publications that name relation `relid` itself (`FOR TABLE`), as a List of OIDs. 19
/// renamed the function when a publication could also except a table.
///
/// # Safety
/// In a transaction.
#[cfg(not(feature = "pg19"))]
pub unsafe fn relation_publications(relid: pg_sys::Oid) -> *mut pg_sys::List {
    // SAFETY: the caller's promise.
    unsafe { pg_sys::GetRelationPublications(relid) }
}
/// The publications that name relation `relid` itself (`FOR TABLE`), as a List of OIDs. 19
/// renamed the function when a publication could also except a table.
///
/// # Safety
/// In a transaction.
#[cfg(feature = "pg19")]
pub unsafe fn relation_publications(relid: pg_sys::Oid) -> *mut pg_sys::List {
    // SAFETY: the caller's promise.
    unsafe { pg_sys::GetRelationIncludedPublications(relid) }
}

/// Whether publication `publication` excepts relation `relid` (`FOR ALL TABLES EXCEPT`, new in
/// 19).
///
/// # Safety
/// In a transaction.
#[cfg(not(feature = "pg19"))]
pub unsafe fn publication_excepts(_publication: pg_sys::Oid, _relid: pg_sys::Oid) -> bool {
    false
}
/// Whether publication `publication` excepts relation `relid` (`FOR ALL TABLES EXCEPT`, new in
/// 19).
///
/// # Safety
/// In a transaction.
#[cfg(feature = "pg19")]
pub unsafe fn publication_excepts(publication: pg_sys::Oid, relid: pg_sys::Oid) -> bool {
    // SAFETY: the caller's promise; a List of OIDs.
    unsafe { pg_sys::list_member_oid(pg_sys::GetRelationExcludedPublications(relid), publication) }
}

/// The OID of relation `rel`'s primary key index (InvalidOid: none). 18 added whether a
/// deferrable one counts (here: not).
///
/// # Safety
/// `rel` is an open relation; in a transaction.
pub unsafe fn primary_key_index(rel: pg_sys::Relation) -> pg_sys::Oid {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: the caller's promise.
    unsafe {
        pg_sys::RelationGetPrimaryKeyIndex(rel)
    }
    #[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
    // SAFETY: the caller's promise.
    unsafe {
        pg_sys::RelationGetPrimaryKeyIndex(rel, false)
    }
}

/// Whether constraint `row` is one that 18 made possible and `pg_get_constraintdef` writes
/// with a clause of 18's: a key `WITHOUT OVERLAPS` (`conperiod`), or `NOT ENFORCED`.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub fn constraint_of_18(_row: &pg_sys::FormData_pg_constraint) -> bool {
    false
}
/// Whether constraint `row` is one that 18 made possible and `pg_get_constraintdef` writes
/// with a clause of 18's: a key `WITHOUT OVERLAPS` (`conperiod`), or `NOT ENFORCED`.
#[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
pub fn constraint_of_18(row: &pg_sys::FormData_pg_constraint) -> bool {
    row.conperiod || !row.conenforced
}
