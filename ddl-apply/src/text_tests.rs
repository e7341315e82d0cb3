//! `ddl_server::text::quote_identifier`, which decides in Rust what PostgreSQL's
//! `quote_identifier` decides, checked against the server's own on names of every kind.

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// What the server's `quote_ident` writes for `name`.
    fn servers(name: &str) -> String {
        Spi::get_one_with_args::<String>("SELECT quote_ident($1)", &[name.into()])
            .expect("quote_ident ran")
            .expect("not NULL")
    }

    #[pg_test]
    fn identifiers_are_quoted_as_the_server_quotes_them() {
        let long = "a".repeat(63);
        let names = [
            "t",
            "_t",
            "t1",
            "t_1",
            "1t",
            "T",
            "tT",
            "t-t",
            "t t",
            "t\"t",
            "\"",
            "",
            "café",
            "select",
            "user",
            "between",
            "int",
            "name",
            "value",
            "left",
            "authorization",
            "varchar",
            "table",
            "xmin",
            &long,
        ];
        for name in names {
            assert_eq!(
                ddl_server::text::quote_identifier(name),
                servers(name),
                "{name:?}"
            );
        }
        Spi::run("SET quote_all_identifiers = on").expect("set");
        assert_eq!(ddl_server::text::quote_identifier("t"), "\"t\"");
        assert_eq!(servers("t"), "\"t\"");
        Spi::run("RESET quote_all_identifiers").expect("reset");
    }
}
