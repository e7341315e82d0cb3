//! `ddl_server::describe::index`, which writes the commonest index definitions itself instead
//! of calling `pg_get_indexdef`: every shape it writes must be the server's text to the byte,
//! and every shape it cannot decide must be left to the server.

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// Per index of `table` (by name): what describe writes itself (`None`: left to
    /// `pg_get_indexdef`), what the table's description says, and the server's own text.
    fn definitions(table: &str) -> Vec<(String, Option<String>, String, String)> {
        Spi::run("SET LOCAL search_path = pg_catalog").expect("search_path");
        let relid =
            Spi::get_one_with_args::<pg_sys::Oid>("SELECT $1::regclass::oid", &[table.into()])
                .expect("regclass")
                .expect("a table");
        let indexes: Vec<(String, pg_sys::Oid, String)> = Spi::connect(|client| {
            client
                .select(
                    "SELECT c.relname::text, c.oid, pg_get_indexdef(c.oid)
                     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                     WHERE i.indrelid = $1 ORDER BY 1",
                    None,
                    &[relid.into()],
                )
                .expect("indexes")
                .map(|row| {
                    (
                        row.get::<String>(1).expect("name").expect("name"),
                        row.get::<pg_sys::Oid>(2).expect("oid").expect("oid"),
                        row.get::<String>(3).expect("def").expect("def"),
                    )
                })
                .collect()
        });
        let description =
            ddl_server::describe::statement("CREATE TABLE", table, "", Default::default())
                .expect("described")
                .expect("a description");
        let parts = description.objects[0]
            .table
            .as_ref()
            .expect("a table")
            .indexes
            .clone();
        indexes
            .into_iter()
            .map(|(name, oid, server)| {
                // SAFETY: the table is open; in the test's transaction.
                let written = ddl_server::relcache::with_relation(relid, |rel| unsafe {
                    ddl_server::describe::index::plain(rel, oid)
                })
                .expect("the table opens");
                let described = parts
                    .iter()
                    .find(|p| p.name == name)
                    .map(|p| p.definition.clone())
                    .unwrap_or_default();
                (name, written, described, server)
            })
            .collect()
    }

    #[pg_test]
    fn index_definitions_are_the_servers_own() {
        Spi::run(
            r#"CREATE SCHEMA "Odd Schema";
               CREATE DOMAIN "Odd Schema".amount AS integer;
               CREATE TABLE "Odd Schema"."T t" (
                   id bigint PRIMARY KEY, a integer, b text, c date, d timestamptz,
                   "select" integer, "Mixed Case" text, v varchar(10), m "Odd Schema".amount,
                   doc tsvector, tags integer[]);
               CREATE INDEX plain_order ON "Odd Schema"."T t" (a DESC, b NULLS FIRST, c DESC NULLS LAST);
               CREATE UNIQUE INDEX plain_include ON "Odd Schema"."T t" (a) INCLUDE (b, "Mixed Case");
               CREATE UNIQUE INDEX plain_nulls ON "Odd Schema"."T t" (a, "select") NULLS NOT DISTINCT;
               CREATE INDEX plain_hash ON "Odd Schema"."T t" USING hash (a);
               CREATE INDEX plain_brin ON "Odd Schema"."T t" USING brin (d);
               CREATE INDEX plain_domain ON "Odd Schema"."T t" (m);
               CREATE INDEX plain_gin ON "Odd Schema"."T t" USING gin (doc);
               CREATE INDEX "Plain Quoted" ON "Odd Schema"."T t" ("Mixed Case", "select");
               CREATE INDEX server_varchar ON "Odd Schema"."T t" (v);
               CREATE INDEX server_expression ON "Odd Schema"."T t" (lower(b));
               CREATE INDEX server_partial ON "Odd Schema"."T t" (a) WHERE a > 0;
               CREATE INDEX server_collation ON "Odd Schema"."T t" (b COLLATE "C");
               CREATE INDEX server_class ON "Odd Schema"."T t" (b text_pattern_ops);
               CREATE INDEX server_options ON "Odd Schema"."T t" (a) WITH (fillfactor = 70);
               CREATE INDEX server_array ON "Odd Schema"."T t" USING gin (tags);
               CREATE TABLE "Odd Schema".parted (id integer, k integer) PARTITION BY RANGE (id);
               CREATE INDEX plain_parted ON "Odd Schema".parted (k);"#,
        )
        .expect("tables");
        let mut seen = 0;
        for table in [r#""Odd Schema"."T t""#, r#""Odd Schema".parted"#] {
            for (name, written, described, server) in definitions(table) {
                assert_eq!(described, server, "{name}: the description's text");
                if name.starts_with("server_") {
                    assert_eq!(written, None, "{name} is the server's to write");
                } else {
                    assert_eq!(written.as_deref(), Some(server.as_str()), "{name}");
                }
                seen += 1;
            }
        }
        assert_eq!(seen, 17);
    }
}
