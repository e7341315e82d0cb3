//! Running external programs: print what runs, fail with the command line when it fails. Shared
//! by the tools (xtask and the benchmarks), whose errors are messages for the user.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// What a step returns: a message for the user on failure.
pub(crate) type Result<T = ()> = std::result::Result<T, String>;

/// A command about to run, printed first so a log shows every step.
pub struct Cmd {
    inner: Command,
    shown: String,
}

impl Cmd {
    /// `program` with no arguments yet.
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        let shown = program.as_ref().to_string_lossy().into_owned();
        Cmd {
            inner: Command::new(program),
            shown,
        }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self.shown.push(' ');
            self.shown.push_str(&a.as_ref().to_string_lossy());
            self.inner.arg(a);
        }
        self
    }

    /// Sets an environment variable for the command.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Cmd {
        self.inner.env(key, value);
        self
    }

    /// Removes an environment variable for the command.
    pub fn env_remove(mut self, key: &str) -> Cmd {
        self.inner.env_remove(key);
        self
    }

    /// Runs in the given directory.
    pub fn dir(mut self, dir: impl AsRef<std::path::Path>) -> Cmd {
        self.inner.current_dir(dir);
        self
    }

    /// Runs with inherited stdio; an error names the command when it fails.
    pub fn run(mut self) -> Result {
        println!("$ {}", self.shown);
        let started = std::time::Instant::now();
        let status = self
            .inner
            .status()
            .map_err(|e| format!("cannot start `{}`: {e}", self.shown))?;
        // Where a long run (CI's is bounded) spends its time, in its log.
        let took = started.elapsed().as_secs();
        if took >= 10 {
            println!("$ ({took} s) {}", self.shown);
        }
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{}` failed ({status})", self.shown))
        }
    }

    /// Runs quietly and returns trimmed stdout; stderr is passed through.
    pub fn read(mut self) -> Result<String> {
        let out = self
            .inner
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot start `{}`: {e}", self.shown))?;
        if !out.status.success() {
            return Err(format!("`{}` failed ({})", self.shown, out.status));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Runs quietly; `None` when it cannot start or fails (for probing what is installed).
    pub fn probe(mut self) -> Option<String> {
        let out = self.inner.stderr(Stdio::null()).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}
