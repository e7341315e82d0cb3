//! What the benchmarks read from /proc: how busy the machine is and who else uses it, a
//! process's CPU time and memory, and the CPU time of a cluster's server processes.

use crate::{median, Result};
use ddl_testkit::Cluster;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
fn cpu_idle(window: Duration) -> Result<f64> {
    let before = cpu_ticks()?;
    std::thread::sleep(window);
    Ok(share(&before, &cpu_ticks()?, &[3, 4]))
}

/// Prints and returns how idle the machine is, warning when it is busy.
pub(super) fn quiet_check() -> Result<f64> {
    let idle = cpu_idle(Duration::from_secs(3))?;
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
pub(super) struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<HashMap<String, u64>>,
    started: Instant,
    ticks: [u64; 8],
}

const WATCH_EVERY: Duration = Duration::from_millis(500);

impl Watch {
    /// The postmasters are found again at every reading: a benchmark may restart a cluster.
    pub(super) fn start(pg: &[&Cluster]) -> Result<Watch> {
        for pg in pg {
            postmaster_pid_in(pg.data_dir())?;
        }
        let data_dirs: Vec<std::path::PathBuf> =
            pg.iter().map(|pg| pg.data_dir().to_path_buf()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut last = processes();
            // Clock ticks per command name.
            let mut foreign: HashMap<String, u64> = Default::default();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(WATCH_EVERY);
                let now = processes();
                let mut roots = vec![std::process::id()];
                roots.extend(data_dirs.iter().filter_map(|d| postmaster_pid_in(d).ok()));
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
            started: Instant::now(),
            ticks: cpu_ticks()?,
        })
    }

    /// Stops watching; returns what other processes used.
    pub(super) fn finish(self) -> Foreign {
        self.stop.store(true, Ordering::Relaxed);
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
pub(super) struct Foreign {
    percent: f64,
    /// CPU time the hypervisor gave to other guests (steal), percent.
    steal: f64,
    /// The largest users by command name.
    top: Vec<(String, f64)>,
}

/// The pid of a cluster's postmaster, from its postmaster.pid.
fn postmaster_pid(pg: &Cluster) -> Result<u32> {
    postmaster_pid_in(pg.data_dir())
}

/// The pid of the postmaster of data directory `data`.
fn postmaster_pid_in(data: &std::path::Path) -> Result<u32> {
    let pidfile = data.join("postmaster.pid");
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
pub(super) fn server_cpu_ms(pg: &Cluster) -> Result<f64> {
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

fn processes() -> HashMap<u32, Proc> {
    let mut all = HashMap::new();
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
fn descendants(all: &HashMap<u32, Proc>, roots: &[u32]) -> HashSet<u32> {
    let mut ours: HashSet<u32> = roots.iter().copied().collect();
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
pub(super) fn foreign_note(foreign: &Foreign) -> String {
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

/// Memory figures of /proc/<pid>/status, in kB. VmRSS = RssAnon + RssFile + RssShmem: private
/// memory, mapped files (the libraries' code), and the shared memory (shared buffers...) the
/// process has touched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Status {
    pub(super) hwm_kb: u64,
    pub(super) rss_kb: u64,
    pub(super) anon_kb: u64,
    pub(super) file_kb: u64,
    pub(super) shmem_kb: u64,
    /// The part of the resident set that is ddl_pgoutput.so's own file pages (from
    /// /proc/<pid>/smaps; part of RssFile).
    pub(super) plugin_kb: u64,
}

impl Status {
    /// Each figure's median over `all` (rounded down to whole kB).
    pub(super) fn median(all: &[Status]) -> Status {
        let of = |field: fn(&Status) -> u64| {
            median(&all.iter().map(|s| field(s) as f64).collect::<Vec<_>>()) as u64
        };
        Status {
            hwm_kb: of(|s| s.hwm_kb),
            rss_kb: of(|s| s.rss_kb),
            anon_kb: of(|s| s.anon_kb),
            file_kb: of(|s| s.file_kb),
            shmem_kb: of(|s| s.shmem_kb),
            plugin_kb: of(|s| s.plugin_kb),
        }
    }

    /// Each figure's larger value.
    pub(super) fn max(&self, other: &Status) -> Status {
        Status {
            hwm_kb: self.hwm_kb.max(other.hwm_kb),
            rss_kb: self.rss_kb.max(other.rss_kb),
            anon_kb: self.anon_kb.max(other.anon_kb),
            file_kb: self.file_kb.max(other.file_kb),
            shmem_kb: self.shmem_kb.max(other.shmem_kb),
            plugin_kb: self.plugin_kb.max(other.plugin_kb),
        }
    }
}

/// The peak memory of server processes while a measurement runs, and their CPU time: each
/// watched process is a child of a cluster's postmaster whose command line holds a given text
/// (`walsender`), found when it appears, and its /proc/<pid>/status is read every
/// [`PEAK_EVERY`] (the list of processes is not read again once all are found, so that the
/// watching costs next to nothing). VmHWM is the kernel's own peak; the others are the largest
/// sampled.
pub(super) struct Peaks {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Watched>>,
}

/// What [`Peaks`] saw of one process.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Watched {
    pub(super) peak: Status,
    /// Its CPU time (user + system) since it started, ms, at the last reading (within a
    /// sampling interval of its end, for a process that ends first).
    pub(super) cpu_ms: f64,
}

impl Watched {
    /// Reads process `pid` once: each memory figure kept at its largest, the CPU time (which
    /// only grows) at its last reading. `false` once the process is gone.
    pub(super) fn read(&mut self, pid: u32) -> bool {
        let (Some(status), Some(cpu_ms)) = (proc_status(pid), proc_cpu_ms(pid)) else {
            return false;
        };
        self.peak = self.peak.max(&status);
        self.cpu_ms = cpu_ms;
        true
    }
}

const PEAK_EVERY: Duration = Duration::from_millis(20);

impl Peaks {
    /// `watched`: per process, its cluster and a text of its command line.
    pub(super) fn start(watched: &[(&Cluster, &'static str)]) -> Result<Peaks> {
        let watched: Vec<(u32, &'static str)> = watched
            .iter()
            .map(|(pg, what)| Ok((postmaster_pid(pg)?, *what)))
            .collect::<Result<_>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut pids: Vec<Option<u32>> = vec![None; watched.len()];
            let mut seen = vec![Watched::default(); watched.len()];
            loop {
                // Read after the flag, so that the last reading is after the caller's end.
                let last = flag.load(Ordering::Relaxed);
                if pids.iter().any(Option::is_none) {
                    for (pid, (postmaster, what)) in pids.iter_mut().zip(&watched) {
                        *pid = pid.or_else(|| child_running(*postmaster, what));
                    }
                }
                for (pid, seen) in pids.iter().zip(seen.iter_mut()) {
                    if let Some(pid) = *pid {
                        seen.read(pid);
                    }
                }
                if last {
                    return seen;
                }
                std::thread::sleep(PEAK_EVERY);
            }
        });
        Ok(Peaks { stop, thread })
    }

    /// Stops watching; what was seen, in the order of `start`'s list. Fails when a process was
    /// never found.
    pub(super) fn finish(self) -> Result<Vec<Watched>> {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self
            .thread
            .join()
            .map_err(|_| "the memory watch panicked".to_string())?;
        if seen.iter().any(|w| w.peak.hwm_kb == 0) {
            return Err("a watched server process was never found in /proc".into());
        }
        Ok(seen)
    }
}

/// The child of `postmaster` whose command line holds `what`.
fn child_running(postmaster: u32, what: &str) -> Option<u32> {
    processes().into_iter().find_map(|(pid, p)| {
        (p.ppid == postmaster
            && std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(what)))
        .then_some(pid)
    })
}

/// The CPU time (user + system) of process `pid` in ms: `se.sum_exec_runtime` of
/// /proc/<pid>/sched (nanosecond clock) when the kernel has it, else utime + stime of
/// /proc/<pid>/stat (clock ticks, 10 ms); `None` once the process is gone.
pub(super) fn proc_cpu_ms(pid: u32) -> Option<f64> {
    if let Ok(sched) = std::fs::read_to_string(format!("/proc/{pid}/sched")) {
        if let Some(ms) = parse_sched(&sched) {
            return Some(ms);
        }
    }
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_sched(text: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "se.sum_exec_runtime")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// utime and stime are fields 14 and 15 of /proc/<pid>/stat, counted after the `)` that ends
/// the command name (which may hold spaces); USER_HZ is 100 on Linux.
fn parse_stat(text: &str) -> Option<f64> {
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 * 10.0)
}

/// `None` once the process is gone.
pub(super) fn proc_status(pid: u32) -> Option<Status> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(parse_status(&text))
}

fn parse_status(text: &str) -> Status {
    let kb = |key: &str| {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(key)?
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    };
    Status {
        hwm_kb: kb("VmHWM:"),
        rss_kb: kb("VmRSS:"),
        anon_kb: kb("RssAnon:"),
        file_kb: kb("RssFile:"),
        shmem_kb: kb("RssShmem:"),
        plugin_kb: 0,
    }
}

/// The resident size, kB, of the mappings of process `pid` whose file name ends with `file`.
/// Reading smaps walks the page tables: call it sparingly.
pub(super) fn mapped_rss_kb(pid: u32, file: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    Some(sum_mapped_rss(&text, file))
}

fn sum_mapped_rss(smaps: &str, file: &str) -> u64 {
    let mut inside = false;
    let mut kb = 0;
    for line in smaps.lines() {
        // A mapping's header: "start-end perms offset dev inode [path]".
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            inside = line.ends_with(file);
        } else if let Some(rss) = line.strip_prefix("Rss:").filter(|_| inside) {
            kb += rss
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap_or(0);
        }
    }
    kb
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let all: HashMap<u32, Proc> = [(7, 1), (42, 7), (43, 42), (50, 1)]
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
    fn cpu_time_is_read() {
        let sched = "postgres (123, #threads: 1)\n---\nse.exec_start  :  5704350.245029\n\
                     se.sum_exec_runtime                          :          2345.678901\n";
        assert_eq!(parse_sched(sched), Some(2345.678901));
        assert_eq!(parse_sched("se.vruntime : 1.0\n"), None);
        let stat = "123 (postgres: walsender x) S 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0 1 0";
        assert_eq!(parse_stat(stat), Some(1750.0));
    }

    #[test]
    fn mapped_rss_sums_the_mappings_of_one_file() {
        let smaps = "7f19a3800000-7f19a38c4000 r--p 00000000 fe:00 12 /usr/lib/x/ddl_pgoutput.so\n\
                     Size:  784 kB\nRss:   128 kB\n\
                     7f19a38c4000-7f19a3a3d000 r-xp 000c3000 fe:00 12 /usr/lib/x/ddl_pgoutput.so\n\
                     Rss:   864 kB\nPss:   864 kB\n\
                     7f19a3b00000-7f19a3b10000 r-xp 00000000 fe:00 13 /usr/lib/x/pgoutput.so\n\
                     Rss:    40 kB\n\
                     7f19a3c00000-7f19a3c10000 rw-p 00000000 00:00 0\nRss:   12 kB\n";
        assert_eq!(sum_mapped_rss(smaps, "/ddl_pgoutput.so"), 992);
        assert_eq!(sum_mapped_rss(smaps, "/pgoutput.so"), 40);
    }

    #[test]
    fn proc_status_is_read() {
        let text = "Name:\tpostgres\nVmPeak:\t  230000 kB\nVmHWM:\t   20480 kB\n\
                    VmRSS:\t   10240 kB\nRssAnon:\t    2048 kB\nRssFile:\t 8000 kB\n";
        let s = parse_status(text);
        assert_eq!((s.hwm_kb, s.rss_kb, s.anon_kb), (20480, 10240, 2048));
    }
}
