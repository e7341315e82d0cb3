//! Replay through registered adapters, in a session made to look like a subscription's apply
//! worker (its replication origin set up), so that inserting into `ddl_sync.events` replays.

use pgrx::prelude::*;

/// In schema `tests`, where `cargo pgrx test` looks for them.
#[pg_schema]
mod tests {
    use crate::replay::c_abi::{DdlSyncAdapter, DdlSyncContext, ABI_VERSION};
    use crate::tests::{error_of, install_error_of, rows};
    use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
    use pgrx::prelude::*;
    use std::ffi::{c_char, c_int, c_void, CStr, CString};

    /// This session replays DDL for subscription `ddl_sync_t_sub` (every kind, `conflict`), as
    /// its apply worker would: with the subscription's replication origin. Such tests run one
    /// at a time: concurrent ones would get the same origin ID (each creates its origin in a
    /// transaction the others cannot see), and the session lock lasts until the session ends,
    /// which also releases the origin.
    fn as_apply_worker(conflict: &str) {
        Spi::run(&format!(
            "SELECT pg_advisory_lock(pg_catalog.hashtext('ddl_sync tests: replication origin'));
             CREATE SUBSCRIPTION ddl_sync_t_sub CONNECTION 'dbname=ddl_sync_t_nowhere'
                 PUBLICATION p WITH (connect = false);
             SELECT ddl_sync.set_subscription_ddl('ddl_sync_t_sub', 'all', '{conflict}');
             SELECT pg_replication_origin_session_setup('pg_' || oid)
               FROM pg_subscription WHERE subname = 'ddl_sync_t_sub';"
        ))
        .expect("subscription and origin");
    }

    fn set_conflict(conflict: &str) {
        Spi::run(&format!(
            "SELECT ddl_sync.set_subscription_ddl('ddl_sync_t_sub', 'all', '{conflict}')"
        ))
        .expect("conflict policy");
    }

    /// The INSERT of an event as the apply worker makes it (from origin 42, LSN `0/<n>`).
    fn event_insert(n: u32, dialect: &str, tag: &str, sql: &str) -> String {
        format!(
            "INSERT INTO ddl_sync.events (lsn, origin_sysid, origin_lsn, xid, top_level, forwarded,
                 kind, dialect, command_tag, schema_name, object_identity, sql, search_path,
                 role_name, session_user_name, database_name)
             VALUES ('0/{n}', 42, '0/{n}', 1, true, false, 'table', '{dialect}', '{tag}', 'public',
                 'public.t', $sql${sql}$sql$, 'public', current_user, current_user, 'postgres')"
        )
    }

    /// Replays one event; returns its row's `[status, detail, adapter]`.
    fn replay(n: u32, dialect: &str, tag: &str, sql: &str) -> Vec<Option<String>> {
        Spi::run(&event_insert(n, dialect, tag, sql)).expect("event inserted");
        rows(&format!(
            "SELECT apply_status, apply_detail, apply_adapter FROM ddl_sync.events
              WHERE origin_lsn = '0/{n}'"
        ))
        .pop()
        .expect("the event's row")
    }

    fn text(sql: &str) -> Option<String> {
        Spi::get_one::<String>(sql).expect("query ran")
    }

    fn some(values: &[&str]) -> Vec<Option<String>> {
        values.iter().map(|v| Some(v.to_string())).collect()
    }

    /// A MySQL-flavoured adapter in plpgsql: backquoted identifiers become double-quoted ones, and
    /// the statement runs through ddl_sync.adapter_execute (checked like every replayed statement).
    /// Its init function keeps the context it was given in `ddl_sync_t_mysql.seen`.
    const MYSQL_ADAPTER: &str = "
        CREATE SCHEMA ddl_sync_t_mysql;
        CREATE TABLE ddl_sync_t_mysql.seen (context jsonb);
        CREATE FUNCTION ddl_sync_t_mysql.init(context jsonb) RETURNS ddl_sync.adapter_result
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO ddl_sync_t_mysql.seen VALUES (context);
            RETURN NULL;
        END $$;
        CREATE FUNCTION ddl_sync_t_mysql.execute(sql text, context jsonb)
        RETURNS ddl_sync.adapter_result LANGUAGE plpgsql AS $$
        DECLARE
            refused text := ddl_sync.adapter_execute(replace(sql, '`', '\"'));
        BEGIN
            IF refused IS NOT NULL THEN
                RETURN ('fatal', refused)::ddl_sync.adapter_result;
            END IF;
            RETURN ('success', NULL)::ddl_sync.adapter_result;
        END $$;
        SELECT ddl_sync.register_adapter('mysql-sql', 'MySQL', 'ddl_sync_t_mysql.execute(text, jsonb)',
                                         init_function => 'ddl_sync_t_mysql.init(jsonb)');";

    #[pg_test]
    fn a_sql_adapter_replays_its_dialect() {
        install_error_of();
        as_apply_worker("error");
        // No adapter for the dialect yet: refused, nothing run.
        assert_eq!(
            replay(
                1,
                "mysql",
                "CREATE TABLE",
                "CREATE TABLE `Early` (`Id` int)"
            ),
            vec![
                Some("refused".into()),
                Some("no adapter for SQL dialect \"mysql\"".into()),
                None
            ]
        );
        Spi::run(MYSQL_ADAPTER).expect("adapter registered");
        assert_eq!(
            rows("SELECT * FROM ddl_sync.adapters() WHERE dialect IN ('mysql', 'tsql') ORDER BY 1"),
            vec![
                some(&["mysql", "mysql-sql", "sql"]),
                some(&["tsql", "tsql-simple", "built-in"])
            ]
        );

        let row = replay(
            2,
            "mysql",
            "CREATE TABLE",
            "CREATE TABLE `Orders` (`Id` int, `Note` text)",
        );
        assert_eq!(
            row,
            vec![Some("applied".into()), None, Some("mysql-sql".into())]
        );
        assert_eq!(
            text(
                "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
                  WHERE attrelid = 'public.\"Orders\"'::regclass AND attnum > 0"
            )
            .as_deref(),
            Some("Id,Note")
        );
        assert_eq!(
            text("SELECT (context - 'role')::text FROM ddl_sync_t_mysql.seen").as_deref(),
            Some(
                r#"{"dialect": "mysql", "database": "postgres", "search_path": "public", "role_switched": true}"#
            )
        );

        // The adapter may rewrite the text, never run another command than the row claims: the
        // row is refused (not an error, whatever the policy) and nothing changed.
        let row = replay(3, "mysql", "CREATE TABLE", "DROP TABLE `Orders`");
        assert_eq!(row[0].as_deref(), Some("refused"));
        assert!(
            row[1].as_deref().is_some_and(
                |d| d.contains("the row claims CREATE TABLE, but the statement is DROP TABLE")
            ),
            "{row:?}"
        );
        assert_eq!(
            text("SELECT to_regclass('public.\"Orders\"')::text").as_deref(),
            Some("\"Orders\"")
        );

        // Disabled, or its function dropped: the dialect has no adapter again.
        Spi::run("UPDATE ddl_sync.adapter SET enabled = false WHERE dialect = 'mysql'")
            .expect("disable");
        assert_eq!(
            replay(4, "mysql", "CREATE TABLE", "CREATE TABLE `Late` (a int)")[0].as_deref(),
            Some("refused")
        );
        Spi::run(
            "UPDATE ddl_sync.adapter SET enabled = true WHERE dialect = 'mysql';
                  DROP FUNCTION ddl_sync_t_mysql.init(jsonb);",
        )
        .expect("drop");
        assert_eq!(
            text("SELECT count(*)::text FROM ddl_sync.adapter").as_deref(),
            Some("0")
        );

        // Only a superuser or the extension's owner registers.
        Spi::run("CREATE ROLE ddl_sync_t_nobody; SET ROLE ddl_sync_t_nobody").expect("role");
        assert_eq!(
            error_of("SELECT ddl_sync.register_adapter('x', 'mysql', 'pg_catalog.lower(text)')"),
            Some(
                "42501: must be superuser or owner of extension ddl_sync to register an adapter"
                    .into()
            )
        );
        assert_eq!(
            error_of("SELECT ddl_sync.unregister_adapter('mysql')"),
            Some(
                "42501: must be superuser or owner of extension ddl_sync to unregister an adapter"
                    .into()
            )
        );
        Spi::run("RESET ROLE").expect("reset role");
        // A function of the wrong shape is refused.
        assert_eq!(
            error_of("SELECT ddl_sync.register_adapter('x', 'mysql', 'pg_catalog.lower(text)')"),
            Some("42P13: function lower(text) does not fit an adapter".into())
        );
        // Outside a replay, adapter_execute runs nothing.
        assert_eq!(
            error_of("SELECT ddl_sync.adapter_execute('CREATE TABLE ddl_sync_t_x ()')"),
            Some("55000: ddl_sync.adapter_execute() runs statements only for an adapter replaying a DDL event".into())
        );
        Spi::run("SELECT pg_replication_origin_session_reset()").expect("reset origin");
    }

    #[pg_test]
    fn a_sql_adapter_for_tsql_replaces_the_built_in_one_until_unregistered() {
        as_apply_worker("error");
        Spi::run(
            "CREATE TABLE ddl_sync_t_calls (dialect_setting text);
             CREATE FUNCTION ddl_sync_t_full_tsql(sql text, context jsonb)
             RETURNS ddl_sync.adapter_result LANGUAGE plpgsql
             SET search_path FROM CURRENT AS $$
             BEGIN
                 INSERT INTO ddl_sync_t_calls
                 VALUES (coalesce(current_setting('babelfishpg_tsql.sql_dialect', true), '-'));
                 PERFORM ddl_sync.adapter_execute(sql);  -- a refusal is on the row anyway
                 RETURN NULL;                            -- success
             END $$;
             SELECT ddl_sync.register_adapter('tsql-full', 'tsql', 'ddl_sync_t_full_tsql(text, jsonb)');
             SET babelfishpg_tsql.sql_dialect = 'postgres';",
        )
        .expect("adapter registered");
        assert_eq!(
            replay(
                1,
                "tsql",
                "CREATE TABLE",
                "CREATE TABLE ddl_sync_t_a (a int)"
            ),
            vec![Some("applied".into()), None, Some("tsql-full".into())]
        );
        // The built-in adapter's setting was not made: the registered adapter replaced it.
        assert_eq!(
            text("SELECT string_agg(dialect_setting, ',') FROM ddl_sync_t_calls").as_deref(),
            Some("postgres")
        );
        assert_eq!(
            text("SELECT ddl_sync.unregister_adapter('TSQL')::text").as_deref(),
            Some("true")
        );
        assert_eq!(
            replay(
                2,
                "tsql",
                "CREATE TABLE",
                "CREATE TABLE ddl_sync_t_b (a int)"
            )[2]
            .as_deref(),
            Some("tsql-simple")
        );
        assert_eq!(
            text("SELECT count(*)::text FROM ddl_sync_t_calls").as_deref(),
            Some("1")
        );
        Spi::run("SELECT pg_replication_origin_session_reset()").expect("reset origin");
    }

    #[pg_test]
    fn the_built_in_tsql_adapter_sets_the_dialect_for_the_statement_and_restores_it() {
        install_error_of();
        as_apply_worker("skip");
        // What the statement sees, through an event trigger; it fails every DROP TABLE.
        Spi::run(
            "CREATE TABLE ddl_sync_t_seen (tag text, dialect_setting text);
             CREATE FUNCTION ddl_sync_t_record() RETURNS event_trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO public.ddl_sync_t_seen
                 VALUES (tg_tag, current_setting('babelfishpg_tsql.sql_dialect', true));
                 IF tg_tag = 'DROP TABLE' THEN
                     RAISE EXCEPTION 'dialect during the statement: %',
                         current_setting('babelfishpg_tsql.sql_dialect', true);
                 END IF;
             END $$;
             CREATE EVENT TRIGGER ddl_sync_t_record ON ddl_command_start
                 EXECUTE FUNCTION ddl_sync_t_record();
             SET babelfishpg_tsql.sql_dialect = 'postgres';",
        )
        .expect("recorder");
        let dialect = || text("SELECT current_setting('babelfishpg_tsql.sql_dialect')");

        assert_eq!(
            replay(
                1,
                "tsql",
                "CREATE TABLE",
                "CREATE TABLE ddl_sync_t_tsql (a int)"
            ),
            vec![Some("applied".into()), None, Some("tsql-simple".into())]
        );
        assert_eq!(
            rows("SELECT tag, dialect_setting FROM ddl_sync_t_seen"),
            vec![some(&["CREATE TABLE", "tsql"])]
        );
        assert_eq!(dialect().as_deref(), Some("postgres"));

        // A failing statement (skip policy): the same during, and restored after.
        assert_eq!(
            replay(2, "tsql", "DROP TABLE", "DROP TABLE ddl_sync_t_tsql"),
            vec![
                Some("failed".into()),
                Some("dialect during the statement: tsql".into()),
                Some("tsql-simple".into())
            ]
        );
        assert_eq!(dialect().as_deref(), Some("postgres"));

        // Policy error: the ERROR reaches the caller (the apply worker), and the setting is back
        // once it is caught.
        set_conflict("error");
        assert_eq!(
            error_of(&event_insert(
                3,
                "tsql",
                "DROP TABLE",
                "DROP TABLE ddl_sync_t_tsql"
            )),
            Some("P0001: dialect during the statement: tsql".into())
        );
        assert_eq!(dialect().as_deref(), Some("postgres"));
        assert_eq!(
            text("SELECT to_regclass('ddl_sync_t_tsql')::text").as_deref(),
            Some("ddl_sync_t_tsql")
        );
        Spi::run("SELECT pg_replication_origin_session_reset()").expect("reset origin");
    }

    /// A C-ABI adapter for `mysql`, written in Rust the way a pgrx extension would: backquotes
    /// become double quotes, `fail` in the text is a fatal result, and the private data set by
    /// init must come back to execute.
    mod c_adapter {
        use super::*;

        static MARK: u8 = 0;

        fn mark() -> *mut c_void {
            std::ptr::addr_of!(MARK) as *mut c_void
        }

        /// `init_context`.
        ///
        /// # Safety
        /// Called by ddl_sync with the context it made for the callback (the header's contract).
        #[pg_guard]
        pub unsafe extern "C-unwind" fn init(ctx: *mut DdlSyncContext) -> c_int {
            // SAFETY: the caller's promise: `ctx` is live during the call, its private data ours.
            unsafe { (*ctx).private_data = mark() };
            0
        }

        /// `execute_ddl`.
        ///
        /// # Safety
        /// As [`init`], with `sql` NUL-terminated.
        #[pg_guard]
        pub unsafe extern "C-unwind" fn execute(
            ctx: *mut DdlSyncContext,
            sql: *const c_char,
        ) -> c_int {
            // SAFETY: the caller's promise. The tests' own ASCII statements: nothing to convert.
            let sql = unsafe { CStr::from_ptr(sql) }
                .to_string_lossy()
                .replace('`', "\"");
            // SAFETY: as above.
            let private = unsafe { (*ctx).private_data };
            if sql.contains("fail") || private != mark() {
                // SAFETY: as above; a static message, as the header allows.
                unsafe { (*ctx).message = c"the c-test adapter fails it".as_ptr() };
                return 2;
            }
            // SAFETY: as above; the context's strings are NUL-terminated and valid during the
            // call (the tests' own ASCII names, nothing to convert).
            let (dialect, search_path) = unsafe {
                (
                    CStr::from_ptr((*ctx).dialect).to_string_lossy(),
                    CStr::from_ptr((*ctx).search_path).to_string_lossy(),
                )
            };
            if dialect != "mysql" || search_path != "public" {
                // SAFETY: as above.
                unsafe { (*ctx).message = c"unexpected context".as_ptr() };
                return 2;
            }
            let sql = CString::new(sql).expect("no NUL");
            // SAFETY: the service ddl_sync put in the context, called during the callback as
            // the header allows; its ERROR comes back through the boundary.
            unsafe {
                let run = (*ctx).execute;
                pg_guard_ffi_boundary(|| run(ctx, sql.as_ptr()))
            }
        }

        /// `cleanup_context`.
        ///
        /// # Safety
        /// As [`init`].
        #[pg_guard]
        pub unsafe extern "C-unwind" fn cleanup(ctx: *mut DdlSyncContext) -> c_int {
            // SAFETY: the caller's promise.
            unsafe { (*ctx).private_data = std::ptr::null_mut() };
            0
        }

        /// Registers through the exported symbol, found as another extension finds it.
        pub fn register(version: u32) {
            let adapter = DdlSyncAdapter {
                abi_version: version,
                name: c"c-test".as_ptr(),
                dialect: c"mysql".as_ptr(),
                init_context: Some(init),
                execute_ddl: Some(execute),
                cleanup_context: Some(cleanup),
            };
            // SAFETY: the documented way: load_external_function of ddl_sync's exported function,
            // which raises an ERROR (through the boundary) for an adapter it refuses.
            unsafe {
                let f = pg_sys::load_external_function(
                    c"$libdir/ddl_sync".as_ptr(),
                    c"ddl_sync_register_adapter".as_ptr(),
                    true,
                    std::ptr::null_mut(),
                );
                assert!(!f.is_null(), "ddl_sync_register_adapter is exported");
                let register: unsafe extern "C-unwind" fn(*const DdlSyncAdapter) =
                    std::mem::transmute(f);
                pg_guard_ffi_boundary(|| register(&adapter));
            }
        }
    }

    #[pg_test]
    fn a_c_adapter_registered_through_the_exported_function_replays_its_dialect() {
        as_apply_worker("skip");
        c_adapter::register(ABI_VERSION);
        assert_eq!(
            rows("SELECT * FROM ddl_sync.adapters() WHERE dialect = 'mysql'"),
            vec![some(&["mysql", "c-test", "c"])]
        );
        assert_eq!(
            replay(
                1,
                "mysql",
                "CREATE TABLE",
                "CREATE TABLE `CItems` (`Id` int)"
            ),
            vec![Some("applied".into()), None, Some("c-test".into())]
        );
        assert_eq!(
            text("SELECT to_regclass('public.\"CItems\"')::text").as_deref(),
            Some("\"CItems\"")
        );
        assert_eq!(
            replay(2, "mysql", "CREATE TABLE", "CREATE TABLE `fail` (a int)"),
            vec![
                Some("failed".into()),
                Some("the c-test adapter fails it".into()),
                Some("c-test".into())
            ]
        );
        // A statement error inside the adapter's call to execute comes back as the ERROR it is.
        let row = replay(
            3,
            "mysql",
            "CREATE TABLE",
            "CREATE TABLE `CItems` (`Id` int)",
        );
        assert_eq!(row[0].as_deref(), Some("failed"));
        assert_eq!(
            row[1].as_deref(),
            Some("relation \"CItems\" already exists")
        );

        // A SQL adapter for the same dialect takes precedence; unregistered, the C one is back.
        Spi::run(MYSQL_ADAPTER).expect("sql adapter");
        assert_eq!(
            rows("SELECT name, source FROM ddl_sync.adapters() WHERE dialect = 'mysql'"),
            vec![some(&["mysql-sql", "sql"])]
        );
        assert_eq!(
            replay(4, "mysql", "CREATE TABLE", "CREATE TABLE `SItems` (a int)")[2].as_deref(),
            Some("mysql-sql")
        );
        Spi::run("SELECT ddl_sync.unregister_adapter('mysql')").expect("unregister");
        assert_eq!(
            replay(5, "mysql", "CREATE TABLE", "CREATE TABLE `CItems2` (a int)")[2].as_deref(),
            Some("c-test")
        );
        Spi::run("SELECT pg_replication_origin_session_reset()").expect("reset origin");
    }

    #[pg_test(
        error = "ddl_sync adapter ABI version 99 is not supported (this ddl_sync speaks version 1)"
    )]
    fn a_c_adapter_of_another_abi_version_is_refused() {
        c_adapter::register(99);
    }
}
