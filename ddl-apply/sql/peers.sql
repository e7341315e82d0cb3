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
