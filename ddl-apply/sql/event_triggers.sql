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
