-- ddl_sync 0.2.0 -> 0.3.0, run by ALTER EXTENSION ddl_sync UPDATE (written by hand; pgrx
-- generates only the install script ddl_sync--0.3.0.sql).
--
-- The rule: after this script, a database updated from 0.2.0 has exactly the objects of a fresh
-- CREATE EXTENSION ddl_sync at 0.3.0 (same definitions, privileges and column order). The package
-- test checks that against the kept install scripts in sql/released/ (e2e/tests/package.rs).
-- 0.3.0 is the trust-boundary release (SECURITY.md).
\echo Use "ALTER EXTENSION ddl_sync UPDATE" to load this file. \quit

-- A subscription may name the role that replays the statements of roles missing here.
ALTER TABLE ddl_sync.subscription_ddl ADD COLUMN fallback_role name;
COMMENT ON COLUMN ddl_sync.subscription_ddl.fallback_role IS
    'the role (never a superuser) that replays the statements of roles missing here; NULL: they are refused';

-- "This change is the extension's own" is a flag in backend memory, no longer the setting
-- ddl_sync.local_change, which any SQL could set (src/local_change.rs).
CREATE  FUNCTION "local_change"() RETURNS bool /* bool */
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'local_change_wrapper';

CREATE  FUNCTION "set_local_change"(
	"on" bool /* bool */
) RETURNS bool /* bool */
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'set_local_change_wrapper';

CREATE OR REPLACE FUNCTION ddl_sync.skip_replicated_row()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF ddl_sync.local_change() THEN
        RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION ddl_sync.count_event(sub oid, status text, detail text, event_lsn pg_lsn)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    was_local boolean;
    problem boolean := status IN ('refused', 'failed');
BEGIN
    IF sub IS NULL THEN
        RETURN;
    END IF;
    -- The apply worker runs in replica mode: this row is ours, not a replicated one.
    was_local := ddl_sync.set_local_change(true);
    INSERT INTO ddl_sync.subscription_counters AS c
        (subid, applied, skipped, refused, failed, duplicates,
         last_applied_lsn, last_applied_at, last_error, last_error_at)
    VALUES (sub, (status = 'applied')::int, (status = 'skipped')::int,
            (status = 'refused')::int, (status = 'failed')::int, (status = 'duplicate')::int,
            CASE WHEN status = 'applied' THEN event_lsn END,
            CASE WHEN status = 'applied' THEN clock_timestamp() END,
            CASE WHEN problem THEN status || ': ' || coalesce(detail, '') END,
            CASE WHEN problem THEN clock_timestamp() END)
    ON CONFLICT (subid) DO UPDATE SET
        applied = c.applied + excluded.applied,
        skipped = c.skipped + excluded.skipped,
        refused = c.refused + excluded.refused,
        failed = c.failed + excluded.failed,
        duplicates = c.duplicates + excluded.duplicates,
        last_applied_lsn = coalesce(excluded.last_applied_lsn, c.last_applied_lsn),
        last_applied_at = coalesce(excluded.last_applied_at, c.last_applied_at),
        last_error = coalesce(excluded.last_error, c.last_error),
        last_error_at = coalesce(excluded.last_error_at, c.last_error_at);
    PERFORM ddl_sync.set_local_change(was_local);
END
$$;

CREATE OR REPLACE FUNCTION ddl_sync.register_adapter(
    name text,
    dialect text,
    execute_function regprocedure,
    init_function regprocedure DEFAULT NULL,
    cleanup_function regprocedure DEFAULT NULL,
    enabled boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f regprocedure;
    want oid[];
BEGIN
    IF NOT pg_has_role((SELECT extowner FROM pg_extension WHERE extname = 'ddl_sync'), 'USAGE') THEN
        RAISE EXCEPTION 'must be superuser or owner of extension ddl_sync to register an adapter'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF name IS NULL OR name = '' OR dialect IS NULL OR dialect = '' OR execute_function IS NULL
       OR enabled IS NULL THEN
        RAISE EXCEPTION 'name, dialect, execute_function and enabled must not be NULL or empty'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    FOREACH f IN ARRAY ARRAY[execute_function, init_function, cleanup_function] LOOP
        CONTINUE WHEN f IS NULL;
        want := CASE WHEN f = execute_function THEN ARRAY['text'::regtype, 'jsonb'::regtype]::oid[]
                     ELSE ARRAY['jsonb'::regtype]::oid[] END;
        IF NOT EXISTS (SELECT FROM pg_proc p
                       WHERE p.oid = f AND p.prokind = 'f' AND NOT p.proretset
                         AND p.prorettype = 'ddl_sync.adapter_result'::regtype
                         AND p.proargtypes::text = array_to_string(want, ' ')) THEN
            RAISE EXCEPTION 'function % does not fit an adapter', f
                USING ERRCODE = 'invalid_function_definition',
                      DETAIL = CASE WHEN f = execute_function
                          THEN 'execute_function takes (sql text, context jsonb)'
                          ELSE 'init_function and cleanup_function take (context jsonb)' END
                          || ' and returns ddl_sync.adapter_result.';
        END IF;
    END LOOP;
    PERFORM ddl_sync.set_local_change(true);
    INSERT INTO ddl_sync.adapter AS a
        (dialect, name, execute_function, init_function, cleanup_function, enabled)
    VALUES (lower(register_adapter.dialect), register_adapter.name, register_adapter.execute_function,
            register_adapter.init_function, register_adapter.cleanup_function, register_adapter.enabled)
    ON CONFLICT ON CONSTRAINT adapter_pkey DO UPDATE
        SET name = excluded.name, execute_function = excluded.execute_function,
            init_function = excluded.init_function, cleanup_function = excluded.cleanup_function,
            enabled = excluded.enabled;
    PERFORM ddl_sync.set_local_change(false);
END
$$;

CREATE OR REPLACE FUNCTION ddl_sync.unregister_adapter(dialect text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    removed boolean;
BEGIN
    IF NOT pg_has_role((SELECT extowner FROM pg_extension WHERE extname = 'ddl_sync'), 'USAGE') THEN
        RAISE EXCEPTION 'must be superuser or owner of extension ddl_sync to unregister an adapter'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM ddl_sync.set_local_change(true);
    DELETE FROM ddl_sync.adapter a WHERE a.dialect = lower(unregister_adapter.dialect);
    removed := FOUND;
    PERFORM ddl_sync.set_local_change(false);
    RETURN removed;
END
$$;

-- The apply trigger refuses rows that carry apply columns (a publisher's own apply log), and
-- runs with a search_path of its own.
CREATE OR REPLACE FUNCTION ddl_sync.apply_event()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    outcome record;
BEGIN
    -- Only a subscription's apply worker replays: anything else inserting here (a restore,
    -- a mistaken INSERT) must never run the statement.
    IF NOT pg_catalog.pg_replication_origin_session_is_setup() THEN
        NEW.apply_status := 'refused';
        NEW.apply_detail := 'not inserted by a subscription''s apply worker: nothing replayed';
        RETURN NEW;
    END IF;
    NEW.subid := ddl_sync.applying_subscription();
    -- ddl_pgoutput sends only events it made itself, whose apply columns are empty. A row that
    -- has them is a real row of another node's ddl_sync.events (its apply log, or a row
    -- inserted there by hand) that reached us through plain pgoutput: not a DDL event.
    IF NEW.apply_status IS NOT NULL OR NEW.applied_at IS NOT NULL THEN
        NEW.apply_status := 'refused';
        NEW.apply_detail := 'a row of the publisher''s own ddl_sync.events, not an event of '
            'ddl_pgoutput (was the subscription''s slot made with plugin pgoutput?): nothing replayed';
        NEW.applied_at := pg_catalog.clock_timestamp();
        PERFORM ddl_sync.count_event(NEW.subid, 'refused', NEW.apply_detail, NEW.lsn);
        RETURN NEW;
    END IF;
    -- DDL that started here and came back around a cycle: already applied, by its author.
    -- The same DDL through a second subscription: applied once.
    IF NEW.origin_sysid = (SELECT system_identifier FROM pg_catalog.pg_control_system())
       OR EXISTS (SELECT FROM ddl_sync.events e
                  WHERE e.origin_sysid = NEW.origin_sysid AND e.origin_lsn = NEW.origin_lsn) THEN
        RAISE DEBUG 'ddl_sync: % % (origin % %) already applied here: not replayed again',
            NEW.command_tag, NEW.object_identity, NEW.origin_sysid, NEW.origin_lsn;
        PERFORM ddl_sync.count_event(NEW.subid, 'duplicate', NULL, NEW.lsn);
        RETURN NULL;
    END IF;
    SELECT * INTO outcome FROM ddl_sync.replay(
        NEW.kind, NEW.dialect, NEW.command_tag, NEW.schema_name, NEW.object_identity, NEW.sql,
        NEW.search_path, NEW.role_name, NEW.origin_sysid, NEW.origin_lsn::text,
        NEW.database_name);
    NEW.apply_status := outcome.status;
    NEW.apply_detail := outcome.detail;
    NEW.apply_adapter := outcome.adapter;
    NEW.applied_at := pg_catalog.clock_timestamp();
    NEW.apply_duration := pg_catalog.make_interval(secs => outcome.seconds);
    PERFORM ddl_sync.count_event(NEW.subid, NEW.apply_status, NEW.apply_detail, NEW.lsn);
    RETURN NEW;
END
$$;

-- ddl_sync messages refused by the output plugin, per publication.
CREATE FUNCTION ddl_sync.publication_rejected_counters()
RETURNS TABLE (publication oid, rejected int8, last_rejected_at timestamptz,
               last_rejected_lsn int8)
LANGUAGE c VOLATILE AS '$libdir/ddl_pgoutput', 'ddl_sync_publication_rejected_stats_wrapper';

CREATE OR REPLACE VIEW ddl_sync.publication_stats AS
SELECT p.oid AS pubid, p.pubname AS publication,
       coalesce(c.captured, 0) AS captured,
       coalesce(c.filtered, 0) AS filtered,
       coalesce(c.emitted, 0) AS emitted,
       c.last_captured_at, c.last_emitted_at,
       '0/0'::pg_catalog.pg_lsn + c.last_emitted_lsn::pg_catalog.numeric AS last_emitted_lsn,
       c.stats_reset,
       coalesce(r.rejected, 0) AS rejected,
       r.last_rejected_at,
       '0/0'::pg_catalog.pg_lsn + r.last_rejected_lsn::pg_catalog.numeric AS last_rejected_lsn
  FROM pg_catalog.pg_publication p
  LEFT JOIN ddl_sync.publication_counters() c ON c.publication = p.oid
  LEFT JOIN ddl_sync.publication_rejected_counters() r ON r.publication = p.oid
 WHERE EXISTS (SELECT FROM ddl_sync.publication_sync s WHERE s.pfsyncpubid = p.oid);

COMMENT ON VIEW ddl_sync.publication_stats IS
    'Per publication: DDL statements captured for it, filtered by its rules, and emitted to decoding sessions; ddl_sync messages refused as not authentic';

REVOKE ALL ON FUNCTION ddl_sync.replay(text, text, text, text, text, text, text, text, int8, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.set_local_change(boolean) FROM PUBLIC;
