-- publication_sync in words, and list_rules over it. Needs ddl_sync.format_ddl_kinds (Rust).

-- One line per row: the publication, the level and target of the row, its kinds as tokens and
-- its rules. A row whose publication is gone does not show (the sql_drop event trigger removes
-- them); one whose target is gone shows a NULL target.
CREATE VIEW ddl_sync.publication_ddl_config AS
SELECT s.oid AS rule,
       p.pubname AS publication,
       CASE s.pfsynckind
           WHEN 'p' THEN 'publication'
           WHEN 'n' THEN 'schema'
           WHEN 'r' THEN 'relation'
           WHEN 'o' THEN 'object'
       END AS level,
       CASE WHEN s.pfsynckind <> 'p' THEN o.type END AS target_type,
       CASE WHEN s.pfsynckind <> 'p' THEN o.identity END AS target,
       s.pfsyncenabled AS enabled,
       ddl_sync.format_ddl_kinds(s.pfsyncddl) AS ddl,
       s.pfsyncextra AS rules
FROM ddl_sync.publication_sync AS s
JOIN pg_catalog.pg_publication AS p ON p.oid = s.pfsyncpubid
-- For a 'p' row this identifies the publication itself (always valid, not shown).
CROSS JOIN LATERAL pg_catalog.pg_identify_object(
    CASE s.pfsynckind
        WHEN 'p' THEN 'pg_catalog.pg_publication'::pg_catalog.regclass::pg_catalog.oid
        WHEN 'n' THEN 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
        WHEN 'r' THEN 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
        ELSE s.pfsyncrelid
    END,
    CASE s.pfsynckind
        WHEN 'p' THEN s.pfsyncpubid
        WHEN 'n' THEN s.pfsyncnspid
        WHEN 'r' THEN s.pfsyncrelid
        ELSE s.pfsyncobjid
    END,
    0) AS o;

COMMENT ON VIEW ddl_sync.publication_ddl_config IS
    'The DDL replication configuration of each publication, in words';

-- The rows of one publication, most general first.
CREATE FUNCTION ddl_sync.list_rules(publication text)
RETURNS TABLE (rule oid, level text, target_type text, target text, enabled boolean, ddl text,
               rules text)
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_publication AS p WHERE p.pubname = list_rules.publication) THEN
        RAISE EXCEPTION 'publication "%" does not exist', list_rules.publication
            USING ERRCODE = 'undefined_object';
    END IF;
    RETURN QUERY
        SELECT c.rule, c.level, c.target_type, c.target, c.enabled, c.ddl, c.rules
        FROM ddl_sync.publication_ddl_config AS c
        WHERE c.publication = list_rules.publication
        ORDER BY array_position(ARRAY['publication', 'schema', 'relation', 'object'], c.level),
                 c.target COLLATE "C";
END
$$;

COMMENT ON FUNCTION ddl_sync.list_rules(text) IS
    'The DDL replication configuration of one publication, most general row first';
