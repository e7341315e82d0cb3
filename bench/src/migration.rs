//! The migration that `bench apply` runs on the publisher and times on the subscriber: a given
//! number of DDL statements mixed with DML, in transactions of a few statements, all on objects
//! of one fresh schema, and the query that describes such a schema on either side.
//!
//! The schema is created first, then tables go through one life each until the count is
//! reached (the last one may stop part-way): created and filled, a column added and filled, an
//! index, a comment, a view and a function on it, a column and the table renamed, rows added
//! and deleted under the new names; then every other table is dropped with its view and
//! function, and the others get a sequence, a column default and a renamed index.

/// One statement of the migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Statement {
    /// A DDL statement and its command tag.
    Ddl {
        tag: &'static str,
        sql: String,
    },
    Dml(String),
}

impl Statement {
    fn sql(&self) -> &str {
        match self {
            Statement::Ddl { sql, .. } | Statement::Dml(sql) => sql,
        }
    }
}

/// A generated migration.
pub(super) struct Migration {
    /// The transactions, in order.
    pub(super) transactions: Vec<Vec<Statement>>,
}

/// One transaction of a table's life (see the module's doc): `i` numbers the table, `rows` is
/// how many rows it is created with.
fn life_step(schema: &str, i: usize, rows: u32, step: usize) -> Vec<Statement> {
    let ddl = |tag, sql: String| Statement::Ddl { tag, sql };
    let dml = Statement::Dml;
    let (s, t, r) = (schema, format!("t{i}"), format!("r{i}"));
    match step {
        0 => vec![
            ddl(
                "CREATE TABLE",
                format!("CREATE TABLE {s}.{t} (id integer PRIMARY KEY, name text NOT NULL, qty integer)"),
            ),
            dml(format!(
                "INSERT INTO {s}.{t} SELECT g, 'name ' || g, g % 50 FROM generate_series(1, {rows}) g"
            )),
            ddl("CREATE INDEX", format!("CREATE INDEX {t}_name ON {s}.{t} (name)")),
        ],
        1 => vec![
            ddl("ALTER TABLE", format!("ALTER TABLE {s}.{t} ADD COLUMN note text")),
            dml(format!("UPDATE {s}.{t} SET note = 'note ' || id")),
            ddl("COMMENT", format!("COMMENT ON TABLE {s}.{t} IS 'table {i}'")),
        ],
        2 => vec![
            ddl(
                "CREATE VIEW",
                format!("CREATE VIEW {s}.v{i} AS SELECT id, name, note FROM {s}.{t} WHERE qty % 2 = 0"),
            ),
            ddl(
                "CREATE FUNCTION",
                format!(
                    "CREATE FUNCTION {s}.f{i}(min integer) RETURNS bigint LANGUAGE sql STABLE \
                     AS $$SELECT count(*) FROM {s}.{t} WHERE qty >= min$$"
                ),
            ),
        ],
        3 => vec![
            ddl("ALTER TABLE", format!("ALTER TABLE {s}.{t} RENAME COLUMN qty TO quantity")),
            ddl("ALTER TABLE", format!("ALTER TABLE {s}.{t} RENAME TO {r}")),
            dml(format!(
                "INSERT INTO {s}.{r} (id, name, quantity, note) VALUES ({}, 'late', 1, 'late')",
                rows + 1
            )),
            dml(format!("DELETE FROM {s}.{r} WHERE id % 10 = 0")),
        ],
        _ if i % 2 == 1 => vec![
            ddl("DROP VIEW", format!("DROP VIEW {s}.v{i}")),
            ddl("DROP FUNCTION", format!("DROP FUNCTION {s}.f{i}(integer)")),
            ddl("DROP TABLE", format!("DROP TABLE {s}.{r}")),
        ],
        _ => vec![
            ddl("CREATE SEQUENCE", format!("CREATE SEQUENCE {s}.seq{i}")),
            ddl(
                "ALTER TABLE",
                format!("ALTER TABLE {s}.{r} ALTER COLUMN note SET DEFAULT 'none'"),
            ),
            dml(format!("UPDATE {s}.{r} SET note = DEFAULT WHERE id <= 5")),
            ddl("ALTER INDEX", format!("ALTER INDEX {s}.{t}_name RENAME TO {r}_name")),
        ],
    }
}

/// Transactions in a table's life.
const LIFE_STEPS: usize = 5;

impl Migration {
    /// `ddl` DDL statements (the schema's creation included) with their DML, on objects of
    /// `schema`; tables are created with `rows` rows.
    pub(super) fn generate(schema: &str, ddl: usize, rows: u32) -> Migration {
        let mut transactions = vec![vec![Statement::Ddl {
            tag: "CREATE SCHEMA",
            sql: format!("CREATE SCHEMA {schema}"),
        }]];
        let mut left = ddl.saturating_sub(1);
        let mut i = 0;
        'tables: while left > 0 {
            i += 1;
            for step in 0..LIFE_STEPS {
                let mut transaction = Vec::new();
                for statement in life_step(schema, i, rows, step) {
                    if matches!(statement, Statement::Ddl { .. }) {
                        if left == 0 {
                            break;
                        }
                        left -= 1;
                    }
                    transaction.push(statement);
                }
                transactions.push(transaction);
                if left == 0 {
                    break 'tables;
                }
            }
        }
        if ddl == 0 {
            transactions.clear();
        }
        Migration { transactions }
    }

    /// The migration without its DML: the statements a subscriber replays.
    pub(super) fn without_dml(self) -> Migration {
        let transactions = self
            .transactions
            .into_iter()
            .map(|t| {
                t.into_iter()
                    .filter(|s| matches!(s, Statement::Ddl { .. }))
                    .collect::<Vec<_>>()
            })
            .filter(|t| !t.is_empty())
            .collect();
        Migration { transactions }
    }

    fn statements(&self) -> impl Iterator<Item = &Statement> {
        self.transactions.iter().flatten()
    }

    pub(super) fn ddl_count(&self) -> usize {
        self.statements()
            .filter(|s| matches!(s, Statement::Ddl { .. }))
            .count()
    }

    pub(super) fn dml_count(&self) -> usize {
        self.statements()
            .filter(|s| matches!(s, Statement::Dml(_)))
            .count()
    }

    /// How many DDL statements of each command tag, in the order the tags first appear.
    pub(super) fn tags(&self) -> Vec<(&'static str, usize)> {
        let mut tags: Vec<(&'static str, usize)> = Vec::new();
        for statement in self.statements() {
            if let Statement::Ddl { tag, .. } = statement {
                match tags.iter_mut().find(|(t, _)| t == tag) {
                    Some((_, n)) => *n += 1,
                    None => tags.push((tag, 1)),
                }
            }
        }
        tags
    }

    /// The migration as a psql script: one `BEGIN; ...; COMMIT;` block per transaction.
    pub(super) fn script(&self) -> String {
        let mut script = String::new();
        for transaction in &self.transactions {
            script.push_str("BEGIN;\n");
            for statement in transaction {
                script.push_str(statement.sql());
                script.push_str(";\n");
            }
            script.push_str("COMMIT;\n");
        }
        script
    }
}

/// A query that describes the schemas whose names are `LIKE schemas` in one line, `tables N,
/// columns N, indexes N, views N, functions N, sequences N, comments N, rows N, md5 X`, where X
/// digests every column (type, NOT NULL, default), index and view definition, function
/// (arguments, body), comment, and every table's rows: equal lines on publisher and subscriber
/// mean the same schemas and data.
pub(super) fn describe_schemas(schemas: &str) -> String {
    format!(
        "WITH rels AS (
             SELECT c.oid, n.nspname, n.nspname || '.' || c.relname AS relname, c.relname AS name,
                    c.relkind
             FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname LIKE '{schemas}'),
         cols AS (
             SELECT r.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                    || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                    || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') AS line
             FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
             LEFT JOIN pg_attrdef d ON d.adrelid = r.oid AND d.adnum = a.attnum
             WHERE r.relkind IN ('r', 'v')),
         funcs AS (
             SELECT n.nspname || '.' || p.proname || '(' || pg_get_function_arguments(p.oid) || ') '
                    || p.prosrc AS line
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname LIKE '{schemas}'),
         comments AS (
             SELECT r.relname || ' ' || d.description AS line FROM rels r
             JOIN pg_description d ON d.objoid = r.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0),
         data AS (
             SELECT r.relname, (xpath('/row/n/text()', x))[1]::text::bigint AS n,
                    (xpath('/row/h/text()', x))[1]::text AS h
             FROM rels r, query_to_xml(format(
                 'SELECT count(*) AS n, md5(coalesce(string_agg(t::text, '','' ORDER BY t::text), '''')) AS h FROM %I.%I t',
                 r.nspname, r.name), false, true, '') x
             WHERE r.relkind = 'r'),
         lines AS (
             SELECT 'column ' || line AS line FROM cols
             UNION ALL SELECT 'index ' || pg_get_indexdef(oid) FROM rels WHERE relkind = 'i'
             UNION ALL SELECT 'view ' || relname || ' ' || pg_get_viewdef(oid) FROM rels WHERE relkind = 'v'
             UNION ALL SELECT 'sequence ' || relname FROM rels WHERE relkind = 'S'
             UNION ALL SELECT 'function ' || line FROM funcs
             UNION ALL SELECT 'comment ' || line FROM comments
             UNION ALL SELECT 'rows ' || relname || ' ' || n || ' ' || h FROM data)
         SELECT format('tables %s, columns %s, indexes %s, views %s, functions %s, sequences %s, comments %s, rows %s, md5 %s',
             (SELECT count(*) FROM rels WHERE relkind = 'r'), (SELECT count(*) FROM cols),
             (SELECT count(*) FROM rels WHERE relkind = 'i'), (SELECT count(*) FROM rels WHERE relkind = 'v'),
             (SELECT count(*) FROM funcs), (SELECT count(*) FROM rels WHERE relkind = 'S'),
             (SELECT count(*) FROM comments), (SELECT coalesce(sum(n), 0) FROM data),
             (SELECT md5(string_agg(line, E'\\n' ORDER BY line)) FROM lines))"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_has_the_ddl_count_and_kinds_it_claims() {
        for n in [1, 2, 11, 12, 13, 100, 1000] {
            let m = Migration::generate("m", n, 10);
            assert_eq!(m.ddl_count(), n, "{n} statements");
            assert_eq!(m.tags().iter().map(|(_, k)| k).sum::<usize>(), n);
            // Every DDL is what its tag says; no transaction is empty.
            for statement in m.statements() {
                if let Statement::Ddl { tag, sql } = statement {
                    let words: String =
                        sql.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                    assert!(words.starts_with(tag), "{tag}: {sql}");
                }
            }
            assert!(m.transactions.iter().all(|t| !t.is_empty()));
        }
        let m = Migration::generate("m", 1000, 10);
        let tags: Vec<&str> = m.tags().iter().map(|(t, _)| *t).collect();
        for tag in [
            "CREATE SCHEMA",
            "CREATE TABLE",
            "CREATE INDEX",
            "ALTER TABLE",
            "COMMENT",
            "CREATE VIEW",
            "CREATE FUNCTION",
            "DROP VIEW",
            "DROP FUNCTION",
            "DROP TABLE",
            "CREATE SEQUENCE",
            "ALTER INDEX",
        ] {
            assert!(tags.contains(&tag), "{tag} missing from {tags:?}");
        }
        // 1 schema, then 11 DDL per table: 91 tables, the last one part-way.
        assert_eq!(m.tags()[1], ("CREATE TABLE", 91));
        assert!(m.dml_count() > 300);
        assert_eq!(Migration::generate("m", 0, 10).transactions.len(), 0);
        let ddl = Migration::generate("m", 1000, 10).without_dml();
        assert_eq!((ddl.ddl_count(), ddl.dml_count()), (1000, 0));
        assert!(ddl.transactions.iter().all(|t| !t.is_empty()));
    }

    #[test]
    fn the_script_wraps_each_transaction() {
        let m = Migration::generate("s1", 4, 3);
        assert_eq!(
            m.script(),
            "BEGIN;\nCREATE SCHEMA s1;\nCOMMIT;\n\
             BEGIN;\n\
             CREATE TABLE s1.t1 (id integer PRIMARY KEY, name text NOT NULL, qty integer);\n\
             INSERT INTO s1.t1 SELECT g, 'name ' || g, g % 50 FROM generate_series(1, 3) g;\n\
             CREATE INDEX t1_name ON s1.t1 (name);\nCOMMIT;\n\
             BEGIN;\nALTER TABLE s1.t1 ADD COLUMN note text;\n\
             UPDATE s1.t1 SET note = 'note ' || id;\nCOMMIT;\n"
        );
    }
}
