//! `cargo xtask bench wire`: ddl-wire against other Rust pgoutput parsers, into BENCHMARKS.md.
//!
//! 1. Capture (once; reused while its meta file matches): a throwaway PostgreSQL 15 runs a
//!    pgbench-like workload with two `pgoutput` slots made before it starts, and each slot is
//!    drained into a file of `u32`-BE-length-prefixed messages (ddl-wire's fixture framing) in
//!    `target/bench/`: one with `proto_version 1` (every parser can read it), one with
//!    `proto_version 2, streaming on` and `logical_decoding_work_mem = 64kB` (so large
//!    transactions arrive in Stream Start/Stop blocks).
//! 2. [`compare`] parses both with every parser (see bench/README.md) and prints the table; this
//!    is a release build (`cargo xtask bench` makes one), else the figures would mean nothing.
//! 3. The `## Wire` section of BENCHMARKS.md is rewritten with the figures, the machine, the
//!    stream and this command; the other sections are kept as they are.
//!
//! ```text
//! cargo xtask bench wire [--runs N] [--recapture]
//! ```

mod capture;
pub mod compare;
mod parsers;
mod work;

use crate::{bench_dir, options, write_section, Machine, Result};
use ddl_testkit::{Cluster, ClusterBuilder, Cmd};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

const USAGE: &str = "usage: cargo xtask bench wire [--runs N] [--recapture]";

/// Bump when the workload or the capture code changes: the cached capture is then made again.
const CAPTURE_VERSION: u32 = 1;
/// pgbench scale: 100,000 pgbench_accounts rows per unit, loaded in one transaction.
const PGBENCH_SCALE: u32 = 3;
/// pgbench clients, and tpcb-like transactions per client.
const PGBENCH_CLIENTS: u32 = 2;
const PGBENCH_TRANSACTIONS: u32 = 15_000;
/// Rows of the mixed-type `bench_orders` table, inserted this many per transaction.
const ORDERS: u32 = 80_000;
const ORDERS_PER_TRANSACTION: u32 = 500;
/// Rows of the `REPLICA IDENTITY FULL` table `bench_stock`.
const STOCK: u32 = 20_000;

/// The publication and the two slots.
const PUBLICATION: &str = "bench";
const SLOT_V1: &str = "bench_v1";
const SLOT_V2: &str = "bench_v2";

const SECTION: &str = "## Wire";

pub(crate) fn run(args: &[&str]) -> Result {
    let (mut runs, mut recapture) = (10, false);
    options(
        args,
        USAGE,
        &mut [("--runs", &mut runs)],
        &mut [("--recapture", &mut recapture)],
    )?;
    if cfg!(debug_assertions) {
        return Err(
            "the parsers are timed in this process: run a release build \
             (`cargo xtask bench wire`, or `cargo run --release -p ddl-bench -- wire`)"
                .to_string(),
        );
    }

    let dir = bench_dir()?;
    let paths = CapturePaths::new(&dir);
    let stream = match (recapture, paths.cached()) {
        (false, Some(meta)) => {
            println!(
                "bench: reusing the capture in {} ({})",
                dir.display(),
                meta.server
            );
            meta
        }
        _ => capture(&paths)?,
    };

    let figures = compare::compare(&paths.v1, Some(&paths.v2), runs as usize, None)?;
    write_section(SECTION, &wire_section(&stream, &figures, runs))
}

/// The capture files and their meta file, which is written last: a capture that stopped halfway
/// never matches.
struct CapturePaths {
    v1: PathBuf,
    v2: PathBuf,
    meta: PathBuf,
}

/// What the meta file records about a capture.
struct CaptureMeta {
    /// `SELECT version()` of the server that produced it.
    server: String,
    v1_len: u64,
    v2_len: u64,
}

impl CapturePaths {
    fn new(dir: &Path) -> CapturePaths {
        CapturePaths {
            v1: dir.join("wire-v1.bin"),
            v2: dir.join("wire-v2-streaming.bin"),
            meta: dir.join("wire.meta"),
        }
    }

    /// The cached capture, when its meta names this workload and both files have the recorded size.
    fn cached(&self) -> Option<CaptureMeta> {
        let text = std::fs::read_to_string(&self.meta).ok()?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
                .map(str::to_string)
        };
        if field("workload")? != workload_key() {
            return None;
        }
        let meta = CaptureMeta {
            server: field("server")?,
            v1_len: field("v1 bytes")?.parse().ok()?,
            v2_len: field("v2 bytes")?.parse().ok()?,
        };
        let len = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len());
        (len(&self.v1)? == meta.v1_len && len(&self.v2)? == meta.v2_len).then_some(meta)
    }
}

/// Everything that shapes the captured bytes; a cached capture must have been made with this.
fn workload_key() -> String {
    format!(
        "capture {CAPTURE_VERSION}, pgbench scale {PGBENCH_SCALE}, {PGBENCH_CLIENTS}x{PGBENCH_TRANSACTIONS} tpcb-like, \
         {ORDERS} orders by {ORDERS_PER_TRANSACTION}, {STOCK} stock"
    )
}

/// The workload in words, for BENCHMARKS.md.
fn workload_description() -> String {
    let accounts = PGBENCH_SCALE * 100_000;
    let tpcb = PGBENCH_CLIENTS * PGBENCH_TRANSACTIONS;
    format!(
        "`pgbench -i -s {PGBENCH_SCALE}` ({accounts} pgbench_accounts rows in one transaction), \
         then `pgbench -n -c {PGBENCH_CLIENTS} -t {PGBENCH_TRANSACTIONS}` with the built-in tpcb-like \
         script ({tpcb} transactions of 3 UPDATEs and 1 INSERT); `bench_orders`, 11 columns of mixed \
         types (bigint, int, timestamptz, an enum, numeric, real, boolean, uuid, text[], jsonb, text \
         with 1 row in 50 holding a TOASTed 4 kB value) with {ORDERS} rows inserted {ORDERS_PER_TRANSACTION} \
         per transaction, then 1 row in 10 updated (the TOASTed value goes out as unchanged) and 1 in \
         20 deleted by primary key, 1,000 updates or 500 deletes per transaction; `bench_stock` \
         (`REPLICA IDENTITY FULL`, no key) with {STOCK} rows inserted in one transaction, then 4 \
         rows in 7 updated and 2 in 7 deleted, each in one transaction, so old tuples are sent whole"
    )
}

/// Runs the workload on a throwaway cluster and drains both slots into the capture files.
fn capture(paths: &CapturePaths) -> Result<CaptureMeta> {
    // The cluster needs the PostgreSQL 15 server and pgbench, which `cargo xtask bench` made
    // sure of (`cargo xtask setup`).
    println!("bench: capturing a new stream ({})", workload_key());
    let pg = ClusterBuilder::new()
        .name("bench-wire")
        // Both slots hold all WAL of the workload until they are drained; no checkpoint needs to
        // hurry because of it.
        .conf("max_wal_size", "8GB")
        .build()
        .map_err(|e| e.to_string())?;
    let sql = |sql: &str| pg.psql("postgres", sql).map_err(|e| e.to_string());

    let server = sql("SELECT version()")?;
    sql(&format!(
        "CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES;
         SELECT pg_create_logical_replication_slot('{SLOT_V1}', 'pgoutput');
         SELECT pg_create_logical_replication_slot('{SLOT_V2}', 'pgoutput');"
    ))?;

    let port = pg.port().to_string();
    let pgbench = |args: &[&str]| {
        Cmd::new(pg.bin("pgbench"))
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres"])
            .args(args)
            .args(["postgres"])
            .read()
            .map(drop)
    };
    pgbench(&["-i", "-q", "-s", &PGBENCH_SCALE.to_string()])?;
    pgbench(&[
        "-n",
        "-c",
        &PGBENCH_CLIENTS.to_string(),
        "-j",
        &PGBENCH_CLIENTS.to_string(),
        "-t",
        &PGBENCH_TRANSACTIONS.to_string(),
        "--random-seed=20240101",
    ])?;
    sql(&orders_sql())?;
    sql(&stock_sql())?;

    let v1_len = drain(&pg, SLOT_V1, "'proto_version', '1'", None, &paths.v1)?;
    let v2_len = drain(
        &pg,
        SLOT_V2,
        "'proto_version', '2', 'streaming', 'on'",
        Some("-c logical_decoding_work_mem=64kB"),
        &paths.v2,
    )?;
    drop(pg);

    let meta = format!(
        "workload: {}\nserver: {server}\nv1 bytes: {v1_len}\nv2 bytes: {v2_len}\n",
        workload_key()
    );
    std::fs::write(&paths.meta, meta)
        .map_err(|e| format!("cannot write {}: {e}", paths.meta.display()))?;
    Ok(CaptureMeta {
        server,
        v1_len,
        v2_len,
    })
}

/// `bench_orders`: mixed types, an enum (so pgoutput sends a Type message), NULLs, a TOASTed
/// column, then updates that leave the TOASTed value unchanged and deletes by primary key.
fn orders_sql() -> String {
    let mut sql = String::from(
        "CREATE TYPE bench_order_status AS ENUM ('new', 'paid', 'shipped', 'delivered', 'returned');
         CREATE TABLE bench_orders (
             id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
             customer_id integer NOT NULL,
             placed_at timestamptz NOT NULL,
             status bench_order_status NOT NULL,
             amount numeric(12,2) NOT NULL,
             discount real,
             paid boolean NOT NULL,
             ref uuid NOT NULL,
             tags text[],
             details jsonb,
             note text
         );
         -- Out of line and uncompressed, so a long note is a TOAST pointer that UPDATEs leave alone.
         ALTER TABLE bench_orders ALTER COLUMN note SET STORAGE EXTERNAL;\n",
    );
    for lo in (1..=ORDERS).step_by(ORDERS_PER_TRANSACTION as usize) {
        let hi = (lo + ORDERS_PER_TRANSACTION - 1).min(ORDERS);
        sql.push_str(&format!(
            "INSERT INTO bench_orders (customer_id, placed_at, status, amount, discount, paid, ref, tags, details, note)
             SELECT (i * 7919) % 50000,
                    timestamptz '2024-01-01 00:00:00+00' + i * interval '37 seconds',
                    (enum_range(NULL::bench_order_status))[1 + i % 5],
                    ((i::bigint * 2654435761) % 10000000) / 100.0,
                    CASE WHEN i % 4 = 0 THEN NULL ELSE (i % 30) / 100.0 END,
                    i % 3 <> 0,
                    md5(i::text)::uuid,
                    CASE WHEN i % 6 = 0 THEN NULL ELSE ARRAY['tag' || i % 11, 'tag' || i % 13] END,
                    jsonb_build_object('sku', 'SKU-' || i % 9973, 'qty', 1 + i % 9, 'gift', i % 17 = 0,
                        'ship_to', jsonb_build_object('city', 'City ' || i % 301, 'zip', lpad((i % 99991)::text, 5, '0'))),
                    CASE WHEN i % 50 = 0 THEN repeat(md5(i::text), 128)
                         WHEN i % 5 = 0 THEN 'call before delivery'
                    END
             FROM generate_series({lo}, {hi}) AS i;\n"
        ));
    }
    for lo in (1..=ORDERS).step_by(10_000) {
        let hi = lo + 9_999;
        sql.push_str(&format!(
            "UPDATE bench_orders SET status = 'shipped', paid = true
             WHERE id BETWEEN {lo} AND {hi} AND id % 10 = 0;
             DELETE FROM bench_orders WHERE id BETWEEN {lo} AND {hi} AND id % 20 = 7;\n"
        ));
    }
    sql
}

/// `bench_stock`: no primary key, `REPLICA IDENTITY FULL`, so UPDATE and DELETE carry the whole
/// old row.
fn stock_sql() -> String {
    format!(
        "CREATE TABLE bench_stock (sku text NOT NULL, warehouse smallint NOT NULL, qty integer NOT NULL,
                                   updated_at timestamptz NOT NULL);
         ALTER TABLE bench_stock REPLICA IDENTITY FULL;
         INSERT INTO bench_stock
             SELECT 'SKU-' || i, i % 7, i % 500, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 minute'
             FROM generate_series(1, {STOCK}) AS i;
         UPDATE bench_stock SET qty = qty + 1, updated_at = updated_at + interval '1 day'
             WHERE warehouse < 4;
         DELETE FROM bench_stock WHERE warehouse IN (0, 1);"
    )
}

/// Drains `slot` with pgoutput `options` into `out` as u32-BE-length-prefixed messages; returns
/// the file's size.
///
/// One `pg_logical_slot_get_binary_changes` call with no `upto_nchanges`: a call that stops
/// inside a streamed transaction leaves the slot before that transaction's start, so the next call
/// would stream its first blocks again. The rows reach us through `COPY ... TO STDOUT (FORMAT
/// binary)`, which carries the bytea values as raw bytes (psql's text output would double them as
/// hex); the server spills the result to a temp file while it is made.
fn drain(
    pg: &Cluster,
    slot: &str,
    options: &str,
    pgoptions: Option<&str>,
    out: &Path,
) -> Result<u64> {
    println!(
        "bench: draining slot {slot} ({options}) into {}",
        out.display()
    );
    let query = format!(
        "COPY (SELECT data FROM pg_logical_slot_get_binary_changes('{slot}', NULL, NULL, \
         'publication_names', '{PUBLICATION}', {options})) TO STDOUT (FORMAT binary)"
    );
    let mut cmd = pg.psql_command("postgres");
    cmd.args(["-c", &query]).stdout(Stdio::piped());
    if let Some(o) = pgoptions {
        cmd.env("PGOPTIONS", o);
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start psql: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let file =
        std::fs::File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut writer = BufWriter::new(file);
    let copied = copy_binary_to_frames(BufReader::new(stdout), &mut writer);
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for psql: {e}"))?;
    if !status.success() {
        return Err(format!("draining slot {slot} failed (psql: {status})"));
    }
    let (messages, len) = copied.map_err(|e| format!("slot {slot}: {e}"))?;
    writer
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("bench: {messages} messages, {:.1} MB", len as f64 / 1e6);
    Ok(len)
}

/// Turns a one-column binary COPY stream into length-prefixed frames; returns (frames, bytes
/// written).
///
/// The COPY binary format: an 11-byte signature, a u32 flags word, a u32 header-extension length
/// and that many bytes; then per row an i16 field count (-1 ends the data) and per field an i32
/// length (-1 for NULL) and the bytes.
fn copy_binary_to_frames(mut input: impl Read, out: &mut impl Write) -> Result<(u64, u64)> {
    const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
    let io = |e: std::io::Error| format!("reading or writing the COPY stream: {e}");
    let mut header = [0u8; 19];
    input.read_exact(&mut header).map_err(io)?;
    if &header[..11] != SIGNATURE {
        return Err("the COPY output does not start with the binary COPY signature".into());
    }
    let extension = u32::from_be_bytes(header[15..19].try_into().expect("4 bytes"));
    std::io::copy(
        &mut (&mut input).take(u64::from(extension)),
        &mut std::io::sink(),
    )
    .map_err(io)?;

    let (mut frames, mut written) = (0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        let mut fields = [0u8; 2];
        input.read_exact(&mut fields).map_err(io)?;
        match i16::from_be_bytes(fields) {
            -1 => break,
            1 => {}
            n => return Err(format!("a COPY row has {n} fields, expected 1")),
        }
        let mut len = [0u8; 4];
        input.read_exact(&mut len).map_err(io)?;
        let len = i32::from_be_bytes(len);
        let len =
            u32::try_from(len).map_err(|_| "a NULL message in the COPY stream".to_string())?;
        buf.resize(len as usize, 0);
        input.read_exact(&mut buf).map_err(io)?;
        out.write_all(&len.to_be_bytes()).map_err(io)?;
        out.write_all(&buf).map_err(io)?;
        frames += 1;
        written += 4 + u64::from(len);
    }
    Ok((frames, written))
}

/// The `## Wire` section: how and where the figures were made, then the figures.
fn wire_section(stream: &CaptureMeta, figures: &str, runs: u32) -> String {
    let machine = Machine::describe();
    format!(
        "{SECTION}\n\n\
         Reproduce with `cargo xtask bench wire` (add `--recapture` to make a new stream). It \
         captures the stream below from a throwaway PostgreSQL cluster when `target/bench/` has \
         none, builds `bench/` (crate `ddl-bench`) in release mode with tracing compiled out, and \
         rewrites this section. What is compared and why these versions: `bench/README.md`.\n\n\
         - Date: {date}\n\
         - Machine: {machine}\n\
         - Server: {server}\n\
         - Stream: {workload}. Two `pgoutput` slots decode the same WAL: `v1` with \
         `proto_version 1` ({v1:.1} MB file), `v2-streaming` with `proto_version 2, streaming on` \
         and `logical_decoding_work_mem = 64kB` ({v2:.1} MB file), each drained in one \
         `pg_logical_slot_get_binary_changes` call.\n\
         - Timed: decoding every message and reaching every column value of every \
         Insert/Update/Delete (each value through `std::hint::black_box`), from messages already \
         in memory; best of {runs} interleaved passes. MB/s is message bytes (length prefixes \
         excluded, 1 MB = 10^6 bytes) over the best pass. elefant-client reads protocol 1 only, \
         so it runs on `v1` alone.\n\n\
         {figures}",
        date = machine.date,
        machine = machine.line(),
        server = stream.server,
        workload = workload_description(),
        v1 = stream.v1_len as f64 / 1e6,
        v2 = stream.v2_len as f64 / 1e6,
        figures = figures.trim_end(),
    ) + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_copy_becomes_frames() {
        let mut copy = b"PGCOPY\n\xff\r\n\0".to_vec();
        copy.extend_from_slice(&0u32.to_be_bytes()); // flags
        copy.extend_from_slice(&2u32.to_be_bytes()); // extension length
        copy.extend_from_slice(b"xx");
        for msg in [&b"B123"[..], b"E"] {
            copy.extend_from_slice(&1i16.to_be_bytes());
            copy.extend_from_slice(&(msg.len() as i32).to_be_bytes());
            copy.extend_from_slice(msg);
        }
        copy.extend_from_slice(&(-1i16).to_be_bytes());
        let mut out = Vec::new();
        assert_eq!(copy_binary_to_frames(&copy[..], &mut out).unwrap(), (2, 13));
        assert_eq!(out, b"\0\0\0\x04B123\0\0\0\x01E");
        assert!(copy_binary_to_frames(&copy[..copy.len() - 2], &mut Vec::new()).is_err());
    }
}
