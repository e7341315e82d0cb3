//! `cargo xtask bench <wire|decode|capture>`: each command measures one thing and rewrites its
//! own section of BENCHMARKS.md (the other sections are kept as they are).
//!
//! ```text
//! cargo xtask bench wire [--runs N] [--recapture]        ddl-wire against other pgoutput parsers
//! cargo xtask bench decode [--runs N] [--transactions N] ddl_pgoutput against pgoutput, same WAL
//! cargo xtask bench capture [--runs N] [--seconds S]     DDL latency and TPS with the capture hook
//! ```
//!
//! What every section holds: the date, the machine, the server, the workload, the method, the
//! figures, the ratios against the targets, and the command that reproduces it. The helpers
//! shared by the commands live here: the machine's description, the section rewriting, pgbench.

mod capture;
mod decode;
mod wire;

use crate::cmd::Cmd;
use crate::{project_root, setup, Result};
use ddl_testkit::Cluster;
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: cargo xtask bench <wire|decode|capture> [options]";

pub fn run(args: &[&str]) -> Result {
    match args {
        ["wire", rest @ ..] => wire::run(rest),
        ["decode", rest @ ..] => decode::run(rest),
        ["capture", rest @ ..] => capture::run(rest),
        _ => Err(USAGE.to_string()),
    }
}

/// Where the benchmarks keep their files (`target/bench/`), made when missing.
fn bench_dir() -> Result<PathBuf> {
    let dir = project_root().join("target/bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Fails unless the installed `ddl_pgoutput.so` is the release build of this tree: call it once
/// the clusters have started (they loaded the library then). `cargo xtask test` installs debug
/// builds into the same directory, and a benchmark of those would mean nothing.
fn check_release_installed() -> Result {
    let built = project_root().join("target/release/libddl_pgoutput.so");
    let pkglibdir = Cmd::new(setup::pg_config()).args(["--pkglibdir"]).read()?;
    let installed = Path::new(&pkglibdir).join("ddl_pgoutput.so");
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    if read(&built)? != read(&installed)? {
        return Err(format!(
            "{} is not the release build {} (did something install another build meanwhile?)",
            installed.display(),
            built.display()
        ));
    }
    Ok(())
}

/// The value after a `--runs`-like flag: a positive number.
fn positive(value: Option<&&str>, flag: &str, usage: &str) -> Result<u32> {
    value
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{flag} needs a positive number\n{usage}"))
}

/// Where and when the figures were made.
struct Machine {
    /// UTC, `YYYY-MM-DD`.
    date: String,
    nproc: usize,
    cpu: String,
    rustc: String,
}

impl Machine {
    fn describe() -> Machine {
        let date = Cmd::new("date")
            .args(["-u", "+%Y-%m-%d"])
            .probe()
            .unwrap_or_default();
        let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("model name")?
                        .split_once(':')
                        .map(|(_, m)| m.trim().to_string())
                })
            })
            .unwrap_or_else(|| "unknown CPU".to_string());
        let rustc = Cmd::new("rustc")
            .args(["--version"])
            .probe()
            .unwrap_or_default();
        Machine {
            date,
            nproc,
            cpu,
            rustc,
        }
    }

    /// `2 CPUs (nproc), <model name>; rustc ...`.
    fn line(&self) -> String {
        format!("{} CPUs (nproc), {}; {}", self.nproc, self.cpu, self.rustc)
    }
}

/// The `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal, in clock
/// ticks summed over all CPUs (guest time is inside user and nice).
fn cpu_ticks() -> Result<[u64; 8]> {
    let stat = std::fs::read_to_string("/proc/stat")
        .map_err(|e| format!("cannot read /proc/stat: {e}"))?;
    let mut ticks = [0; 8];
    let line = stat
        .lines()
        .find_map(|l| l.strip_prefix("cpu "))
        .ok_or("no cpu line in /proc/stat")?;
    for (t, f) in ticks.iter_mut().zip(line.split_whitespace()) {
        *t = f.parse().unwrap_or(0);
    }
    Ok(ticks)
}

/// Percent of the ticks between two [`cpu_ticks`] readings that went to the fields `which`.
fn share(before: &[u64; 8], after: &[u64; 8], which: &[usize]) -> f64 {
    let delta = |i: usize| after[i].saturating_sub(before[i]);
    let total: u64 = (0..8).map(delta).sum();
    100.0 * which.iter().map(|&i| delta(i)).sum::<u64>() as f64 / total.max(1) as f64
}

/// How idle the CPUs were over `window` (idle + iowait), in percent, to show that nothing
/// else ran: call it when the clusters are ready and before the measurements.
fn cpu_idle(window: std::time::Duration) -> Result<f64> {
    let before = cpu_ticks()?;
    std::thread::sleep(window);
    Ok(share(&before, &cpu_ticks()?, &[3, 4]))
}

/// Prints and returns how idle the machine is, warning when it is busy.
fn quiet_check() -> Result<f64> {
    let idle = cpu_idle(std::time::Duration::from_secs(3))?;
    println!("bench: CPUs {idle:.0}% idle over 3 s before the measurements");
    if idle < 90.0 {
        println!(
            "bench: WARNING: something else is using the CPUs; the figures will be noisy \
             (check `ps -eo pcpu,args --sort=-pcpu | head`)"
        );
    }
    Ok(idle)
}

/// Watches how much CPU time processes that are not part of the benchmark use while it runs:
/// another build or test on the machine makes the figures mean little, and the section says so.
///
/// Ours are this process and its descendants (pgbench, psql, pg_recvlogical) and the given
/// postmasters and their children; kernel threads are left out. Every [`WATCH_EVERY`] it reads
/// /proc/<pid>/stat of every process and adds up the CPU time the others used since the last
/// reading (a process that starts and ends between two readings is missed).
struct Watch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<std::collections::HashMap<String, u64>>,
    started: std::time::Instant,
    ticks: [u64; 8],
}

const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

impl Watch {
    fn start(pg: &[&Cluster]) -> Result<Watch> {
        let mut roots = vec![std::process::id()];
        for pg in pg {
            roots.push(postmaster_pid(pg)?);
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut last = processes();
            // Clock ticks per command name.
            let mut foreign: std::collections::HashMap<String, u64> = Default::default();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(WATCH_EVERY);
                let now = processes();
                let ours = descendants(&now, &roots);
                for (pid, p) in &now {
                    if ours.contains(pid) || p.ppid == 2 || *pid == 2 {
                        continue;
                    }
                    let before = last.get(pid).map_or(0, |b| b.ticks);
                    let used = p.ticks.saturating_sub(before);
                    if used > 0 {
                        *foreign.entry(p.comm.clone()).or_default() += used;
                    }
                }
                last = now;
            }
            foreign
        });
        Ok(Watch {
            stop,
            thread,
            started: std::time::Instant::now(),
            ticks: cpu_ticks()?,
        })
    }

    /// Stops watching; returns what other processes used.
    fn finish(self) -> Foreign {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let by_name = self.thread.join().unwrap_or_default();
        let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
        // USER_HZ is 100 on Linux.
        let capacity = (self.started.elapsed().as_secs_f64() * 100.0 * nproc as f64).max(1.0);
        let mut top: Vec<(String, u64)> = by_name.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let steal = cpu_ticks().map_or(0.0, |now| share(&self.ticks, &now, &[7]));
        Foreign {
            percent: 100.0 * top.iter().map(|(_, t)| *t).sum::<u64>() as f64 / capacity,
            steal,
            top: top
                .into_iter()
                .take(3)
                .map(|(name, t)| (name, 100.0 * t as f64 / capacity))
                .collect(),
        }
    }
}

/// The CPU time other processes used while a benchmark ran, as shares of the machine's.
struct Foreign {
    percent: f64,
    /// CPU time the hypervisor gave to other guests (steal), percent.
    steal: f64,
    /// The largest users by command name.
    top: Vec<(String, f64)>,
}

/// The pid of a cluster's postmaster, from its postmaster.pid.
fn postmaster_pid(pg: &Cluster) -> Result<u32> {
    let pidfile = pg.data_dir().join("postmaster.pid");
    let text = std::fs::read_to_string(&pidfile)
        .map_err(|e| format!("cannot read {}: {e}", pidfile.display()))?;
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("no pid in {}", pidfile.display()))
}

/// CPU time the cluster's server processes have used so far, ms: the postmaster's own and
/// that of its children that have exited (its cutime and cstime: the kernel adds a child's
/// time when the postmaster reaps it), plus every live process below it. The difference of
/// two readings is what the server spent between them, backends of finished clients included.
fn server_cpu_ms(pg: &Cluster) -> Result<f64> {
    let pid = postmaster_pid(pg)?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    let own = parse_total_ticks(&stat).ok_or_else(|| format!("cannot parse /proc/{pid}/stat"))?;
    let all = processes();
    let live: u64 = descendants(&all, &[pid])
        .iter()
        .filter(|&&p| p != pid)
        .filter_map(|p| all.get(p))
        .map(|p| p.ticks)
        .sum();
    // USER_HZ is 100 on Linux.
    Ok((own + live) as f64 * 10.0)
}

/// utime + stime + cutime + cstime (fields 14 to 17) of a /proc/<pid>/stat.
fn parse_total_ticks(stat: &str) -> Option<u64> {
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    (11..=14).map(|i| fields.get(i)?.parse::<u64>().ok()).sum()
}

/// One process of /proc.
struct Proc {
    comm: String,
    ppid: u32,
    /// utime + stime, clock ticks.
    ticks: u64,
}

fn processes() -> std::collections::HashMap<u32, Proc> {
    let mut all = std::collections::HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return all;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(p) = parse_proc_stat(&stat) {
            all.insert(pid, p);
        }
    }
    all
}

/// ppid is field 4, utime and stime fields 14 and 15, counted after the `)` that ends the
/// command name (which may hold spaces).
fn parse_proc_stat(stat: &str) -> Option<Proc> {
    let (head, tail) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = tail.split_whitespace().collect();
    let num = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Proc {
        comm: head.split_once('(')?.1.to_string(),
        ppid: u32::try_from(num(1)?).ok()?,
        ticks: num(11)? + num(12)?,
    })
}

/// `roots` and every process below them.
fn descendants(
    all: &std::collections::HashMap<u32, Proc>,
    roots: &[u32],
) -> std::collections::HashSet<u32> {
    let mut ours: std::collections::HashSet<u32> = roots.iter().copied().collect();
    loop {
        let before = ours.len();
        for (pid, p) in all {
            if ours.contains(&p.ppid) {
                ours.insert(*pid);
            }
        }
        if ours.len() == before {
            return ours;
        }
    }
}

/// The sentence for a section about what else ran, from [`Watch::finish`].
fn foreign_note(foreign: &Foreign) -> String {
    let top: Vec<String> = foreign
        .top
        .iter()
        .filter(|(_, p)| *p >= 0.1)
        .map(|(name, p)| format!("{name} {p:.1}%"))
        .collect();
    let mut note = format!(
        "other processes used {:.1}% of the machine's CPU time while the measurements ran",
        foreign.percent
    );
    if !top.is_empty() {
        note.push_str(&format!(" (most: {})", top.join(", ")));
    }
    note.push_str(&format!(", steal {:.1}%", foreign.steal));
    if foreign.percent > 5.0 || foreign.steal > 5.0 {
        note.push_str(": **the figures are disturbed; rerun on a quiet machine**");
    }
    note
}

/// Rewrites the section titled `heading` of BENCHMARKS.md with `section`.
fn write_section(heading: &str, section: &str) -> Result {
    let path = project_root().join("BENCHMARKS.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, replace_section(&old, heading, section))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench: wrote the `{heading}` section of {}", path.display());
    Ok(())
}

/// `doc` with the level-2 section titled `heading` replaced by `section` (which starts with that
/// heading), or with `section` appended when there is none; a new file gets a short header.
fn replace_section(doc: &str, heading: &str, section: &str) -> String {
    if doc.trim().is_empty() {
        return format!(
            "# Benchmarks\n\nEach section is written by the `cargo xtask bench` command it names; \
             rerun that command to update it. Figures depend on the machine: compare ratios, not \
             absolute numbers, across machines.\n\n{section}"
        );
    }
    let lines: Vec<&str> = doc.split_inclusive('\n').collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == heading) else {
        let sep = if doc.ends_with("\n\n") {
            ""
        } else if doc.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        return format!("{doc}{sep}{section}");
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(lines.len(), |i| start + 1 + i);
    let mut out: String = lines[..start].concat();
    out.push_str(section);
    if end < lines.len() {
        out.push('\n');
        out.push_str(&lines[end..].concat());
    }
    out
}

/// `met` or `NOT met`, as the sections write it.
fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}

/// Runs the cluster's pgbench against database `postgres` with `args`; returns its stdout
/// (the report), its stderr passes through.
fn pgbench(pg: &Cluster, args: &[&str]) -> Result<String> {
    pgbench_in(pg, "postgres", args)
}

/// [`pgbench`] against database `db`.
fn pgbench_in(pg: &Cluster, db: &str, args: &[&str]) -> Result<String> {
    let port = pg.port().to_string();
    Cmd::new(pg.bin("pgbench"))
        .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres"])
        .args(args)
        .args([db])
        .read()
}

/// The number after `key` on the line of a pgbench report that starts with it
/// (`latency average = 1.234 ms`, `tps = 567.8 (without initial connection time)`,
/// `number of transactions actually processed: 1000/1000`: the part before the slash).
fn pgbench_figure(report: &str, key: &str) -> Result<f64> {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.split('/').next()?.parse().ok())
        .ok_or_else(|| format!("no `{key}` figure in the pgbench report:\n{report}"))
}

/// The middle value (the mean of the two middle ones for an even count); `values` is not empty.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// (max - min) / median of some runs' figures, in percent: this machine's noise.
fn spread(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    100.0 * (max - min) / median(values)
}

/// How consistent a comparison is from round to round: `ratios` are the per-round ratios (each
/// round runs both configurations back to back), `met` says whether one meets the target.
fn rounds_note(ratios: &[f64], met: impl Fn(f64) -> bool) -> String {
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let k = ratios.iter().filter(|&&r| met(r)).count();
    let side = if min > 1.0 {
        "all above 1"
    } else if max < 1.0 {
        "all below 1"
    } else {
        "on both sides of 1: this run cannot tell the difference from noise"
    };
    format!(
        "per-round ratios {min:.3} to {max:.3}, {side}; the target is met in {k} of {} rounds",
        ratios.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_in_place_and_others_kept() {
        let new = "## Wire\n\nnew\n";
        assert!(replace_section("", "## Wire", new).ends_with("\n\n## Wire\n\nnew\n"));
        let doc = "# Benchmarks\n\nintro\n\n## Apply\n\na\n\n## Wire\n\nold\nold\n\n## Zed\n\nz\n";
        assert_eq!(
            replace_section(doc, "## Wire", new),
            "# Benchmarks\n\nintro\n\n## Apply\n\na\n\n## Wire\n\nnew\n\n## Zed\n\nz\n"
        );
        let last = "# B\n\n## Wire\n\nold\n";
        assert_eq!(
            replace_section(last, "## Wire", new),
            "# B\n\n## Wire\n\nnew\n"
        );
        assert_eq!(
            replace_section("# B\n", "## Wire", new),
            "# B\n\n## Wire\n\nnew\n"
        );
        // A level-3 heading inside the section belongs to it.
        let nested = "## Wire\n\n### detail\nold\n## Next\n";
        assert_eq!(
            replace_section(nested, "## Wire", new),
            "## Wire\n\nnew\n\n## Next\n"
        );
    }

    #[test]
    fn pgbench_reports_are_read() {
        let report = "number of failed transactions: 0 (0.000%)\n\
                      latency average = 1.834 ms\n\
                      initial connection time = 3.120 ms\n\
                      tps = 545.172601 (without initial connection time)\n";
        assert_eq!(pgbench_figure(report, "latency average =").unwrap(), 1.834);
        assert_eq!(pgbench_figure(report, "tps =").unwrap(), 545.172601);
        assert!(pgbench_figure(report, "latency stddev =").is_err());
        let done = "number of transactions actually processed: 100000/100000\n";
        assert_eq!(
            pgbench_figure(done, "number of transactions actually processed:").unwrap(),
            100000.0
        );
    }

    #[test]
    fn ratios_are_read_against_the_spread() {
        assert!((spread(&[1.0, 1.2, 1.1]) - 100.0 * 0.2 / 1.1).abs() < 1e-9);
        assert_eq!(
            rounds_note(&[1.4, 1.5, 1.3], |r| r <= 1.1),
            "per-round ratios 1.300 to 1.500, all above 1; the target is met in 0 of 3 rounds"
        );
        assert!(rounds_note(&[0.98, 1.02], |r| r <= 1.1).contains("cannot tell"));
        assert!(rounds_note(&[0.98, 0.99], |r| r >= 0.99).contains("met in 1 of 2"));
    }

    #[test]
    fn process_trees_are_followed() {
        let stat = "42 (postgres: walsender x (y)) S 7 42 42 0 -1 4194560 1 0 0 0 150 25 0 0";
        let p = parse_proc_stat(stat).unwrap();
        let reaped = "1 (postgres) S 0 1 1 0 -1 0 0 0 0 0 150 25 300 40 20 0";
        assert_eq!(parse_total_ticks(reaped), Some(515));
        assert_eq!(
            (p.comm.as_str(), p.ppid, p.ticks),
            ("postgres: walsender x (y)", 7, 175)
        );
        let all: std::collections::HashMap<u32, Proc> = [(7, 1), (42, 7), (43, 42), (50, 1)]
            .into_iter()
            .map(|(pid, ppid)| {
                let comm = String::new();
                (
                    pid,
                    Proc {
                        comm,
                        ppid,
                        ticks: 0,
                    },
                )
            })
            .collect();
        let ours = descendants(&all, &[7]);
        assert!(ours.contains(&43) && ours.contains(&42) && !ours.contains(&50));
        let busy = Foreign {
            percent: 12.0,
            steal: 0.0,
            top: vec![("rustc".into(), 11.5), ("kworker".into(), 0.05)],
        };
        assert_eq!(
            foreign_note(&busy),
            "other processes used 12.0% of the machine's CPU time while the measurements ran \
             (most: rustc 11.5%), steal 0.0%: **the figures are disturbed; rerun on a quiet \
             machine**"
        );
        let quiet = Foreign {
            percent: 0.2,
            steal: 0.1,
            top: vec![],
        };
        assert!(!foreign_note(&quiet).contains("disturbed"));
    }

    #[test]
    fn cpu_shares() {
        let before = [0, 0, 0, 0, 0, 0, 0, 0];
        let after = [50, 0, 10, 30, 10, 0, 0, 0];
        assert_eq!(share(&before, &after, &[3, 4]), 40.0);
        assert_eq!(share(&before, &after, &[7]), 0.0);
        assert_eq!(share(&before, &before, &[7]), 0.0);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }
}
