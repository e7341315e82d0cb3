-- DDL capture on publishers. The functions live in ddl_pgoutput.so (crate ddl-capture), next
-- to the ProcessUtility hook that knows each statement's text: ddl_pgoutput must be installed
-- wherever ddl_sync is (the two ship together), and preloaded on publishers.
--
-- ALWAYS: DDL replayed by a subscription's apply worker (session_replication_role = replica)
-- is captured too, so that it can be passed on to the next node of a cascade.

CREATE FUNCTION ddl_sync.capture_sql_drop()
RETURNS event_trigger
LANGUAGE c AS '$libdir/ddl_pgoutput', 'ddl_sync_capture_sql_drop';

CREATE FUNCTION ddl_sync.capture_ddl_command_end()
RETURNS event_trigger
LANGUAGE c AS '$libdir/ddl_pgoutput', 'ddl_sync_capture_ddl_command_end';

REVOKE ALL ON FUNCTION ddl_sync.capture_sql_drop() FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.capture_ddl_command_end() FROM PUBLIC;

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

CREATE EVENT TRIGGER ddl_sync_capture_sql_drop ON sql_drop
    EXECUTE FUNCTION ddl_sync.capture_sql_drop();
ALTER EVENT TRIGGER ddl_sync_capture_sql_drop ENABLE ALWAYS;

CREATE EVENT TRIGGER ddl_sync_capture_ddl_command_end ON ddl_command_end
    EXECUTE FUNCTION ddl_sync.capture_ddl_command_end();
ALTER EVENT TRIGGER ddl_sync_capture_ddl_command_end ENABLE ALWAYS;

-- A FOR ALL TABLES publication publishes publication_sync like any table. Its rows hold the
-- publisher's OIDs and mean nothing elsewhere: a subscriber's apply and table sync workers
-- (session_replication_role = replica, where only REPLICA triggers fire) skip them. The
-- extension's own changes made in replica mode (an event trigger cleaning up after a replayed
-- DROP, a configuration function) say so with ddl_sync.set_local_change (a flag in backend
-- memory that only the extension's owner may set, see src/local_change.rs) and go through.
CREATE FUNCTION ddl_sync.skip_replicated_row()
RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'skip_replicated_row_wrapper';

CREATE TRIGGER publication_sync_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.publication_sync
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.publication_sync ENABLE REPLICA TRIGGER publication_sync_is_node_local;

-- The tables whose REPLICA IDENTITY FULL the capture set because they had no key and a
-- publication publishes their updates and deletes (ddl_sync.keyless_tables = 'full',
-- ddl-capture's keyless.rs): it sets DEFAULT again once they have a primary key, and leaves
-- alone every FULL a user chose. Written and deleted by the capture as catalog rows (the
-- statement's role may not write here); each node's own, like publication_sync.
CREATE TABLE ddl_sync.keyless_identity (
    relid oid PRIMARY KEY
);
REVOKE ALL ON ddl_sync.keyless_identity FROM PUBLIC;
CREATE TRIGGER keyless_identity_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.keyless_identity
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.keyless_identity ENABLE REPLICA TRIGGER keyless_identity_is_node_local;
