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
}
