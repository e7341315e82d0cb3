-- ddl_sync 0.3.0 -> 0.4.0, run by ALTER EXTENSION ddl_sync UPDATE (written by hand; pgrx
-- generates only the install script ddl_sync--0.4.0.sql).
--
-- The rule: after this script, a database updated from 0.3.0 has exactly the objects of a fresh
-- CREATE EXTENSION ddl_sync at 0.4.0 (same definitions, privileges and column order). The package
-- test checks that against the kept install scripts in sql/released/ (e2e/tests/package.rs).
-- 0.4.0: the event a subscription is stuck on, and an operator's decision about it; each
-- event says which tables its statement left on the publisher, and a subscriber makes those the
-- statement did not make here (src/replay/tables.rs); a table created here is registered in the
-- subscriptions to this node's peers (src/subscription/peers.rs); each event says which node's
-- capture sealed it and which stored generated columns the stream that carried it sends; the
-- tables the capture gave REPLICA IDENTITY FULL because they had no key.
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

-- Tables the replay made from a publisher's definition for a statement whose role is refused
-- here (ddl-apply's replay/tables.rs), owned by the subscription owner: no replayed statement
-- can drop one (the same role's DROP is refused too), so the replay drops it when an event
-- says the publisher dropped it (replay/made.rs). Each node's own.
CREATE TABLE ddl_sync.made_tables (
    relid oid PRIMARY KEY,
    subid oid NOT NULL
);
REVOKE ALL ON ddl_sync.made_tables FROM PUBLIC;
CREATE TRIGGER made_tables_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.made_tables
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.made_tables ENABLE REPLICA TRIGGER made_tables_is_node_local;

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

ALTER TABLE ddl_sync.events ADD COLUMN tables text;
ALTER TABLE ddl_sync.events ADD COLUMN settings text;
COMMENT ON COLUMN ddl_sync.events.settings IS
    'the session settings that change what the statement means (DateStyle, TimeZone, ...), one name=value per line';
ALTER TABLE ddl_sync.events ADD COLUMN role_rights text;
COMMENT ON COLUMN ddl_sync.events.role_rights IS
    'what the statement''s role could do where it ran (SUPERUSER, or its attributes and predefined roles); NULL when not known';
ALTER TABLE ddl_sync.events ADD COLUMN bindings text;
COMMENT ON COLUMN ddl_sync.events.bindings IS
    'what the statement bound by name where it ran (functions, operators, types, ... that are not built in), one identity per line; NULL when not known';
COMMENT ON COLUMN ddl_sync.events.tables IS
    'the tables the statement created or changed, as CREATE TABLE of the columns a row has; a subscriber makes from it what the statement did not';
ALTER TABLE ddl_sync.events ADD COLUMN capturing_sysid bigint;
COMMENT ON COLUMN ddl_sync.events.capturing_sysid IS
    'system identifier of the node whose capture sealed the statement: its origin, or in a cascade the last node that replayed and passed it on; NULL when not known';
ALTER TABLE ddl_sync.events ADD COLUMN sent_generated_columns text;
COMMENT ON COLUMN ddl_sync.events.sent_generated_columns IS
    'the stored generated columns of the statement''s table whose values the stream that carried it sends, one name per line; a subscriber makes them plain columns; NULL when not known';
-- Verification: each event describes what its statement made, a subscriber compares what its
-- replay made (src/replay/verify.rs): equal is counted as verified, a difference is the new
-- status 'diverged'.
ALTER TABLE ddl_sync.events ADD COLUMN description text;
ALTER TABLE ddl_sync.events ADD COLUMN apply_verified boolean;
COMMENT ON COLUMN ddl_sync.events.apply_verified IS
    'subscriber: true when what the statement made here was compared with its description and found equal, false when it differs (diverged); NULL when not compared';
CREATE OR REPLACE VIEW ddl_sync.apply_log AS
SELECT e.applied_at, e.apply_status AS status, e.command_tag, e.object_identity,
       e.sql, e.apply_detail AS detail, e.apply_adapter AS adapter, e.apply_duration AS duration,
       e.role_name, e.origin_sysid, e.origin_lsn, s.subname AS subscription,
       e.apply_verified AS verified
  FROM ddl_sync.events e
  LEFT JOIN pg_catalog.pg_subscription s ON s.oid = e.subid
 ORDER BY e.applied_at, e.origin_lsn;
COMMENT ON COLUMN ddl_sync.events.description IS
    'what the statement made, described from the catalogs after it (JSON: objects created, altered or dropped, with their columns, constraints, indexes, ...); a subscriber compares what its replay made; NULL for a kind not described';
-- The apply trigger is apply_status's only writer; a CHECK cost every replicated event the
-- rebuilding of its expression (see catalog.sql).
ALTER TABLE ddl_sync.events DROP CONSTRAINT events_apply_status_check;
COMMENT ON COLUMN ddl_sync.events.apply_status IS
    'subscriber: applied, diverged (applied, but what it made here differs from the publisher''s description), skipped, refused or failed; NULL on a publisher';
ALTER TABLE ddl_sync.subscription_ddl
    ADD COLUMN divergence text NOT NULL DEFAULT 'warn' CHECK (divergence IN ('warn', 'error'));
COMMENT ON COLUMN ddl_sync.subscription_ddl.divergence IS
    'what an applied statement that made something else here than on the publisher does: warn (the event is diverged, replication goes on) or error (the apply worker errors and retries)';
ALTER TABLE ddl_sync.subscription_counters
    ADD COLUMN verified int8 NOT NULL DEFAULT 0,
    ADD COLUMN diverged int8 NOT NULL DEFAULT 0;
-- The counts of apply transactions prepared here (subscriptions with two_phase), a row each
-- (src/replay/counters.rs): a prepared transaction must not hold its subscription's row above,
-- which the transactions applied while it waits for its COMMIT PREPARED write. Once committed
-- they count (the view below adds them) and the next transaction that writes the
-- subscription's row adds them to it; ROLLBACK PREPARED takes its row with it.
CREATE TABLE ddl_sync.prepared_counts (
    subid            oid,
    -- The prepared transaction (its full transaction ID here).
    prepared_xid     int8,
    applied          int8 NOT NULL,
    skipped          int8 NOT NULL,
    refused          int8 NOT NULL,
    failed           int8 NOT NULL,
    duplicates       int8 NOT NULL,
    verified         int8 NOT NULL,
    diverged         int8 NOT NULL,
    last_applied_lsn pg_lsn,
    last_applied_at  timestamptz,
    last_error       text,
    last_error_at    timestamptz,
    -- A key, for the deletes a FOR ALL TABLES publication of this node publishes.
    PRIMARY KEY (subid, prepared_xid)
);
REVOKE ALL ON ddl_sync.prepared_counts FROM PUBLIC;
CREATE TRIGGER prepared_counts_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.prepared_counts
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.prepared_counts ENABLE REPLICA TRIGGER prepared_counts_is_node_local;
DROP VIEW ddl_sync.subscription_stats;
DROP FUNCTION ddl_sync.count_event(oid, text, text, pg_lsn);
-- The apply trigger counts the events itself (src/replay/counters.rs), and it and the
-- node-local tables' trigger are in the library: both ran queries at every event.
CREATE OR REPLACE FUNCTION ddl_sync.skip_replicated_row()
RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'skip_replicated_row_wrapper';

CREATE VIEW ddl_sync.subscription_stats AS
WITH counted AS (
    SELECT subid, applied, verified, diverged, skipped, refused, failed, duplicates,
           last_applied_lsn, last_applied_at, last_error, last_error_at, stats_reset
      FROM ddl_sync.subscription_counters
    UNION ALL
    SELECT subid, applied, verified, diverged, skipped, refused, failed, duplicates,
           last_applied_lsn, last_applied_at, last_error, last_error_at, NULL
      FROM ddl_sync.prepared_counts),
c AS (
    SELECT subid,
           sum(applied)::int8 AS applied, sum(verified)::int8 AS verified,
           sum(diverged)::int8 AS diverged, sum(skipped)::int8 AS skipped,
           sum(refused)::int8 AS refused, sum(failed)::int8 AS failed,
           sum(duplicates)::int8 AS duplicates,
           (array_agg(last_applied_lsn ORDER BY last_applied_at DESC NULLS LAST))[1]
               AS last_applied_lsn,
           max(last_applied_at) AS last_applied_at,
           (array_agg(last_error ORDER BY last_error_at DESC NULLS LAST))[1] AS last_error,
           max(last_error_at) AS last_error_at,
           max(stats_reset) AS stats_reset
      FROM counted GROUP BY subid)
SELECT s.oid AS subid, s.subname AS subscription,
       coalesce(c.applied, 0) AS applied,
       coalesce(c.verified, 0) AS verified,
       coalesce(c.diverged, 0) AS diverged,
       coalesce(c.skipped, 0) AS skipped,
       coalesce(c.refused, 0) AS refused,
       coalesce(c.failed, 0) AS failed,
       coalesce(c.duplicates, 0) AS duplicates,
       coalesce(e.errors, 0) AS errors,
       c.last_applied_lsn, c.last_applied_at,
       CASE WHEN e.last_error_at >= c.last_error_at OR c.last_error_at IS NULL
            THEN coalesce(e.last_error, c.last_error) ELSE c.last_error END AS last_error,
       GREATEST(e.last_error_at, c.last_error_at) AS last_error_at,
       c.stats_reset
  FROM pg_catalog.pg_subscription s
  LEFT JOIN c ON c.subid = s.oid
  LEFT JOIN ddl_sync.subscription_errors() e ON e.subid = s.oid
 WHERE s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d
                     WHERE d.datname = pg_catalog.current_database());

COMMENT ON VIEW ddl_sync.subscription_stats IS
    'Per subscription: DDL events applied (verified: shown to have made what they made on the publisher), diverged, skipped, refused, failed, duplicates, replay errors, the last applied and the last error';

DROP FUNCTION ddl_sync.replay(text, text, text, text, text, text, text, text, bigint, text, text);
-- The replay reads the row as a whole, by ddl-wire's event schema (0.3.0's function of eleven
-- arguments stays in the library, symbol replay_wrapper, for the SQL of 0.3.0).
CREATE  FUNCTION "replay"(
	"event" ddl_sync.events /* :: pgrx :: heap_tuple :: PgHeapTuple < '_, :: pgrx :: pgbox :: AllocatedByRust > */
) RETURNS TABLE (
	"status" TEXT,  /* String */
	"detail" TEXT,  /* Option < String > */
	"adapter" TEXT,  /* Option < String > */
	"seconds" double precision,  /* f64 */
	"verified" bool  /* core::option::Option<bool> */
)
STRICT VOLATILE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'replay_row_wrapper';

CREATE OR REPLACE FUNCTION ddl_sync.apply_event()
RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'apply_event_wrapper';
REVOKE ALL ON FUNCTION ddl_sync.replay(ddl_sync.events) FROM PUBLIC;

-- A table created here is registered in the subscriptions to this node's peers (origin = none,
-- with DDL), whose rows PostgreSQL would otherwise drop until a REFRESH PUBLICATION; see
-- src/subscription/peers.rs. ENABLE ALWAYS: in a mesh, a table that an apply worker's replay
-- created is registered in the subscriptions to the other peers too.
CREATE FUNCTION ddl_sync.register_peer_tables()
RETURNS event_trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ddl_sync_register_peer_tables';

REVOKE ALL ON FUNCTION ddl_sync.register_peer_tables() FROM PUBLIC;

CREATE EVENT TRIGGER ddl_sync_register_peer_tables ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
    EXECUTE FUNCTION ddl_sync.register_peer_tables();
ALTER EVENT TRIGGER ddl_sync_register_peer_tables ENABLE ALWAYS;

-- ddl_sync.sync_sequences: the subscriber's sequences brought up to the publisher's
-- (src/subscription/sequences.rs).
CREATE  FUNCTION "sync_sequences"(
	"subscription" TEXT /* & str */
) RETURNS TABLE (
	"sequence" TEXT,  /* String */
	"publisher_value" bigint,  /* i64 */
	"previous_value" bigint  /* Option < i64 > */
)
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'sync_sequences_wrapper';
REVOKE ALL ON FUNCTION ddl_sync.sync_sequences(text) FROM PUBLIC;

-- ddl_sync.describe_relation and ddl_sync.compare_subscription: a relation described as a
-- replayed statement's verification describes it, and the subscription's relations compared
-- with the publisher's now (src/subscription/compare.rs).
CREATE  FUNCTION "describe_relation"(
	"relation" oid /* pgrx::pg_sys::Oid */
) RETURNS TEXT /* core::option::Option<alloc::string::String> */
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'describe_relation_wrapper';
CREATE  FUNCTION "compare_subscription"(
	"subscription" TEXT /* & str */
) RETURNS TABLE (
	"object" TEXT,  /* String */
	"attribute" TEXT,  /* String */
	"publisher" TEXT,  /* Option < String > */
	"subscriber" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'compare_subscription_wrapper';
REVOKE ALL ON FUNCTION ddl_sync.compare_subscription(text) FROM PUBLIC;

-- copy_schema (src/subscription/copy_schema.rs, copy_refresh.rs): one row per copy, written
-- in the transaction of the statement that made it (CREATE SUBSCRIPTION, or ALTER SUBSCRIPTION
-- ... REFRESH/ADD/SET PUBLICATION), so only a copy that succeeded has one; removed with the
-- subscription. slot and start_lsn: the slot the copy made and where it starts (CREATE only).
CREATE TABLE ddl_sync.schema_copies (
    subid        oid NOT NULL,
    subscription name NOT NULL,
    command      text NOT NULL,
    slot         name,
    start_lsn    pg_lsn,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL,
    objects_made int4 NOT NULL,
    objects_kept int4 NOT NULL,
    script_bytes int8 NOT NULL,
    sequences    int4 NOT NULL,
    PRIMARY KEY (subid, started_at)
);
COMMENT ON TABLE ddl_sync.schema_copies IS
    'One row per copy_schema: the statement, the slot it made and its start, when and how long, the objects (pg_dump entries) made and kept, the script''s size, the sequences set';
-- Node-local (see capture.sql): a FOR ALL TABLES publication of this node publishes it.
CREATE TRIGGER schema_copies_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.schema_copies
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.schema_copies ENABLE REPLICA TRIGGER schema_copies_is_node_local;

-- While a copy runs (in its statement's transaction, which nobody else can see
-- into), the backend running it shows its step as its query; one row per such backend, as
-- pg_stat_activity shows it to the caller.
CREATE VIEW ddl_sync.schema_copy_progress AS
SELECT a.pid, a.datname AS database, m.step[1] AS subscription, m.step[2] AS phase,
       a.query_start AS started_at, pg_catalog.now() OPERATOR(pg_catalog.-) a.query_start AS elapsed
  FROM pg_catalog.pg_stat_activity a,
       LATERAL (SELECT pg_catalog.regexp_match(a.query,
           '^/\* ddl_sync: (?:CREATE|ALTER) SUBSCRIPTION (.*) \.\.\. \(copy_schema = true\): (.*) \*/$') AS step) m
 WHERE m.step IS NOT NULL;
COMMENT ON VIEW ddl_sync.schema_copy_progress IS
    'The copy_schema runs in progress: backend, database, subscription, current step, since when';
REVOKE ALL ON TABLE ddl_sync.schema_copies FROM PUBLIC;
GRANT SELECT ON TABLE ddl_sync.schema_copies, ddl_sync.schema_copy_progress TO PUBLIC;

-- ddl_sync.refresh_event_triggers (src/publisher/event_triggers.rs).
CREATE  FUNCTION "refresh_event_triggers"() RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'refresh_event_triggers_wrapper';

-- The extension's event triggers fire only in a database that needs them. An enabled
-- ddl_command_end or sql_drop trigger makes PostgreSQL collect every DDL statement's commands
-- and call the trigger, which costs a database that replicates no DDL a tenth or more of its
-- DDL latency (BENCHMARKS.md, "Capture"); a disabled one costs nothing. So:
-- - the capture triggers are enabled (ALWAYS) while this database has a publication with DDL
--   configuration (ddl_sync.publication_sync) or a registered adapter (ddl_sync.adapter,
--   whose rows the capture's sql_drop trigger forgets with their functions);
-- - the peer tables' trigger (peers.sql) is enabled while a subscription has DDL configuration
--   (ddl_sync.subscription_ddl);
-- and each is disabled otherwise (ddl_sync.refresh_event_triggers(), src/publisher/event_triggers.rs).
-- Every row written to those tables through SQL refreshes the states; a row deleted otherwise
-- (the capture forgets rows as catalog rows) refreshes them once its statement ends.
CREATE FUNCTION ddl_sync.event_triggers_follow()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM ddl_sync.refresh_event_triggers();
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ddl_sync.event_triggers_follow() FROM PUBLIC;

-- FOR EACH ROW: a statement-level trigger does not fire for a DML ... RETURNING that SPI runs
-- with a row count (its ModifyTable node never reaches its end), as ddl_sync's own writes are.
-- ALWAYS: an apply worker's own writes (replica mode) count too. (A TRUNCATE, which only the
-- owner may run, leaves the triggers as they are: enabled at worst.)
CREATE TRIGGER publication_sync_event_triggers
    AFTER INSERT OR UPDATE OR DELETE ON ddl_sync.publication_sync
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.event_triggers_follow();
ALTER TABLE ddl_sync.publication_sync ENABLE ALWAYS TRIGGER publication_sync_event_triggers;
CREATE TRIGGER adapter_event_triggers
    AFTER INSERT OR UPDATE OR DELETE ON ddl_sync.adapter
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.event_triggers_follow();
ALTER TABLE ddl_sync.adapter ENABLE ALWAYS TRIGGER adapter_event_triggers;
CREATE TRIGGER subscription_ddl_event_triggers
    AFTER INSERT OR UPDATE OR DELETE ON ddl_sync.subscription_ddl
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.event_triggers_follow();
ALTER TABLE ddl_sync.subscription_ddl ENABLE ALWAYS TRIGGER subscription_ddl_event_triggers;

SELECT ddl_sync.refresh_event_triggers();

-- PostgreSQL's command collection, declared again returning plain records: the capture calls
-- these with the row type PostgreSQL declares for pg_event_trigger_ddl_commands() and
-- pg_event_trigger_dropped_objects(), built once per backend, where calling those rebuilds it
-- from pg_proc every time (a fifth of the capture's cost; ddl-capture's collection.rs). The
-- attributes are the originals'. Not for SQL: a column definition list cannot name the
-- pseudo-type pg_ddl_command.
CREATE FUNCTION ddl_sync.ddl_commands()
RETURNS SETOF record
LANGUAGE internal STRICT STABLE PARALLEL RESTRICTED ROWS 100
AS 'pg_event_trigger_ddl_commands';
CREATE FUNCTION ddl_sync.dropped_objects()
RETURNS SETOF record
LANGUAGE internal STRICT STABLE PARALLEL RESTRICTED ROWS 100
AS 'pg_event_trigger_dropped_objects';
REVOKE ALL ON FUNCTION ddl_sync.ddl_commands() FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.dropped_objects() FROM PUBLIC;

-- The tables whose REPLICA IDENTITY FULL the capture set (ddl_sync.keyless_tables = 'full').
CREATE TABLE ddl_sync.keyless_identity (
    relid oid PRIMARY KEY
);
REVOKE ALL ON ddl_sync.keyless_identity FROM PUBLIC;
CREATE TRIGGER keyless_identity_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.keyless_identity
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.keyless_identity ENABLE REPLICA TRIGGER keyless_identity_is_node_local;

-- Kind `foreign` (bit 11): foreign tables, for the publications and subscriptions that name it.
ALTER TABLE ddl_sync.publication_sync
    DROP CONSTRAINT publication_sync_ddl_check,
    ADD CONSTRAINT publication_sync_ddl_check CHECK ((pfsyncddl & ~4095) = 0);
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncddl IS
    'DDL kinds mask: bit 0 table .. bit 10 extension, bit 11 foreign (ddl_sync.format_ddl_kinds shows it in words)';
ALTER TABLE ddl_sync.subscription_ddl
    DROP CONSTRAINT subscription_ddl_ddl_check,
    ADD CONSTRAINT subscription_ddl_ddl_check CHECK (ddl & ~4095 = 0);

-- The extension's own tables out of FOR ALL TABLES publications (PostgreSQL 19's EXCEPT).
CREATE FUNCTION ddl_sync.keep_own_tables_out(publication name, events_may_return boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    clause text;
BEGIN
    IF current_setting('server_version_num')::integer < 190000 THEN
        RETURN;
    END IF;
    WITH pub AS (
        SELECT p.oid, p.puballsequences,
               EXISTS (SELECT FROM ddl_sync.publication_sync s
                        WHERE s.pfsyncpubid = p.oid AND s.pfsyncenabled
                          AND s.pfsyncddl <> 0) AS replicates_ddl
          FROM pg_publication p
         WHERE p.pubname = publication AND p.puballtables),
    own AS (
        SELECT c.oid, c.relname = 'events' AS is_events
          FROM pg_class c
         WHERE c.relnamespace = 'ddl_sync'::regnamespace
           AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p' AND NOT c.relispartition),
    excepted AS (
        SELECT r.prrelid AS oid
          FROM pg_publication_rel r JOIN pub ON r.prpubid = pub.oid
         WHERE r.prexcept),
    wanted AS (
        SELECT e.oid FROM excepted e, pub
         WHERE NOT (events_may_return AND pub.replicates_ddl
                    AND e.oid IN (SELECT own.oid FROM own WHERE own.is_events))
        UNION
        SELECT own.oid FROM own, pub WHERE NOT (own.is_events AND pub.replicates_ddl))
    -- regclass's text is qualified and quoted as needed under this search_path.
    SELECT format('ALL TABLES EXCEPT (TABLE %s)%s',
                  (SELECT string_agg(w.oid::regclass::text, ', ' ORDER BY w.oid) FROM wanted w),
                  CASE WHEN pub.puballsequences THEN ', ALL SEQUENCES' ELSE '' END)
      INTO clause
      FROM pub
     WHERE EXISTS (SELECT oid FROM wanted EXCEPT SELECT oid FROM excepted)
        OR EXISTS (SELECT oid FROM excepted EXCEPT SELECT oid FROM wanted);
    IF clause IS NOT NULL THEN
        EXECUTE format('ALTER PUBLICATION %I SET %s', publication, clause);
    END IF;
END
$$;
COMMENT ON FUNCTION ddl_sync.keep_own_tables_out(name, boolean) IS
    'on PostgreSQL 19, keeps ddl_sync''s own tables out of a FOR ALL TABLES publication (EXCEPT), ddl_sync.events but where it replicates DDL';

-- The publications made before this version.
SELECT ddl_sync.keep_own_tables_out(p.pubname, false)
  FROM pg_catalog.pg_publication p
 WHERE p.puballtables;
