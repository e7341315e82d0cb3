//! The SQL functions that change a publication's DDL configuration in
//! `ddl_sync.publication_sync`.
//!
//! One row per (publication, level, target): the publication itself (`'p'`, its DDL kinds), a
//! schema (`'n'`), a relation (`'r'`) or any other object (`'o'`, identified like `pg_depend`
//! does, by its catalog in `pfsyncrelid` and its OID in `pfsyncobjid`). Each `add_*` call and
//! `set_publication_ddl` upserts its row and changes what it is given: `ddl` always, `rules`
//! unless NULL (`''` removes them), never `enabled` (new rows are enabled). So
//! `ALTER PUBLICATION p SET (ddl = '...')`, which the capture hook turns into
//! `set_publication_ddl(p, ddl)`, keeps the publication's rules. Every function checks that the
//! caller may change the publication before writing (see [`crate::privilege`]).

use ddl_filter::{classify_object, Classification};
use ddl_server::errors::OrInternal;
use pgrx::prelude::*;
use pgrx::PgRelation;

use crate::privilege::{c_string, owned_publication, owned_publication_oid, AsCatalogOwner};
use crate::publisher::kinds::{ddl_mask, rules_text};

/// `pfsynckind`: what a row is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Publication,
    Schema,
    Relation,
    Object,
}

impl Level {
    fn kind(self) -> i8 {
        let kind = match self {
            Level::Publication => b'p',
            Level::Schema => b'n',
            Level::Relation => b'r',
            Level::Object => b'o',
        };
        kind as i8
    }
}

/// The rest of a row's unique key: `pfsyncnspid`, `pfsyncrelid`, `pfsyncobjid` (0 when unused;
/// `pfsyncsubid` is always 0 for now).
#[derive(Clone, Copy, Debug)]
struct Target {
    level: Level,
    nspid: pg_sys::Oid,
    relid: pg_sys::Oid,
    objid: pg_sys::Oid,
}

impl Target {
    fn new(level: Level) -> Target {
        Target {
            level,
            nspid: pg_sys::InvalidOid,
            relid: pg_sys::InvalidOid,
            objid: pg_sys::InvalidOid,
        }
    }
}

/// Sets the DDL kinds (and rules) of a publication: its `'p'` row, which applies to every
/// object without a more specific row. Returns the row's OID.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn set_publication_ddl(
    publication: Option<&str>,
    ddl: Option<&str>,
    rules: default!(Option<&str>, "NULL"),
) -> pg_sys::Oid {
    let pubid = owned_publication(required("publication", publication));
    store(pubid, Target::new(Level::Publication), ddl, rules)
}

/// Adds or updates the DDL configuration of a publication for the objects of one schema.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn add_schema_rule(
    publication: Option<&str>,
    schema: Option<&str>,
    ddl: default!(Option<&str>, "'all'"),
    rules: default!(Option<&str>, "NULL"),
) -> pg_sys::Oid {
    let pubid = owned_publication(required("publication", publication));
    let target = schema_target(required("schema", schema));
    store(pubid, target, ddl, rules)
}

/// Adds or updates the DDL configuration of a publication for one relation (table, partitioned
/// table, view, materialized view, sequence, index).
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn add_relation_rule(
    publication: Option<&str>,
    relation: Option<PgRelation>,
    ddl: default!(Option<&str>, "'all'"),
    rules: default!(Option<&str>, "NULL"),
) -> pg_sys::Oid {
    let pubid = owned_publication(required("publication", publication));
    let relation = required("relation", relation);
    check_replicated(pg_sys::RelationRelationId, relation.oid());
    let target = Target {
        relid: relation.oid(),
        ..Target::new(Level::Relation)
    };
    store(pubid, target, ddl, rules)
}

/// Adds or updates the DDL configuration of a publication for one object that is neither a
/// schema nor a relation (a function, type, domain, extension, trigger, policy...), named by the
/// system catalog that holds it and its OID, as in `pg_depend` or `pg_get_object_address()`.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn add_object_rule(
    publication: Option<&str>,
    object_class: Option<PgRelation>,
    object_id: Option<pg_sys::Oid>,
    ddl: default!(Option<&str>, "'all'"),
    rules: default!(Option<&str>, "NULL"),
) -> pg_sys::Oid {
    let pubid = owned_publication(required("publication", publication));
    let class = required("object_class", object_class);
    let objid = required("object_id", object_id);
    let target = object_target(&class, objid);
    store(pubid, target, ddl, rules)
}

/// Enables or disables one row (by the OID the `add_*` functions and `list_rules` give). A
/// disabled row is as if absent: the next less specific row decides.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn set_rule_enabled(rule: Option<pg_sys::Oid>, enabled: Option<bool>) {
    let rule = required("rule", rule);
    let enabled = required("enabled", enabled);
    let pubid = rule_publication(rule);
    owned_publication_oid(pubid);
    let _owner = AsCatalogOwner::enter();
    let changed = Spi::get_one_with_args::<i64>(
        "WITH changed AS (
             UPDATE ddl_sync.publication_sync SET pfsyncenabled = $2 WHERE oid = $1 RETURNING 1
         )
         SELECT count(*) FROM changed",
        &[rule.into(), enabled.into()],
    );
    if changed.or_internal("cannot update ddl_sync.publication_sync") != Some(1) {
        missing_rule(rule);
    }
    own_tables_follow(pubid);
}

/// Removes one row (by OID). Removing the `'p'` row leaves the publication with no DDL kinds of
/// its own.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn remove_rule(rule: Option<pg_sys::Oid>) {
    let rule = required("rule", rule);
    let pubid = rule_publication(rule);
    owned_publication_oid(pubid);
    let _owner = AsCatalogOwner::enter();
    let removed = Spi::get_one_with_args::<i64>(
        "WITH removed AS (
             DELETE FROM ddl_sync.publication_sync WHERE oid = $1 RETURNING 1
         )
         SELECT count(*) FROM removed",
        &[rule.into()],
    );
    if removed.or_internal("cannot delete from ddl_sync.publication_sync") != Some(1) {
        missing_rule(rule);
    }
    own_tables_follow(pubid);
}

/// The publication's exceptions of the extension's own tables follow whether it replicates DDL
/// now (`ddl_sync.keep_own_tables_out`: PostgreSQL 19's `FOR ALL TABLES EXCEPT`, nothing
/// before): `ddl_sync.events` is published exactly while some row of it takes DDL. Run as the
/// catalog's owner (the caller's [`AsCatalogOwner`]), who may change a `FOR ALL TABLES`
/// publication; only the exceptions of the extension's own tables change.
fn own_tables_follow(pubid: pg_sys::Oid) {
    Spi::run_with_args(
        "SELECT ddl_sync.keep_own_tables_out(pubname, true)
           FROM pg_catalog.pg_publication WHERE oid = $1",
        &[pubid.into()],
    )
    .or_internal("cannot keep ddl_sync's tables out of the publication");
}

/// Validates `ddl` and `rules` and upserts the row of `target`; returns its OID. `rules` NULL
/// keeps the row's rules (none for a new row). The caller has checked ownership and holds the
/// publication's lock, so nothing else writes this key meanwhile.
fn store(
    pubid: pg_sys::Oid,
    target: Target,
    ddl: Option<&str>,
    rules: Option<&str>,
) -> pg_sys::Oid {
    let mask = ddl_mask(required("ddl", ddl));
    // Outer None: keep; Some(None): no rules.
    let rules = rules.map(rules_text);

    let _owner = AsCatalogOwner::enter();
    let key = [
        pubid.into(),
        target.level.kind().into(),
        oid_or_zero(target.nspid),
        oid_or_zero(target.relid),
        oid_or_zero(target.objid),
    ];
    let existing = Spi::get_one_with_args::<pg_sys::Oid>(
        "SELECT (SELECT oid FROM ddl_sync.publication_sync
                 WHERE pfsyncpubid = $1 AND pfsynckind = $2 AND pfsyncnspid = $3::oid
                   AND pfsyncrelid = $4::oid AND pfsyncobjid = $5::oid AND pfsyncsubid = 0)",
        &key,
    )
    .or_internal("cannot read ddl_sync.publication_sync");
    let stored = match existing {
        Some(row) => Spi::get_one_with_args::<pg_sys::Oid>(
            "UPDATE ddl_sync.publication_sync
             SET pfsyncddl = $2, pfsyncextra = CASE WHEN $4 THEN $3 ELSE pfsyncextra END
             WHERE oid = $1 RETURNING oid",
            &[
                row.into(),
                mask.into(),
                rules.clone().flatten().into(),
                rules.is_some().into(),
            ],
        ),
        None => {
            let [pubid, kind, nspid, relid, objid] = key;
            Spi::get_one_with_args::<pg_sys::Oid>(
                "INSERT INTO ddl_sync.publication_sync
                     (pfsyncpubid, pfsynckind, pfsyncnspid, pfsyncrelid, pfsyncobjid,
                      pfsyncddl, pfsyncextra)
                 VALUES ($1, $2, $3::oid, $4::oid, $5::oid, $6, $7) RETURNING oid",
                &[
                    pubid,
                    kind,
                    nspid,
                    relid,
                    objid,
                    mask.into(),
                    rules.flatten().into(),
                ],
            )
        }
    };
    let stored = stored
        .or_internal("cannot write ddl_sync.publication_sync")
        .or_internal("ddl_sync.publication_sync returned no OID for the row it wrote");
    own_tables_follow(pubid);
    stored
}

/// An OID as an SPI argument that keeps 0 (InvalidOid) as 0: pgrx passes an invalid
/// `pg_sys::Oid` as NULL, but the unused key columns hold 0. Cast back with `$n::oid`.
fn oid_or_zero(oid: pg_sys::Oid) -> pgrx::datum::DatumWithOid<'static> {
    i64::from(oid.to_u32()).into()
}

/// The publication of a row, or an error when there is no such row.
fn rule_publication(rule: pg_sys::Oid) -> pg_sys::Oid {
    Spi::get_one_with_args::<pg_sys::Oid>(
        "SELECT (SELECT pfsyncpubid FROM ddl_sync.publication_sync WHERE oid = $1)",
        &[rule.into()],
    )
    .or_internal("cannot read ddl_sync.publication_sync")
    .unwrap_or_else(|| missing_rule(rule))
}

fn missing_rule(rule: pg_sys::Oid) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
        format!("DDL rule {rule} does not exist")
    );
}

/// A schema by name, locked against a concurrent DROP SCHEMA.
fn schema_target(name: &str) -> Target {
    let cname = c_string(name);
    // SAFETY: a lookup by a NUL-terminated name, which raises `schema "x" does not exist`
    // itself, then a lock and a lookup by OID, in the function's transaction.
    let nspid = unsafe {
        let nspid = pg_sys::get_namespace_oid(cname.as_ptr(), false);
        pg_sys::LockDatabaseObject(
            pg_sys::NamespaceRelationId,
            nspid,
            0,
            pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        );
        if pg_sys::get_namespace_name(nspid).is_null() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_SCHEMA_NAME,
                format!("schema \"{name}\" does not exist")
            );
        }
        nspid
    };
    if let Some(why) = never_replicated_schema(name) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("DDL in schema \"{name}\" is never replicated ({why} schema)")
        );
    }
    Target {
        nspid,
        ..Target::new(Level::Schema)
    }
}

/// The system catalogs whose objects may have a row of their own (kind `'o'`): those holding
/// objects of a replicated DDL kind, other than schemas and relations. By kind: function;
/// type and the type system; what hangs off a table (constraints, defaults, policies,
/// statistics); triggers; rules; extensions, languages and access methods.
pub(crate) const OBJECT_CATALOGS: [&str; 24] = [
    "pg_proc",
    "pg_type",
    "pg_cast",
    "pg_collation",
    "pg_conversion",
    "pg_operator",
    "pg_opclass",
    "pg_opfamily",
    "pg_amop",
    "pg_amproc",
    "pg_ts_config",
    "pg_ts_dict",
    "pg_ts_parser",
    "pg_ts_template",
    "pg_transform",
    "pg_constraint",
    "pg_attrdef",
    "pg_policy",
    "pg_statistic_ext",
    "pg_trigger",
    "pg_rewrite",
    "pg_extension",
    "pg_language",
    "pg_am",
];

/// An object of one of the [`OBJECT_CATALOGS`], locked against a concurrent DROP.
fn object_target(class: &PgRelation, objid: pg_sys::Oid) -> Target {
    let classid = class.oid();
    let name = format!("{}.{}", class.namespace(), class.name());
    if classid == pg_sys::RelationRelationId {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            "relations have rules of their own: use ddl_sync.add_relation_rule"
        );
    }
    if classid == pg_sys::NamespaceRelationId {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            "schemas have rules of their own: use ddl_sync.add_schema_rule"
        );
    }
    // SAFETY: compares the OID with a constant (FirstUnpinnedObjectId): no catalog access.
    let catalog = unsafe { pg_sys::IsCatalogRelationOid(classid) } && class.is_table();
    if !catalog || !OBJECT_CATALOGS.contains(&class.name()) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!(
                "{name} is not a catalog of objects with replicated DDL (valid: {})",
                OBJECT_CATALOGS.join(", ")
            )
        );
    }
    // SAFETY: a lock needs only the IDs (the object need not exist), held to the end of the
    // function's transaction.
    unsafe {
        pg_sys::LockDatabaseObject(
            classid,
            objid,
            0,
            pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        )
    };
    check_replicated(classid, objid);
    Target {
        relid: classid,
        objid,
        ..Target::new(Level::Object)
    }
}

/// Refuses an object that does not exist or whose DDL is never captured: objects in system or
/// temporary schemas, and the kinds ddl-filter never replicates (e.g. foreign tables).
fn check_replicated(classid: pg_sys::Oid, objid: pg_sys::Oid) {
    let (object_type, schema, identity) = Spi::get_three_with_args::<String, String, String>(
        "SELECT type, schema, identity FROM pg_catalog.pg_identify_object($1, $2, 0)",
        &[classid.into(), objid.into()],
    )
    .or_internal("pg_identify_object failed");
    let object_type = object_type.unwrap_or_default();
    let Some(identity) = identity else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("{object_type} with OID {objid} does not exist")
        );
    };
    let why = match schema.as_deref().and_then(never_replicated_schema) {
        Some(why) => format!("{why} object"),
        // The tag only asks ddl-filter to let the object type decide.
        None => match classify_object("COMMENT", &object_type) {
            Classification::Replicated(_) => return,
            Classification::NotReplicated(why) => why.to_string(),
        },
    };
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("DDL on {object_type} {identity} is never replicated ({why})")
    );
}

/// `Some("system")` or `Some("temporary")` for the schemas whose objects the capture never
/// sends. By name: the `pg_` prefix is reserved, so no user schema can take these names
/// (`pg_identify_object()` calls every temporary schema `pg_temp`).
fn never_replicated_schema(name: &str) -> Option<&'static str> {
    match name {
        "pg_catalog" | "pg_toast" | "information_schema" => Some("system"),
        _ if name == "pg_temp"
            || name.starts_with("pg_temp_")
            || name.starts_with("pg_toast_temp_") =>
        {
            Some("temporary")
        }
        _ => None,
    }
}

/// The value of an argument that must not be NULL (the functions are not STRICT because `rules`
/// may be NULL, and a NULL elsewhere must not silently do nothing).
fn required<T>(argument: &str, value: Option<T>) -> T {
    value.unwrap_or_else(|| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            format!("{argument} must not be NULL")
        );
    })
}
