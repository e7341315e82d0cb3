//! Crash trials: a publisher and a native subscriber replaying DDL, a stream of transactions
//! mixing DDL and rows, and one SIGKILL of every process of one side ([`Cluster::kill`]) at a
//! chosen point of the stream. After recovery the trial counts, statement by statement and row
//! by row, what the subscriber applied against what the publisher committed.
//!
//! How the counting is made real: every statement of the stream carries a sequence number. A DDL
//! statement has it in a comment inside its text (`CREATE TABLE w_3 /* seq 17 */ (...)`), which
//! the capture keeps, so the subscriber's apply log (`ddl_sync.events`, one row per origin LSN)
//! says which statements were replayed, and how often. The same transaction inserts the number
//! into `stream_ddl` on the publisher: after a publisher crash its rows are exactly the DDL that
//! committed (a transaction the crash interrupted is not lost, it never happened). Each DML
//! statement inserts rows `(seq, n)` into `ledger`, which has no key, so a row applied twice
//! stays visible as a duplicate instead of stopping the apply worker. The writer retries a
//! transaction the crash interrupted (when `ledger` shows it did not commit), like an
//! application would, so every transaction commits exactly once in the end.
//!
//! Used by the e2e tests (one small trial per side) and by `cargo xtask reliability` (many).

use crate::compare::{rows_difference, schema_difference};
use crate::replication::{ddl_subscriber, query, subscribe, wait_caught_up};
use crate::{ddl_publisher, APPLY_WORKER};
use ddl_testkit::{Client, Cluster};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Which node is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The publisher: the writer's transaction in flight dies, the walsender with it.
    Publisher,
    /// The subscriber: its apply worker dies in the middle of whatever it was applying.
    Subscriber,
}

impl Side {
    /// `publisher` or `subscriber`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Publisher => "publisher",
            Side::Subscriber => "subscriber",
        }
    }
}

/// One trial's set-up.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The node killed.
    pub side: Side,
    /// Transactions in the stream (at least 2).
    pub transactions: usize,
    /// The kill comes once the writer has committed this many transactions...
    pub kill_after: usize,
    /// ...and this much later (so it may fall inside the next transaction).
    pub delay: Duration,
    /// The subscription's `streaming` option: large transactions reach the subscriber before
    /// they commit (spooled to files there) instead of after.
    pub streaming: bool,
    /// Subscriber trials only: from the kill point on, a local session holds `ledger` (ACCESS
    /// SHARE), so the next `ALTER TABLE ledger` of the stream waits in the middle of its
    /// transaction (after the transaction's first rows); the kill comes once the apply worker
    /// is seen waiting. A kill at a random time mostly finds the worker between transactions.
    pub mid_replay: bool,
    /// Name prefix of the clusters.
    pub name: String,
}

impl Plan {
    /// A plan with the kill point drawn from `rng`: after 1 to `transactions - 2` transactions,
    /// 0 to 40 ms later.
    pub fn random(side: Side, transactions: usize, streaming: bool, rng: &mut Rng) -> Plan {
        assert!(transactions >= 3, "a stream of at least 3 transactions");
        Plan {
            side,
            transactions,
            kill_after: 1 + rng.below(transactions as u64 - 2) as usize,
            delay: Duration::from_millis(rng.below(41)),
            streaming,
            mid_replay: false,
            name: format!("kill-{}", side.name()),
        }
    }

    /// [`random`](Plan::random), killing the subscriber while a replay waits inside its
    /// transaction (see [`Plan::mid_replay`]); the kill point leaves room for an `ALTER TABLE
    /// ledger` (every sixth transaction) after it.
    pub fn mid_replay(transactions: usize, streaming: bool, rng: &mut Rng) -> Plan {
        assert!(transactions >= 10, "a stream of at least 10 transactions");
        Plan {
            kill_after: 1 + rng.below(transactions as u64 - 8) as usize,
            mid_replay: true,
            ..Plan::random(Side::Subscriber, transactions, streaming, rng)
        }
    }
}

/// A small, seedable random generator (xorshift64*): trials are reproducible from their seed,
/// and no dependency is needed for it.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced, xorshift never leaves it).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// What a trial found. `lost`, `duplicated` and `phantom` list sequence numbers; all empty and
/// both differences `None` is a pass.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Transactions the writer had committed when the kill came.
    pub committed_at_kill: usize,
    /// Whether the apply worker was seen waiting inside a transaction, a DDL statement's replay
    /// (`mid_replay` plans), when the kill came.
    pub replay_waiting_at_kill: bool,
    /// Whether the writer had a transaction in flight whose commit it never heard of.
    pub in_doubt: bool,
    /// DDL statements the publisher committed.
    pub ddl_committed: usize,
    /// Committed DDL statements missing from the subscriber's apply log.
    pub ddl_lost: Vec<u64>,
    /// DDL statements in the apply log more than once.
    pub ddl_duplicated: Vec<u64>,
    /// DDL statements applied that the publisher never committed.
    pub ddl_phantom: Vec<u64>,
    /// Rows the publisher committed (in `ledger`).
    pub rows_committed: usize,
    /// Committed rows missing on the subscriber, by statement.
    pub rows_lost: Vec<u64>,
    /// Rows there more than once, by statement.
    pub rows_duplicated: Vec<u64>,
    /// Rows there that the publisher never committed, by statement.
    pub rows_phantom: Vec<u64>,
    /// Apply log rows that are not `applied`.
    pub not_applied: Vec<String>,
    /// `pg_dump --schema-only` differences, if any.
    pub schema_difference: Option<String>,
    /// Row checksum differences of all tables, if any.
    pub rows_difference: Option<String>,
    /// Server processes that died of a signal other than the trial's own kill.
    pub other_deaths: Vec<String>,
    /// From the end of the stream until the subscriber had all of it.
    pub catch_up: Duration,
}

impl Report {
    /// Nothing lost, nothing twice, nothing that should not be, both sides the same.
    pub fn passed(&self) -> bool {
        self.problems().is_empty()
    }

    /// One line per kind of problem found.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut list = |what: &str, seqs: &[u64]| {
            if !seqs.is_empty() {
                out.push(format!("{what}: {} (seq {seqs:?})", seqs.len()));
            }
        };
        list("DDL lost", &self.ddl_lost);
        list("DDL applied twice", &self.ddl_duplicated);
        list("DDL applied but never committed", &self.ddl_phantom);
        list("rows lost", &self.rows_lost);
        list("rows applied twice", &self.rows_duplicated);
        list("rows applied but never committed", &self.rows_phantom);
        if !self.not_applied.is_empty() {
            out.push(format!(
                "apply log rows not applied: {:?}",
                self.not_applied
            ));
        }
        if let Some(d) = &self.schema_difference {
            out.push(format!("schemas differ: {d}"));
        }
        if let Some(d) = &self.rows_difference {
            out.push(format!("tables differ: {d}"));
        }
        if !self.other_deaths.is_empty() {
            out.push(format!("other process deaths: {:?}", self.other_deaths));
        }
        out
    }
}

/// How long the subscriber may take to catch up after the stream.
const CATCH_UP: Duration = Duration::from_secs(120);
/// Rows of the large transactions (every tenth): with the publisher's 64 kB
/// `logical_decoding_work_mem` they spill to disk, or stream when the subscription asks.
const LARGE_ROWS: usize = 3000;
/// A pause between transactions, so that the subscriber applies while the stream goes on.
const PAUSE: Duration = Duration::from_millis(20);

/// Runs one trial on fresh clusters. Panics (with both servers' logs) when the set-up fails or
/// the subscriber does not catch up; what it counts is in the report.
pub fn trial(plan: &Plan) -> Report {
    let publisher = ddl_publisher(&format!("{}-pub", plan.name));
    let subscriber = ddl_subscriber(&format!("{}-sub", plan.name), &[]);
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all');
         SELECT pg_create_logical_replication_slot('s', 'ddl_pgoutput');",
    );
    subscribe(&subscriber, &publisher, "sub", "s", "all", "error");
    if plan.streaming {
        query(&subscriber, "ALTER SUBSCRIPTION sub SET (streaming = on)");
    }
    // Replicated as DDL like the rest of the stream.
    query(
        &publisher,
        "CREATE TABLE ledger (seq bigint NOT NULL, n int NOT NULL, txn int NOT NULL);
         CREATE TABLE stream_ddl (seq bigint NOT NULL);",
    );
    // The stream starts with the apply worker running (and these tables on the subscriber).
    wait_caught_up(&publisher, &subscriber, "sub", CATCH_UP);
    let stream = Stream::generate(plan.transactions);
    let (publisher, subscriber) = (Mutex::new(publisher), Mutex::new(subscriber));
    let client = publisher.lock().expect("not poisoned").client();
    let progress = AtomicUsize::new(0);
    let mut report = Report::default();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| write(&client, &stream, &progress));
        while progress.load(Ordering::SeqCst) < plan.kill_after && !writer.is_finished() {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(plan.delay);
        let victim = match plan.side {
            Side::Publisher => &publisher,
            Side::Subscriber => &subscriber,
        };
        let mut victim = victim.lock().expect("not poisoned");
        let holder = plan.mid_replay.then(|| {
            let (holder, waiting) = hold_ledger(&victim.client());
            report.replay_waiting_at_kill = waiting;
            holder
        });
        report.committed_at_kill = progress.load(Ordering::SeqCst);
        victim.kill().expect("kill the server");
        if let Some(mut holder) = holder {
            // Its server is gone: psql exits by itself (or is made to).
            let _ = holder.kill();
            let _ = holder.wait();
        }
        victim.start().expect("restart after the kill");
        drop(victim);
        report.in_doubt = writer.join().expect("the writer ran");
    });
    let (publisher, subscriber) = (
        publisher.into_inner().expect("not poisoned"),
        subscriber.into_inner().expect("not poisoned"),
    );
    let stream_end = Instant::now();
    wait_caught_up(&publisher, &subscriber, "sub", CATCH_UP);
    report.catch_up = stream_end.elapsed();
    count(&publisher, &subscriber, &mut report);
    report
}

/// Opens a session on the subscriber that takes ACCESS SHARE on `ledger` in a transaction it
/// keeps open, then waits (at most 60 s) until the apply worker waits for a lock; returns the
/// session's psql (its input open) and whether the worker was seen waiting.
fn hold_ledger(subscriber: &Client) -> (std::process::Child, bool) {
    use std::io::Write;
    let mut holder = subscriber
        .psql_command("postgres")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start psql");
    holder
        .stdin
        .as_mut()
        .expect("stdin is piped")
        .write_all(b"BEGIN; LOCK TABLE ledger IN ACCESS SHARE MODE;\n")
        .expect("write to psql");
    let waiting = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE {APPLY_WORKER} AND wait_event_type = 'Lock'"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if subscriber
            .psql("postgres", &waiting)
            .is_ok_and(|n| n == "1")
        {
            return (holder, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (holder, false)
}

/// Runs the stream; returns whether a transaction was in doubt (its connection died before
/// the commit was confirmed). Panics when a transaction fails for another reason.
fn write(client: &Client, stream: &Stream, progress: &AtomicUsize) -> bool {
    let mut in_doubt = false;
    for (i, txn) in stream.transactions.iter().enumerate() {
        let number = i + 1;
        let mut attempts = 0;
        loop {
            attempts += 1;
            match client.psql("postgres", txn) {
                Ok(_) => break,
                Err(e) => {
                    in_doubt = true;
                    assert!(
                        attempts < 4,
                        "transaction {number} failed {attempts} times: {e}"
                    );
                    if committed(client, number) {
                        break;
                    }
                }
            }
        }
        progress.store(number, Ordering::SeqCst);
        std::thread::sleep(PAUSE);
    }
    in_doubt
}

/// Whether transaction `number` committed, asked once the publisher answers again (at most
/// two minutes: it is being restarted).
fn committed(client: &Client, number: usize) -> bool {
    let sql = format!("SELECT EXISTS (SELECT FROM ledger WHERE txn = {number})");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match client.psql("postgres", &sql) {
            Ok(answer) => return answer == "t",
            Err(e) if Instant::now() >= deadline => panic!("the publisher did not come back: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The transactions of a trial, as SQL scripts.
struct Stream {
    transactions: Vec<String>,
}

impl Stream {
    /// Transaction i (from 1) inserts ledger rows and runs one DDL statement, chosen by i:
    /// create a table (and fill it), add a column to `ledger` (and use it), index a table,
    /// comment on a table and update its rows, drop the oldest table or create a view. Every
    /// tenth transaction inserts [`LARGE_ROWS`] rows; every seventh also runs a DDL statement
    /// in a savepoint it rolls back (never committed, so never to be applied).
    fn generate(transactions: usize) -> Stream {
        let mut seq = 0u64;
        let mut next = || {
            seq += 1;
            seq
        };
        let mut live: Vec<usize> = Vec::new();
        let mut out = Vec::with_capacity(transactions);
        for i in 1..=transactions {
            let mut sql = String::from("BEGIN;\n");
            let rows = if i % 10 == 0 { LARGE_ROWS } else { 3 };
            let _ = writeln!(
                sql,
                "INSERT INTO ledger SELECT {}, g, {i} FROM generate_series(1, {rows}) AS g;",
                next()
            );
            let ddl = |sql: &mut String, statement: String, seq: u64| {
                let _ = writeln!(sql, "{statement};\nINSERT INTO stream_ddl VALUES ({seq});");
            };
            let s = next();
            match (i % 6, live.last().copied()) {
                (0, _) | (_, None) => {
                    ddl(
                        &mut sql,
                        format!("CREATE TABLE w_{i} /* seq {s} */ (id int PRIMARY KEY, v text NOT NULL)"),
                        s,
                    );
                    let _ = writeln!(
                        sql,
                        "INSERT INTO w_{i} SELECT g, 'v' || g FROM generate_series(1, 50) AS g;"
                    );
                    live.push(i);
                }
                (1, _) => {
                    ddl(
                        &mut sql,
                        format!("ALTER TABLE ledger /* seq {s} */ ADD COLUMN c_{i} int"),
                        s,
                    );
                    let _ = writeln!(
                        sql,
                        "INSERT INTO ledger (seq, n, txn, c_{i}) VALUES ({}, 1, {i}, {i});",
                        next()
                    );
                }
                (2, Some(w)) => ddl(
                    &mut sql,
                    format!("CREATE INDEX w_{w}_v_{i} /* seq {s} */ ON w_{w} (v)"),
                    s,
                ),
                (3, Some(w)) => {
                    ddl(
                        &mut sql,
                        format!("COMMENT /* seq {s} */ ON TABLE w_{w} IS 'transaction {i}'"),
                        s,
                    );
                    let _ = writeln!(
                        sql,
                        "UPDATE w_{w} SET v = v || '+' WHERE id % 7 = {};",
                        i % 7
                    );
                }
                (4, _) if live.len() > 2 => {
                    let w = live.remove(0);
                    ddl(&mut sql, format!("DROP TABLE w_{w} /* seq {s} */"), s);
                }
                _ => ddl(
                    &mut sql,
                    format!("CREATE VIEW v_{i} /* seq {s} */ AS SELECT count(*) AS n FROM ledger"),
                    s,
                ),
            }
            if i % 7 == 0 {
                let s = next();
                sql.push_str("SAVEPOINT doomed;\n");
                ddl(
                    &mut sql,
                    format!("CREATE TABLE doomed_{i} /* seq {s} */ (a int)"),
                    s,
                );
                sql.push_str("ROLLBACK TO SAVEPOINT doomed;\n");
            }
            sql.push_str("COMMIT;\n");
            out.push(sql);
        }
        Stream { transactions: out }
    }
}

/// Fills the counts of `report` from both sides.
fn count(publisher: &Cluster, subscriber: &Cluster, report: &mut Report) {
    let committed = numbers(&query(
        publisher,
        "SELECT seq, count(*) FROM stream_ddl GROUP BY 1",
    ));
    let applied = numbers(&query(
        subscriber,
        "SELECT substring(sql FROM '/\\* seq ([0-9]+) \\*/')::bigint, count(*)
           FROM ddl_sync.events WHERE apply_status = 'applied' AND sql ~ '/\\* seq [0-9]+ \\*/'
          GROUP BY 1",
    ));
    report.ddl_committed = committed.len();
    report.ddl_lost = missing(&committed, &applied);
    report.ddl_phantom = missing(&applied, &committed);
    report.ddl_duplicated = applied
        .iter()
        .filter(|(_, n)| n[0] > 1)
        .map(|(s, _)| *s)
        .collect();

    // Per statement: rows, distinct rows.
    let per_statement = "SELECT seq, count(*), count(DISTINCT n) FROM ledger GROUP BY 1";
    let published = numbers(&query(publisher, per_statement));
    let arrived = numbers(&query(subscriber, per_statement));
    report.rows_committed = published.values().map(|n| n[0] as usize).sum();
    report.rows_phantom = missing(&arrived, &published);
    report.rows_lost = published
        .iter()
        .filter(|(s, n)| arrived.get(*s).is_none_or(|a| a[1] < n[1]))
        .map(|(s, _)| *s)
        .collect();
    report.rows_duplicated = arrived
        .iter()
        .filter(|(_, a)| a[0] > a[1])
        .map(|(s, _)| *s)
        .collect();

    report.not_applied = query(
        subscriber,
        "SELECT apply_status || ': ' || sql || ' -- ' || coalesce(apply_detail, '')
           FROM ddl_sync.events WHERE apply_status IS DISTINCT FROM 'applied'",
    )
    .lines()
    .map(str::to_string)
    .collect();
    report.schema_difference = schema_difference(publisher, subscriber);
    report.rows_difference = rows_difference(publisher, subscriber);
    report.other_deaths = [publisher, subscriber]
        .iter()
        .flat_map(|pg| {
            let log = std::fs::read_to_string(pg.log_path()).unwrap_or_default();
            log.lines()
                .filter(|l| l.contains("terminated by signal") || l.contains("PANIC:"))
                .map(|l| format!("{}: {l}", pg.name()))
                .collect::<Vec<_>>()
        })
        .collect();
}

/// `seq|a|b...` lines as seq → [a, b, ...].
fn numbers(text: &str) -> BTreeMap<u64, Vec<u64>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut fields = l.split('|').map(|f| {
                f.parse::<u64>()
                    .unwrap_or_else(|e| panic!("not a number in {l:?}: {e}"))
            });
            let seq = fields.next().expect("a sequence number");
            (seq, fields.collect())
        })
        .collect()
}

/// The keys of `a` that `b` does not have.
fn missing(a: &BTreeMap<u64, Vec<u64>>, b: &BTreeMap<u64, Vec<u64>>) -> Vec<u64> {
    a.keys().filter(|k| !b.contains_key(*k)).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_has_its_own_number_and_the_kinds_all_come() {
        let stream = Stream::generate(42);
        let all = stream.transactions.concat();
        let seqs: Vec<u64> = all
            .match_indices("/* seq ")
            .map(|(i, _)| {
                let rest = &all[i + 7..];
                rest[..rest.find(' ').unwrap()].parse().unwrap()
            })
            .collect();
        let mut unique = seqs.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seqs.len(), "a number used twice");
        for kind in [
            "CREATE TABLE w_",
            "ALTER TABLE ledger",
            "CREATE INDEX",
            "COMMENT",
            "DROP TABLE",
            "CREATE VIEW",
            "ROLLBACK TO SAVEPOINT",
        ] {
            assert!(all.contains(kind), "no {kind} in the stream");
        }
        assert_eq!(all.matches("COMMIT;").count(), 42);
        // Each DDL statement is recorded in the same transaction.
        assert_eq!(all.matches("INSERT INTO stream_ddl").count(), seqs.len());
    }

    #[test]
    fn random_plans_stay_inside_the_stream() {
        let mut rng = Rng::new(7);
        for _ in 0..1000 {
            let plan = Plan::random(Side::Publisher, 10, false, &mut rng);
            assert!((1..=8).contains(&plan.kill_after), "{plan:?}");
            assert!(plan.delay <= Duration::from_millis(40));
        }
        assert_eq!(Rng::new(3).below(1000), Rng::new(3).below(1000));
    }

    #[test]
    fn counts_compare_by_number() {
        let a = numbers("1|1\n2|1\n3|2");
        let b = numbers("2|1\n3|1\n4|1");
        assert_eq!(missing(&a, &b), [1]);
        assert_eq!(missing(&b, &a), [4]);
        let mut report = Report::default();
        assert!(report.passed());
        report.rows_lost = vec![5];
        assert_eq!(report.problems(), ["rows lost: 1 (seq [5])"]);
    }
}
