//! What a role may do on this node, described the same way on every node
//! (`ddl_wire::describe_role_rights`): the capture writes its statement's role's, the replay
//! compares the role of the same name here with it.

use pgrx::pg_sys;

extern "C-unwind" {
    #[link_name = "GetUserId"]
    fn server_user_id() -> pg_sys::Oid;
    #[link_name = "GetSessionUserId"]
    fn server_session_user_id() -> pg_sys::Oid;
}

/// The current role (`GetUserId`), through the server's own function rather than pgrx's
/// binding, whose guard costs more than the call: it reads a variable and cannot fail, and the
/// capture asks it at every statement.
pub fn current() -> pg_sys::Oid {
    // SAFETY: reads a backend variable; raises no ERROR.
    unsafe { server_user_id() }
}

/// The session user (`GetSessionUserId`), as [`current`].
pub fn session_user() -> pg_sys::Oid {
    // SAFETY: as above.
    unsafe { server_session_user_id() }
}

/// The predefined roles whose privileges reach beyond a role's own objects: files and
/// programs of the server, every table's rows, other sessions, server statistics and
/// settings, maintenance, subscriptions. Looked up by name: each major has its own set (a name
/// this server lacks is skipped).
pub const PREDEFINED: [&std::ffi::CStr; 15] = [
    c"pg_read_server_files",
    c"pg_write_server_files",
    c"pg_execute_server_program",
    c"pg_read_all_data",
    c"pg_write_all_data",
    c"pg_read_all_settings",
    c"pg_read_all_stats",
    c"pg_stat_scan_tables",
    c"pg_monitor",
    c"pg_signal_backend",
    c"pg_signal_autovacuum_worker",
    c"pg_checkpoint",
    c"pg_maintain",
    c"pg_create_subscription",
    c"pg_use_reserved_connections",
];

/// [`ddl_wire::describe_role_rights`] of role `roleid` here; empty for a role that is gone.
///
/// # Safety
/// In a backend, inside a transaction (catalog cache lookups).
pub unsafe fn rights(roleid: pg_sys::Oid) -> String {
    // SAFETY: the caller's promise; a syscache entry of pg_authid, released below; the
    // predefined roles' names are NUL-terminated, missing_ok.
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            crate::versions::syscache(pg_sys::SysCacheIdentifier::AUTHOID),
            pg_sys::Datum::from(roleid),
        );
        if tuple.is_null() {
            return String::new();
        }
        let row = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_authid>(tuple);
        let attributes = [
            row.rolsuper,
            row.rolcreatedb,
            row.rolcreaterole,
            row.rolreplication,
            row.rolbypassrls,
        ];
        pg_sys::ReleaseSysCache(tuple);
        let predefined: Vec<&str> = if attributes[0] {
            Vec::new()
        } else {
            PREDEFINED
                .iter()
                .filter(|name| {
                    let oid = pg_sys::get_role_oid(name.as_ptr(), true);
                    oid != pg_sys::InvalidOid && pg_sys::has_privs_of_role(roleid, oid)
                })
                .filter_map(|name| name.to_str().ok())
                .collect()
        };
        ddl_wire::describe_role_rights(attributes, &predefined)
    }
}
