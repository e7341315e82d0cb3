//! Command tag → DDL kind, for every PostgreSQL 15 command tag.
//!
//! The table below is the one place that decides what is replicated. The README repeats it (a
//! test keeps the two equal) and explains the hard cases.

use std::fmt;

use crate::kind::DdlKind;
use crate::normalize::{Case, Normalized};

/// What a command tag (or a tag and the type of the object it changed) means for replication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Classification {
    /// DDL of this kind: replicated when the publication's `ddl` option selects the kind and
    /// the rules let it through.
    Replicated(DdlKind),
    /// Never replicated, for this reason.
    NotReplicated(NotReplicated),
}

/// Why a statement is never replicated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotReplicated {
    /// Not a PostgreSQL 15 command tag (or the placeholder tag `???`).
    UnknownTag,
    /// A tag whose kind is that of its object (COMMENT, SECURITY LABEL, GRANT, REVOKE, ALTER
    /// DEFAULT PRIVILEGES), given without an object type or with one not recognised.
    UnknownObjectType,
    /// Databases, roles and role membership, tablespaces, ALTER SYSTEM and parameter
    /// privileges: cluster-wide objects, outside any one database's publication.
    GlobalObject,
    /// DROP OWNED and REASSIGN OWNED act on everything a role owns, which is different on every
    /// node.
    RoleWide,
    /// Publications and subscriptions: each node's own replication set-up.
    Replication,
    /// Event triggers: node-local hooks, often the tooling of replication or audit itself.
    EventTrigger,
    /// Foreign-data wrappers, servers and user mappings (which hold credentials): connections
    /// that belong to one node. (Foreign tables are kind `foreign`, which only a `ddl` option
    /// naming it takes.)
    ForeignData,
    /// Large objects: logical replication does not carry `pg_largeobject`, so there is nothing
    /// for their metadata to apply to.
    LargeObject,
    /// Statements on rows (SELECT, INSERT, UPDATE, DELETE, MERGE, COPY, TRUNCATE, EXPLAIN):
    /// their changes travel as row changes already.
    Dml,
    /// Transaction control, SET CONSTRAINTS and LOCK TABLE.
    TransactionControl,
    /// Settings, cursors, prepared statements, LISTEN/NOTIFY, LOAD, DISCARD: session state.
    Session,
    /// VACUUM, ANALYZE, CLUSTER, REPACK, REINDEX, CHECKPOINT: physical upkeep, each node its own.
    Maintenance,
    /// DO and CALL: the DDL they run is captured statement by statement instead.
    Procedural,
}

impl Classification {
    /// The kind, when replicated.
    pub fn kind(self) -> Option<DdlKind> {
        match self {
            Classification::Replicated(kind) => Some(kind),
            Classification::NotReplicated(_) => None,
        }
    }
}

/// `table`, or `not replicated: global object`.
impl fmt::Display for Classification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Classification::Replicated(kind) => write!(f, "{kind}"),
            Classification::NotReplicated(why) => write!(f, "not replicated: {why}"),
        }
    }
}

impl fmt::Display for NotReplicated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotReplicated::UnknownTag => "unknown command tag",
            NotReplicated::UnknownObjectType => "unknown object type",
            NotReplicated::GlobalObject => "global object",
            NotReplicated::RoleWide => "role-wide",
            NotReplicated::Replication => "replication set-up",
            NotReplicated::EventTrigger => "event trigger",
            NotReplicated::ForeignData => "foreign data",
            NotReplicated::LargeObject => "large object",
            NotReplicated::Dml => "DML",
            NotReplicated::TransactionControl => "transaction control",
            NotReplicated::Session => "session state",
            NotReplicated::Maintenance => "maintenance",
            NotReplicated::Procedural => "procedural code",
        })
    }
}

/// Classifies a command tag as PostgreSQL reports it (`CREATE TABLE`), ignoring case and
/// whitespace. Tags whose kind depends on the object they change give
/// [`NotReplicated::UnknownObjectType`]; use [`classify_object`] when the object type is known.
///
/// Never allocates; unknown input gives [`NotReplicated::UnknownTag`].
pub fn classify(tag: &str) -> Classification {
    entry(tag).map_or(not(NotReplicated::UnknownTag), |(class, _)| class)
}

/// Classifies a command tag together with the type of the object it changed, as
/// `pg_identify_object()` or `pg_event_trigger_ddl_commands()` report it (`index`,
/// `materialized view`, `table column`, `TABLE`...), ignoring case and whitespace.
///
/// The object type decides for the tags that say nothing about the object (COMMENT, SECURITY
/// LABEL, GRANT, REVOKE, ALTER DEFAULT PRIVILEGES) and for ALTER of a relation (ALTER TABLE may
/// alter an index, a sequence or a view; ALTER INDEX ... RENAME may rename a table). For every
/// other tag the tag decides and the object type is ignored: PostgreSQL reports a domain as
/// `type`, yet CREATE DOMAIN is `domain`.
pub fn classify_object(tag: &str, object_type: &str) -> Classification {
    match entry(tag) {
        None => not(NotReplicated::UnknownTag),
        Some((class, Refine::Never)) => class,
        Some((class, Refine::ByObject)) => object(object_type).unwrap_or(class),
    }
}

/// Whether the object type may change a tag's classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refine {
    /// The tag alone decides.
    Never,
    /// A recognised object type decides, else the tag's own classification (for the tags that
    /// say nothing about their object, that is [`NotReplicated::UnknownObjectType`]).
    ByObject,
}

fn not(why: NotReplicated) -> Classification {
    Classification::NotReplicated(why)
}

fn entry(tag: &str) -> Option<(Classification, Refine)> {
    let tag = Normalized::new(tag, Case::Upper)?;
    tag_entry(tag.as_str())
}

/// The classification of every tag in PostgreSQL 15's `src/include/tcop/cmdtaglist.h`.
fn tag_entry(tag: &str) -> Option<(Classification, Refine)> {
    use Classification::Replicated as R;
    use DdlKind as K;
    use NotReplicated as N;
    use Refine::{ByObject, Never};

    Some(match tag {
        // Tables, and objects that only exist on a table. PostgreSQL 15 never reports the
        // CONSTRAINT tags for a statement (constraints change through ALTER TABLE and ALTER
        // DOMAIN; CREATE CONSTRAINT TRIGGER reports CREATE TRIGGER); they are here for
        // completeness.
        "CREATE TABLE" | "DROP TABLE" | "CREATE TABLE AS" | "SELECT INTO" | "CREATE POLICY"
        | "ALTER POLICY" | "DROP POLICY" | "CREATE STATISTICS" | "ALTER STATISTICS"
        | "DROP STATISTICS" | "CREATE CONSTRAINT" | "ALTER CONSTRAINT" | "DROP CONSTRAINT" => {
            (R(K::Table), Never)
        }
        "ALTER TABLE" => (R(K::Table), ByObject),
        "CREATE INDEX" | "DROP INDEX" => (R(K::Index), Never),
        "ALTER INDEX" => (R(K::Index), ByObject),
        "CREATE SEQUENCE" | "DROP SEQUENCE" => (R(K::Sequence), Never),
        "ALTER SEQUENCE" => (R(K::Sequence), ByObject),
        "CREATE TRIGGER" | "ALTER TRIGGER" | "DROP TRIGGER" => (R(K::Trigger), Never),
        "CREATE VIEW"
        | "DROP VIEW"
        | "CREATE MATERIALIZED VIEW"
        | "DROP MATERIALIZED VIEW"
        | "REFRESH MATERIALIZED VIEW" => (R(K::View), Never),
        "ALTER VIEW" | "ALTER MATERIALIZED VIEW" => (R(K::View), ByObject),
        "CREATE RULE" | "ALTER RULE" | "DROP RULE" => (R(K::Rule), Never),
        "CREATE SCHEMA" | "ALTER SCHEMA" | "DROP SCHEMA" => (R(K::Schema), Never),
        "CREATE FUNCTION" | "ALTER FUNCTION" | "DROP FUNCTION" | "CREATE PROCEDURE"
        | "ALTER PROCEDURE" | "DROP PROCEDURE" | "CREATE ROUTINE" | "ALTER ROUTINE"
        | "DROP ROUTINE" | "CREATE AGGREGATE" | "ALTER AGGREGATE" | "DROP AGGREGATE" => {
            (R(K::Function), Never)
        }
        // The type system: how values are cast, collated, converted, compared and searched.
        "CREATE TYPE"
        | "ALTER TYPE"
        | "DROP TYPE"
        | "CREATE CAST"
        | "ALTER CAST"
        | "DROP CAST"
        | "CREATE COLLATION"
        | "ALTER COLLATION"
        | "DROP COLLATION"
        | "CREATE CONVERSION"
        | "ALTER CONVERSION"
        | "DROP CONVERSION"
        | "CREATE OPERATOR"
        | "ALTER OPERATOR"
        | "DROP OPERATOR"
        | "CREATE OPERATOR CLASS"
        | "ALTER OPERATOR CLASS"
        | "DROP OPERATOR CLASS"
        | "CREATE OPERATOR FAMILY"
        | "ALTER OPERATOR FAMILY"
        | "DROP OPERATOR FAMILY"
        | "CREATE TEXT SEARCH CONFIGURATION"
        | "ALTER TEXT SEARCH CONFIGURATION"
        | "DROP TEXT SEARCH CONFIGURATION"
        | "CREATE TEXT SEARCH DICTIONARY"
        | "ALTER TEXT SEARCH DICTIONARY"
        | "DROP TEXT SEARCH DICTIONARY"
        | "CREATE TEXT SEARCH PARSER"
        | "ALTER TEXT SEARCH PARSER"
        | "DROP TEXT SEARCH PARSER"
        | "CREATE TEXT SEARCH TEMPLATE"
        | "ALTER TEXT SEARCH TEMPLATE"
        | "DROP TEXT SEARCH TEMPLATE"
        | "CREATE TRANSFORM"
        | "ALTER TRANSFORM"
        | "DROP TRANSFORM" => (R(K::Type), Never),
        "CREATE DOMAIN" | "ALTER DOMAIN" | "DROP DOMAIN" => (R(K::Domain), Never),
        // Languages and access methods bind C handlers from a shared library, like the
        // extensions that normally create them.
        "CREATE EXTENSION"
        | "ALTER EXTENSION"
        | "DROP EXTENSION"
        | "CREATE LANGUAGE"
        | "ALTER LANGUAGE"
        | "DROP LANGUAGE"
        | "CREATE ACCESS METHOD"
        | "ALTER ACCESS METHOD"
        | "DROP ACCESS METHOD" => (R(K::Extension), Never),
        "COMMENT" | "SECURITY LABEL" | "GRANT" | "REVOKE" | "ALTER DEFAULT PRIVILEGES" => {
            (not(N::UnknownObjectType), ByObject)
        }
        "CREATE DATABASE" | "ALTER DATABASE" | "DROP DATABASE" | "CREATE ROLE" | "ALTER ROLE"
        | "DROP ROLE" | "GRANT ROLE" | "REVOKE ROLE" | "CREATE TABLESPACE" | "ALTER TABLESPACE"
        | "DROP TABLESPACE" | "ALTER SYSTEM" => (not(N::GlobalObject), Never),
        "DROP OWNED" | "REASSIGN OWNED" => (not(N::RoleWide), Never),
        "CREATE PUBLICATION"
        | "ALTER PUBLICATION"
        | "DROP PUBLICATION"
        | "CREATE SUBSCRIPTION"
        | "ALTER SUBSCRIPTION"
        | "DROP SUBSCRIPTION" => (not(N::Replication), Never),
        "CREATE EVENT TRIGGER" | "ALTER EVENT TRIGGER" | "DROP EVENT TRIGGER" => {
            (not(N::EventTrigger), Never)
        }
        "CREATE FOREIGN DATA WRAPPER"
        | "ALTER FOREIGN DATA WRAPPER"
        | "DROP FOREIGN DATA WRAPPER"
        | "CREATE SERVER"
        | "ALTER SERVER"
        | "DROP SERVER"
        | "CREATE USER MAPPING"
        | "ALTER USER MAPPING"
        | "DROP USER MAPPING" => (not(N::ForeignData), Never),
        // Made the same way on a node whose server of that name leads to the same data (the
        // user's promise in opting in); IMPORT FOREIGN SCHEMA asks that node's server.
        "CREATE FOREIGN TABLE"
        | "ALTER FOREIGN TABLE"
        | "DROP FOREIGN TABLE"
        | "IMPORT FOREIGN SCHEMA" => (R(K::Foreign), Never),
        "ALTER LARGE OBJECT" => (not(N::LargeObject), Never),
        "SELECT"
        | "SELECT FOR KEY SHARE"
        | "SELECT FOR NO KEY UPDATE"
        | "SELECT FOR SHARE"
        | "SELECT FOR UPDATE"
        | "INSERT"
        | "UPDATE"
        | "DELETE"
        | "MERGE"
        | "COPY"
        | "COPY FROM"
        | "TRUNCATE TABLE"
        | "EXPLAIN" => (not(N::Dml), Never),
        "BEGIN"
        | "START TRANSACTION"
        | "COMMIT"
        | "ROLLBACK"
        | "SAVEPOINT"
        | "RELEASE"
        | "PREPARE TRANSACTION"
        | "COMMIT PREPARED"
        | "ROLLBACK PREPARED"
        | "SET CONSTRAINTS"
        | "LOCK TABLE" => (not(N::TransactionControl), Never),
        "SET" | "RESET" | "SHOW" | "DISCARD" | "DISCARD ALL" | "DISCARD PLANS"
        | "DISCARD SEQUENCES" | "DISCARD TEMP" | "PREPARE" | "EXECUTE" | "DEALLOCATE"
        | "DEALLOCATE ALL" | "DECLARE CURSOR" | "FETCH" | "MOVE" | "CLOSE" | "CLOSE CURSOR"
        | "CLOSE CURSOR ALL" | "LISTEN" | "UNLISTEN" | "NOTIFY" | "LOAD"
        // 19's WAIT FOR LSN: the session waits until its server has replayed that far.
        | "WAIT" => {
            (not(N::Session), Never)
        }
        // REPACK: 19's successor of CLUSTER and VACUUM FULL.
        "VACUUM" | "ANALYZE" | "CLUSTER" | "REPACK" | "REINDEX" | "CHECKPOINT" => {
            (not(N::Maintenance), Never)
        }
        "DO" | "CALL" => (not(N::Procedural), Never),
        "???" => (not(N::UnknownTag), Never),
        _ => return None,
    })
}

/// The classification of an object type, or `None` when it is not recognised.
fn object(object_type: &str) -> Option<Classification> {
    let object_type = Normalized::new(object_type, Case::Lower)?;
    let object_type = object_type.as_str();
    relation(object_type)
        .or_else(|| object_type.strip_suffix(" column").and_then(relation))
        .or_else(|| other_object(object_type))
}

/// Relation types, as `pg_identify_object()` names them (alone, or followed by ` column`).
fn relation(object_type: &str) -> Option<Classification> {
    use Classification::Replicated as R;
    use DdlKind as K;

    Some(match object_type {
        // PostgreSQL 15 reports partitioned tables and indexes as plain `table` and `index`.
        "table" | "toast table" => R(K::Table),
        "index" => R(K::Index),
        "sequence" => R(K::Sequence),
        "view" | "materialized view" => R(K::View),
        "composite type" => R(K::Type),
        "foreign table" => R(K::Foreign),
        _ => return None,
    })
}

/// Every other object type: `pg_identify_object()`'s lower-case names, plus the upper-case
/// (and, for default privileges, plural) names `pg_event_trigger_ddl_commands()` gives for GRANT,
/// REVOKE and ALTER DEFAULT PRIVILEGES, seen here after case folding.
fn other_object(object_type: &str) -> Option<Classification> {
    use Classification::Replicated as R;
    use DdlKind as K;
    use NotReplicated as N;

    Some(match object_type {
        "tables" | "column" | "table constraint" | "default value" | "policy"
        | "statistics object" => R(K::Table),
        "sequences" => R(K::Sequence),
        "trigger" => R(K::Trigger),
        "rule" => R(K::Rule),
        "schema" | "schemas" => R(K::Schema),
        "function" | "functions" | "procedure" | "routine" | "aggregate" => R(K::Function),
        // Domains are reported as `type` by pg_identify_object(); only GRANT says `DOMAIN`.
        "type"
        | "types"
        | "cast"
        | "collation"
        | "conversion"
        | "operator"
        | "operator class"
        | "operator family"
        | "operator of access method"
        | "function of access method"
        | "text search configuration"
        | "text search dictionary"
        | "text search parser"
        | "text search template"
        | "transform" => R(K::Type),
        "domain" | "domain constraint" => R(K::Domain),
        "extension" | "language" | "access method" => R(K::Extension),
        "database" | "role" | "tablespace" | "parameter" | "parameter acl" => not(N::GlobalObject),
        "publication" | "publication relation" | "publication namespace" | "subscription" => {
            not(N::Replication)
        }
        "event trigger" => not(N::EventTrigger),
        "foreign-data wrapper"
        | "foreign data wrapper"
        | "server"
        | "foreign server"
        | "user mapping" => not(N::ForeignData),
        "large object" => not(N::LargeObject),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_dependent_tags_need_the_object() {
        for tag in [
            "COMMENT",
            "SECURITY LABEL",
            "GRANT",
            "REVOKE",
            "ALTER DEFAULT PRIVILEGES",
        ] {
            assert_eq!(
                entry(tag).map(|(_, refine)| refine),
                Some(Refine::ByObject),
                "{tag}"
            );
            assert_eq!(
                classify(tag),
                not(NotReplicated::UnknownObjectType),
                "{tag}"
            );
        }
    }

    #[test]
    fn only_relation_alters_follow_the_relation() {
        let refined: Vec<&str> = [
            "ALTER TABLE",
            "ALTER INDEX",
            "ALTER SEQUENCE",
            "ALTER VIEW",
            "ALTER MATERIALIZED VIEW",
            "ALTER FOREIGN TABLE",
            "ALTER TYPE",
            "ALTER DOMAIN",
            "CREATE INDEX",
        ]
        .into_iter()
        .filter(|tag| matches!(entry(tag), Some((_, Refine::ByObject))))
        .collect();
        // ALTER FOREIGN TABLE and ALTER TYPE are checked by PostgreSQL to name their own
        // relation kind, so only the others can meet a different one.
        assert_eq!(
            refined,
            [
                "ALTER TABLE",
                "ALTER INDEX",
                "ALTER SEQUENCE",
                "ALTER VIEW",
                "ALTER MATERIALIZED VIEW"
            ]
        );
    }

    #[test]
    fn column_suffix_only_follows_relations() {
        assert_eq!(
            object("view column"),
            Some(Classification::Replicated(DdlKind::View))
        );
        assert_eq!(object("schema column"), None);
        assert_eq!(object("column column"), None);
        assert_eq!(
            object("column"),
            Some(Classification::Replicated(DdlKind::Table))
        );
    }
}
