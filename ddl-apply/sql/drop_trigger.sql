-- Rows follow what they are about: when a publication, schema, relation or object is dropped,
-- its publication_sync rows go with it, in the same transaction; so do the SQL adapters
-- (ddl_sync.adapter) of a dropped function.

-- SECURITY DEFINER: whoever drops a publication or table must not need privileges on the
-- catalog. Safe: it only deletes rows of objects that this very command dropped, and an event
-- trigger function cannot be called directly.
CREATE FUNCTION ddl_sync.forget_dropped_objects()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- A local change, also in an apply worker (see ddl_sync.skip_replicated_row).
    PERFORM set_config('ddl_sync.local_change', 'on', true);
    DELETE FROM ddl_sync.publication_sync AS s
    USING pg_event_trigger_dropped_objects() AS d
    WHERE (d.classid = 'pg_publication'::regclass AND s.pfsyncpubid = d.objid)
       OR (d.classid = 'pg_namespace'::regclass AND s.pfsynckind = 'n'
           AND s.pfsyncnspid = d.objid)
       -- objsubid <> 0 is a column (ALTER TABLE ... DROP COLUMN): the relation stays.
       OR (d.objsubid = 0 AND s.pfsynckind = 'o' AND s.pfsyncrelid = d.classid
           AND s.pfsyncobjid = d.objid)
       OR (d.objsubid = 0 AND d.classid = 'pg_class'::regclass AND s.pfsynckind = 'r'
           AND s.pfsyncrelid = d.objid);
    -- A SQL adapter whose function is dropped is gone: the C or built-in adapter of its
    -- dialect replays it again (ddl_sync.adapter is created after this function).
    DELETE FROM ddl_sync.adapter AS a
    USING pg_event_trigger_dropped_objects() AS d
    WHERE d.classid = 'pg_proc'::regclass
      AND d.objid IN (a.execute_function, a.init_function, a.cleanup_function);
    PERFORM set_config('ddl_sync.local_change', 'off', true);
END
$$;

CREATE EVENT TRIGGER ddl_sync_forget_dropped_objects ON sql_drop
    EXECUTE FUNCTION ddl_sync.forget_dropped_objects();

-- ALWAYS: also when the drop is replayed by a subscription's apply worker
-- (session_replication_role = replica), where an ordinary event trigger stays silent.
ALTER EVENT TRIGGER ddl_sync_forget_dropped_objects ENABLE ALWAYS;
