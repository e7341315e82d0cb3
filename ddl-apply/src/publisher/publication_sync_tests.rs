//! The publishers' catalog and the functions that change it (`publication_sync.rs`), checked in a real
//! server by `cargo pgrx test` (schema `tests`): who may change what, and what each call
//! leaves.

use pgrx::prelude::*;

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
        error = "unknown ddl kind \"tabel\" (valid: table, index, sequence, trigger, view, rule, schema, function, type, domain, extension, foreign, all, none)"
    )]
    fn an_unknown_kind_is_refused() {
        Spi::run(
            "CREATE PUBLICATION ddl_sync_c_typo;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_c_typo', 'table, tabel');",
        )
        .expect("refused");
    }

    #[pg_test(
        error = "unknown ddl kind \"\" (valid: table, index, sequence, trigger, view, rule, schema, function, type, domain, extension, foreign, all, none)"
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
             CREATE TABLE public.ddl_sync_c_plain (id int);",
        )
        .expect("set up");
        let cases = [
            (
                "SELECT ddl_sync.set_publication_ddl('ddl_sync_c_err', 'tabel')",
                "22023: unknown ddl kind \"tabel\" (valid: table, index, sequence, trigger, view, \
                 rule, schema, function, type, domain, extension, foreign, all, none)",
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
                crate::publisher::publication_sync::OBJECT_CATALOGS.join(", ")
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
