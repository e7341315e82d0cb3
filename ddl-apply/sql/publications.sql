-- The extension's own tables in publications. A publication FOR ALL TABLES takes every
-- permanent table, these too: each node's configuration, apply log and adapters, which no
-- subscriber should get (a native subscriber without this extension cannot even subscribe:
-- it has no schema ddl_sync). PostgreSQL 19 can leave tables out (FOR ALL TABLES EXCEPT):
-- there they are left out of every such publication, but for ddl_sync.events in one that
-- replicates DDL (its events travel as inserts on it). Before 19 nothing leaves a permanent
-- table out of FOR ALL TABLES; a subscriber with this extension leaves them out of its
-- subscriptions instead (pg_subscription_rel), and the guide says what one without it needs.
--
-- A publication replicates DDL while any enabled row of ddl_sync.publication_sync (its own,
-- a schema's, an object's) takes some kind. The functions that change those rows call this
-- with events_may_return (an exception of ddl_sync.events is then this function's, made while
-- the publication replicated no DDL, and goes); the capture's hook calls it after every other
-- CREATE and ALTER PUBLICATION without (a DDL publication whose statement excepts
-- ddl_sync.events is refused, as the user wrote it).
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

-- The publications made before the extension.
SELECT ddl_sync.keep_own_tables_out(p.pubname, false)
  FROM pg_catalog.pg_publication p
 WHERE p.puballtables;
