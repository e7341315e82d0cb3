//! The large migrations of `bench apply`'s scale runs (#31): the two layouts that make a deploy
//! thousands of statements long, each generated at any size so that 1,000 and 10,000 statements
//! are the same statements, ten times as many.
//!
//! - Partitions: a table partitioned by range with a primary key, then per partition (one
//!   transaction each) the partition, an index, a CHECK constraint, a comment and a storage
//!   parameter, and ten rows. Every table has a key: a keyless one would add the replica
//!   identity events of `ddl_sync.keyless_tables` to the count.
//! - Tenants: a schema per tenant (one transaction each): the schema, 20 tables (each but the
//!   first with a foreign key to the one before), an index on each, 9 columns added, and a row.

use crate::migration::{Migration, Statement};

/// Statements per partition.
const PER_PARTITION: usize = 5;
/// Tables per tenant schema.
const TENANT_TABLES: usize = 20;
/// Columns added per tenant schema.
const TENANT_COLUMNS: usize = 9;
/// Statements per tenant: its schema, its tables and their indexes, the columns added.
pub(super) const PER_TENANT: usize = 1 + 2 * TENANT_TABLES + TENANT_COLUMNS;

/// The layouts, in the order the benchmark runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    Partitions,
    Tenants,
}

impl Layout {
    pub(super) const ALL: [Layout; 2] = [Layout::Partitions, Layout::Tenants];

    pub(super) fn name(self) -> &'static str {
        match self {
            Layout::Partitions => "partitions",
            Layout::Tenants => "tenants",
        }
    }

    /// How many partitions or tenant schemas `ddl` statements make.
    pub(super) fn units(self, ddl: usize) -> usize {
        match self {
            Layout::Partitions => ddl.saturating_sub(2).div_ceil(PER_PARTITION),
            Layout::Tenants => ddl.div_ceil(PER_TENANT),
        }
    }

    /// `ddl` DDL statements (and their rows) on schemas whose names start with `prefix`; the
    /// last partition or tenant stops part-way when `ddl` is not a whole number of them.
    pub(super) fn migration(self, prefix: &str, ddl: usize) -> Migration {
        let mut transactions = match self {
            Layout::Partitions => {
                let mut t = vec![partitioned(prefix)];
                t.extend((1..).map(|k| partition(prefix, k)).take(self.units(ddl)));
                t
            }
            Layout::Tenants => (1..)
                .map(|k| tenant(prefix, k))
                .take(self.units(ddl))
                .collect(),
        };
        truncate(&mut transactions, ddl);
        Migration { transactions }
    }

    /// The `LIKE` pattern of the schemas [`Layout::migration`] makes with `prefix`.
    pub(super) fn schemas(self, prefix: &str) -> String {
        match self {
            Layout::Partitions => prefix.to_string(),
            Layout::Tenants => format!("{prefix}\\_t%"),
        }
    }

    /// What the benchmark's section says the layout is.
    pub(super) fn describe(self) -> String {
        match self {
            Layout::Partitions => format!(
                "a table with a primary key `PARTITION BY RANGE (id)` made in the first \
                 transaction, then one transaction per partition of {PER_PARTITION} DDL \
                 statements (`CREATE TABLE ... PARTITION OF`, `CREATE INDEX` on two columns, \
                 `ADD CONSTRAINT ... CHECK`, `COMMENT`, `SET (fillfactor)`) and an INSERT of 10 \
                 rows"
            ),
            Layout::Tenants => format!(
                "one transaction per tenant of {PER_TENANT} DDL statements: `CREATE SCHEMA`, \
                 {TENANT_TABLES} `CREATE TABLE` (primary key, each but the first with a foreign \
                 key to the one before), a `CREATE INDEX` on each, {TENANT_COLUMNS} `ADD \
                 COLUMN`, and an INSERT of a row"
            ),
        }
    }
}

fn ddl(tag: &'static str, sql: String) -> Statement {
    Statement::Ddl { tag, sql }
}

/// The schema and the partitioned table.
fn partitioned(s: &str) -> Vec<Statement> {
    vec![
        ddl("CREATE SCHEMA", format!("CREATE SCHEMA {s}")),
        ddl(
            "CREATE TABLE",
            format!(
                "CREATE TABLE {s}.events (id bigint NOT NULL, tenant integer NOT NULL, \
                 at date NOT NULL, payload text, PRIMARY KEY (id)) PARTITION BY RANGE (id)"
            ),
        ),
    ]
}

/// Partition `k`: ids from 1,000 k.
fn partition(s: &str, k: usize) -> Vec<Statement> {
    let p = format!("{s}.events_{k}");
    let (from, to) = (k * 1000, (k + 1) * 1000);
    vec![
        ddl(
            "CREATE TABLE",
            format!("CREATE TABLE {p} PARTITION OF {s}.events FOR VALUES FROM ({from}) TO ({to})"),
        ),
        ddl(
            "CREATE INDEX",
            format!("CREATE INDEX events_{k}_tenant ON {p} (tenant, at)"),
        ),
        ddl(
            "ALTER TABLE",
            format!("ALTER TABLE {p} ADD CONSTRAINT events_{k}_payload CHECK (payload <> '')"),
        ),
        ddl(
            "COMMENT",
            format!("COMMENT ON TABLE {p} IS 'ids {from} to {to}'"),
        ),
        ddl(
            "ALTER TABLE",
            format!("ALTER TABLE {p} SET (fillfactor = 90)"),
        ),
        Statement::Dml(format!(
            "INSERT INTO {s}.events SELECT {from} + g, g % 7, DATE '2026-01-01' + g, 'row ' || g \
             FROM generate_series(0, 9) g"
        )),
    ]
}

/// Tenant `k`'s schema.
fn tenant(prefix: &str, k: usize) -> Vec<Statement> {
    let s = format!("{prefix}_t{k}");
    let mut t = vec![ddl("CREATE SCHEMA", format!("CREATE SCHEMA {s}"))];
    for j in 1..=TENANT_TABLES {
        let parent = if j == 1 {
            String::new()
        } else {
            format!(" REFERENCES {s}.t{}", j - 1)
        };
        t.push(ddl(
            "CREATE TABLE",
            format!(
                "CREATE TABLE {s}.t{j} (id bigint PRIMARY KEY, parent bigint{parent}, \
                 name text NOT NULL, created date NOT NULL DEFAULT DATE '2026-01-01')"
            ),
        ));
        t.push(ddl(
            "CREATE INDEX",
            format!("CREATE INDEX t{j}_name ON {s}.t{j} (name, created)"),
        ));
    }
    for j in 1..=TENANT_COLUMNS {
        t.push(ddl(
            "ALTER TABLE",
            format!("ALTER TABLE {s}.t{j} ADD COLUMN extra text"),
        ));
    }
    t.push(Statement::Dml(format!(
        "INSERT INTO {s}.t1 (id, name) VALUES (1, 'tenant {k}')"
    )));
    t
}

/// Keeps the first `ddl` DDL statements; DML stays when every DDL before it in its
/// transaction does (its rows may need them). Empty transactions go.
fn truncate(transactions: &mut Vec<Vec<Statement>>, ddl: usize) {
    let mut left = ddl;
    for transaction in transactions.iter_mut() {
        let mut whole = true;
        transaction.retain(|statement| match statement {
            Statement::Ddl { .. } if left > 0 => {
                left -= 1;
                true
            }
            Statement::Ddl { .. } => {
                whole = false;
                false
            }
            Statement::Dml(_) => whole,
        });
    }
    transactions.retain(|t| !t.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_layout_has_the_ddl_count_it_is_asked_for() {
        for layout in Layout::ALL {
            for n in [1, 2, 3, 7, 49, 50, 51, 1000, 10_000] {
                let m = layout.migration("x", n);
                assert_eq!(m.ddl_count(), n, "{layout:?} {n}");
                assert!(m.transactions.iter().all(|t| !t.is_empty()));
            }
        }
        assert_eq!(Layout::Partitions.units(10_000), 2000);
        assert_eq!(Layout::Tenants.units(10_000), 200);
        let tenants = Layout::Tenants.migration("x", 10_000);
        assert_eq!(tenants.transactions.len(), 200);
        assert_eq!(
            tenants.tags(),
            [
                ("CREATE SCHEMA", 200),
                ("CREATE TABLE", 4000),
                ("CREATE INDEX", 4000),
                ("ALTER TABLE", 1800)
            ]
        );
        let partitions = Layout::Partitions.migration("x", 10_002);
        assert_eq!(partitions.transactions.len(), 2001);
        assert_eq!(partitions.dml_count(), 2000);
    }

    #[test]
    fn a_partition_is_one_transaction() {
        let m = Layout::Partitions.migration("p", 7);
        assert_eq!(
            m.script(),
            "BEGIN;\nCREATE SCHEMA p;\n\
             CREATE TABLE p.events (id bigint NOT NULL, tenant integer NOT NULL, at date NOT \
             NULL, payload text, PRIMARY KEY (id)) PARTITION BY RANGE (id);\nCOMMIT;\n\
             BEGIN;\n\
             CREATE TABLE p.events_1 PARTITION OF p.events FOR VALUES FROM (1000) TO (2000);\n\
             CREATE INDEX events_1_tenant ON p.events_1 (tenant, at);\n\
             ALTER TABLE p.events_1 ADD CONSTRAINT events_1_payload CHECK (payload <> '');\n\
             COMMENT ON TABLE p.events_1 IS 'ids 1000 to 2000';\n\
             ALTER TABLE p.events_1 SET (fillfactor = 90);\n\
             INSERT INTO p.events SELECT 1000 + g, g % 7, DATE '2026-01-01' + g, 'row ' || g \
             FROM generate_series(0, 9) g;\nCOMMIT;\n"
        );
    }
}
