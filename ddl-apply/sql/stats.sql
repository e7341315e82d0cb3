-- Statistics: per publication on publishers, per subscription on subscribers (see the crate
-- README, "Statistics", for what each number counts).

-- Publishers. The counters are in ddl_pgoutput's shared memory (crate ddl-capture, module
-- stats): captured and filtered are counted by the backends that run DDL when their
-- transaction commits, emitted by the decoding sessions (walsenders) that send the events.
CREATE FUNCTION ddl_sync.publication_counters()
RETURNS TABLE (publication oid, captured int8, filtered int8, emitted int8,
               last_captured_at timestamptz, last_emitted_at timestamptz,
               last_emitted_lsn int8, stats_reset timestamptz)
LANGUAGE c VOLATILE AS '$libdir/ddl_pgoutput', 'ddl_sync_publication_stats_wrapper';

-- ddl_sync messages the output plugin refused while decoding for a publication: not sealed by
-- this server's capture in their own transaction (forged, or copied from another), or malformed.
CREATE FUNCTION ddl_sync.publication_rejected_counters()
RETURNS TABLE (publication oid, rejected int8, last_rejected_at timestamptz,
               last_rejected_lsn int8)
LANGUAGE c VOLATILE AS '$libdir/ddl_pgoutput', 'ddl_sync_publication_rejected_stats_wrapper';

CREATE FUNCTION ddl_sync.publication_rule_counters()
RETURNS TABLE (publication oid, "row" oid, rule int4, filtered int8)
LANGUAGE c VOLATILE AS '$libdir/ddl_pgoutput', 'ddl_sync_publication_rule_stats_wrapper';

CREATE FUNCTION ddl_sync.reset_publication_counters(publication oid)
RETURNS void
LANGUAGE c VOLATILE AS '$libdir/ddl_pgoutput', 'ddl_sync_reset_publication_stats_wrapper';

-- One row per publication that has a DDL configuration.
CREATE VIEW ddl_sync.publication_stats AS
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

-- Which rule kept which statements from a publication: the row of publication_sync and, in
-- it, the rule (by its number and its current text) or the row's kinds.
CREATE VIEW ddl_sync.publication_rule_stats AS
SELECT p.pubname AS publication, r."row" AS rule_row, cfg.level, cfg.target_type, cfg.target,
       CASE WHEN r.rule >= 0 THEN r.rule END AS rule_number,
       CASE
           WHEN r."row" = 0 THEN 'no enabled row applies'
           WHEN r.rule < 0 THEN 'ddl = ''' || cfg.ddl || ''''
           ELSE (pg_catalog.string_to_array(pg_catalog.rtrim(cfg.rules, E'\n'), E'\n'))[r.rule + 1]
       END AS rule,
       r.filtered
  FROM ddl_sync.publication_rule_counters() r
  JOIN pg_catalog.pg_publication p ON p.oid = r.publication
  LEFT JOIN ddl_sync.publication_ddl_config cfg ON cfg.rule = r."row";

COMMENT ON VIEW ddl_sync.publication_rule_stats IS
    'Per publication and rule: how many DDL statements the rule kept from the publication';

CREATE FUNCTION ddl_sync.reset_publication_stats(publication text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pubid oid;
BEGIN
    IF publication IS NOT NULL THEN
        SELECT p.oid INTO pubid FROM pg_publication p WHERE p.pubname = publication;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'publication "%" does not exist', publication
                USING ERRCODE = 'undefined_object';
        END IF;
    END IF;
    PERFORM ddl_sync.reset_publication_counters(pubid);
END
$$;

COMMENT ON FUNCTION ddl_sync.reset_publication_stats(text) IS
    'Sets the DDL statistics of a publication (of every publication of this database when NULL) to zero';

-- Subscribers. Counted by the apply trigger (apply.sql) and written in the apply worker's
-- transaction before it commits (src/replay/counters.rs), so exactly as durable as the replay
-- itself, and kept when the apply log is purged.
CREATE TABLE ddl_sync.subscription_counters (
    subid            oid PRIMARY KEY,
    applied          int8 NOT NULL DEFAULT 0,
    skipped          int8 NOT NULL DEFAULT 0,
    refused          int8 NOT NULL DEFAULT 0,
    failed           int8 NOT NULL DEFAULT 0,
    duplicates       int8 NOT NULL DEFAULT 0,
    last_applied_lsn pg_lsn,
    last_applied_at  timestamptz,
    last_error       text,
    last_error_at    timestamptz,
    stats_reset      timestamptz,
    verified         int8 NOT NULL DEFAULT 0,
    diverged         int8 NOT NULL DEFAULT 0
);
REVOKE ALL ON ddl_sync.subscription_counters FROM PUBLIC;
-- Node-local (see capture.sql): a FOR ALL TABLES publication of this node publishes it.
CREATE TRIGGER subscription_counters_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.subscription_counters
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.subscription_counters ENABLE REPLICA TRIGGER subscription_counters_is_node_local;

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

-- One row per subscription of this database. errors and last_error also count the failures
-- under ddl_conflict = 'error', which roll back and are retried (from shared memory: with
-- ddl_sync preloaded, until the server restarts).
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

-- The DDL event each subscription of this database is stuck on under ddl_conflict = 'error'
-- (its last replay error since the server started), for ddl_sync.resolve_event.
CREATE VIEW ddl_sync.failing_events AS
SELECT s.subname AS subscription, f.origin_lsn::pg_catalog.pg_lsn AS origin_lsn,
       f.origin_sysid, f.sql, f.error, f.failed_at, f.attempts, f.decided
  FROM ddl_sync.failing_event_list() f
  JOIN pg_catalog.pg_subscription s ON s.oid = f.subid;

COMMENT ON VIEW ddl_sync.failing_events IS
    'Per subscription stuck on a DDL event under ddl_conflict = error: the statement, its error and origin LSN; resolve with ddl_sync.resolve_event(subscription, retry|skip|replace [, statement])';
