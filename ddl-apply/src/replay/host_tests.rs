//! `#[pg_test]`s of [`crate::replay::host`]: the replay host: kinds, tables from queries, detach, unparsable statements. Run by `cargo pgrx test` (schema `tests`).

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use crate::replay::host::ServerHost;
    use crate::replay::statement::check;
    use ddl_adapter::Host;
    use pgrx::prelude::*;

    /// Checks `sql` as an event claiming `tag` and `kind` would be checked; panics if refused.
    fn checked(sql: &str, tag: &str, kind: &str) {
        if let Err(e) = check(sql, tag, kind) {
            panic!("{sql}: {e}");
        }
    }

    /// Checks and runs `sql` as the replay does.
    fn replay(sql: &str, tag: &str, kind: &str) {
        let checked = check(sql, tag, kind).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let path = Spi::get_one::<String>("SHOW search_path").unwrap().unwrap();
        let outcome =
            ServerHost::new(&checked, vec![("search_path".to_string(), path)], None).execute(sql);
        assert!(outcome.is_success(), "{sql}: {outcome:?}");
    }

    fn lines(sql: &str) -> String {
        Spi::get_one::<String>(sql)
            .expect("query ran")
            .unwrap_or_default()
    }

    #[pg_test]
    fn a_statement_this_server_cannot_parse_is_refused_not_raised() {
        // The syntax of a newer PostgreSQL (18's virtual generated columns look like this to
        // older parsers), or of nothing: the check answers, and the transaction goes on.
        let why = check(
            "ALTER TABLE t ADD COLUMN c int GENERATED ALWAYS AS (1) VIRTUALLY FOREVER",
            "ALTER TABLE",
            "table",
        )
        .map(|_| ())
        .unwrap_err();
        assert!(
            why.starts_with("this server cannot parse it: syntax error at or near"),
            "{why}"
        );
        assert_eq!(lines("SELECT 'still usable'"), "still usable");
    }

    #[pg_test]
    fn kinds_are_those_of_the_objects_the_capture_sees() {
        Spi::run(
            "CREATE TABLE t (a int); CREATE VIEW v AS SELECT a FROM t; CREATE DOMAIN d AS int;
             CREATE SEQUENCE s; CREATE SCHEMA other;
             CREATE FUNCTION f(int) RETURNS int LANGUAGE sql AS 'SELECT 1';
             CREATE FUNCTION f(text) RETURNS int LANGUAGE sql AS 'SELECT 2';",
        )
        .expect("setup");
        checked("COMMENT ON COLUMN t.a IS 'x'", "COMMENT", "table");
        checked("COMMENT ON COLUMN v.a IS 'x'", "COMMENT", "view");
        checked("COMMENT ON DOMAIN d IS 'x'", "COMMENT", "domain");
        checked("COMMENT ON TYPE d IS 'x'", "COMMENT", "domain");
        checked("ALTER TABLE v RENAME COLUMN a TO b", "ALTER TABLE", "view");
        checked("ALTER TABLE s SET SCHEMA other", "ALTER TABLE", "sequence");
        checked(
            "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC",
            "ALTER DEFAULT PRIVILEGES",
            "table",
        );
        checked(
            "ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC",
            "ALTER DEFAULT PRIVILEGES",
            "function",
        );
        checked("SELECT a INTO t2 FROM t", "SELECT INTO", "table");
        checked(
            "SELECT a INTO t3 FROM t UNION SELECT 1",
            "SELECT INTO",
            "table",
        );
        // The name is ambiguous: the statement fails when it runs, not the check.
        checked("COMMENT ON FUNCTION f IS 'x'", "COMMENT", "function");
        assert!(check("SELECT a FROM t", "SELECT", "table").is_err());
    }

    #[pg_test]
    fn tables_from_queries_are_created_empty_materialized_views_full() {
        Spi::run("CREATE TABLE src AS SELECT generate_series(1, 3) AS a").expect("setup");
        replay(
            "CREATE TABLE c1 AS SELECT a FROM src",
            "CREATE TABLE AS",
            "table",
        );
        replay("SELECT a INTO c2 FROM src", "SELECT INTO", "table");
        replay(
            "CREATE MATERIALIZED VIEW m AS SELECT a FROM src",
            "CREATE MATERIALIZED VIEW",
            "view",
        );
        assert_eq!(
            lines(
                "SELECT (SELECT count(*) FROM c1) || ' ' || (SELECT count(*) FROM c2) || ' '
                     || (SELECT count(*) FROM m)"
            ),
            "0 0 3"
        );
    }

    /// What PostgreSQL 15 leaves after `DETACH PARTITION ... CONCURRENTLY` of `p1` and `p2`
    /// (with its partition `p2a`) below, read from a real server: the replay must leave the same.
    #[pg_test]
    fn a_concurrent_detach_replayed_plainly_leaves_the_concurrent_forms_constraint() {
        Spi::run(
            "CREATE TABLE p (k int NOT NULL, j int) PARTITION BY RANGE (k);
             CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (10);
             CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (10) TO (20) PARTITION BY LIST (j);
             CREATE TABLE p2a PARTITION OF p2 FOR VALUES IN (1);
             CREATE TABLE p3 PARTITION OF p FOR VALUES FROM (20) TO (30);
             ALTER TABLE p3 ADD CONSTRAINT p3_bounds CHECK (k >= 20 AND k < 30);",
        )
        .expect("setup");
        for part in ["p1", "p2", "p3"] {
            replay(
                &format!("ALTER TABLE p DETACH PARTITION {part} CONCURRENTLY"),
                "ALTER TABLE",
                "table",
            );
        }
        // 19's concurrent form adds no constraint, so neither does its replay.
        let added = if ddl_server::versions::DETACH_CONCURRENTLY_ADDS_CHECK {
            "p1|p1_k_check|CHECK (((k IS NOT NULL) AND (k >= 0) AND (k < 10)))|t|0|t\n\
             p2|p2_k_check|CHECK (((k IS NOT NULL) AND (k >= 10) AND (k < 20)))|t|0|t\n\
             p2a|p2_k_check|CHECK (((k IS NOT NULL) AND (k >= 10) AND (k < 20)))|f|1|t\n"
        } else {
            ""
        };
        assert_eq!(
            lines(
                "SELECT string_agg(concat_ws('|', conrelid::regclass, conname,
                                            pg_get_constraintdef(oid), conislocal, coninhcount,
                                            convalidated), E'\\n' ORDER BY conrelid::regclass::text)
                   FROM pg_constraint
                  WHERE contype = 'c' AND conrelid::regclass::text IN ('p1', 'p2', 'p2a', 'p3')"
            ),
            format!("{added}p3|p3_bounds|CHECK (((k >= 20) AND (k < 30)))|t|0|t")
        );
    }

    #[pg_test]
    fn a_statement_runs_as_a_role_the_owner_may_set_role_to() {
        use crate::replay::host::replay_role;
        let version = Spi::get_one::<i32>("SELECT current_setting('server_version_num')::int")
            .unwrap()
            .unwrap();
        Spi::run(
            "CREATE ROLE ddl_sync_t_owner; CREATE ROLE ddl_sync_t_app; CREATE ROLE ddl_sync_t_admin;
             GRANT ddl_sync_t_app TO ddl_sync_t_owner;",
        )
        .expect("setup");
        if version >= 160000 {
            // 16's option: the admin's rights, without the right to become the admin.
            Spi::run("GRANT ddl_sync_t_admin TO ddl_sync_t_owner WITH INHERIT TRUE, SET FALSE")
                .expect("grant");
        }
        Spi::run("SET ROLE ddl_sync_t_owner").expect("SET ROLE");
        let app = replay_role("ddl_sync_t_app", None);
        let admin = replay_role("ddl_sync_t_admin", None);
        let superuser = replay_role("postgres", None);
        Spi::run("RESET ROLE").expect("RESET ROLE");
        assert_eq!(app.as_deref(), Some("ddl_sync_t_app"));
        assert_eq!(admin, None);
        assert_eq!(superuser, None);
    }
}
