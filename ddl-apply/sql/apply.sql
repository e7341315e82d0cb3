-- DDL replay on subscribers.
--
-- A subscription's apply worker inserts each DDL event into ddl_sync.events like any other row;
-- this BEFORE INSERT trigger (ENABLE ALWAYS: the worker runs with session_replication_role =
-- replica) replays the statement in the worker's own transaction, between the rows around it,
-- and keeps the row as the subscriber's apply log with the outcome.

-- Which subscriptions replay DDL, which kinds, and what a failing statement does:
-- 'error' (the worker errors and retries the transaction; nothing is lost) or 'skip' (the
-- statement is rolled back in a subtransaction, the row says why, replication goes on).
-- schema_mode 'strict': the published tables must have the same shape on both sides when the
-- subscription is created or enabled, and local DDL on them is refused while it is enabled.
CREATE TABLE ddl_sync.subscription_ddl (
    subid oid PRIMARY KEY,
    ddl int4 NOT NULL CHECK (ddl & ~4095 = 0),
    conflict text NOT NULL DEFAULT 'error' CHECK (conflict IN ('error', 'skip')),
    rules text CHECK (rules <> ''),
    schema_mode text NOT NULL DEFAULT 'relaxed' CHECK (schema_mode IN ('strict', 'relaxed')),
    fallback_role name,
    divergence text NOT NULL DEFAULT 'warn' CHECK (divergence IN ('warn', 'error'))
);
REVOKE ALL ON ddl_sync.subscription_ddl FROM PUBLIC;
COMMENT ON COLUMN ddl_sync.subscription_ddl.fallback_role IS
    'the role (never a superuser) that replays the statements of roles missing here; NULL: they are refused';
COMMENT ON COLUMN ddl_sync.subscription_ddl.divergence IS
    'what an applied statement that made something else here than on the publisher does: warn (the event is diverged, replication goes on) or error (the apply worker errors and retries)';
-- Node-local like publication_sync (see capture.sql): a FOR ALL TABLES publication publishes
-- it, and a subscriber must not take the publisher's rows, which name the publisher's OIDs.
CREATE TRIGGER subscription_ddl_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.subscription_ddl
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.subscription_ddl ENABLE REPLICA TRIGGER subscription_ddl_is_node_local;

-- Operators' decisions about the event a subscription is stuck on under ddl_conflict =
-- 'error' (ddl_sync.resolve_event: skip it, or run another statement instead); the replay
-- deletes the row in the apply transaction that uses it.
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

-- The trigger (src/replay/trigger.rs): only a subscription's apply worker replays (any other
-- insert is refused, nothing run); a row that has apply columns is another node's apply log
-- row, not an event (refused); DDL that started here and came back around a cycle, or came
-- through a second subscription, is not replayed again (no row kept); every other row is
-- replayed by ddl_sync.replay's code and gets the outcome, counted in subscription_counters.
CREATE FUNCTION ddl_sync.apply_event()
RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'apply_event_wrapper';

CREATE TRIGGER apply_event BEFORE INSERT ON ddl_sync.events
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.apply_event();
ALTER TABLE ddl_sync.events ENABLE ALWAYS TRIGGER apply_event;

-- The subscriber's apply log, readably.
CREATE VIEW ddl_sync.apply_log AS
SELECT e.applied_at, e.apply_status AS status, e.command_tag, e.object_identity,
       e.sql, e.apply_detail AS detail, e.apply_adapter AS adapter, e.apply_duration AS duration,
       e.role_name, e.origin_sysid, e.origin_lsn, s.subname AS subscription,
       e.apply_verified AS verified
  FROM ddl_sync.events e
  LEFT JOIN pg_catalog.pg_subscription s ON s.oid = e.subid
 ORDER BY e.applied_at, e.origin_lsn;
