//! Temp directories that go away.

use crate::error::{Error, ErrorKind};
use crate::os;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Distinguishes directories made by one process.
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A new, empty, uniquely named directory, removed with everything in it on drop (also while
/// a test panics).
///
/// It is made in `$DDL_TESTKIT_TMPDIR`, else [`std::env::temp_dir`], and named
/// `ddl-testkit-<name>-<pid>-<n>`. Set `DDL_TESTKIT_KEEP=1` to keep it for a post-mortem (its
/// path is printed to stderr on drop).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A directory owned by the current user.
    pub fn new(name: &str) -> Result<TempDir, Error> {
        let root = std::env::var_os("DDL_TESTKIT_TMPDIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        // Short and tame: a unix socket path inside must stay under ~100 bytes.
        let tame: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(24)
            .collect();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = root.join(format!("ddl-testkit-{tame}-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir { path }),
                // Left behind by an earlier process with the same pid.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(Error::io(
                        format_args!("cannot create {}", path.display()),
                        e,
                    ))
                }
            }
        }
    }

    /// A directory the server can write to: owned by the `postgres` OS user when we are root
    /// (e.g. a PGDATA for `cargo pgrx test --runas postgres --pgdata`), else by us.
    pub fn for_postgres(name: &str) -> Result<TempDir, Error> {
        let dir = TempDir::new(name)?;
        os::give_to_server_user(&dir.path)?;
        if os::as_root() {
            // The server user must also be able to reach it (every parent searchable).
            let mut probe = os::server_command(Path::new("test"), Path::new("/"));
            probe.arg("-w").arg(&dir.path);
            if !os::output(&mut probe)?.status.success() {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!(
                        "the `{}` OS user cannot write to {}: a parent directory is not searchable \
                         by it; set DDL_TESTKIT_TMPDIR to a directory it can reach (e.g. /tmp)",
                        os::SERVER_USER,
                        dir.path.display()
                    ),
                ));
            }
        }
        Ok(dir)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("DDL_TESTKIT_KEEP").is_some_and(|v| !v.is_empty()) {
            eprintln!("ddl-testkit: kept {}", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
