-- Dialect adapters written in SQL: a row names the functions that replay one dialect's DDL in
-- this database. An enabled row replaces the adapter registered from C and the built-in one
-- for its dialect (see the README, "Adapters").

-- What an adapter function returns: result 'success', 'retryable' or 'fatal', and why.
-- A NULL composite is success. In PL/pgSQL: RETURN ('fatal', why)::ddl_sync.adapter_result.
CREATE TYPE ddl_sync.adapter_result AS (result text, message text);

-- The functions are OIDs, not regprocedure: a FOR ALL TABLES publication sends these rows like
-- any table's, and a regprocedure in text form would make a subscriber's apply worker fail on
-- a function it does not have, before the trigger below could skip the row.
CREATE TABLE ddl_sync.adapter (
    dialect text PRIMARY KEY CHECK (dialect <> '' AND dialect = pg_catalog.lower(dialect)),
    name text NOT NULL CHECK (name <> ''),
    execute_function oid NOT NULL,
    init_function oid,
    cleanup_function oid,
    enabled boolean NOT NULL DEFAULT true
);

-- Node-local, like publication_sync (see ddl_sync.skip_replicated_row).
CREATE TRIGGER adapter_is_node_local
    BEFORE INSERT OR UPDATE OR DELETE ON ddl_sync.adapter
    FOR EACH ROW EXECUTE FUNCTION ddl_sync.skip_replicated_row();
ALTER TABLE ddl_sync.adapter ENABLE REPLICA TRIGGER adapter_is_node_local;

-- Registers (or replaces) the SQL adapter of a dialect. Only a superuser or a role with the
-- privileges of the extension's owner may: the functions run inside every replay.
CREATE FUNCTION ddl_sync.register_adapter(
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

-- Removes the SQL adapter of a dialect; returns whether there was one. The C or built-in
-- adapter, if any, replays the dialect again.
CREATE FUNCTION ddl_sync.unregister_adapter(dialect text)
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
