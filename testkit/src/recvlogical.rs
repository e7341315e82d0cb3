//! Running pg_recvlogical against a cluster, bounded in time.

use crate::error::{Error, ErrorKind};
use crate::os;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// pg_recvlogical for one slot of one database; made by [`Cluster::recvlogical`].
///
/// Every run is bounded by [`timeout`](RecvLogical::timeout) (default 60 s): a run that takes
/// longer is killed and reported as [`ErrorKind::Timeout`].
///
/// [`Cluster::recvlogical`]: crate::Cluster::recvlogical
#[derive(Debug, Clone)]
pub struct RecvLogical {
    program: PathBuf,
    connstr: String,
    slot: String,
    plugin: String,
    options: Vec<(String, String)>,
    two_phase: bool,
    timeout: Duration,
}

impl RecvLogical {
    pub(crate) fn new(program: PathBuf, connstr: String, slot: &str) -> RecvLogical {
        RecvLogical {
            program,
            connstr,
            slot: slot.to_string(),
            plugin: "pgoutput".to_string(),
            options: Vec::new(),
            two_phase: false,
            timeout: Duration::from_secs(60),
        }
    }

    /// The output plugin for [`create_slot`](RecvLogical::create_slot) (`-P`); default `pgoutput`.
    pub fn plugin(&mut self, plugin: &str) -> &mut Self {
        self.plugin = plugin.to_string();
        self
    }

    /// Adds a plugin option for streaming (`-o name=value`), e.g. `("proto_version", "2")`.
    pub fn option(&mut self, name: &str, value: &str) -> &mut Self {
        self.options.push((name.to_string(), value.to_string()));
        self
    }

    /// Whether [`create_slot`](RecvLogical::create_slot) makes a two-phase slot (`--two-phase`);
    /// pgoutput's `two_phase` option needs one.
    pub fn two_phase(&mut self, two_phase: bool) -> &mut Self {
        self.two_phase = two_phase;
        self
    }

    /// The longest any one run may take.
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// `pg_recvlogical -d <connstr> --slot <slot>`, for running it your own way.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg("-d")
            .arg(&self.connstr)
            .arg("--slot")
            .arg(&self.slot)
            .stdin(Stdio::null());
        cmd
    }

    /// Creates the slot (`--create-slot -P <plugin>`, plus `--two-phase` when asked).
    pub fn create_slot(&self) -> Result<(), Error> {
        let mut cmd = self.command();
        cmd.args(["--create-slot", "-P", &self.plugin]);
        if self.two_phase {
            cmd.arg("--two-phase");
        }
        self.run(cmd)
    }

    /// Drops the slot (`--drop-slot`).
    pub fn drop_slot(&self) -> Result<(), Error> {
        let mut cmd = self.command();
        cmd.arg("--drop-slot");
        self.run(cmd)
    }

    /// Streams from the slot into `file` (replaced if it exists) until `endpos` (an LSN such as
    /// `0/1A2B3C8`), then returns once pg_recvlogical has exited by itself. pg_recvlogical
    /// writes each message followed by one `\n`.
    ///
    /// pg_recvlogical stops at `endpos` only when it sees WAL at or past it: make sure something
    /// is written after that LSN (any committed transaction will do) before or while this runs.
    pub fn stream_to_file(&self, file: &Path, endpos: &str) -> Result<(), Error> {
        match std::fs::remove_file(file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::io(
                    format_args!("cannot replace {}", file.display()),
                    e,
                ))
            }
        }
        let mut cmd = self.command();
        cmd.args(["--start", "--no-loop", "--endpos", endpos, "-f"])
            .arg(file);
        for (name, value) in &self.options {
            cmd.arg("-o").arg(format!("{name}={value}"));
        }
        self.run(cmd)
    }

    fn run(&self, mut cmd: Command) -> Result<(), Error> {
        let shown = os::shown(&cmd);
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::new(ErrorKind::Command, format!("cannot start `{shown}`: {e}")))?;
        let (status, stderr) = os::wait_bounded(&mut child, self.timeout)?;
        match status {
            Some(s) if s.success() => Ok(()),
            Some(s) => Err(Error::new(
                ErrorKind::Command,
                format!("`{shown}` failed ({s}):\n{}", stderr.trim_end()),
            )),
            None => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "`{shown}` did not finish within {:?} and was killed:\n{}",
                    self.timeout,
                    stderr.trim_end()
                ),
            )),
        }
    }
}
