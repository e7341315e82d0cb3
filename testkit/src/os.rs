//! Operating-system details: who we are, running server programs as `postgres`, bounded waits.

use crate::error::{Error, ErrorKind};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The OS user that owns clusters when we run as root (root may not run initdb or postgres).
pub(crate) const SERVER_USER: &str = "postgres";

/// The effective uid of this process, read from /proc (no libc dependency), else from `id -u`.
pub(crate) fn euid() -> Option<u32> {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            if let Some(rest) = line.strip_prefix("Uid:") {
                // Uid: real effective saved fs
                return rest.split_whitespace().nth(1)?.parse().ok();
            }
        }
    }
    let out = Command::new("id").arg("-u").output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Whether server programs must be run as [`SERVER_USER`] (we are root).
pub(crate) fn as_root() -> bool {
    euid() == Some(0)
}

/// uid and gid of [`SERVER_USER`].
pub(crate) fn server_user_ids() -> Result<(u32, u32), Error> {
    let id = |flag: &str| -> Result<u32, Error> {
        let out = Command::new("id")
            .args([flag, SERVER_USER])
            .output()
            .map_err(|e| Error::io("cannot run `id`", e))?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| {
                Error::new(
                    ErrorKind::Command,
                    format!(
                        "running as root, but there is no `{SERVER_USER}` OS user to run the server as \
                         (`id {flag} {SERVER_USER}`: {})",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ),
                )
            })
    };
    Ok((id("-u")?, id("-g")?))
}

/// Gives `path` to [`SERVER_USER`] when we are root, so the server can write there.
pub fn give_to_server_user(path: &Path) -> Result<(), Error> {
    if as_root() {
        let (uid, gid) = server_user_ids()?;
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .map_err(|e| Error::io(format_args!("cannot chown {}", path.display()), e))?;
    }
    Ok(())
}

/// A command for a server-side program (initdb, pg_ctl, postgres): run as [`SERVER_USER`] when
/// we are root, with `RUST_BACKTRACE` removed (pgrx extensions would otherwise put a Rust
/// backtrace into every error's DETAIL), and run in `cwd` (which that user can enter).
pub fn server_command(program: &Path, cwd: &Path) -> Command {
    let mut cmd = if as_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", SERVER_USER, "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .current_dir(cwd)
        .stdin(Stdio::null());
    cmd
}

/// Renders a command for error messages.
pub(crate) fn shown(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` to completion with stdout and stderr captured.
pub(crate) fn output(cmd: &mut Command) -> Result<Output, Error> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.output().map_err(|e| {
        Error::new(
            ErrorKind::Command,
            format!("cannot start `{}`: {e}", shown(cmd)),
        )
    })
}

/// Runs `cmd`, failing with its stderr and stdout when it exits with an error.
pub(crate) fn run(cmd: &mut Command) -> Result<Output, Error> {
    let out = output(cmd)?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(Error::new(
            ErrorKind::Command,
            format!(
                "`{}` failed ({}):\n{}{}",
                shown(cmd),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            ),
        ))
    }
}

/// Waits for `child` at most `timeout`; on timeout kills it (and reaps it) and returns `None`.
/// Its stderr, if piped, is collected by a thread so a chatty child cannot block on a full pipe.
pub(crate) fn wait_bounded(
    child: &mut Child,
    timeout: Duration,
) -> Result<(Option<ExitStatus>, String), Error> {
    let reader = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::io("cannot wait for a child process", e));
            }
        }
    };
    let stderr = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    Ok((status, stderr))
}

/// The last `lines` lines of a text file (empty when it cannot be read).
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    tail_from(path, 0, lines)
}

/// The last `lines` lines of a text file after byte `offset`.
pub(crate) fn tail_from(path: &Path, offset: u64, lines: usize) -> String {
    let text = match std::fs::read(path) {
        Ok(bytes) => {
            let from = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            String::from_utf8_lossy(&bytes[from..]).into_owned()
        }
        Err(_) => return String::new(),
    };
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The bindir of the PostgreSQL under test: `DDL_PG_BINDIR`, else that of `$DDL_PG_CONFIG`
/// (which `cargo xtask --pg N` sets), else Debian's /usr/lib/postgresql/15/bin when it has
/// `postgres`, else `pg_config --bindir` (which may belong to another major version).
pub(crate) fn default_bindir() -> PathBuf {
    if let Some(dir) = std::env::var_os("DDL_PG_BINDIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let bindir_of = |pg_config: &std::ffi::OsStr| {
        Command::new(pg_config)
            .arg("--bindir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    };
    if let Some(dir) = std::env::var_os("DDL_PG_CONFIG")
        .filter(|c| !c.is_empty())
        .and_then(|c| bindir_of(&c))
    {
        return dir;
    }
    let debian = PathBuf::from("/usr/lib/postgresql/15/bin");
    if debian.join("postgres").exists() {
        return debian;
    }
    bindir_of("pg_config".as_ref()).unwrap_or(debian)
}

/// Whether the server of `bindir` has the setting `name` (`postgres --describe-config`, which
/// root may run). Each bindir's settings are read once per process: every cluster asks.
pub(crate) fn has_setting(bindir: &Path, name: &str) -> bool {
    static SETTINGS: Mutex<BTreeMap<PathBuf, Vec<String>>> = Mutex::new(BTreeMap::new());
    let mut known = SETTINGS.lock().unwrap_or_else(|e| e.into_inner());
    known
        .entry(bindir.to_path_buf())
        .or_insert_with(|| {
            Command::new(bindir.join("postgres"))
                .arg("--describe-config")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .filter_map(|l| l.split('\t').next())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        })
        .iter()
        .any(|s| s == name)
}

/// The postmaster's PID, from the first line of `data/postmaster.pid`.
pub(crate) fn postmaster_pid(data: &Path) -> Result<u32, Error> {
    let file = data.join("postmaster.pid");
    let text = std::fs::read_to_string(&file)
        .map_err(|e| Error::io(format_args!("cannot read {}", file.display()), e))?;
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Command,
                format!("no PID on the first line of {}", file.display()),
            )
        })
}

/// The processes whose parent is `parent`, from /proc (a PID that exits meanwhile is skipped).
pub(crate) fn children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| proc_stat(pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect()
}

/// (state, parent PID) of a process from /proc/PID/stat; `None` once it is gone. The command
/// name in parentheses may hold spaces and parentheses: the fields start after the last ')'.
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Sends `SIG<name>` to every PID with kill(1) (std has no kill(2) but for children). A PID
/// that has exited meanwhile makes kill(1) fail: that is not an error here, the caller checks
/// the outcome (see [`wait_gone`]).
pub(crate) fn signal(pids: &[u32], name: &str) -> Result<(), Error> {
    let mut cmd = Command::new("kill");
    cmd.arg(format!("-{name}"))
        .args(pids.iter().map(u32::to_string));
    output(&mut cmd).map(|_| ())
}

/// Waits until none of `pids` exists any more (a zombie still does: a new postmaster would take
/// its PID in postmaster.pid for a live server).
pub(crate) fn wait_gone(pids: &[u32], timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        let left: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|&p| proc_stat(p).is_some())
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorKind::Command,
                format!("killed server processes {left:?} still exist after {timeout:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
