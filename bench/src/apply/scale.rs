//! The scale runs of `bench apply` (#31): the [`Layout`]s at the rounds' size and at ten
//! thousand statements, replayed like an apply round, with the peak memory of the apply worker
//! and of its walsender, and the replay time per event early and late in the run. The baseline
//! for memory: a session on the subscriber running the same statements in a database without
//! the extension, whose caches grow with what the statements make as the worker's do, and a
//! walsender decoding the same WAL with PostgreSQL's `pgoutput` (pg_recvlogical).

use super::{Pair, MARK, SUBSCRIPTION};
use crate::decode::{decode_once, Plugin};
use crate::layouts::Layout;
use crate::migration::Migration;
use crate::procfs::{server_cpu_ms, Peaks, Watched};
use crate::{verdict, Result};

/// Target of #31: peak memory at 10,000 statements against 1,000.
const MEMORY_TARGET: f64 = 1.2;
/// The command line of the subscription's apply worker: "logical replication worker for
/// subscription N" up to 15, "logical replication apply worker for ..." from 16.
const APPLY_WORKER: &str = "worker for subscription";
const WALSENDER: &str = "walsender";
/// The subscriber's database without the extension where a session runs the statements.
const PLAIN: &str = "scale_plain";
/// The publisher's slot of plugin `pgoutput` that decodes the same WAL.
const PLAIN_SLOT: &str = "scale_pgoutput";

/// One replay of a layout.
pub(super) struct ScaleRun {
    layout: Layout,
    ddl: usize,
    publisher_s: f64,
    apply_s: f64,
    /// The sum of the events' `apply_duration`, seconds.
    replay_s: f64,
    /// Mean `apply_duration` of the first and of the last tenth of the events, ms.
    first_tenth_ms: f64,
    last_tenth_ms: f64,
    verified: String,
    worker: Watched,
    walsender: Watched,
    /// The session running the same statements.
    session: Watched,
    /// pgoutput's walsender on the same WAL.
    pgoutput: Watched,
    /// CPU time of all of the publisher's server processes while it ran the migration, and of
    /// each cluster's while the subscriber caught up, ms.
    publisher_cpu_ms: f64,
    apply_publisher_cpu_ms: f64,
    apply_subscriber_cpu_ms: f64,
}

/// Runs `layout` with `ddl` statements on schemas of their own, as an apply round does, and
/// drops them.
pub(super) fn run(pair: &Pair, layout: Layout, ddl: usize) -> Result<ScaleRun> {
    let prefix = format!("scale_{}_{ddl}", layout.name());
    let migration = layout.migration(&prefix, ddl);
    // Before the migration, so that pgoutput decodes all of it.
    pair.publisher_sql(&format!(
        "SELECT pg_create_logical_replication_slot('{PLAIN_SLOT}', 'pgoutput')"
    ))?;
    let publisher_cpu = server_cpu_ms(&pair.publisher)?;
    let published = pair.publish(&migration)?;
    let publisher_cpu_ms = server_cpu_ms(&pair.publisher)? - publisher_cpu;
    let (since, mark) = (published.since.as_str(), published.mark);
    let cpu = [
        server_cpu_ms(&pair.publisher)?,
        server_cpu_ms(&pair.subscriber)?,
    ];
    let peaks = Peaks::start(&[
        (&pair.subscriber, APPLY_WORKER),
        (&pair.publisher, WALSENDER),
    ])?;
    let (enabled, applied) = pair.wait_mark(mark, true)?;
    let peaks = peaks.finish()?;
    let apply_publisher_cpu_ms = server_cpu_ms(&pair.publisher)? - cpu[0];
    let apply_subscriber_cpu_ms = server_cpu_ms(&pair.subscriber)? - cpu[1];
    let pgoutput = pgoutput_peak(pair)?;
    let schemas = layout.schemas(&prefix);
    let checked = pair.check_applied(&schemas, since, migration.ddl_count())?;
    let (first_tenth_ms, last_tenth_ms) = super::two_times(&pair.subscriber_sql(&format!(
        "SELECT avg(d) FILTER (WHERE tenth = 1), avg(d) FILTER (WHERE tenth = 10)
         FROM (SELECT extract(epoch FROM apply_duration) * 1000 AS d,
                      ntile(10) OVER (ORDER BY origin_lsn) AS tenth
               FROM ddl_sync.events WHERE origin_lsn > '{since}') e"
    ))?)?;
    let names = format!(
        "SELECT string_agg(quote_ident(nspname), ', ') FROM pg_namespace
         WHERE nspname LIKE '{schemas}'"
    );
    pair.drop_schema(&pair.publisher_sql(&names)?)?;
    let session = session_peak(pair, &migration, &names)?;
    Ok(ScaleRun {
        layout,
        ddl: migration.ddl_count(),
        publisher_s: published.t1 - published.t0,
        apply_s: applied - enabled,
        replay_s: checked.replay_s,
        first_tenth_ms,
        last_tenth_ms,
        verified: checked.verified,
        worker: peaks[0],
        walsender: peaks[1],
        session,
        pgoutput,
        publisher_cpu_ms,
        apply_publisher_cpu_ms,
        apply_subscriber_cpu_ms,
    })
}

/// The peak memory and CPU time of a walsender decoding [`PLAIN_SLOT`] with pgoutput up to the
/// publisher's current LSN, alone (the subscription disabled meanwhile); the slot is dropped
/// after.
fn pgoutput_peak(pair: &Pair) -> Result<Watched> {
    pair.disable()?;
    let end = pair.publisher_lsn()?;
    // Something past the end, so that pg_recvlogical stops as soon as it gets there.
    pair.publisher_sql(&format!("INSERT INTO {MARK} VALUES ({})", pair.next_mark()))?;
    let run = decode_once(&pair.publisher, PLAIN_SLOT, Plugin::Pgoutput, 0, &end, None)?;
    pair.publisher_sql(&format!("SELECT pg_drop_replication_slot('{PLAIN_SLOT}')"))?;
    pair.subscriber_sql(&format!("ALTER SUBSCRIPTION {SUBSCRIPTION} ENABLE"))?;
    Ok(run.walsender)
}

/// The peak memory and CPU time of a session on the subscriber that runs `migration` in
/// database [`PLAIN`] (made at the first call); `names` lists the schemas it made, dropped
/// after.
fn session_peak(pair: &Pair, migration: &Migration, names: &str) -> Result<Watched> {
    let sql = |db: &str, sql: &str| pair.subscriber.psql(db, sql).map_err(|e| e.to_string());
    if sql(
        "postgres",
        &format!("SELECT count(*) FROM pg_database WHERE datname = '{PLAIN}'"),
    )? == "0"
    {
        sql("postgres", &format!("CREATE DATABASE {PLAIN}"))?;
    }
    let peaks = Peaks::start(&[(&pair.subscriber, PLAIN)])?;
    sql(PLAIN, &migration.script())?;
    let peak = peaks.finish()?[0];
    sql(
        PLAIN,
        &format!("DROP SCHEMA {} CASCADE", sql(PLAIN, names)?),
    )?;
    Ok(peak)
}

impl ScaleRun {
    pub(super) fn summary(&self) -> String {
        format!(
            "{} {}: publisher {:.3} s, subscriber {:.3} s (DDL replay {:.3} s), ratio {:.3}; \
             per event {:.3} ms in the first tenth, {:.3} ms in the last; apply worker peak \
             {} kB private ({} kB VmHWM), walsender {} kB ({} kB), a session {} kB ({} kB), \
             pgoutput's walsender {} kB ({} kB); CPU: the publisher's run {:.3} s, during the \
             apply the subscriber {:.3} s and the publisher {:.3} s, apply worker {:.3} s, \
             session {:.3} s, walsender {:.3} s, pgoutput's {:.3} s",
            self.layout.name(),
            self.ddl,
            self.publisher_s,
            self.apply_s,
            self.replay_s,
            self.ratio(),
            self.first_tenth_ms,
            self.last_tenth_ms,
            self.worker.peak.anon_kb,
            self.worker.peak.hwm_kb,
            self.walsender.peak.anon_kb,
            self.walsender.peak.hwm_kb,
            self.session.peak.anon_kb,
            self.session.peak.hwm_kb,
            self.pgoutput.peak.anon_kb,
            self.pgoutput.peak.hwm_kb,
            self.publisher_cpu_ms / 1000.0,
            self.apply_subscriber_cpu_ms / 1000.0,
            self.apply_publisher_cpu_ms / 1000.0,
            self.worker.cpu_ms / 1000.0,
            self.session.cpu_ms / 1000.0,
            self.walsender.cpu_ms / 1000.0,
            self.pgoutput.cpu_ms / 1000.0,
        )
    }

    fn ratio(&self) -> f64 {
        self.apply_s / self.publisher_s
    }
}

/// The section's part on the scale runs: `runs` holds each layout's smaller run, then its
/// larger.
pub(super) fn section(runs: &[ScaleRun], ratio_target: f64) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let mut rows = String::new();
    for r in runs {
        rows.push_str(&format!(
            "| {} | {} | {} | {:.3} s | {:.3} s | {:.3} s | {:.3} | {:.3} ms | {:.3} ms | {} \
             | {} kB | {} kB | {} kB | {} kB | {} kB | {} kB |\n",
            r.layout.name(),
            r.ddl,
            r.layout.units(r.ddl),
            r.publisher_s,
            r.apply_s,
            r.replay_s,
            r.ratio(),
            r.first_tenth_ms,
            r.last_tenth_ms,
            r.verified,
            r.worker.peak.anon_kb,
            r.worker.peak.hwm_kb,
            r.walsender.peak.anon_kb,
            r.walsender.peak.hwm_kb,
            r.session.peak.anon_kb,
            r.pgoutput.peak.anon_kb,
        ));
    }
    let mut cpu_rows = String::new();
    for r in runs {
        let s = |w: &Watched| w.cpu_ms / 1000.0;
        cpu_rows.push_str(&format!(
            "| {} | {} | {:.3} s | {:.3} s | {:.3} s | {:.3} s | {:.3} s | {:.3} s | {:.3} s \
             | {:.2} | {:.3} s | {:.3} s | {:.2} |\n",
            r.layout.name(),
            r.ddl,
            r.publisher_s,
            r.publisher_cpu_ms / 1000.0,
            r.apply_s,
            r.apply_subscriber_cpu_ms / 1000.0,
            r.apply_publisher_cpu_ms / 1000.0,
            s(&r.worker),
            s(&r.session),
            r.worker.cpu_ms / r.session.cpu_ms,
            s(&r.walsender),
            s(&r.pgoutput),
            r.walsender.cpu_ms / r.pgoutput.cpu_ms,
        ));
    }
    let mut findings = Vec::new();
    for pair in runs.chunks(2) {
        let [small, large] = pair else { continue };
        let grew = |f: fn(&ScaleRun) -> u64| f(large) as f64 / f(small) as f64;
        let (worker, walsender) = (
            grew(|r| r.worker.peak.anon_kb),
            grew(|r| r.walsender.peak.anon_kb),
        );
        // What the apply worker holds beyond what a session running the statements holds.
        let beyond = |r: &ScaleRun| r.worker.peak.anon_kb as i64 - r.session.peak.anon_kb as i64;
        // What the walsender holds beyond pgoutput's on the same WAL.
        let ours = |r: &ScaleRun| r.walsender.peak.anon_kb as i64 - r.pgoutput.peak.anon_kb as i64;
        findings.push(format!(
            "- {} ({}): apply / publisher **{:.3}** at {} statements (target <= {ratio_target}: \
             {}), {:.3} at {}. Peak private memory at {} against {} statements: apply worker \
             **{worker:.2}x**, walsender **{walsender:.2}x** (target <= {MEMORY_TARGET}: {}); \
             a session running the same statements {:.2}x; the apply worker beyond that \
             session {} kB and {} kB; pgoutput's walsender on the same WAL {:.2}x, ours \
             beyond it {} kB and {} kB; VmHWM {:.2}x and {:.2}x. Replay time per event, last \
             tenth against first of the larger run: {:.2}x",
            small.layout.name(),
            small.layout.describe(),
            large.ratio(),
            large.ddl,
            verdict(large.ratio() <= ratio_target),
            small.ratio(),
            small.ddl,
            large.ddl,
            small.ddl,
            verdict(worker <= MEMORY_TARGET && walsender <= MEMORY_TARGET),
            grew(|r| r.session.peak.anon_kb),
            beyond(small),
            beyond(large),
            grew(|r| r.pgoutput.peak.anon_kb),
            ours(small),
            ours(large),
            grew(|r| r.worker.peak.hwm_kb),
            grew(|r| r.walsender.peak.hwm_kb),
            large.last_tenth_ms / large.first_tenth_ms,
        ));
    }
    format!(
        "\n### At scale\n\n\
         Method: each layout below, at the rounds' size and at ten times it, replayed as an \
         apply round is (the subscription disabled while the publisher runs it, then enabled \
         and timed until its last row is there; the apply log and the schemas checked the same \
         way), on schemas of its own, dropped after. While the subscriber catches up, the \
         memory of its apply worker and of the publisher's walsender (both started by the \
         ENABLE) is read from /proc/<pid>/status every 20 ms: private memory is RssAnon (the \
         process's own: its memory contexts, caches, the reorder buffer), VmHWM the kernel's \
         peak of the whole resident set, shared buffers touched included. The baseline for \
         memory is a session on the subscriber running the same script in a database without \
         the extension (`{PLAIN}`), watched the same way: PostgreSQL's caches (relations, \
         catalog rows) grow with the objects a process touches, in any process; and for the \
         walsender, PostgreSQL's `pgoutput` decoding the same WAL from a slot made with the \
         subscription's (pg_recvlogical, after the apply, the subscription disabled \
         meanwhile). Per event: \
         the mean `apply_duration` of the first and of the last tenth of the run's events, by \
         LSN.\n\n\
         | layout | DDL | partitions or tenants | publisher | subscriber apply | DDL replay \
         | apply / publisher | per event, first tenth | last tenth | verified \
         | apply worker private | VmHWM | walsender private | VmHWM | session private \
         | pgoutput walsender private |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n\
         {rows}\n\
         CPU time (user + system) of the same runs: of every server process of a cluster \
         (exited ones included) while the publisher ran the migration (its time, then its \
         CPU) and while the subscriber caught up (its time, then each cluster's CPU meanwhile: \
         the apply worker, and the walsender with whatever else the publisher ran, such as \
         autovacuum after the migration); and of single processes (/proc/<pid>/sched): the \
         apply worker and its walsender from the ENABLE to the last row, the session running \
         the script, pgoutput's walsender decoding the same WAL.\n\n\
         | layout | DDL | publisher | its CPU | subscriber apply | subscriber CPU \
         | publisher CPU meanwhile | apply worker CPU | session CPU | worker / session \
         | walsender CPU | pgoutput walsender CPU | walsender / pgoutput |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
         {cpu_rows}\n{}\n",
        findings.join("\n")
    )
}
