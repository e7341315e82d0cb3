//! `cargo xtask bench copy`: how long a subscriber of a database that already has a schema and
//! rows takes to be consistent, with `copy_schema = true` against the native way, into the
//! `## Copy` section of BENCHMARKS.md.
//!
//! Target (from the issue): time to a consistent subscriber with `CREATE SUBSCRIPTION ... WITH
//! (ddl = 'all', copy_schema = true)` / time with `pg_dump --schema-only | psql` followed by a
//! plain subscription, on the same machine in the same run: <= 1.1.
//!
//! Two throwaway clusters. The publisher preloads `ddl_pgoutput` and has `ddl_sync`, N tables
//! (a bigint primary key, a secondary index, a text payload) holding M MB of rows in all, and a
//! publication `FOR ALL TABLES WITH (ddl = 'all')`. Each round makes three subscriber
//! databases, one per way, in an order that turns from round to round, and times each from the
//! first command to every table `ready` in `pg_subscription_rel`, by this process's clock:
//! - `copy_schema`: `CREATE EXTENSION ddl_sync`, then one `CREATE SUBSCRIPTION` with `ddl =
//!   'all', copy_schema = true`;
//! - `dump`: `pg_dump --schema-only` of the publisher into a file, `psql -f` of it, then a
//!   plain `CREATE SUBSCRIPTION` (the baseline);
//! - `dump, indexes after`: the same with `--section=pre-data` first and `--section=post-data`
//!   (primary keys, indexes, constraints) once the rows are there: what building indexes after
//!   the rows would save.
//!
//! Each way's row count must equal the publisher's, else the benchmark fails. The subscription,
//! its slot and the database are dropped after each.
//!
//! ```text
//! cargo xtask bench copy [--runs N] [--tables N] [--megabytes N]
//! ```

use crate::procfs::{foreign_note, quiet_check, Foreign, Watch};
use crate::{
    bench_dir, check_release_installed, median, options, reproduce, rounds_note, section_heading,
    spread, verdict, write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder, Cmd};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask bench copy [--runs N] [--tables N] [--megabytes N]";

/// Target from the issue: copy_schema's time / the dump-and-subscribe time.
const RATIO_TARGET: f64 = 1.1;
const PUBLICATION: &str = "bench";
/// Bytes a row takes in the heap, roughly (tuple header and line pointer, bigint, int,
/// 128-character text, timestamptz).
const ROW_BYTES: u64 = 180;
/// The longest a way may take to make the subscriber consistent.
const TIMEOUT: Duration = Duration::from_secs(3600);

/// The ways a subscriber is made, in the order of round 1.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Way {
    CopySchema,
    Dump,
    DumpIndexesAfter,
}

const WAYS: [Way; 3] = [Way::CopySchema, Way::Dump, Way::DumpIndexesAfter];

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::CopySchema => "copy_schema",
            Way::Dump => "dump",
            Way::DumpIndexesAfter => "dump, indexes after",
        }
    }

    fn database(self, round: u32) -> String {
        let short = match self {
            Way::CopySchema => "copy",
            Way::Dump => "dump",
            Way::DumpIndexesAfter => "after",
        };
        format!("r{round}_{short}")
    }
}

pub fn run(args: &[&str]) -> Result {
    let (mut runs, mut tables, mut megabytes) = (2, 2000, 1024);
    options(
        args,
        USAGE,
        &mut [
            ("--runs", &mut runs),
            ("--tables", &mut tables),
            ("--megabytes", &mut megabytes),
        ],
        &mut [],
    )?;
    let pair = Pair::start(tables, megabytes)?;
    check_release_installed(&pair.publisher)?;
    let server = sql(&pair.publisher, "postgres", "SELECT version()")?;
    let (rows, size) = pair.published()?;
    println!("bench: copy: {tables} tables, {rows} rows, {size} on the publisher");
    let idle = quiet_check()?;
    let watch = Watch::start(&[&pair.publisher, &pair.subscriber])?;
    let mut rounds = Vec::new();
    for round in 1..=runs {
        let mut times = [0.0; 3];
        // Round r starts with way r - 1 and goes on in order: each way is first once in three.
        for k in 0..WAYS.len() {
            let way = WAYS[(round as usize - 1 + k) % WAYS.len()];
            let seconds = pair.make(way, round, rows)?;
            println!("bench: copy round {round}: {} {seconds:.1} s", way.name());
            times[WAYS.iter().position(|w| *w == way).unwrap_or(0)] = seconds;
        }
        rounds.push(times);
    }
    let foreign = watch.finish();
    println!("bench: {}", foreign_note(&foreign));
    drop(pair);
    let heading = section_heading("Copy", &server);
    let workload = Workload {
        tables,
        megabytes,
        rows,
        size,
    };
    let text = section(
        &Machine::describe(),
        idle,
        &foreign,
        &server,
        &workload,
        &rounds,
    );
    write_section(&heading, &text)?;
    println!("{text}");
    Ok(())
}

/// What the publisher holds.
struct Workload {
    tables: u32,
    megabytes: u32,
    rows: u64,
    size: String,
}

struct Pair {
    publisher: Cluster,
    subscriber: Cluster,
    tables: u32,
}

impl Pair {
    fn start(tables: u32, megabytes: u32) -> Result<Pair> {
        let build = |name: &str, preload: &[&str]| {
            let mut b = ClusterBuilder::new();
            // The launcher starts no apply worker sooner than wal_retrieve_retry_interval (5 s
            // by default) after it last started one: the way that follows another would wait.
            b.name(name)
                .conf("wal_retrieve_retry_interval", "100ms")
                .conf("autovacuum", "off")
                .conf("max_wal_size", "8GB")
                .conf("max_replication_slots", "20")
                .conf("max_wal_senders", "20")
                .shared_preload_libraries(preload);
            b.build().map_err(|e| e.to_string())
        };
        let publisher = build("bench-copy-pub", &["ddl_pgoutput"])?;
        let subscriber = build("bench-copy-sub", &["ddl_sync"])?;
        let rows_per_table = u64::from(megabytes) * 1024 * 1024 / ROW_BYTES / u64::from(tables);
        sql(&publisher, "postgres", "CREATE EXTENSION ddl_sync")?;
        // One DO block per 100 tables: each table made and filled in its own statement.
        for first in (0..tables).step_by(100) {
            let last = (first + 100).min(tables);
            sql(
                &publisher,
                "postgres",
                &format!(
                    "DO $$ BEGIN FOR i IN {first}..{} LOOP
                       EXECUTE format('CREATE TABLE t%s (id bigint PRIMARY KEY, k int NOT NULL,
                                       payload text, created timestamptz DEFAULT now())', i);
                       EXECUTE format('CREATE INDEX t%s_k ON t%s (k)', i, i);
                       EXECUTE format('INSERT INTO t%s (id, k, payload)
                                       SELECT g, g %% 1000, repeat(md5(g::text), 3) || %L
                                         FROM generate_series(1, {rows_per_table}) g',
                                       i, md5(i::text));
                     END LOOP; END $$",
                    last - 1
                ),
            )?;
        }
        sql(
            &publisher,
            "postgres",
            &format!(
                "CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all');
                 VACUUM ANALYZE; CHECKPOINT;"
            ),
        )?;
        Ok(Pair {
            publisher,
            subscriber,
            tables,
        })
    }

    /// The publisher's row count and the size of its database.
    fn published(&self) -> Result<(u64, String)> {
        let rows = self.rows(&self.publisher, "postgres")?;
        let size = sql(
            &self.publisher,
            "postgres",
            "SELECT pg_size_pretty(pg_database_size(current_database()))",
        )?;
        Ok((rows, size))
    }

    /// Every row of every table `t<i>` of database `db` (an ERROR when one is missing).
    fn rows(&self, pg: &Cluster, db: &str) -> Result<u64> {
        let counts: Vec<String> = (0..self.tables)
            .map(|i| format!("SELECT count(*) AS n FROM t{i}"))
            .collect();
        let count = sql(
            pg,
            db,
            &format!("SELECT sum(n) FROM ({}) c", counts.join(" UNION ALL ")),
        )?;
        count
            .parse()
            .map_err(|_| format!("not a row count: {count:?}"))
    }

    /// Makes a consistent subscriber the way `way` says, in a database of its own; returns the
    /// seconds it took. Checks its rows, then drops it.
    fn make(&self, way: Way, round: u32, rows: u64) -> Result<f64> {
        let db = way.database(round);
        let sub = format!("{db}_sub");
        sql(
            &self.subscriber,
            "postgres",
            &format!("CREATE DATABASE {db}"),
        )?;
        sql(&self.publisher, "postgres", "CHECKPOINT")?;
        let connstr = self.publisher.connstr("postgres");
        let subscribe = |with: &str| {
            sql(
                &self.subscriber,
                &db,
                &format!(
                    "CREATE SUBSCRIPTION {sub} CONNECTION '{connstr}' PUBLICATION {PUBLICATION}{with}"
                ),
            )
        };
        let start = Instant::now();
        match way {
            Way::CopySchema => {
                sql(&self.subscriber, &db, "CREATE EXTENSION ddl_sync")?;
                subscribe(" WITH (ddl = 'all', copy_schema = true)")?;
                self.wait_ready(&db)?;
            }
            Way::Dump => {
                self.dump_and_restore(&db, &["--schema-only"])?;
                subscribe("")?;
                self.wait_ready(&db)?;
            }
            Way::DumpIndexesAfter => {
                self.dump_and_restore(&db, &["--schema-only", "--section=pre-data"])?;
                subscribe("")?;
                self.wait_ready(&db)?;
                self.dump_and_restore(&db, &["--schema-only", "--section=post-data"])?;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let copied = self.rows(&self.subscriber, &db)?;
        if copied != rows {
            return Err(format!(
                "{}: the subscriber has {copied} rows, the publisher {rows}",
                way.name()
            ));
        }
        sql(&self.subscriber, &db, &format!("DROP SUBSCRIPTION {sub}"))?;
        sql(&self.subscriber, "postgres", &format!("DROP DATABASE {db}"))?;
        Ok(seconds)
    }

    /// `pg_dump <args>` of the publisher into a file, then `psql -f` of it into `db`.
    fn dump_and_restore(&self, db: &str, args: &[&str]) -> Result {
        let file = bench_dir()?.join("copy-dump.sql");
        Cmd::new(self.publisher.bin("pg_dump"))
            .args(args)
            .args([
                format!("--file={}", file.display()),
                format!("--dbname={}", self.publisher.connstr("postgres")),
            ])
            .run()?;
        let mut psql = self.subscriber.psql_command(db);
        psql.arg("-f").arg(&file);
        let out = psql.output().map_err(|e| format!("cannot run psql: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "psql -f {} failed: {}",
                file.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// Waits until every table of the subscription in `db` is `ready`.
    fn wait_ready(&self, db: &str) -> Result {
        let start = Instant::now();
        loop {
            let left = sql(
                &self.subscriber,
                db,
                "SELECT count(*) FILTER (WHERE srsubstate <> 'r') || ' ' || count(*)
                   FROM pg_subscription_rel",
            )?;
            if left.split(' ').next() == Some("0") && left != "0 0" {
                return Ok(());
            }
            if start.elapsed() > TIMEOUT {
                return Err(format!(
                    "tables not ready after {TIMEOUT:?} (not ready, all: {left})"
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn sql(pg: &Cluster, db: &str, sql: &str) -> Result<String> {
    pg.psql(db, sql).map_err(|e| e.to_string())
}

/// The `## Copy` section: per-round times and the ratios against the dump.
fn section(
    machine: &Machine,
    idle: f64,
    foreign: &Foreign,
    server: &str,
    workload: &Workload,
    rounds: &[[f64; 3]],
) -> String {
    let heading = section_heading("Copy", server);
    let command = reproduce("copy", server);
    let ratio = |r: &[f64; 3], i: usize| r[i] / r[1];
    let copy_ratios: Vec<f64> = rounds.iter().map(|r| ratio(r, 0)).collect();
    let after_ratios: Vec<f64> = rounds.iter().map(|r| ratio(r, 2)).collect();
    let copy_ratio = median(&copy_ratios);
    let after_ratio = median(&after_ratios);
    let mut rows = String::new();
    for (i, r) in rounds.iter().enumerate() {
        rows.push_str(&format!(
            "| {} | {:.1} s | {:.1} s | {:.1} s | {:.3} | {:.3} |\n",
            i + 1,
            r[0],
            r[1],
            r[2],
            ratio(r, 0),
            ratio(r, 2)
        ));
    }
    let dump: Vec<f64> = rounds.iter().map(|r| r[1]).collect();
    let Workload {
        tables,
        megabytes,
        rows: n,
        size,
    } = workload;
    let (after_min, after_max) = after_ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--tables N`, `--megabytes N`). It \
         installs release builds (`cargo xtask install`), starts a throwaway publisher and \
         subscriber, and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line}; CPUs {idle:.0}% idle over 3 s just before the measurements; \
           {foreign_note}.\n\
         - Server: {server}.\n\
         - Workload (`--runs {runs} --tables {tables} --megabytes {megabytes}`): a publisher with \
           {tables} tables (bigint primary key, one secondary index, a text payload), {n} rows, \
           database size {size}; publication `FOR ALL TABLES WITH (ddl = 'all')`.\n\
         - Method: each round makes one subscriber database per way, in an order that turns from \
           round to round, timed from the first command to every table `ready` in \
           `pg_subscription_rel`; each way's rows are counted against the publisher's. \
           `copy_schema`: `CREATE EXTENSION ddl_sync` and one `CREATE SUBSCRIPTION ... WITH \
           (ddl = 'all', copy_schema = true)`. `dump`: `pg_dump --schema-only` to a file, \
           `psql -f`, then a plain `CREATE SUBSCRIPTION` (the baseline; it replicates no DDL). \
           `dump, indexes after`: `--section=pre-data` first, `--section=post-data` (keys, \
           indexes) after the rows. PostgreSQL's default sync workers (2 per subscription); \
           `wal_retrieve_retry_interval = 100ms`, so that no way waits for the launcher.\n\n\
         | Round | copy_schema | dump | dump, indexes after | copy_schema / dump | indexes after / dump |\n\
         |---|---|---|---|---|---|\n\
         {rows}\n\
         - **copy_schema / dump: {copy_ratio:.3}** (median of rounds; target <= {RATIO_TARGET}: \
           {copy_verdict}); {copy_note}.\n\
         - Indexes after the rows / dump: {after_ratio:.3} (per-round {after_min:.3} to \
           {after_max:.3}): building keys and indexes after the rows is not worth making \
           copy_schema wait for table sync unless this ratio is clearly below 1.\n\
         - Spread of the dump's times: {dump_spread:.1} %.\n",
        runs = rounds.len(),
        date = machine.date,
        machine_line = machine.line(),
        foreign_note = foreign_note(foreign),
        copy_verdict = verdict(copy_ratio <= RATIO_TARGET),
        copy_note = rounds_note(&copy_ratios, |r| r <= RATIO_TARGET),
        dump_spread = spread(&dump),
    )
}
