//! `cargo xtask bench apply`: how fast a native subscriber replays a migration, and what a DDL
//! burst does to the replication lag of ordinary DML, into the `## Apply` section of
//! BENCHMARKS.md.
//!
//! Targets (issue #31): a 1,000-statement migration mixed with DML, subscriber apply time /
//! publisher execution time <= 1.0 (the subscriber keeps up); the lag of DML during a DDL
//! burst, against the same run without DDL (reported; #31 wants its p95 at most the burst's own
//! replay time).
//!
//! Two throwaway clusters: the publisher preloads `ddl_pgoutput`, has `ddl_sync` and a
//! publication `FOR ALL TABLES WITH (ddl = 'all')`; the subscriber has `ddl_sync` and a native
//! subscription replaying all DDL on a slot made with `ddl_pgoutput`. Both get the same
//! `pgbench -i` before the slot exists; the subscriber's `pgbench_history` has one more column,
//! `applied_at`, whose default (the clock when the apply worker inserts the row) gives every
//! replicated pgbench transaction its lag.
//!
//! 1. Apply time, per round: the subscription is disabled, the publisher runs the migration
//!    ([`Migration`], on a fresh schema) with psql (its server-side wall time is the publisher
//!    time), then the subscription is enabled and the subscriber waits until the migration's
//!    last row has arrived (the apply time, server-side too). Every DDL must be in the
//!    subscriber's apply log as applied, and the schema (and its rows) must be the same on both
//!    sides, else the benchmark fails. Round 0 is a warm-up.
//! 2. Lag, per round: `pgbench -R` for S seconds, once with the migration run on the publisher
//!    S/4 seconds in (the burst) and once without, in alternating order. The lag of each DML
//!    transaction started between the burst's start and its apply on the subscriber is
//!    compared with that of the transactions of the same window of the run without DDL; the
//!    publisher also samples the slot's LSN distance and `replay_lag` every 100 ms.
//!
//! 3. Scale ([`scale`]): two layouts of many statements (partitions, a schema per tenant) at
//!    the rounds' size and at `--scale` statements, each replayed once like an apply round,
//!    with the apply worker's and the walsender's peak memory.
//!
//! ```text
//! cargo xtask bench apply [--runs N] [--statements N] [--seconds S] [--rate R] [--scale N]
//! ```

mod scale;

use crate::layouts::Layout;
use crate::migration::{describe_schemas, Migration};
use crate::procfs::{foreign_note, quiet_check, Foreign, Watch};
use crate::{
    check_release_installed, median, options, percentile, pgbench, pgbench_figure, pgbench_spawn,
    reproduce, rounds_note, section_heading, spread, verdict, write_section, Machine, Result,
};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::cell::Cell;
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask bench apply [--runs N] [--statements N] [--seconds S] \
                     [--rate R] [--scale N]";

/// Target of issue #31: subscriber apply time / publisher execution time. (It had been lowered
/// to 1.5 along the way; a target is the issue's, met or not.)
const RATIO_TARGET: f64 = 1.0;

const PUBLICATION: &str = "bench";
const SUBSCRIPTION: &str = "bench";
const SLOT: &str = "bench_apply";
/// A table on both sides; a row inserted on the publisher after some work has been applied
/// once it is on the subscriber.
const MARK: &str = "bench_mark";
/// Rows each table of the migration is created with.
const ROWS: u32 = 100;
const PGBENCH_SCALE: u32 = 1;
const CLIENTS: u32 = 2;
/// How often the publisher samples the slot's lag.
const SAMPLE_EVERY_MS: u32 = 100;
/// The longest the subscriber may take to apply what it waits for.
const APPLY_TIMEOUT_S: u32 = 300;
/// How soon the subscriber's launcher starts an enabled subscription's worker (PostgreSQL's
/// default, 5 s, would add up to 5 s of waiting to the apply time).
const RETRY_INTERVAL: &str = "100ms";

pub fn run(args: &[&str]) -> Result {
    let (mut runs, mut statements, mut seconds, mut rate, mut scale) = (8, 1000, 20, 200, 10_000);
    options(
        args,
        USAGE,
        &mut [
            ("--runs", &mut runs),
            ("--statements", &mut statements),
            ("--seconds", &mut seconds),
            ("--rate", &mut rate),
            ("--scale", &mut scale),
        ],
        &mut [],
    )?;
    if seconds < 8 {
        return Err(format!("--seconds must be at least 8\n{USAGE}"));
    }

    // Release builds are what users run: `cargo xtask bench` installed them (checked below).
    let pair = Pair::start()?;
    check_release_installed(&pair.publisher)?;
    let server = pair.publisher_sql("SELECT version()")?;
    let idle = quiet_check()?;
    let watch = Watch::start(&[&pair.publisher, &pair.subscriber])?;

    let mut apply = Vec::new();
    for round in 0..=runs {
        let r = apply_round(&pair, round, statements as usize)?;
        println!(
            "bench: apply round {round}{}: publisher {:.3} s, subscriber {:.3} s (first DDL \
             after {:.3} s, DDL replay {:.3} s), ratio {:.3}; {}",
            if round == 0 { " (warm-up)" } else { "" },
            r.publisher_s,
            r.apply_s,
            r.first_s,
            r.applied.replay_s,
            r.apply_s / r.publisher_s,
            r.applied.described
        );
        if round > 0 {
            apply.push(r);
        }
    }
    let mut lag = Vec::new();
    for round in 1..=runs {
        let one = |ddl| lag_run(&pair, round, ddl, seconds, rate, statements as usize);
        // Alternating order (ABBA), so that a slow drift of the machine hits both alike.
        let round = if round % 2 == 1 {
            let ddl = one(true)?;
            LagRound {
                ddl,
                plain: one(false)?,
            }
        } else {
            let plain = one(false)?;
            LagRound {
                ddl: one(true)?,
                plain,
            }
        };
        println!("bench: lag round: {}", round.summary());
        lag.push(round);
    }
    let mut at_scale = Vec::new();
    for layout in Layout::ALL {
        for ddl in [statements, scale] {
            let run = scale::run(&pair, layout, ddl as usize)?;
            println!("bench: at scale: {}", run.summary());
            at_scale.push(run);
        }
    }
    let foreign = watch.finish();
    println!("bench: {}", foreign_note(&foreign));
    drop(pair);

    let migration = Migration::generate("s", statements as usize, ROWS);
    let heading = section_heading("Apply", &server);
    let section = section(
        &Machine::describe(),
        idle,
        &foreign,
        &server,
        &Settings {
            runs,
            seconds,
            rate,
        },
        &migration,
        &apply,
        &lag,
    ) + &scale::section(&at_scale, RATIO_TARGET);
    write_section(&heading, &section)
}

/// The two clusters and the subscription between them.
struct Pair {
    publisher: Cluster,
    subscriber: Cluster,
    /// The last id inserted into [`MARK`].
    marks: Cell<u32>,
}

impl Pair {
    fn start() -> Result<Pair> {
        // Autovacuum is off (each measurement starts after a VACUUM): a worker waking during one
        // run and not another would make them differ by more than what is measured. UTC on
        // both sides, so that pgbench's `mtime` and the subscriber's `applied_at` (timestamps
        // without time zone) are on the same clock.
        let build = |name: &str, preload: &[&str], extra: &[(&str, &str)]| {
            let mut b = ClusterBuilder::new();
            b.name(name)
                .conf("autovacuum", "off")
                .conf("timezone", "UTC")
                .conf("max_wal_size", "4GB")
                // The scale runs' DROP SCHEMA of 2,000 partitions, and the check's reading of
                // every table, lock each table and index in one transaction.
                .conf("max_locks_per_transaction", "1024")
                .shared_preload_libraries(preload);
            for (k, v) in extra {
                b.conf(k, v);
            }
            b.build().map_err(|e| e.to_string())
        };
        let publisher = build("bench-apply-pub", &["ddl_pgoutput"], &[])?;
        let subscriber = build(
            "bench-apply-sub",
            &[],
            &[("wal_retrieve_retry_interval", RETRY_INTERVAL)],
        )?;
        let pair = Pair {
            publisher,
            subscriber,
            marks: Cell::new(0),
        };
        let scale = PGBENCH_SCALE.to_string();
        pair.publisher_sql("CREATE EXTENSION ddl_sync")?;
        pgbench(&pair.publisher, &["-i", "-q", "-s", &scale])?;
        pair.publisher_sql(&format!(
            "CREATE TABLE {MARK} (id integer PRIMARY KEY);
             CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all');
             SELECT pg_create_logical_replication_slot('{SLOT}', 'ddl_pgoutput');"
        ))?;
        pair.subscriber_sql("CREATE EXTENSION ddl_sync")?;
        pgbench(&pair.subscriber, &["-i", "-q", "-s", &scale])?;
        pair.subscriber_sql(&format!(
            "ALTER TABLE pgbench_history
                 ADD COLUMN applied_at timestamp DEFAULT (clock_timestamp() AT TIME ZONE 'UTC');
             CREATE TABLE {MARK} (id integer PRIMARY KEY);
             CREATE SUBSCRIPTION {SUBSCRIPTION} CONNECTION '{}' PUBLICATION {PUBLICATION}
                 WITH (create_slot = false, slot_name = '{SLOT}', copy_data = false, enabled = false);
             SELECT ddl_sync.set_subscription_ddl('{SUBSCRIPTION}', 'all', 'error');
             ALTER SUBSCRIPTION {SUBSCRIPTION} ENABLE;",
            pair.publisher.connstr("postgres")
        ))?;
        pair.sync()?;
        Ok(pair)
    }

    fn publisher_sql(&self, sql: &str) -> Result<String> {
        self.publisher
            .psql("postgres", sql)
            .map_err(|e| e.to_string())
    }

    fn subscriber_sql(&self, sql: &str) -> Result<String> {
        self.subscriber
            .psql("postgres", sql)
            .map_err(|e| e.to_string())
    }

    fn publisher_lsn(&self) -> Result<String> {
        self.publisher_sql("SELECT pg_current_wal_lsn()")
    }

    /// The next id for [`MARK`].
    fn next_mark(&self) -> u32 {
        self.marks.set(self.marks.get() + 1);
        self.marks.get()
    }

    /// Waits until the subscriber has row `id` of [`MARK`], first enabling the subscription
    /// when `enable`; returns when it started (before the ENABLE) and when the row was there,
    /// epoch seconds by the subscriber's clock. Fails when the apply worker reports an error,
    /// or after [`APPLY_TIMEOUT_S`].
    fn wait_mark(&self, id: u32, enable: bool) -> Result<(f64, f64)> {
        let enable = if enable {
            format!("ALTER SUBSCRIPTION {SUBSCRIPTION} ENABLE;")
        } else {
            String::new()
        };
        let errors = format!(
            "(SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = '{SUBSCRIPTION}')"
        );
        let script = format!(
            "SELECT extract(epoch FROM clock_timestamp()) AS bench_t0 \\gset
             {enable}
             DO $$
             DECLARE
                 deadline timestamptz := clock_timestamp() + interval '{APPLY_TIMEOUT_S} seconds';
                 errors bigint := {errors};
             BEGIN
                 WHILE NOT EXISTS (SELECT FROM {MARK} WHERE id = {id}) LOOP
                     PERFORM pg_stat_clear_snapshot();
                     IF {errors} > errors THEN
                         RAISE EXCEPTION 'the apply worker failed (see the subscriber''s log)';
                     END IF;
                     IF clock_timestamp() > deadline THEN
                         RAISE EXCEPTION 'mark {id} not applied within {APPLY_TIMEOUT_S} s';
                     END IF;
                     PERFORM pg_sleep(0.005);
                 END LOOP;
             END $$;
             SELECT :bench_t0, extract(epoch FROM clock_timestamp());"
        );
        let out = self
            .subscriber_sql(&script)
            .map_err(|e| format!("{e}\nsubscriber log:\n{}", self.subscriber.log_tail(30)))?;
        two_times(&out)
    }

    /// Waits until the subscriber has applied everything the publisher committed so far.
    fn sync(&self) -> Result {
        let id = self.next_mark();
        self.publisher_sql(&format!("INSERT INTO {MARK} VALUES ({id})"))?;
        self.wait_mark(id, false).map(|_| ())
    }

    /// Disables the subscription and waits until its walsender has let go of the slot.
    fn disable(&self) -> Result {
        self.subscriber_sql(&format!("ALTER SUBSCRIPTION {SUBSCRIPTION} DISABLE"))?;
        let started = Instant::now();
        loop {
            let active = self.publisher_sql(&format!(
                "SELECT active FROM pg_replication_slots WHERE slot_name = '{SLOT}'"
            ))?;
            if active == "f" {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!("slot {SLOT} still active 60 s after DISABLE"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `script` on the publisher; returns its start and end (epoch seconds, the
    /// publisher's clock, read just before the first statement and just after the last).
    fn timed(&self, script: &str) -> Result<(f64, f64)> {
        two_times(&self.publisher_sql(&format!(
            "SELECT extract(epoch FROM clock_timestamp()) AS bench_t0 \\gset\n\
             {script}\
             SELECT :bench_t0, extract(epoch FROM clock_timestamp());"
        ))?)
    }

    /// VACUUM and CHECKPOINT on both sides, so that every measurement starts alike.
    fn settle(&self) -> Result {
        for pg in [&self.publisher, &self.subscriber] {
            pg.psql("postgres", "VACUUM")
                .and_then(|_| pg.psql("postgres", "CHECKPOINT"))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Fails unless the subscriber's apply log holds exactly `ddl` events since publisher LSN
    /// `since`, all applied, and `schema` is the same on both sides.
    fn check_applied(&self, schema: &str, since: &str, ddl: usize) -> Result<Applied> {
        let log = self.subscriber_sql(&format!(
            "SELECT coalesce(string_agg(status || ' ' || n, ', ' ORDER BY status), 'none')
             FROM (SELECT coalesce(apply_status, 'unset') AS status, count(*) AS n
                   FROM ddl_sync.events WHERE origin_lsn > '{since}' GROUP BY 1) s"
        ))?;
        if log != format!("applied {ddl}") {
            return Err(format!(
                "the subscriber's apply log since {since} is `{log}`, not `applied {ddl}`"
            ));
        }
        let (replay_s, first) = two_times(&self.subscriber_sql(&format!(
            "SELECT sum(extract(epoch FROM apply_duration)), extract(epoch FROM min(applied_at))
             FROM ddl_sync.events WHERE origin_lsn > '{since}'"
        ))?)?;
        // Verification (#29): every event the publisher described is compared after its replay.
        let verified = self.subscriber_sql(&format!(
            "SELECT count(*) FILTER (WHERE apply_verified) || ' of ' ||
                    count(*) FILTER (WHERE description IS NOT NULL)
             FROM ddl_sync.events WHERE origin_lsn > '{since}'"
        ))?;
        let describe = describe_schemas(schema);
        let (on_publisher, on_subscriber) = (
            self.publisher_sql(&describe)?,
            self.subscriber_sql(&describe)?,
        );
        if on_publisher != on_subscriber {
            return Err(format!(
                "schema {schema} differs after the apply:\npublisher:  {on_publisher}\n\
                 subscriber: {on_subscriber}"
            ));
        }
        Ok(Applied {
            described: on_publisher,
            verified,
            replay_s,
            first,
        })
    }

    /// Runs `migration` on the publisher, and then a row of [`MARK`], with the subscription
    /// disabled, after a [`Pair::settle`].
    fn publish(&self, migration: &Migration) -> Result<Published> {
        self.settle()?;
        self.disable()?;
        let since = self.publisher_lsn()?;
        let mark = self.next_mark();
        let (t0, t1) = self.timed(&format!(
            "{}INSERT INTO {MARK} VALUES ({mark});\n",
            migration.script()
        ))?;
        Ok(Published {
            since,
            mark,
            t0,
            t1,
        })
    }

    /// Drops `schema` on the publisher and waits until the subscriber has dropped it too.
    fn drop_schema(&self, schema: &str) -> Result {
        self.publisher_sql(&format!("DROP SCHEMA {schema} CASCADE"))?;
        self.sync()
    }
}

/// What [`Pair::publish`] did.
struct Published {
    /// The publisher's LSN before the migration.
    since: String,
    /// The id of the [`MARK`] row committed after it.
    mark: u32,
    /// When the migration started and ended, epoch seconds by the publisher's clock.
    t0: f64,
    t1: f64,
}

/// What [`Pair::check_applied`] found.
struct Applied {
    /// The schema's description, the same on both sides.
    described: String,
    /// `<verified> of <described>`: the events verified, of those the publisher described.
    verified: String,
    /// How long the events' replay took by the apply log (`apply_duration`), seconds.
    replay_s: f64,
    /// When the first event was applied, epoch seconds.
    first: f64,
}

/// `a|b` as psql prints two numbers (e.g. two epochs).
fn two_times(out: &str) -> Result<(f64, f64)> {
    let times: Vec<f64> = out.split('|').filter_map(|t| t.parse().ok()).collect();
    match times[..] {
        [t0, t1] => Ok((t0, t1)),
        _ => Err(format!("unexpected timing output {out:?}")),
    }
}

/// One round of the apply time measurement.
struct ApplyRound {
    publisher_s: f64,
    apply_s: f64,
    /// From the ENABLE to the first DDL applied: the worker's start.
    first_s: f64,
    /// WAL the migration wrote, bytes.
    wal_bytes: f64,
    applied: Applied,
}

fn apply_round(pair: &Pair, round: u32, statements: usize) -> Result<ApplyRound> {
    let schema = format!("apply_r{round}");
    let migration = Migration::generate(&schema, statements, ROWS);
    let published = pair.publish(&migration)?;
    let (since, mark) = (published.since.as_str(), published.mark);
    let end = pair.publisher_lsn()?;
    let (enabled, applied) = pair.wait_mark(mark, true)?;
    let wal_bytes = pair
        .publisher_sql(&format!("SELECT pg_wal_lsn_diff('{end}', '{since}')"))?
        .parse()
        .map_err(|e| format!("WAL size: {e}"))?;
    let checked = pair.check_applied(&schema, since, migration.ddl_count())?;
    pair.drop_schema(&schema)?;
    Ok(ApplyRound {
        publisher_s: published.t1 - published.t0,
        apply_s: applied - enabled,
        first_s: checked.first - enabled,
        wal_bytes,
        applied: checked,
    })
}

/// One sample of the publisher's view of the slot.
#[derive(Debug, PartialEq)]
struct Sample {
    /// Seconds since the run started.
    at: f64,
    /// pg_current_wal_lsn() - the slot's confirmed_flush_lsn, bytes.
    distance: f64,
    /// `replay_lag` of the walsender, seconds; `None` when PostgreSQL shows none.
    replay_lag: Option<f64>,
}

/// The samples in psql's stderr, from the notices of the sampler (see [`lag_run`]).
fn parse_samples(stderr: &str) -> Vec<Sample> {
    stderr
        .lines()
        .filter_map(|l| {
            let mut f = l.split_once("NOTICE:  sample ")?.1.split_whitespace();
            let (at, distance, lag) = (f.next()?, f.next()?, f.next()?);
            Some(Sample {
                at: at.parse().ok()?,
                distance: distance.parse().ok()?,
                replay_lag: lag.parse().ok(),
            })
        })
        .collect()
}

/// When the migration ran during a lag run, in seconds since the run started.
#[derive(Clone, Copy)]
struct Burst {
    start: f64,
    /// The publisher committed its last transaction.
    end: f64,
    /// The subscriber had applied it.
    applied: f64,
}

/// One run of the lag measurement.
struct LagRun {
    /// The burst (with DDL).
    burst: Option<Burst>,
    /// Every replicated pgbench transaction: when it started (seconds since the run started)
    /// and its lag (seconds, from its start on the publisher to its insert on the subscriber).
    dml: Vec<(f64, f64)>,
    samples: Vec<Sample>,
    tps: f64,
}

fn lag_run(
    pair: &Pair,
    round: u32,
    ddl: bool,
    seconds: u32,
    rate: u32,
    statements: usize,
) -> Result<LagRun> {
    pair.settle()?;
    let start: f64 = pair
        .publisher_sql("SELECT extract(epoch FROM clock_timestamp())")?
        .parse()
        .map_err(|e| format!("clock: {e}"))?;
    let clients = CLIENTS.to_string();
    let (rate_arg, seconds_arg) = (rate.to_string(), seconds.to_string());
    let began = Instant::now();
    let bench = pgbench_spawn(
        &pair.publisher,
        &[
            "-n",
            "-b",
            "tpcb-like",
            "-c",
            &clients,
            "-j",
            &clients,
            "-R",
            &rate_arg,
            "-T",
            &seconds_arg,
        ],
    )?;
    // The sampler prints a notice per sample and writes nothing, so it adds no WAL.
    let sampler_sql = format!(
        "DO $$
         DECLARE deadline timestamptz := clock_timestamp() + interval '{seconds} seconds';
         BEGIN
             WHILE clock_timestamp() < deadline LOOP
                 RAISE NOTICE 'sample % % %', extract(epoch FROM clock_timestamp()) - {start},
                     (SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)
                      FROM pg_replication_slots WHERE slot_name = '{SLOT}'),
                     coalesce((SELECT extract(epoch FROM w.replay_lag)::text
                               FROM pg_stat_get_wal_senders() w
                               JOIN pg_replication_slots s ON s.active_pid = w.pid
                               WHERE s.slot_name = '{SLOT}'), 'none');
                 PERFORM pg_sleep({SAMPLE_EVERY_MS} / 1000.0);
             END LOOP;
         END $$;\n"
    );
    let mut sampler = pair
        .publisher
        .psql_command("postgres")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start psql: {e}"))?;
    sampler
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(sampler_sql.as_bytes())
        .map_err(|e| format!("cannot write to psql: {e}"))?;
    let mut sampler_err = sampler.stderr.take().expect("stderr is piped");
    let notices = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = sampler_err.read_to_string(&mut text);
        text
    });

    let mut burst = None;
    let mut since = String::new();
    let schema = format!("lag_r{round}");
    let migration = Migration::generate(&schema, statements, ROWS);
    if ddl {
        std::thread::sleep(
            Duration::from_secs_f64(f64::from(seconds) / 4.0).saturating_sub(began.elapsed()),
        );
        since = pair.publisher_lsn()?;
        let id = pair.next_mark();
        let (t0, t1) = pair.timed(&format!(
            "{}INSERT INTO {MARK} VALUES ({id});\n",
            migration.script()
        ))?;
        let (_, applied) = pair.wait_mark(id, false)?;
        burst = Some(Burst {
            start: t0 - start,
            end: t1 - start,
            applied: applied - start,
        });
    }
    let out = bench
        .wait_with_output()
        .map_err(|e| format!("cannot wait for pgbench: {e}"))?;
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("pgbench failed ({}):\n{report}", out.status));
    }
    let status = sampler
        .wait()
        .map_err(|e| format!("cannot wait for psql: {e}"))?;
    let notices = notices.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("the sampler failed ({status}):\n{notices}"));
    }
    if let Some(b) = burst {
        if b.applied > f64::from(seconds) - 1.0 {
            return Err(format!(
                "the DDL burst was applied {:.1} s into a {seconds} s run: raise --seconds",
                b.applied
            ));
        }
    }
    pair.sync()?;
    let rows = pair.subscriber_sql(&format!(
        "SELECT extract(epoch FROM mtime) - {start}, extract(epoch FROM applied_at - mtime)
         FROM pgbench_history WHERE extract(epoch FROM mtime) >= {start} ORDER BY mtime"
    ))?;
    let dml: Vec<(f64, f64)> = rows
        .lines()
        .filter_map(|l| {
            let (at, lag) = l.split_once('|')?;
            Some((at.parse().ok()?, lag.parse().ok()?))
        })
        .collect();
    if ddl {
        pair.check_applied(&schema, &since, migration.ddl_count())?;
        pair.drop_schema(&schema)?;
    }
    let run = LagRun {
        burst,
        dml,
        samples: parse_samples(&notices),
        tps: pgbench_figure(&report, "tps =")?,
    };
    println!(
        "bench: lag run {round} {}: {} DML transactions replicated, {} samples, {:.1} tps{}",
        if ddl { "with DDL" } else { "without DDL" },
        run.dml.len(),
        run.samples.len(),
        run.tps,
        run.burst
            .map(|b| format!(
                ", burst from {:.2} s to {:.2} s, applied at {:.2} s",
                b.start, b.end, b.applied
            ))
            .unwrap_or_default()
    );
    Ok(run)
}

/// Percentiles of some figures.
#[derive(Debug, PartialEq)]
struct Percentiles {
    count: usize,
    p50: f64,
    p95: f64,
    max: f64,
}

fn percentiles(values: &[f64]) -> Option<Percentiles> {
    (!values.is_empty()).then(|| Percentiles {
        count: values.len(),
        p50: percentile(values, 50.0),
        p95: percentile(values, 95.0),
        max: percentile(values, 100.0),
    })
}

/// The two runs of a lag round, judged over the window of the run with DDL: from the burst's
/// start to when the subscriber had applied it.
struct LagRound {
    ddl: LagRun,
    plain: LagRun,
}

/// What one run shows over a window.
struct WindowFigures {
    /// DML lag, seconds.
    dml: Option<Percentiles>,
    /// LSN distance, bytes.
    distance: Option<Percentiles>,
    /// `replay_lag`, seconds, of the samples that had one.
    replay_lag: Option<Percentiles>,
}

impl LagRun {
    fn in_window(&self, (from, to): (f64, f64)) -> WindowFigures {
        let inside = |at: f64| at >= from && at <= to;
        let dml: Vec<f64> = self
            .dml
            .iter()
            .filter(|(at, _)| inside(*at))
            .map(|(_, lag)| *lag)
            .collect();
        let samples: Vec<&Sample> = self.samples.iter().filter(|s| inside(s.at)).collect();
        let distance: Vec<f64> = samples.iter().map(|s| s.distance).collect();
        let replay: Vec<f64> = samples.iter().filter_map(|s| s.replay_lag).collect();
        WindowFigures {
            dml: percentiles(&dml),
            distance: percentiles(&distance),
            replay_lag: percentiles(&replay),
        }
    }
}

impl LagRound {
    fn burst(&self) -> Burst {
        self.ddl.burst.expect("the run with DDL has a burst")
    }

    fn window(&self) -> (f64, f64) {
        let b = self.burst();
        (b.start, b.applied)
    }

    fn figures(&self) -> (WindowFigures, WindowFigures) {
        (
            self.ddl.in_window(self.window()),
            self.plain.in_window(self.window()),
        )
    }

    fn summary(&self) -> String {
        let (ddl, plain) = self.figures();
        let ms = |s: &Option<Percentiles>| {
            s.as_ref().map_or("none".to_string(), |s| {
                format!(
                    "p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} transactions)",
                    s.p50 * 1e3,
                    s.p95 * 1e3,
                    s.max * 1e3,
                    s.count
                )
            })
        };
        let (a, b) = self.window();
        format!(
            "window {a:.2} s to {b:.2} s; DML lag with DDL {}; without {}",
            ms(&ddl.dml),
            ms(&plain.dml)
        )
    }
}

struct Settings {
    runs: u32,
    seconds: u32,
    rate: u32,
}

/// The `## Apply on PostgreSQL N` section.
#[allow(clippy::too_many_arguments)]
fn section(
    machine: &Machine,
    idle: f64,
    foreign: &Foreign,
    server: &str,
    settings: &Settings,
    migration: &Migration,
    apply: &[ApplyRound],
    lag: &[LagRound],
) -> String {
    let heading = section_heading("Apply", server);
    let command = reproduce("apply", server);
    let Settings {
        runs,
        seconds,
        rate,
    } = *settings;
    let tags: Vec<String> = migration
        .tags()
        .iter()
        .map(|(tag, n)| format!("{n} {tag}"))
        .collect();
    let transactions = migration.transactions.len();
    let ratios: Vec<f64> = apply.iter().map(|r| r.apply_s / r.publisher_s).collect();
    let ratio = median(&ratios);
    let publisher: Vec<f64> = apply.iter().map(|r| r.publisher_s).collect();
    let applied: Vec<f64> = apply.iter().map(|r| r.apply_s).collect();
    let mut apply_rows = String::new();
    for (i, r) in apply.iter().enumerate() {
        apply_rows.push_str(&format!(
            "| {} | {:.3} s | {:.3} s | {:.3} s | {:.3} s | {:.3} | {:.1} MB |\n",
            i + 1,
            r.publisher_s,
            r.apply_s,
            r.first_s,
            r.applied.replay_s,
            r.apply_s / r.publisher_s,
            r.wal_bytes / 1e6
        ));
    }
    let described = apply.first().map_or("", |r| r.applied.described.as_str());
    let verified = apply.first().map_or("", |r| r.applied.verified.as_str());

    let ms = |s: &Option<Percentiles>, f: fn(&Percentiles) -> f64| {
        s.as_ref()
            .map_or("-".to_string(), |s| format!("{:.1}", f(s) * 1e3))
    };
    let kb = |s: &Option<Percentiles>| {
        s.as_ref()
            .map_or("-".to_string(), |s| format!("{:.0}", s.max / 1e3))
    };
    let mut lag_rows = String::new();
    // Per round: p95 with DDL / without, and with - without (ms).
    let mut p95_ratios = Vec::new();
    let mut p95_added = Vec::new();
    let mut medians: [Vec<f64>; 6] = Default::default();
    for (i, round) in lag.iter().enumerate() {
        let (a, b) = round.window();
        let (ddl, plain) = round.figures();
        for (name, run, f) in [
            ("with DDL", &round.ddl, &ddl),
            ("without", &round.plain, &plain),
        ] {
            lag_rows.push_str(&format!(
                "| {} | {name} | {a:.1} to {b:.1} s | {:.0} | {} | {} | {} | {} | {} | {} |\n",
                i + 1,
                run.tps,
                f.dml.as_ref().map_or(0, |s| s.count),
                ms(&f.dml, |s| s.p50),
                ms(&f.dml, |s| s.p95),
                ms(&f.dml, |s| s.max),
                kb(&f.distance),
                ms(&f.replay_lag, |s| s.max),
            ));
        }
        if let (Some(d), Some(p)) = (&ddl.dml, &plain.dml) {
            p95_ratios.push(d.p95 / p.p95);
            p95_added.push((d.p95 - p.p95) * 1e3);
            for (k, v) in [d.p50, d.p95, d.max, p.p50, p.p95, p.max]
                .into_iter()
                .enumerate()
            {
                medians[k].push(v * 1e3);
            }
        }
    }
    let med = |k: usize| {
        if medians[k].is_empty() {
            f64::NAN
        } else {
            median(&medians[k])
        }
    };
    let range = |v: &[f64]| {
        format!(
            "{:.2} s to {:.2} s (median {:.2} s)",
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median(v)
        )
    };
    let bursts: Vec<f64> = lag
        .iter()
        .map(|r| r.burst().end - r.burst().start)
        .collect();
    let windows: Vec<f64> = lag.iter().map(|r| r.window().1 - r.window().0).collect();
    let burst_note = if bursts.is_empty() {
        String::new()
    } else {
        format!(
            " Under this load the migration took {} on the publisher (against {:.2} s alone), \
             and the window, until the subscriber had applied it, {}.",
            range(&bursts),
            median(&publisher),
            range(&windows)
        )
    };
    let p95_note = if p95_ratios.is_empty() {
        "no round had DML in the window".to_string()
    } else {
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!(
            "the burst adds **{:+.0} ms** at p95 (per round {:+.0} to {:+.0} ms), a ratio of {:.0} \
             (per round {:.0} to {:.0}) against a baseline of about a millisecond",
            median(&p95_added),
            min(&p95_added),
            max(&p95_added),
            median(&p95_ratios),
            min(&p95_ratios),
            max(&p95_ratios),
        )
    };

    format!(
        "{heading}\n\n\
         Reproduce with `{command}` (options: `--runs N`, `--statements N`, \
         `--seconds S`, `--rate R`). It installs release builds (`cargo xtask install`), starts a \
         throwaway publisher and subscriber, and rewrites this section.\n\n\
         - Date: {date}\n\
         - Machine: {machine_line}; CPUs {idle:.0}% idle over 3 s just before the measurements; \
         {foreign}. Publisher, subscriber, psql and pgbench share these CPUs.\n\
         - Server: {server}\n\
         - Clusters: both with ddl-testkit defaults (`fsync = off`, `shared_buffers = 32MB`, \
         `wal_level = logical`), `autovacuum = off` (each measurement starts after a `VACUUM` \
         and a `CHECKPOINT` on both), `timezone = UTC`, `max_wal_size = 4GB`, `max_locks_per_transaction = 1024` (a DROP \
         SCHEMA of the scale runs' 2,000 partitions locks them all), and the same \
         `pgbench -i -s {PGBENCH_SCALE}` made before the slot. Publisher: \
         `shared_preload_libraries = 'ddl_pgoutput'`, `CREATE EXTENSION ddl_sync`, `CREATE \
         PUBLICATION {PUBLICATION} FOR ALL TABLES WITH (ddl = 'all')`, slot `{SLOT}` made with \
         plugin `ddl_pgoutput`. Subscriber: `CREATE EXTENSION ddl_sync`, `CREATE SUBSCRIPTION \
         {SUBSCRIPTION} ... WITH (create_slot = false, slot_name = '{SLOT}', copy_data = \
         false)`, `ddl_sync.set_subscription_ddl('{SUBSCRIPTION}', 'all', 'error')` (a native \
         apply worker replays every DDL in its own transaction), `wal_retrieve_retry_interval \
         = {RETRY_INTERVAL}` (the launcher starts an enabled subscription's worker within that \
         time instead of PostgreSQL's 5 s), and one more column in `pgbench_history`, \
         `applied_at timestamp DEFAULT (clock_timestamp() AT TIME ZONE 'UTC')`, which the apply \
         worker fills when it inserts a replicated row.\n\
         - Migration: {ddl} DDL statements ({tags}) and {dml} DML statements in {transactions} \
         transactions of 1 to 4 statements, on a schema of its own (fresh each time): tables \
         created and filled with {ROWS} rows in the same transaction, a column added and \
         filled by an UPDATE, an index, a comment, a view and a SQL function on each table, a \
         column and the table renamed, rows inserted and deleted under the new names, then \
         every other table dropped with its view and function, and a sequence, a column default \
         (used by an UPDATE) and a renamed index for the others. It runs as one psql script \
         (`BEGIN; ...; COMMIT;` per transaction); the last committed row is the migration's \
         row of a marker table.\n\n\
         ### Apply time\n\n\
         Method: per round, `ALTER SUBSCRIPTION {SUBSCRIPTION} DISABLE` (and wait until the \
         slot is inactive), then the publisher runs the migration: the publisher time is the \
         script's wall time by the publisher's clock, from before its first statement to after \
         its last (capture included; psql sends one statement at a time, as a migration tool \
         would). Then `ALTER SUBSCRIPTION {SUBSCRIPTION} ENABLE`, and a \
         session on the subscriber polls (every 5 ms) for the marker row: the apply time is \
         the subscriber's clock from before the ENABLE to when the row is there, so it counts \
         the apply worker's start, its walsender decoding the migration's WAL (which runs \
         beside the apply, on the other CPU) and the apply of every transaction, DDL replay \
         included. Within it, by the apply log: `ENABLE to first DDL applied` is the worker's \
         start (the launcher's wake-up, the connection, the walsender's start) and the first \
         transaction (`CREATE SCHEMA`) until its event's `applied_at`; DDL replay is the sum of \
         `apply_duration` over the migration's events, the time `ddl_sync.replay()` took for \
         them (re-parse, checks, execution); the rest is the rows, the events' own inserts and \
         the commits. Checked after every round (the benchmark fails otherwise): the \
         subscriber's apply log (`ddl_sync.events`) holds exactly {ddl} rows since the \
         migration's start LSN, all `applied` ({verified} events verified: what each table \
         statement made, described by the publisher's plugin, compared after its replay, which \
         the DDL replay time includes); and the schema's description is the same on \
         both sides (every column with type, NOT NULL and default, index and view \
         definition, function, comment, and each table's rows by count and md5), e.g. \
         `{described}`. The schema is then dropped (replicated too, and waited for). Round 0 \
         is a warm-up and not counted; {runs} rounds follow.\n\n\
         | round | publisher | subscriber apply | ENABLE to first DDL applied | DDL replay \
         | apply / publisher | WAL |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n\
         {apply_rows}\n\
         - Apply time / publisher time: **{ratio:.3}** (median of the rounds; target <= \
         {RATIO_TARGET}: {ratio_verdict}; {ratio_note}); spread of the publisher times \
         {publisher_spread:.0}%, of the apply times {apply_spread:.0}% (spread: (largest - \
         smallest) / median, this machine's noise)\n\n\
         ### Lag of DML during a DDL burst\n\n\
         Method: per round, two runs of `pgbench -n -b tpcb-like -c {CLIENTS} -j {CLIENTS} -R \
         {rate} -T {seconds}` on the publisher with the subscription enabled, in alternating \
         order: one with the migration (on a fresh schema) started {burst_at:.1} s in, the \
         burst, one without. The window is from the burst's start on the publisher to the \
         moment the subscriber had applied its last transaction (a session on the subscriber \
         polls for its marker row), in seconds since the run's start: the DML that ran while \
         DDL was in flight. The run without DDL is judged over the same window. \
         DML lag is per replicated pgbench transaction that started in the window: the \
         subscriber's `applied_at` of its `pgbench_history` row minus the row's `mtime` (the \
         transaction's start on the publisher; same machine, same clock). The publisher also \
         samples every {SAMPLE_EVERY_MS} ms the slot's distance (`pg_current_wal_lsn()` - \
         `confirmed_flush_lsn`, which advances as the subscriber reports what it has flushed) \
         and the walsender's `replay_lag` (PostgreSQL measures it for logical walsenders only \
         about once a second, and clears it when the subscriber is idle). After each run the \
         subscriber is waited for; the run with DDL is checked like the apply rounds.\
         {burst_note}\n\n\
         | round | run | window | tps | DML in window | DML lag p50 (ms) | p95 (ms) | max (ms) \
         | slot distance max (kB) | replay_lag max (ms) |\n\
         |---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n\
         {lag_rows}\n\
         - DML lag during the burst, medians over the rounds: p50 **{d50:.1} ms**, p95 **{d95:.1} \
         ms**, max **{dmax:.1} ms**; over the same window without DDL: p50 {p50:.1} ms, p95 \
         {p95:.1} ms, max {pmax:.1} ms: {p95_note}. Target (#31): p95 at most the burst's own \
         replay time on the subscriber, taken as the apply rounds' median subscriber apply \
         time of the same migration, {burst_apply:.0} ms: {lag_verdict}. DML that commits behind DDL waits until the subscriber has replayed that \
         DDL, so its lag is about how far the apply of the burst trails the publisher.\n",
        date = machine.date,
        machine_line = machine.line(),
        foreign = foreign_note(foreign),
        ddl = migration.ddl_count(),
        tags = tags.join(", "),
        dml = migration.dml_count(),
        ratio_verdict = verdict(ratio <= RATIO_TARGET),
        ratio_note = rounds_note(&ratios, |r| r <= RATIO_TARGET),
        publisher_spread = spread(&publisher),
        apply_spread = spread(&applied),
        burst_at = f64::from(seconds) / 4.0,
        d50 = med(0),
        d95 = med(1),
        dmax = med(2),
        p50 = med(3),
        p95 = med(4),
        pmax = med(5),
        burst_apply = median(&applied) * 1e3,
        lag_verdict = verdict(med(1) <= median(&applied) * 1e3),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_notices_are_read() {
        let stderr = "NOTICE:  sample 0.105 2048 0.012\n\
                      NOTICE:  sample 0.207 0 none\n\
                      psql:<stdin>:12: WARNING:  something else\n\
                      NOTICE:  sample 0.309 <NULL> none\n";
        assert_eq!(
            parse_samples(stderr),
            [
                Sample {
                    at: 0.105,
                    distance: 2048.0,
                    replay_lag: Some(0.012)
                },
                Sample {
                    at: 0.207,
                    distance: 0.0,
                    replay_lag: None
                }
            ]
        );
    }

    #[test]
    fn runs_are_judged_over_the_window() {
        let run = LagRun {
            burst: None,
            dml: (0..100)
                .map(|i| (f64::from(i) / 10.0, f64::from(i)))
                .collect(),
            samples: vec![
                Sample {
                    at: 0.5,
                    distance: 10.0,
                    replay_lag: None,
                },
                Sample {
                    at: 2.5,
                    distance: 30.0,
                    replay_lag: Some(0.5),
                },
            ],
            tps: 0.0,
        };
        let f = run.in_window((2.0, 3.0));
        // Transactions 20 to 30 started in the window.
        assert_eq!(
            f.dml,
            Some(Percentiles {
                count: 11,
                p50: 25.0,
                p95: 30.0,
                max: 30.0
            })
        );
        assert_eq!(f.distance.map(|s| s.max), Some(30.0));
        assert_eq!(f.replay_lag.map(|s| s.count), Some(1));
        assert!(run.in_window((20.0, 30.0)).dml.is_none());
    }
}
