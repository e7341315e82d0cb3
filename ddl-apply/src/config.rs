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
use pgrx::prelude::*;
use pgrx::PgRelation;

use crate::kinds::{ddl_mask, rules_text};
use crate::privilege::{c_string, owned_publication, owned_publication_oid, AsCatalogOwner};

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
    owned_publication_oid(rule_publication(rule));
    let _owner = AsCatalogOwner::enter();
    let changed = Spi::get_one_with_args::<i64>(
        "WITH changed AS (
             UPDATE ddl_sync.publication_sync SET pfsyncenabled = $2 WHERE oid = $1 RETURNING 1
         )
         SELECT count(*) FROM changed",
        &[rule.into(), enabled.into()],
    );
    if changed.expect("UPDATE ran") != Some(1) {
        missing_rule(rule);
    }
}

/// Removes one row (by OID). Removing the `'p'` row leaves the publication with no DDL kinds of
/// its own.
#[pg_extern]
#[search_path(pg_catalog, pg_temp)]
fn remove_rule(rule: Option<pg_sys::Oid>) {
    let rule = required("rule", rule);
    owned_publication_oid(rule_publication(rule));
    let _owner = AsCatalogOwner::enter();
    let removed = Spi::get_one_with_args::<i64>(
        "WITH removed AS (
             DELETE FROM ddl_sync.publication_sync WHERE oid = $1 RETURNING 1
         )
         SELECT count(*) FROM removed",
        &[rule.into()],
    );
    if removed.expect("DELETE ran") != Some(1) {
        missing_rule(rule);
    }
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
    .expect("SELECT ran");
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
    stored
        .expect("the row was written")
        .expect("RETURNING oid is never NULL")
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
    .expect("SELECT ran")
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
    // SAFETY: catalog calls; get_namespace_oid raises `schema "x" does not exist` itself.
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
const OBJECT_CATALOGS: [&str; 24] = [
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
    // SAFETY: an OID test.
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
    // SAFETY: takes a lock; the object need not exist for that.
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
    .expect("pg_identify_object ran");
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

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{error_of, install_error_of, rows};

    fn one<T: FromDatum + IntoDatum>(sql: &str) -> Option<T> {
        Spi::get_one::<T>(sql).expect("query ran")
    }

    fn config(publication: &str) -> Vec<Vec<Option<String>>> {
        rows(&format!(
            "SELECT level, target_type, target, enabled::text, ddl, rules
             FROM ddl_sync.list_rules('{publication}')"
        ))
    }

    fn line(fields: [Option<&str>; 6]) -> Vec<Option<String>> {
        fields.iter().map(|f| f.map(str::to_owned)).collect()
    }

    #[pg_test]
    fn publication_ddl_is_one_row_updated_in_place() {
        Spi::run("CREATE PUBLICATION ddl_sync_c_pub").expect("publication");
        let first = one::<pg_sys::Oid>(
            "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_pub', 'table, index')",
        );
        let again = one::<pg_sys::Oid>(
            "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_pub', 'TABLE,view',
                                                 E'exclude schema audit # kept home\\n')",
        );
        assert!(first.is_some());
        assert_eq!(first, again);
        assert_eq!(
            rows(
                "SELECT pfsynckind::text, pfsyncnspid::text, pfsyncrelid::text,
                        pfsyncobjid::text, pfsyncsubid::text, pfsyncenabled::text,
                        pfsyncddl::text, pfsyncextra
                 FROM ddl_sync.publication_sync
                 WHERE pfsyncpubid = (SELECT oid FROM pg_publication WHERE pubname = 'ddl_sync_c_pub')"
            ),
            vec![["p", "0", "0", "0", "0", "true", "17", "exclude schema = 'audit'"]
                .map(|s| Some(s.to_owned()))
                .to_vec()]
        );
        // What ALTER PUBLICATION ... SET (ddl = ...) does: new kinds, the rules stay.
        Spi::run("SELECT ddl_sync.set_publication_ddl('ddl_sync_c_pub', 'none')").expect("none");
        assert_eq!(
            config("ddl_sync_c_pub"),
            vec![line([
                Some("publication"),
                None,
                None,
                Some("true"),
                Some("none"),
                Some("exclude schema = 'audit'")
            ])]
        );
        // Empty rule text (or only comments) removes the rules.
        Spi::run("SELECT ddl_sync.set_publication_ddl('ddl_sync_c_pub', 'all', '# none')")
            .expect("no rules");
        assert_eq!(
            config("ddl_sync_c_pub"),
            vec![line([
                Some("publication"),
                None,
                None,
                Some("true"),
                Some("all"),
                None
            ])]
        );
    }

    #[pg_test]
    fn every_level_has_its_row_and_the_view_says_it_in_words() {
        Spi::run(
            "CREATE SCHEMA ddl_sync_c_app;
             CREATE TABLE ddl_sync_c_app.orders (id int);
             CREATE INDEX orders_id ON ddl_sync_c_app.orders (id);
             CREATE FUNCTION ddl_sync_c_app.total(int) RETURNS int LANGUAGE sql AS 'SELECT $1';
             CREATE DOMAIN ddl_sync_c_app.money_amount AS numeric;
             CREATE PUBLICATION ddl_sync_c_words FOR TABLE ddl_sync_c_app.orders;",
        )
        .expect("set up");
        Spi::run(
            "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_words', 'table, index, function');
             SELECT ddl_sync.add_schema_rule('ddl_sync_c_words', 'ddl_sync_c_app',
                                             rules => E'exclude tag = ''GRANT''\\nexclude tag = ''REVOKE''');
             SELECT ddl_sync.add_relation_rule('ddl_sync_c_words', 'ddl_sync_c_app.orders', 'table');
             SELECT ddl_sync.add_relation_rule('ddl_sync_c_words', 'ddl_sync_c_app.orders_id', 'none');
             SELECT ddl_sync.add_object_rule('ddl_sync_c_words', 'pg_proc',
                                             'ddl_sync_c_app.total(int)'::regprocedure, 'function',
                                             'exclude sql ~* ''security definer''');
             SELECT ddl_sync.add_object_rule('ddl_sync_c_words', 'pg_type',
                                             'ddl_sync_c_app.money_amount'::regtype, 'domain');",
        )
        .expect("configured");
        assert_eq!(
            config("ddl_sync_c_words"),
            vec![
                line([
                    Some("publication"),
                    None,
                    None,
                    Some("true"),
                    Some("table, index, function"),
                    None
                ]),
                line([
                    Some("schema"),
                    Some("schema"),
                    Some("ddl_sync_c_app"),
                    Some("true"),
                    Some("all"),
                    Some("exclude tag = 'GRANT'\nexclude tag = 'REVOKE'"),
                ]),
                line([
                    Some("relation"),
                    Some("table"),
                    Some("ddl_sync_c_app.orders"),
                    Some("true"),
                    Some("table"),
                    None,
                ]),
                line([
                    Some("relation"),
                    Some("index"),
                    Some("ddl_sync_c_app.orders_id"),
                    Some("true"),
                    Some("none"),
                    None,
                ]),
                line([
                    Some("object"),
                    Some("type"),
                    Some("ddl_sync_c_app.money_amount"),
                    Some("true"),
                    Some("domain"),
                    None,
                ]),
                line([
                    Some("object"),
                    Some("function"),
                    Some("ddl_sync_c_app.total(integer)"),
                    Some("true"),
                    Some("function"),
                    Some("exclude sql ~* 'security definer'"),
                ]),
            ]
        );
        // The view has the same lines, with the publication and the row OID.
        assert_eq!(
            one::<i64>(
                "SELECT count(*) FROM ddl_sync.publication_ddl_config c
                 JOIN ddl_sync.list_rules('ddl_sync_c_words') l USING (rule)
                 WHERE c.publication = 'ddl_sync_c_words'
                   AND (c.level, c.target_type, c.target, c.enabled, c.ddl, c.rules)
                       IS NOT DISTINCT FROM (l.level, l.target_type, l.target, l.enabled, l.ddl, l.rules)"
            ),
            Some(6)
        );
        // The object row names its catalog in pfsyncrelid, like pg_depend.classid.
        assert_eq!(
            one::<bool>(
                "SELECT pfsyncrelid = 'pg_proc'::regclass
                        AND pfsyncobjid = 'ddl_sync_c_app.total(int)'::regprocedure
                 FROM ddl_sync.publication_sync WHERE pfsynckind = 'o' AND pfsyncddl = 128"
            ),
            Some(true)
        );
    }

    #[pg_test]
    fn add_functions_upsert_and_keep_the_enabled_flag() {
        Spi::run("CREATE SCHEMA ddl_sync_c_up; CREATE PUBLICATION ddl_sync_c_up;").expect("set up");
        let add = |ddl: &str, rules: &str| {
            one::<pg_sys::Oid>(&format!(
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_up', 'ddl_sync_c_up', {ddl}, {rules})"
            ))
            .expect("row oid")
        };
        let rule = add("'table'", "'exclude schema x'");
        Spi::run(&format!("SELECT ddl_sync.set_rule_enabled({rule}, false)")).expect("disable");
        // Same key, same row: the kinds change, NULL rules keep the rules, enabled stays.
        assert_eq!(add("'index'", "NULL"), rule);
        let schema_line = |enabled, ddl, rules| {
            line([
                Some("schema"),
                Some("schema"),
                Some("ddl_sync_c_up"),
                Some(enabled),
                Some(ddl),
                rules,
            ])
        };
        assert_eq!(
            config("ddl_sync_c_up"),
            vec![schema_line("false", "index", Some("exclude schema = 'x'"))]
        );
        assert_eq!(add("'all'", "''"), rule);
        assert_eq!(
            config("ddl_sync_c_up"),
            vec![schema_line("false", "all", None)]
        );
        // ddl left out: 'all'.
        assert_eq!(
            one::<pg_sys::Oid>(
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_up', 'ddl_sync_c_up',
                                                 rules => 'include tag = ''CREATE TABLE''')"
            ),
            Some(rule)
        );
        assert_eq!(
            config("ddl_sync_c_up"),
            vec![schema_line(
                "false",
                "all",
                Some("include tag = 'CREATE TABLE'")
            )]
        );
        Spi::run(&format!("SELECT ddl_sync.set_rule_enabled({rule}, true)")).expect("enable");
        assert_eq!(config("ddl_sync_c_up")[0][3].as_deref(), Some("true"));

        Spi::run(&format!("SELECT ddl_sync.remove_rule({rule})")).expect("remove");
        assert!(config("ddl_sync_c_up").is_empty());
        install_error_of();
        assert_eq!(
            error_of(&format!("SELECT ddl_sync.remove_rule({rule})")),
            Some(format!("42704: DDL rule {rule} does not exist"))
        );
        assert_eq!(
            error_of(&format!("SELECT ddl_sync.set_rule_enabled({rule}, true)")),
            Some(format!("42704: DDL rule {rule} does not exist"))
        );
    }

    #[pg_test]
    fn the_owner_and_its_members_may_configure_others_may_not() {
        install_error_of();
        Spi::run(
            "CREATE ROLE ddl_sync_c_owner;
             CREATE ROLE ddl_sync_c_member IN ROLE ddl_sync_c_owner;
             CREATE ROLE ddl_sync_c_other;
             CREATE SCHEMA ddl_sync_c_own;
             CREATE TABLE public.ddl_sync_c_own_t (id int);
             CREATE PUBLICATION ddl_sync_c_owned;
             ALTER PUBLICATION ddl_sync_c_owned OWNER TO ddl_sync_c_owner;",
        )
        .expect("set up");

        Spi::run("SET ROLE ddl_sync_c_owner").expect("owner");
        let rule =
            one::<pg_sys::Oid>("SELECT ddl_sync.set_publication_ddl('ddl_sync_c_owned', 'table')")
                .expect("the owner writes through the function");
        Spi::run("RESET ROLE").expect("reset");

        Spi::run("SET ROLE ddl_sync_c_member").expect("member");
        assert_eq!(
            error_of("SELECT ddl_sync.add_relation_rule('ddl_sync_c_owned', 'ddl_sync_c_own_t')"),
            None
        );
        // The write ran as the catalog's owner; the caller is the caller again.
        assert_eq!(
            one::<String>("SELECT current_user::text").as_deref(),
            Some("ddl_sync_c_member")
        );
        Spi::run("RESET ROLE").expect("reset");

        Spi::run("SET ROLE ddl_sync_c_other").expect("other");
        let refused = Some("42501: must be owner of publication ddl_sync_c_owned".to_owned());
        for call in [
            "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_owned', 'all')".to_owned(),
            "SELECT ddl_sync.add_schema_rule('ddl_sync_c_owned', 'ddl_sync_c_own')".to_owned(),
            "SELECT ddl_sync.add_relation_rule('ddl_sync_c_owned', 'ddl_sync_c_own_t')".to_owned(),
            "SELECT ddl_sync.add_object_rule('ddl_sync_c_owned', 'pg_namespace', 0)".to_owned(),
            format!("SELECT ddl_sync.set_rule_enabled({rule}, false)"),
            format!("SELECT ddl_sync.remove_rule({rule})"),
        ] {
            assert_eq!(error_of(&call), refused, "{call}");
        }
        // Reading is open to all.
        assert_eq!(
            rows("SELECT ddl FROM ddl_sync.list_rules('ddl_sync_c_owned') WHERE level = 'publication'"),
            vec![vec![Some("table".to_owned())]]
        );
        Spi::run("RESET ROLE").expect("reset");
        assert_eq!(config("ddl_sync_c_owned").len(), 2);
    }

    #[pg_test(error = "must be owner of publication ddl_sync_c_theirs")]
    fn a_non_owner_is_refused() {
        Spi::run(
            "CREATE ROLE ddl_sync_c_stranger;
             CREATE PUBLICATION ddl_sync_c_theirs;
             SET ROLE ddl_sync_c_stranger;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_c_theirs', 'table');",
        )
        .expect("refused");
    }

    #[pg_test(error = "publication \"ddl_sync_c_nowhere\" does not exist")]
    fn an_unknown_publication_is_refused() {
        Spi::run("SELECT ddl_sync.set_publication_ddl('ddl_sync_c_nowhere', 'table')")
            .expect("refused");
    }

    #[pg_test(
        error = "unknown ddl kind \"tabel\" (valid: table, index, sequence, trigger, view, rule, schema, function, type, domain, extension, all, none)"
    )]
    fn an_unknown_kind_is_refused() {
        Spi::run(
            "CREATE PUBLICATION ddl_sync_c_typo;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_c_typo', 'table, tabel');",
        )
        .expect("refused");
    }

    #[pg_test(
        error = "unknown ddl kind \"\" (valid: table, index, sequence, trigger, view, rule, schema, function, type, domain, extension, all, none)"
    )]
    fn an_empty_kind_is_refused() {
        Spi::run(
            "CREATE PUBLICATION ddl_sync_c_empty;
             SELECT ddl_sync.add_schema_rule('ddl_sync_c_empty', 'public', 'table,');",
        )
        .expect("refused");
    }

    #[pg_test(
        error = "line 2, column 9: expected kind, tag, schema, identity, sql or filter, found \"schemas\""
    )]
    fn bad_rules_text_is_refused() {
        Spi::run(
            "CREATE PUBLICATION ddl_sync_c_rules;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_c_rules', 'all',
                                                 E'exclude schema audit\\nexclude schemas x');",
        )
        .expect("refused");
    }

    #[pg_test]
    fn configuration_errors_name_the_problem_with_a_sqlstate() {
        install_error_of();
        Spi::run(
            "CREATE PUBLICATION ddl_sync_c_err;
             CREATE TEMP TABLE ddl_sync_c_temp (id int);
             CREATE TABLE public.ddl_sync_c_plain (id int);
             CREATE FOREIGN DATA WRAPPER ddl_sync_c_fdw;
             CREATE SERVER ddl_sync_c_server FOREIGN DATA WRAPPER ddl_sync_c_fdw;
             CREATE FOREIGN TABLE public.ddl_sync_c_remote (id int) SERVER ddl_sync_c_server;",
        )
        .expect("set up");
        let cases = [
            (
                "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_err', 'tabel')",
                "22023: unknown ddl kind \"tabel\" (valid: table, index, sequence, trigger, view, \
                 rule, schema, function, type, domain, extension, all, none)",
            ),
            (
                "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_err', 'all', 'exclude schemas x')",
                "42601: line 1, column 9: expected kind, tag, schema, identity, sql or filter, \
                 found \"schemas\"",
            ),
            (
                "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_err', 'all', 'exclude sql ~ ''(''')",
                "22023: line 1, column 15: invalid regular expression \"(\": regex parse error:\n    (\n    ^\nerror: unclosed group",
            ),
            (
                "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_nowhere', 'all')",
                "42704: publication \"ddl_sync_c_nowhere\" does not exist",
            ),
            (
                "SELECT ddl_sync.set_publication_ddl(NULL, 'all')",
                "22004: publication must not be NULL",
            ),
            (
                "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_err', NULL)",
                "22004: ddl must not be NULL",
            ),
            (
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_err', 'ddl_sync_c_none')",
                "3F000: schema \"ddl_sync_c_none\" does not exist",
            ),
            (
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_err', 'pg_catalog')",
                "22023: DDL in schema \"pg_catalog\" is never replicated (system schema)",
            ),
            (
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_err', 'information_schema')",
                "22023: DDL in schema \"information_schema\" is never replicated (system schema)",
            ),
            (
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_err', 'pg_toast')",
                "22023: DDL in schema \"pg_toast\" is never replicated (system schema)",
            ),
            (
                "SELECT ddl_sync.add_relation_rule('ddl_sync_c_err', 'pg_class')",
                "22023: DDL on table pg_catalog.pg_class is never replicated (system object)",
            ),
            (
                "SELECT ddl_sync.add_relation_rule('ddl_sync_c_err', 'ddl_sync_c_temp')",
                "22023: DDL on table pg_temp.ddl_sync_c_temp is never replicated (temporary object)",
            ),
            (
                "SELECT ddl_sync.add_relation_rule('ddl_sync_c_err', NULL)",
                "22004: relation must not be NULL",
            ),
            (
                "SELECT ddl_sync.add_schema_rule('ddl_sync_c_err', 'public', NULL)",
                "22004: ddl must not be NULL",
            ),
            (
                "SELECT ddl_sync.add_object_rule('ddl_sync_c_err', 'pg_class', 'public.ddl_sync_c_plain'::regclass)",
                "42809: relations have rules of their own: use ddl_sync.add_relation_rule",
            ),
            (
                "SELECT ddl_sync.add_object_rule('ddl_sync_c_err', 'pg_namespace', 'public'::regnamespace)",
                "42809: schemas have rules of their own: use ddl_sync.add_schema_rule",
            ),
            (
                "SELECT ddl_sync.add_object_rule('ddl_sync_c_err', 'pg_proc', 4294967295)",
                "42704: routine with OID 4294967295 does not exist",
            ),
            (
                "SELECT ddl_sync.add_object_rule('ddl_sync_c_err', 'pg_proc', 'pg_catalog.now()'::regprocedure)",
                "22023: DDL on function pg_catalog.now() is never replicated (system object)",
            ),
            (
                "SELECT ddl_sync.add_relation_rule('ddl_sync_c_err', 'public.ddl_sync_c_remote')",
                "22023: DDL on foreign table public.ddl_sync_c_remote is never replicated \
                 (foreign data)",
            ),
            (
                "SELECT ddl_sync.set_rule_enabled(4294967295, true)",
                "42704: DDL rule 4294967295 does not exist",
            ),
            (
                "SELECT * FROM ddl_sync.list_rules('ddl_sync_c_nowhere')",
                "42704: publication \"ddl_sync_c_nowhere\" does not exist",
            ),
        ];
        // Objects of catalogs outside the list: plain tables, and catalogs of objects whose DDL
        // is never replicated (publications, event triggers, databases...).
        let not_a_catalog = |name: &str| {
            format!(
                "42809: {name} is not a catalog of objects with replicated DDL (valid: {})",
                super::OBJECT_CATALOGS.join(", ")
            )
        };
        let other_catalogs = [
            ("public.ddl_sync_c_plain", "public.ddl_sync_c_plain"),
            ("pg_publication", "pg_catalog.pg_publication"),
            ("pg_event_trigger", "pg_catalog.pg_event_trigger"),
            ("pg_database", "pg_catalog.pg_database"),
            ("pg_statistic", "pg_catalog.pg_statistic"),
        ]
        .map(|(class, name)| {
            (
                format!("SELECT ddl_sync.add_object_rule('ddl_sync_c_err', '{class}', 1)"),
                not_a_catalog(name),
            )
        });
        let mut mismatches = Vec::new();
        let cases = cases
            .iter()
            .map(|&(call, expected)| (call, expected))
            .chain(other_catalogs.iter().map(|(c, e)| (c.as_str(), e.as_str())));
        for (call, expected) in cases {
            let got = error_of(call);
            if got.as_deref() != Some(expected) {
                mismatches.push(format!(
                    "{call}\n  expected: {expected}\n  got:      {got:?}"
                ));
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }
}
