//! `#[pg_test]`s of [`crate::replay::tables`]: tables made from their definitions: what the definitions parse into, and what is refused. Run by `cargo pgrx test` (schema `tests`).

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use crate::replay::tables::parse;
    use ddl_server::guc;
    use ddl_server::xact::in_subtransaction;
    use pgrx::prelude::*;

    /// What `parse` makes of `tables`, each column's type as it would be made here: each
    /// definition as `schema.name: column type, ... | key`, or the refusal.
    fn parsed(tables: &str) -> Result<Vec<String>, String> {
        let parse = || {
            guc::with_search_path("pg_catalog", || {
                parse(tables).map(|definitions| {
                    definitions
                        .iter()
                        .map(|d| {
                            let columns: Vec<String> = d
                                .columns
                                .iter()
                                .map(|c| {
                                    let made = c.as_made();
                                    format!("{} {}", made.name, made.sql_type)
                                })
                                .collect();
                            format!(
                                "{}.{}: {} | {}",
                                d.schema,
                                d.name,
                                columns.join(", "),
                                d.key.join(", ")
                            )
                        })
                        .collect()
                })
            })
        };
        in_subtransaction(parse, Result::is_ok).map_err(|caught| caught.message)?
    }

    #[pg_test]
    fn plain_definitions_resolve_their_types_here() {
        Spi::run("CREATE SCHEMA app; CREATE TYPE app.mood AS ENUM ('sad')").expect("setup");
        assert_eq!(
            parsed(
                "CREATE TABLE app.t (a integer, b pg_catalog.text COLLATE \"C\", m app.mood, \
                 v character varying(5), PRIMARY KEY (a));\n\
                 CREATE TABLE \"Other\".\"T 2\" (x nowhere.missing);"
            ),
            Ok(vec![
                "app.t: a integer, b pg_catalog.text COLLATE \"C\", m app.mood, \
                 v character varying(5) | a"
                    .to_string(),
                "Other.T 2: x pg_catalog.text | ".to_string(),
            ])
        );
    }

    /// The text is as hostile as any other byte of an event: anything but a plain definition of
    /// columns, outside the server's schemas, is refused whole.
    #[pg_test]
    fn anything_else_is_refused() {
        for hostile in [
            "CREATE TABLE public.t (a int DEFAULT pg_catalog.pg_terminate_backend(1));",
            "CREATE TABLE public.t (a int CHECK (a > 0));",
            "CREATE TABLE public.t (a int GENERATED ALWAYS AS (a) STORED);",
            "CREATE TABLE public.t (a int, UNIQUE (a));",
            "CREATE TABLE public.t (a int, PRIMARY KEY (a) INCLUDE (a));",
            "CREATE TABLE t (a int);",
            "CREATE TEMP TABLE t (a int);",
            "CREATE UNLOGGED TABLE public.t (a int);",
            "CREATE TABLE pg_catalog.t (a int);",
            "CREATE TABLE public.t (a int) INHERITS (public.u);",
            "CREATE TABLE public.t (a int) WITH (fillfactor = 10);",
            "CREATE TABLE public.t (LIKE public.u);",
            "CREATE TABLE public.t OF public.u;",
            "CREATE TABLE public.t ();",
            "CREATE TABLE public.t (a int); DROP TABLE public.u;",
            "CREATE TABLE public.t (a public.u%TYPE);",
            "CREATE TABLE public.t (a int",
        ] {
            assert!(parsed(hostile).is_err(), "{hostile} was accepted");
        }
    }

    /// A text the parser raises an ERROR for is refused without a subtransaction
    /// (`xact::raw_parse`): the transaction goes on as it was, at the same nesting level, with
    /// the same interrupt holdoff, and the definitions after it still read.
    #[pg_test]
    fn a_text_that_does_not_parse_leaves_the_transaction_as_it_was() {
        let level = ddl_server::xact::nest_level();
        // SAFETY: the backend's own counter, raised as HOLD_INTERRUPTS does and put back below.
        let before = unsafe { pg_sys::InterruptHoldoffCount };
        // SAFETY: as above.
        unsafe { pg_sys::InterruptHoldoffCount = before + 1 };
        let refused = parse("CREATE TABLE public.t (a int");
        // SAFETY: as above.
        let held = unsafe { pg_sys::InterruptHoldoffCount };
        // SAFETY: as above.
        unsafe { pg_sys::InterruptHoldoffCount = before };
        assert!(
            refused
                .as_ref()
                .is_err_and(|why| why.contains("syntax error at end of input")),
            "{:?}",
            refused.map(|d| d.len())
        );
        assert_eq!(
            held,
            before + 1,
            "the ERROR's reset of the holdoff count was not undone"
        );
        assert_eq!(ddl_server::xact::nest_level(), level);
        assert_eq!(Spi::get_one::<i32>("SELECT 1"), Ok(Some(1)));
        assert_eq!(
            parse("CREATE TABLE public.t (a pg_catalog.int4);").map(|d| d.len()),
            Ok(1)
        );
    }
}
