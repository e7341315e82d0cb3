-- ddl_sync 0.3.0 -> 0.4.0, run by ALTER EXTENSION ddl_sync UPDATE (written by hand; pgrx
-- generates only the install script ddl_sync--0.4.0.sql).
--
-- The rule: after this script, a database updated from 0.3.0 has exactly the objects of a fresh
-- CREATE EXTENSION ddl_sync at 0.4.0 (same definitions, privileges and column order). The package
-- test checks that against the kept install scripts in sql/released/ (e2e/tests/package.rs).
-- 0.4.0: the event a subscription is stuck on, and an operator's decision about it.
\echo Use "ALTER EXTENSION ddl_sync UPDATE" to load this file. \quit

CREATE TABLE ddl_sync.event_resolution (
    subid oid NOT NULL,
    origin_sysid int8 NOT NULL,
    origin_lsn pg_lsn NOT NULL,
    action text NOT NULL CHECK (action IN ('skip', 'replace')),
    sql text CHECK ((action = 'replace') = (sql IS NOT NULL)),
    resolved_by name NOT NULL DEFAULT current_user,
    resolved_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subid, origin_sysid, origin_lsn)
);
REVOKE ALL ON ddl_sync.event_resolution FROM PUBLIC;
CREATE TRIGGER event_resolution_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.event_resolution
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.event_resolution ENABLE REPLICA TRIGGER event_resolution_is_node_local;

CREATE  FUNCTION "failing_event_list"() RETURNS TABLE (
	"subid" oid,  /* pgrx_pg_sys::submodules::oids::Oid */
	"origin_sysid" bigint,  /* i64 */
	"origin_lsn" TEXT,  /* alloc::string::String */
	"sql" TEXT,  /* alloc::string::String */
	"error" TEXT,  /* alloc::string::String */
	"failed_at" timestamp with time zone,  /* core::option::Option<pgrx::datum::time_stamp_with_timezone::TimestampWithTimeZone> */
	"attempts" bigint,  /* i64 */
	"decided" bool  /* bool */
)
STRICT VOLATILE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'failing_event_list_wrapper';

CREATE  FUNCTION "resolve_event"(
	"subscription" TEXT, /* &str */
	"action" TEXT, /* &str */
	"statement" TEXT DEFAULT NULL, /* core::option::Option<&str> */
	"origin_lsn" TEXT DEFAULT NULL /* core::option::Option<&str> */
) RETURNS TEXT /* alloc::string::String */
VOLATILE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'resolve_event_wrapper';

CREATE VIEW ddl_sync.failing_events AS
SELECT s.subname AS subscription, f.origin_lsn::pg_catalog.pg_lsn AS origin_lsn,
       f.origin_sysid, f.sql, f.error, f.failed_at, f.attempts, f.decided
  FROM ddl_sync.failing_event_list() f
  JOIN pg_catalog.pg_subscription s ON s.oid = f.subid;

COMMENT ON VIEW ddl_sync.failing_events IS
    'Per subscription stuck on a DDL event under ddl_conflict = error: the statement, its error and origin LSN; resolve with ddl_sync.resolve_event(subscription, retry|skip|replace [, statement])';

REVOKE ALL ON FUNCTION ddl_sync.failing_event_list() FROM PUBLIC;
REVOKE ALL ON TABLE ddl_sync.failing_events FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.resolve_event(text, text, text, text) FROM PUBLIC;
