//! `ddl_server::describe::index` and `key`, which write the commonest index definitions and
//! every primary key and unique constraint themselves instead of calling `pg_get_indexdef` and
//! `pg_get_constraintdef`: every shape they write must be the server's text to the byte, and
//! every shape they cannot decide must be left to the server.

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// Per part of `table` that `query` lists (name, OID and the server's own text, for the
    /// table's OID `$1`), by name: what describe writes itself (`written`; `None`: left to the
    /// server), what the table's description says (among its parts `described` picks), and
    /// the server's text.
    fn definitions(
        table: &str,
        query: &str,
        described: impl Fn(&ddl_wire::TableDescription) -> &Vec<ddl_wire::Part>,
        written: impl Fn(pg_sys::Relation, pg_sys::Oid) -> Option<String>,
    ) -> Vec<(String, Option<String>, String, String)> {
        Spi::run("SET LOCAL search_path = pg_catalog").expect("search_path");
        let relid =
            Spi::get_one_with_args::<pg_sys::Oid>("SELECT $1::regclass::oid", &[table.into()])
                .expect("regclass")
                .expect("a table");
        let server: Vec<(String, pg_sys::Oid, String)> = Spi::connect(|client| {
            client
                .select(query, None, &[relid.into()])
                .expect("the server's definitions")
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
        let parts = described(description.objects[0].table.as_ref().expect("a table")).clone();
        server
            .into_iter()
            .map(|(name, oid, server)| {
                let written = ddl_server::relcache::with_relation(relid, |rel| written(rel, oid))
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

    /// [`definitions`] of `table`'s indexes.
    fn index_definitions(table: &str) -> Vec<(String, Option<String>, String, String)> {
        definitions(
            table,
            "SELECT c.relname::text, c.oid, pg_get_indexdef(c.oid)
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid = $1 ORDER BY 1",
            |table| &table.indexes,
            // SAFETY: the table is open; in the test's transaction.
            |rel, oid| unsafe { ddl_server::describe::index::plain(rel, oid) },
        )
    }

    /// [`definitions`] of `table`'s constraints.
    fn constraint_definitions(table: &str) -> Vec<(String, Option<String>, String, String)> {
        definitions(
            table,
            "SELECT conname::text, oid, pg_get_constraintdef(oid)
               FROM pg_constraint WHERE conrelid = $1 AND contype <> 'n' ORDER BY 1",
            |table| &table.constraints,
            |rel, oid| {
                let mut written = None;
                // SAFETY: the table is open; its pg_constraint row by OID, in the test's
                // transaction.
                unsafe {
                    ddl_server::catalog_scan::scan(
                        pg_sys::ConstraintRelationId,
                        pg_sys::Oid::from(pg_sys::ConstraintOidIndexId),
                        &[(pg_sys::Anum_pg_constraint_oid as pg_sys::AttrNumber, oid)],
                        |tuple, desc| {
                            written = ddl_server::describe::key::written(rel, tuple, desc)
                        },
                    )
                };
                written
            },
        )
    }

    /// Asserts that each of `definitions` is described as the server writes it, and written by
    /// describe itself unless its name starts with `server_`; returns how many it checked.
    fn assert_the_servers(definitions: Vec<(String, Option<String>, String, String)>) -> usize {
        for (name, written, described, server) in &definitions {
            assert_eq!(described, server, "{name}: the description's text");
            if name.starts_with("server_") {
                assert_eq!(written, &None, "{name} is the server's to write");
            } else {
                assert_eq!(written.as_deref(), Some(server.as_str()), "{name}");
            }
        }
        definitions.len()
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
        let seen: usize = [r#""Odd Schema"."T t""#, r#""Odd Schema".parted"#]
            .into_iter()
            .map(|table| assert_the_servers(index_definitions(table)))
            .sum();
        assert_eq!(seen, 17);
    }

    #[pg_test]
    fn key_definitions_are_the_servers_own() {
        Spi::run(
            r#"CREATE SCHEMA "Odd Schema";
               CREATE TABLE "Odd Schema"."K k" (
                   gone integer, id bigint, a integer, b text, c date, "select" integer,
                   "Mixed Case" text, p integer, q integer);
               ALTER TABLE "Odd Schema"."K k" DROP COLUMN gone;
               ALTER TABLE "Odd Schema"."K k"
                   ADD CONSTRAINT key_primary PRIMARY KEY (id),
                   ADD CONSTRAINT key_two UNIQUE (a, "select"),
                   ADD CONSTRAINT "Key Quoted" UNIQUE ("Mixed Case"),
                   ADD CONSTRAINT key_nulls UNIQUE NULLS NOT DISTINCT (b, c),
                   ADD CONSTRAINT key_include UNIQUE (p) INCLUDE (b, "Mixed Case"),
                   ADD CONSTRAINT key_deferrable UNIQUE (q) DEFERRABLE,
                   ADD CONSTRAINT key_deferred UNIQUE (q, p) DEFERRABLE INITIALLY DEFERRED,
                   ADD CONSTRAINT server_check CHECK (a > 0),
                   ADD CONSTRAINT server_check_not_valid CHECK (p > 0) NOT VALID,
                   ADD CONSTRAINT server_foreign FOREIGN KEY (q) REFERENCES "Odd Schema"."K k" (id),
                   ADD CONSTRAINT server_exclude EXCLUDE USING btree (c WITH =);
               CREATE TABLE "Odd Schema".parted (id integer, k integer,
                   CONSTRAINT key_parted PRIMARY KEY (id, k)) PARTITION BY RANGE (id);"#,
        )
        .expect("tables");
        let seen: usize = [r#""Odd Schema"."K k""#, r#""Odd Schema".parted"#]
            .into_iter()
            .map(|table| assert_the_servers(constraint_definitions(table)))
            .sum();
        assert_eq!(seen, 12);
    }
}
