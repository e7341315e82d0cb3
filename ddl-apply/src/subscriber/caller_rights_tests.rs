//! `#[pg_test]`s of [`crate::subscriber::caller_rights`]: which built-ins an ordinary role's
//! expressions may call. Run by `cargo pgrx test` (schema `tests`).

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use crate::subscriber::apply_code::Received;
    use crate::subscriber::caller_rights::findings;
    use pgrx::prelude::*;

    /// The findings for `sql`, run as a fresh role that may create in schema public and use
    /// sequence `t_granted` only; judged as the replay judges it (the current user).
    fn judged(sql: &str) -> Vec<String> {
        Spi::run(
            "CREATE ROLE ddl_sync_t_author;
             GRANT CREATE ON SCHEMA public TO ddl_sync_t_author;
             CREATE SEQUENCE public.t_granted;
             CREATE SEQUENCE public.t_other;
             GRANT USAGE ON SEQUENCE public.t_granted TO ddl_sync_t_author;
             SET ROLE ddl_sync_t_author",
        )
        .expect("set up");
        // SAFETY: assigns the test transaction's xid, which every row below carries.
        let since = unsafe { pg_sys::GetCurrentTransactionId() };
        Spi::run(sql).expect(sql);
        let found = findings(since, false, &Received::default()).expect("checked");
        Spi::run("RESET ROLE").expect("reset role");
        found
    }

    #[pg_test]
    fn builtins_that_run_sql_or_read_relations_are_found() {
        let found = judged(
            "CREATE TABLE t (x int CHECK (pg_catalog.query_to_xml('SELECT 1', false, false, '') \
             IS NOT NULL), d xml DEFAULT pg_catalog.table_to_xml('pg_catalog.pg_authid', false, \
             false, ''))",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        // Sorted: "constraint ..." before "default value ...".
        assert!(found[0].contains("query_to_xml(text,boolean,boolean,text), which runs the SQL"));
        assert!(found[1].contains("table_to_xml(regclass,boolean,boolean,text), which reads"));
    }

    #[pg_test]
    fn calls_inside_operators_casts_and_domains_are_found() {
        let found = judged(
            "CREATE DOMAIN t_dom AS text CHECK (VALUE OPERATOR(pg_catalog.||) \
             pg_catalog.set_config('work_mem', '64kB', false) IS NOT NULL);
             CREATE TABLE t (x int DEFAULT pg_catalog.length(pg_catalog.lo_get(1)::text))",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found
            .iter()
            .any(|f| f.contains("set_config(text,text,boolean)")));
        assert!(found
            .iter()
            .any(|f| f.contains("lo_get(oid), which reads or writes")));
    }

    #[pg_test]
    fn notifications_and_session_advisory_locks_are_found() {
        let found = judged(
            "CREATE TABLE t (x int CHECK (pg_catalog.pg_notify('cache', x::text) IS NULL), \
             y int CHECK (pg_catalog.pg_try_advisory_lock(y)), \
             z int CHECK (pg_catalog.pg_try_advisory_xact_lock(z)))",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("pg_notify(text,text), which reaches the subscriber's other"));
        assert!(found[1].contains("pg_try_advisory_lock(bigint), which reaches"));
    }

    #[pg_test]
    fn sequences_must_be_constant_and_usable() {
        let found = judged(
            "CREATE TABLE t (a int DEFAULT pg_catalog.nextval('public.t_other'), \
             b int DEFAULT pg_catalog.nextval(('public.' || 't_granted')::pg_catalog.regclass), \
             c int DEFAULT pg_catalog.setval('public.t_granted', 1))",
        );
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found
            .iter()
            .any(|f| f.contains("t_other, which role ddl_sync_t_author may not (USAGE)")));
        assert!(found
            .iter()
            .any(|f| f.contains("names no constant sequence")));
        assert!(found
            .iter()
            .any(|f| f.contains("t_granted, which role ddl_sync_t_author may not (UPDATE)")));
    }

    #[pg_test]
    fn functions_the_role_may_not_execute_are_found() {
        let found = judged(
            "CREATE TABLE t (x int CHECK (x IS NULL OR pg_catalog.pg_read_file('x') IS NULL))",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("pg_read_file(text), which role ddl_sync_t_author may not execute")
        );
    }

    #[pg_test]
    fn functions_of_listed_extensions_are_found() {
        Spi::run("CREATE EXTENSION dblink SCHEMA public").expect("dblink");
        let found = judged(
            "CREATE TABLE t (x text CHECK (public.dblink_exec('dbname=postgres', x) IS NOT NULL))",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("dblink_exec(text,text), which belongs to an extension"));
    }

    #[pg_test]
    fn by_owner_judges_each_expression_for_its_tables_owner_and_skips_superusers() {
        Spi::run(
            "CREATE ROLE ddl_sync_t_owner;
             CREATE TABLE public.t_theirs (x int CHECK (pg_catalog.query_to_xml('SELECT 1', \
                 false, false, '') IS NOT NULL));
             ALTER TABLE public.t_theirs OWNER TO ddl_sync_t_owner;
             CREATE TABLE public.t_mine (x int CHECK (pg_catalog.query_to_xml('SELECT 1', \
                 false, false, '') IS NOT NULL))",
        )
        .expect("set up");
        // SAFETY: the test transaction's xid, which every row above carries.
        let since = unsafe { pg_sys::GetCurrentTransactionId() };
        let found = findings(since, true, &Received::default()).expect("checked");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("t_theirs"), "{found:?}");
    }

    #[pg_test]
    fn by_owner_leaves_out_the_defaults_of_received_columns_but_not_generated_ones() {
        Spi::run(
            "CREATE ROLE ddl_sync_t_app;
             CREATE SEQUENCE public.t_su_seq;
             CREATE FUNCTION public.t_secret(bigint) RETURNS bigint IMMUTABLE LANGUAGE sql
                 AS 'SELECT $1';
             REVOKE EXECUTE ON FUNCTION public.t_secret(bigint) FROM PUBLIC;
             CREATE TABLE public.t_given (id bigint DEFAULT pg_catalog.nextval('public.t_su_seq'),
                 local bigint DEFAULT pg_catalog.nextval('public.t_su_seq'),
                 g bigint GENERATED ALWAYS AS (pg_catalog.abs(id)) STORED,
                 q bigint GENERATED ALWAYS AS (public.t_secret(id)) STORED);
             ALTER TABLE public.t_given OWNER TO ddl_sync_t_app",
        )
        .expect("set up");
        // SAFETY: the test transaction's xid, which every row above carries.
        let since = unsafe { pg_sys::GetCurrentTransactionId() };
        // Every column but `local` comes with each row: only `local`'s default can run here,
        // and a generated column's expression always does.
        let received = Received {
            tables: vec!["public.t_given".into(); 3],
            columns: vec!["id".into(), "g".into(), "q".into()],
        };
        let found = findings(since, true, &received).expect("checked");
        assert_eq!(found.len(), 2, "{found:?}");
        let has = |a: &str, b: &str| found.iter().any(|f| f.contains(a) && f.contains(b));
        assert!(
            has(
                "column local",
                "t_su_seq, which role ddl_sync_t_app may not (USAGE)"
            ),
            "{found:?}"
        );
        assert!(
            has(
                "column q",
                "t_secret(bigint), which role ddl_sync_t_app may not execute"
            ),
            "{found:?}"
        );
        let all = findings(since, true, &Received::default()).expect("checked");
        assert_eq!(all.len(), 3, "{all:?}");
    }

    #[pg_test]
    fn ordinary_ddl_finds_nothing() {
        let found = judged(
            "CREATE TABLE t (id serial, n bigint DEFAULT pg_catalog.nextval('public.t_granted'),
                             at timestamptz DEFAULT pg_catalog.now(), u uuid DEFAULT pg_catalog.gen_random_uuid(),
                             x int CHECK (x > 0 AND pg_catalog.length(x::text) < 9),
                             g int GENERATED ALWAYS AS (pg_catalog.abs(x) * 2) STORED)
               PARTITION BY RANGE ((pg_catalog.abs(id)));
             CREATE INDEX ON t ((pg_catalog.lower(x::text))) WHERE x IS DISTINCT FROM 3 AND x = ANY ('{1,2}')",
        );
        assert!(found.is_empty(), "{found:?}");
    }
}
