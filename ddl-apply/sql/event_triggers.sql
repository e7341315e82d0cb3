-- The extension's event triggers fire only in a database that needs them. An enabled
-- ddl_command_end or sql_drop trigger makes PostgreSQL collect every DDL statement's commands
-- and call the trigger, which costs a database that replicates no DDL a tenth or more of its
-- DDL latency (BENCHMARKS.md, "Capture"); a disabled one costs nothing. So:
-- - the capture triggers are enabled (ALWAYS) while this database has a publication with DDL
--   configuration (ddl_sync.publication_sync) or a registered adapter (ddl_sync.adapter,
--   whose rows the capture's sql_drop trigger forgets with their functions);
-- - the peer tables' trigger (peers.sql) is enabled while a subscription has DDL configuration
--   (ddl_sync.subscription_ddl);
-- and each is disabled otherwise. Every row written to those tables through SQL refreshes the
-- states; a row deleted otherwise (the capture forgets rows as catalog rows) may leave a
-- trigger enabled until the next refresh, which costs time, never a statement.
CREATE FUNCTION ddl_sync.refresh_event_triggers()
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    capture boolean := EXISTS (SELECT FROM ddl_sync.publication_sync)
                       OR EXISTS (SELECT FROM ddl_sync.adapter);
    peers boolean := EXISTS (SELECT FROM ddl_sync.subscription_ddl);
    wanted record;
BEGIN
    FOR wanted IN
        SELECT e.evtname,
               CASE WHEN (e.evtname OPERATOR(pg_catalog.=) 'ddl_sync_register_peer_tables' AND peers)
                      OR (e.evtname OPERATOR(pg_catalog.<>) 'ddl_sync_register_peer_tables' AND capture)
                    THEN 'A' ELSE 'D' END AS state
          FROM pg_catalog.pg_event_trigger e
         WHERE e.evtname OPERATOR(pg_catalog.=) ANY (ARRAY['ddl_sync_capture_sql_drop',
                   'ddl_sync_capture_ddl_command_end', 'ddl_sync_register_peer_tables']::pg_catalog.name[])
    LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_event_trigger e
                        WHERE e.evtname OPERATOR(pg_catalog.=) wanted.evtname
                          AND e.evtenabled OPERATOR(pg_catalog.=) wanted.state::pg_catalog."char") THEN
            EXECUTE pg_catalog.format('ALTER EVENT TRIGGER %I %s', wanted.evtname,
                CASE wanted.state WHEN 'A' THEN 'ENABLE ALWAYS' ELSE 'DISABLE' END);
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ddl_sync.refresh_event_triggers() IS
    'Enables the capture event triggers where a publication has DDL configuration or an adapter is registered, the peer tables'' trigger where a subscription has DDL configuration; disables them elsewhere';

CREATE FUNCTION ddl_sync.event_triggers_follow()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
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
