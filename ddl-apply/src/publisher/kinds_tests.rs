//! `#[pg_test]`s of [`crate::publisher::kinds`]: the DDL kinds' SQL functions. Run by `cargo pgrx test` (schema `tests`).

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    const VALID: &str = "(valid: table, index, sequence, trigger, view, rule, schema, function, \
                         type, domain, extension, foreign, all, none)";

    fn one<T: FromDatum + IntoDatum>(sql: &str) -> Option<T> {
        Spi::get_one::<T>(sql).expect("query ran")
    }

    #[pg_test]
    fn kinds_parse_to_their_bits_and_format_back() {
        assert_eq!(
            one::<i32>("SELECT ddl_sync.parse_ddl_kinds('table, index')"),
            Some(3)
        );
        assert_eq!(
            one::<i32>("SELECT ddl_sync.parse_ddl_kinds(' TABLE ,View')"),
            Some(17)
        );
        assert_eq!(
            one::<i32>("SELECT ddl_sync.parse_ddl_kinds('all')"),
            Some(2047)
        );
        assert_eq!(
            one::<i32>("SELECT ddl_sync.parse_ddl_kinds('none')"),
            Some(0)
        );
        assert_eq!(
            one::<i32>("SELECT ddl_sync.parse_ddl_kinds('extension')"),
            Some(1024)
        );
        assert_eq!(
            one::<i32>("SELECT ddl_sync.parse_ddl_kinds('all, foreign')"),
            Some(4095)
        );
        assert_eq!(one::<i32>("SELECT ddl_sync.parse_ddl_kinds(NULL)"), None);

        assert_eq!(
            one::<String>("SELECT ddl_sync.format_ddl_kinds(3)").as_deref(),
            Some("table, index")
        );
        assert_eq!(
            one::<String>("SELECT ddl_sync.format_ddl_kinds(2047)").as_deref(),
            Some("all")
        );
        assert_eq!(
            one::<String>("SELECT ddl_sync.format_ddl_kinds(4095)").as_deref(),
            Some("all, foreign")
        );
        assert_eq!(
            one::<String>("SELECT ddl_sync.format_ddl_kinds(0)").as_deref(),
            Some("none")
        );
        // Every mask survives the round trip through its text.
        let mismatches = one::<i64>(
            "SELECT count(*) FROM generate_series(0, 4095) AS m
             WHERE ddl_sync.parse_ddl_kinds(ddl_sync.format_ddl_kinds(m)) <> m",
        );
        assert_eq!(mismatches, Some(0));
    }

    #[pg_test]
    fn kind_helpers_are_immutable_strict_and_parallel_safe() {
        let flags = one::<i64>(
            "SELECT count(*) FROM pg_proc
             WHERE pronamespace = 'ddl_sync'::regnamespace
               AND proname IN ('parse_ddl_kinds', 'format_ddl_kinds', 'parse_ddl_rules')
               AND provolatile = 'i' AND proisstrict AND proparallel = 's'",
        );
        assert_eq!(flags, Some(3));
    }

    #[pg_test(
        error = "unknown ddl kind \"tabel\" (valid: table, index, sequence, trigger, view, rule, schema, function, type, domain, extension, foreign, all, none)"
    )]
    fn unknown_kind_token_is_refused() {
        one::<i32>("SELECT ddl_sync.parse_ddl_kinds('table, tabel')");
    }

    #[pg_test(
        error = "unknown ddl kind \"\" (valid: table, index, sequence, trigger, view, rule, schema, function, type, domain, extension, foreign, all, none)"
    )]
    fn empty_kind_token_is_refused() {
        one::<i32>("SELECT ddl_sync.parse_ddl_kinds('table,,index')");
    }

    #[pg_test(error = "ddl kind \"none\" cannot be combined with other kinds")]
    fn none_with_other_kinds_is_refused() {
        one::<i32>("SELECT ddl_sync.parse_ddl_kinds('none, table')");
    }

    #[pg_test(error = "ddl kind mask 0x1000 has bits outside the known kinds (0xfff)")]
    fn mask_with_unknown_bits_is_refused() {
        one::<String>("SELECT ddl_sync.format_ddl_kinds(4096)");
    }

    #[pg_test]
    fn kind_errors_carry_invalid_parameter_value() {
        crate::tests::install_error_of();
        assert_eq!(
            crate::tests::error_of("SELECT ddl_sync.parse_ddl_kinds('tabel')"),
            Some(format!("22023: unknown ddl kind \"tabel\" {VALID}"))
        );
        assert_eq!(
            crate::tests::error_of("SELECT ddl_sync.parse_ddl_kinds('')"),
            Some(format!("22023: unknown ddl kind \"\" {VALID}"))
        );
        assert_eq!(
            crate::tests::error_of("SELECT ddl_sync.format_ddl_kinds(-1)"),
            Some(
                "22023: ddl kind mask 0xffffffff has bits outside the known kinds (0xfff)"
                    .to_owned()
            )
        );
    }

    #[pg_test]
    fn rules_are_stored_in_canonical_form() {
        let canonical = one::<String>(
            "SELECT ddl_sync.parse_ddl_rules(E'# audit stays home\\n\\
             exclude schema audit\\n\\n  INCLUDE identity ~ ''^public\\\\.'' # why\\n')",
        );
        assert_eq!(
            canonical.as_deref(),
            Some("exclude schema = 'audit'\ninclude identity ~ '^public\\.'")
        );
        // The canonical text reads back to itself.
        let again = one::<bool>(
            "SELECT ddl_sync.parse_ddl_rules(r) = r
             FROM ddl_sync.parse_ddl_rules('exclude tag = ''CREATE TABLE AS''') AS r",
        );
        assert_eq!(again, Some(true));
        // No rule at all is NULL, so the catalog has one spelling for "no rules".
        assert_eq!(one::<String>("SELECT ddl_sync.parse_ddl_rules('')"), None);
        assert_eq!(
            one::<String>("SELECT ddl_sync.parse_ddl_rules(E'# nothing\\n')"),
            None
        );
    }

    #[pg_test(
        error = "line 2, column 9: expected kind, tag, schema, identity, sql or filter, found \"schemas\""
    )]
    fn rules_syntax_error_names_line_and_column() {
        one::<String>(
            "SELECT ddl_sync.parse_ddl_rules(E'exclude schema audit\\nexclude schemas x')",
        );
    }

    #[pg_test]
    fn rules_errors_carry_their_sqlstate() {
        crate::tests::install_error_of();
        assert_eq!(
            crate::tests::error_of("SELECT ddl_sync.parse_ddl_rules('drop schema x')"),
            Some("42601: line 1, column 1: expected include or exclude, found \"drop\"".into())
        );
        assert_eq!(
            crate::tests::error_of("SELECT ddl_sync.parse_ddl_rules('exclude tag = ''CREATE TABEL''')"),
            Some(
                "22023: line 1, column 15: unknown command tag \"CREATE TABEL\" (not a PostgreSQL 15 command tag)"
                    .into()
            )
        );
        assert_eq!(
            crate::tests::error_of("SELECT ddl_sync.parse_ddl_rules('exclude filter = huge')"),
            Some("22023: line 1, column 18: no filter named \"huge\" is registered".into())
        );
    }
}
