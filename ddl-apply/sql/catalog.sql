-- The tables of ddl_sync. Written only by the extension's functions (privileges.sql); the
-- column meanings are in the crate README and in the COMMENTs below.

-- Row OIDs of publication_sync, like a system catalog's: an oid column filled from a sequence.
CREATE SEQUENCE ddl_sync.publication_sync_oid_seq
    AS bigint MINVALUE 1 MAXVALUE 4294967295 NO CYCLE;

-- The publisher's DDL configuration: one row per publication (kind 'p', its DDL kinds) and per
-- schema ('n'), relation ('r') or other object ('o') that has a configuration of its own.
-- Unused key columns hold 0 (InvalidOid) rather than NULL, so the UNIQUE key covers every row.
--
-- user_catalog_table: ddl_pgoutput reads it under the historic snapshot of the transaction it is
-- decoding, which only works for catalog tables.
CREATE TABLE ddl_sync.publication_sync (
    oid            oid     NOT NULL
        DEFAULT pg_catalog.nextval('ddl_sync.publication_sync_oid_seq'::pg_catalog.regclass)::pg_catalog.oid,
    pfsyncpubid    oid     NOT NULL,
    pfsynckind     "char"  NOT NULL,
    pfsyncnspid    oid     NOT NULL DEFAULT 0,
    pfsyncrelid    oid     NOT NULL DEFAULT 0,
    pfsyncobjid    oid     NOT NULL DEFAULT 0,
    pfsyncsubid    oid     NOT NULL DEFAULT 0,
    pfsyncenabled  boolean NOT NULL DEFAULT true,
    pfsyncddl      int4    NOT NULL,
    pfsyncextra    text,
    CONSTRAINT publication_sync_pkey PRIMARY KEY (oid),
    CONSTRAINT publication_sync_key
        UNIQUE (pfsyncpubid, pfsynckind, pfsyncnspid, pfsyncrelid, pfsyncobjid, pfsyncsubid),
    CONSTRAINT publication_sync_pubid_check CHECK (pfsyncpubid <> 0),
    CONSTRAINT publication_sync_kind_check CHECK (pfsynckind IN ('p', 'n', 'r', 'o')),
    -- Each kind uses exactly its own target columns.
    CONSTRAINT publication_sync_target_check CHECK (CASE pfsynckind
        WHEN 'p' THEN pfsyncnspid = 0 AND pfsyncrelid = 0 AND pfsyncobjid = 0
        WHEN 'n' THEN pfsyncnspid <> 0 AND pfsyncrelid = 0 AND pfsyncobjid = 0
        WHEN 'r' THEN pfsyncnspid = 0 AND pfsyncrelid <> 0 AND pfsyncobjid = 0
        WHEN 'o' THEN pfsyncnspid = 0 AND pfsyncrelid <> 0 AND pfsyncobjid <> 0
    END),
    -- Bits 0..10: table .. extension (ddl-filter's DdlKinds; a stored format).
    CONSTRAINT publication_sync_ddl_check CHECK ((pfsyncddl & ~4095) = 0),
    -- NULL is the one spelling of "no rules".
    CONSTRAINT publication_sync_extra_check CHECK (pfsyncextra <> '')
) WITH (user_catalog_table = true);

ALTER SEQUENCE ddl_sync.publication_sync_oid_seq OWNED BY ddl_sync.publication_sync.oid;

-- The per-publication scan of ddl_pgoutput (one key, like the other catalog indexes it uses).
CREATE INDEX publication_sync_pubid_index ON ddl_sync.publication_sync (pfsyncpubid);

COMMENT ON TABLE ddl_sync.publication_sync IS
    'DDL replication configuration of publications: one row per publication (kind p) and per schema, relation or object with a configuration of its own';
COMMENT ON COLUMN ddl_sync.publication_sync.oid IS 'row identifier';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncpubid IS 'the publication (pg_publication.oid)';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsynckind IS
    'p publication, n schema, r relation, o other object';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncnspid IS 'kind n: the schema (pg_namespace.oid); else 0';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncrelid IS
    'kind r: the relation (pg_class.oid); kind o: the system catalog holding the object (as pg_depend.classid); else 0';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncobjid IS 'kind o: the object''s OID in that catalog; else 0';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncsubid IS
    'reserved for a sub-object (as pg_depend.objsubid); always 0';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncenabled IS 'false: the row is ignored, as if absent';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncddl IS
    'DDL kinds mask: bit 0 table .. bit 10 extension, bit 11 foreign (ddl_sync.format_ddl_kinds shows it in words)';
COMMENT ON COLUMN ddl_sync.publication_sync.pfsyncextra IS
    'include/exclude rules in ddl-filter''s canonical text form, one per line; NULL for none';

-- The replicated DDL events. On a publisher it stays empty: ddl_pgoutput sends each captured
-- statement as a synthetic INSERT on it. On a subscriber the apply worker inserts the row, a
-- trigger replays the statement and fills the apply_* columns, and the row stays as the apply
-- log. Its event columns are ddl-wire's event schema (EVENT_COLUMNS), from which the plugin
-- forms the row and the replay reads it, by name (a test keeps them equal): the NOT NULL ones
-- first, then the subscriber's apply columns, then the nullable ones, which came later (ALTER
-- TABLE ADD COLUMN puts a column last).
CREATE TABLE ddl_sync.events (
    lsn               pg_lsn  NOT NULL,
    origin_sysid      bigint  NOT NULL,
    origin_lsn        pg_lsn  NOT NULL,
    xid               bigint  NOT NULL,
    top_level         boolean NOT NULL,
    forwarded         boolean NOT NULL,
    kind              text    NOT NULL,
    dialect           text    NOT NULL,
    command_tag       text    NOT NULL,
    schema_name       text    NOT NULL,
    object_identity   text    NOT NULL,
    sql               text    NOT NULL,
    search_path       text    NOT NULL,
    role_name         text    NOT NULL,
    session_user_name text    NOT NULL,
    database_name     text    NOT NULL,
    apply_status      text,
    apply_detail      text,
    apply_adapter     text,
    applied_at        timestamptz,
    apply_duration    interval,
    subid             oid,
    tables            text,
    settings          text,
    role_rights       text,
    bindings          text,
    capturing_sysid   bigint,
    sent_generated_columns text,
    description       text,
    apply_verified    boolean,
    -- A statement is named by the node where it first ran and its LSN there, so the same DDL
    -- arriving twice (two subscriptions, a cascade) is one row.
    -- No CHECK on apply_status: the apply trigger is its only writer (it refuses a row that
    -- arrives with one), and the apply worker would rebuild a CHECK's expression from its
    -- stored text for every row it inserts (about 47,000 instructions an event).
    CONSTRAINT events_pkey PRIMARY KEY (origin_sysid, origin_lsn)
);

COMMENT ON TABLE ddl_sync.events IS
    'Replicated DDL statements: always empty on a publisher; the apply log on a subscriber';
COMMENT ON COLUMN ddl_sync.events.lsn IS 'LSN of the statement''s message on the node that sent it';
COMMENT ON COLUMN ddl_sync.events.origin_sysid IS 'system identifier of the node where the statement first ran';
COMMENT ON COLUMN ddl_sync.events.origin_lsn IS 'the statement''s LSN on that node';
COMMENT ON COLUMN ddl_sync.events.xid IS 'the (sub)transaction that ran it';
COMMENT ON COLUMN ddl_sync.events.top_level IS 'sent by the client, not run from a function or DO block';
COMMENT ON COLUMN ddl_sync.events.forwarded IS 'replayed from another node and passed on';
COMMENT ON COLUMN ddl_sync.events.kind IS 'DDL kind token (table, index, ...)';
COMMENT ON COLUMN ddl_sync.events.dialect IS 'SQL dialect of the statement (postgres, tsql, ...)';
COMMENT ON COLUMN ddl_sync.events.command_tag IS 'command tag (CREATE TABLE, ...)';
COMMENT ON COLUMN ddl_sync.events.schema_name IS 'schema of the object, empty when it has none';
COMMENT ON COLUMN ddl_sync.events.object_identity IS 'schema-qualified identity of the object';
COMMENT ON COLUMN ddl_sync.events.sql IS 'the statement';
COMMENT ON COLUMN ddl_sync.events.search_path IS 'search_path it ran with';
COMMENT ON COLUMN ddl_sync.events.role_name IS 'role it ran as';
COMMENT ON COLUMN ddl_sync.events.session_user_name IS 'session user';
COMMENT ON COLUMN ddl_sync.events.database_name IS 'database it ran in';
COMMENT ON COLUMN ddl_sync.events.apply_status IS
    'subscriber: applied, diverged (applied, but what it made here differs from the publisher''s description), skipped, refused or failed; NULL on a publisher';
COMMENT ON COLUMN ddl_sync.events.apply_detail IS 'subscriber: why it was skipped, refused or failed';
COMMENT ON COLUMN ddl_sync.events.apply_adapter IS 'subscriber: the dialect adapter that replayed it';
COMMENT ON COLUMN ddl_sync.events.applied_at IS 'subscriber: when it was replayed';
COMMENT ON COLUMN ddl_sync.events.apply_duration IS 'subscriber: how long the replay took';
COMMENT ON COLUMN ddl_sync.events.subid IS
    'subscriber: the subscription whose apply worker inserted it (pg_subscription.oid)';
COMMENT ON COLUMN ddl_sync.events.role_rights IS
    'what the statement''s role could do where it ran (SUPERUSER, or its attributes and predefined roles); NULL when not known';
COMMENT ON COLUMN ddl_sync.events.bindings IS
    'what the statement bound by name where it ran (functions, operators, types, ... that are not built in), one identity per line; NULL when not known';
COMMENT ON COLUMN ddl_sync.events.settings IS
    'the session settings that change what the statement means (DateStyle, TimeZone, ...), one name=value per line';
COMMENT ON COLUMN ddl_sync.events.tables IS
    'the tables the statement created or changed, as CREATE TABLE of the columns a row has; a subscriber makes from it what the statement did not';
COMMENT ON COLUMN ddl_sync.events.capturing_sysid IS
    'system identifier of the node whose capture sealed the statement: its origin, or in a cascade the last node that replayed and passed it on; NULL when not known';
COMMENT ON COLUMN ddl_sync.events.sent_generated_columns IS
    'the stored generated columns of the statement''s table whose values the stream that carried it sends, one name per line; a subscriber makes them plain columns; NULL when not known';
COMMENT ON COLUMN ddl_sync.events.description IS
    'what the statement made, described from the catalogs after it (JSON: objects created, altered or dropped, with their columns, constraints, indexes, ...); a subscriber compares what its replay made; NULL for a kind not described';
COMMENT ON COLUMN ddl_sync.events.apply_verified IS
    'subscriber: true when what the statement made here was compared with its description and found equal, false when it differs (diverged); NULL when not compared';
