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
