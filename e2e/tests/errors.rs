//! Errors raised inside utility statements reach the client exactly as PostgreSQL raised them
//! when our libraries are loaded: the same script, with verbose errors and CONTEXT always
//! shown, prints the same on a plain server and on one that preloads `ddl_pgoutput` (the
//! capture hook, with a publication taking all DDL) and `ddl_sync` (the subscriber hook). The
//! statements that must be the first action of their transaction run there as here, and DDL
//! that changes nothing leaves a transaction read-only (no transaction ID) on both.

use ddl_e2e::{psql_script, query};
use ddl_testkit::{Cluster, ClusterBuilder};

/// Statements that fail inside ProcessUtility, each for a reason whose report has more than a
/// message: a cursor position (`LINE n:` and the caret), an internal query and position,
/// CONTEXT lines, and the schema, table, column, data type and constraint fields.
const SCRIPT: &str = r#"
\set VERBOSITY verbose
\set SHOW_CONTEXT always
CREATE TABLE c (a int, b text);
INSERT INTO c VALUES (-1, 'x');
CREATE TABLE t (a int CHECK (a > 'x'));
CREATE TABLE t2 (a nosuchtype);
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT nosuch $$;
CREATE FUNCTION g() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN nosuch; END $$;
SELECT g();
ALTER TABLE c ADD CONSTRAINT positive CHECK (a > 0);
ALTER TABLE c ALTER COLUMN b TYPE int USING b::int;
ALTER TABLE c ALTER COLUMN a SET NOT NULL, ADD COLUMN d int DEFAULT 1 / 0;
CREATE UNIQUE INDEX ON c ((a / 0));
CREATE VIEW v AS SELECT nosuch FROM c;
CREATE TYPE ty AS (a nosuchtype);
CREATE DOMAIN pos AS int CHECK (VALUE > 0);
CREATE TABLE dt (p pos);
INSERT INTO dt VALUES (-5);
PREPARE p AS SELECT nosuch FROM c;
COPY c FROM STDIN;
1	x
zzz	y
\.
DO $$ BEGIN RAISE EXCEPTION 'boom' USING DETAIL = 'the detail', HINT = 'the hint',
   SCHEMA = 'public', TABLE = 'c', COLUMN = 'a', CONSTRAINT = 'positive'; END $$;
DO $$ BEGIN EXECUTE 'CREATE TABLE nested (a nosuchtype)'; END $$;
CREATE FUNCTION make() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CREATE TABLE made (a int);
    ALTER TABLE made ADD CONSTRAINT bad CHECK (nosuch > 0);
END $$;
SELECT make();
CREATE TABLE made (a int);
CREATE TABLE made (a int);
ALTER SUBSCRIPTION nosuch ENABLE;
DROP TABLE nosuch;
BEGIN;
SAVEPOINT s;
CREATE TABLE in_savepoint (a nosuchtype);
ROLLBACK TO s;
CREATE TABLE after_savepoint (a int);
COMMIT;
SELECT count(*) FROM after_savepoint;
CREATE INDEX CONCURRENTLY c_a ON c (a);
DROP INDEX CONCURRENTLY c_a;
REINDEX TABLE CONCURRENTLY c;
CREATE INDEX c_b ON c (b);
BEGIN;
CREATE TABLE IF NOT EXISTS c (a int);
CREATE INDEX IF NOT EXISTS c_b ON c (b);
DROP INDEX IF EXISTS nosuch;
SELECT pg_current_xact_id_if_assigned() IS NULL AS read_only_so_far;
COMMIT;
"#;

/// What psql prints (stdout, then stderr) for [`SCRIPT`].
fn run_script(pg: &Cluster) -> String {
    let out = psql_script(
        pg,
        "postgres",
        &["-v", "ON_ERROR_STOP=0", "-f", "-"],
        SCRIPT,
    );
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn errors_of_utility_statements_are_exactly_postgresqls() {
    let plain = ClusterBuilder::new()
        .name("errors-plain")
        .build()
        .expect("plain cluster");
    let ours = ClusterBuilder::new()
        .name("errors-ours")
        .shared_preload_libraries(&["ddl_pgoutput", "ddl_sync"])
        // The script's tables have no key: the NOTICE of the policy for those (a message of
        // ours, tests/keyless.rs) is not what this compares.
        .conf("ddl_sync.keyless_tables", "native")
        .build()
        .expect("cluster with our libraries");
    query(
        &ours,
        "CREATE EXTENSION ddl_sync;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');",
    );
    let expected = run_script(&plain);
    let got = run_script(&ours);
    // The script does fail where it should (the comparison alone would pass on two servers
    // that printed nothing).
    for must in [
        "LINE 1: CREATE TABLE t (a int CHECK (a > 'x'));",
        "CONTEXT:  PL/pgSQL function g() line 1 at RETURN",
        "CONTEXT:  COPY c, line 2, column a: \"zzz\"",
        "SCHEMA NAME:  public",
        "CONSTRAINT NAME:  positive",
        "QUERY:  CREATE TABLE nested (a nosuchtype)",
        // count(*) of after_savepoint, then read_only_so_far.
        "0\nt\n\n--- stderr ---",
    ] {
        assert!(expected.contains(must), "{must:?} not in:\n{expected}");
    }
    assert_eq!(
        got, expected,
        "with our libraries (left) and without (right)"
    );
}
