//! Building, running and removing one throwaway cluster.

use crate::error::{Error, ErrorKind};
use crate::os;
use crate::recvlogical::RecvLogical;
use crate::tempdir::TempDir;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How many times `build` picks a new port when the chosen one was taken before the server bound it.
const PORT_ATTEMPTS: usize = 5;
/// Lines of the server log put into a start error.
const LOG_LINES_IN_ERRORS: usize = 30;
/// How long pg_ctl waits for a start or stop (seconds); generous because test machines are busy.
const PG_CTL_WAIT_SECS: &str = "120";
/// How long killed server processes may take to be gone (reaped by whoever adopted them).
const KILL_WAIT: Duration = Duration::from_secs(60);

/// Settings for throwaway clusters; [`build`](ClusterBuilder::build) makes one, and can be called
/// again for another with the same settings.
///
/// Defaults, all meant for tests of logical replication:
///
/// | setting | value | why |
/// |---|---|---|
/// | `wal_level` | `logical` | logical decoding needs it |
/// | `max_replication_slots`, `max_wal_senders` | 20 | several slots, subscriptions and pg_recvlogical at once |
/// | `max_prepared_transactions` | 10 | two-phase tests |
/// | `fsync` | `off` | speed: it only matters when the *machine* crashes, and then the cluster is garbage anyway; a server crash (immediate stop) loses nothing, so crash tests stay meaningful |
/// | `shared_buffers` | 32MB | many clusters may run at once |
/// | `listen_addresses` | `127.0.0.1` | nothing outside the machine can connect |
/// | `unix_socket_directories` | the cluster's own temp dir | no clash with a system server |
/// | `port` | a free TCP port | picked by binding 127.0.0.1:0 |
/// | `output_plugin_libraries` | `pgoutput, test_decoding, ddl_pgoutput`, only on servers that have the parameter (15.19, 16.15, 17.11, 18.6 and later) | those load no other output plugin; older ones would not start with it |
///
/// initdb runs with `--auth=trust -U postgres --locale=C --encoding=UTF8`: the superuser is
/// `postgres` and needs no password. Lines given with [`conf`](ClusterBuilder::conf) come last
/// in postgresql.conf, so they override the defaults.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    name: String,
    conf: Vec<(String, String)>,
    preload: Vec<String>,
    bindir: Option<PathBuf>,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder::new()
    }
}

impl ClusterBuilder {
    /// Default settings, named `cluster`.
    pub fn new() -> ClusterBuilder {
        ClusterBuilder {
            name: "cluster".to_string(),
            conf: Vec::new(),
            preload: Vec::new(),
            bindir: None,
        }
    }

    /// A name for the temp directory and for messages (e.g. `publisher`).
    pub fn name(&mut self, name: &str) -> &mut Self {
        self.name = name.to_string();
        self
    }

    /// Adds a postgresql.conf setting; the value is written quoted, so any value works
    /// (`.conf("logical_decoding_work_mem", "64kB")`). A later setting of the same name wins.
    /// Leave `port`, `listen_addresses` and `unix_socket_directories` to the kit: [`Cluster`]'s
    /// accessors report what it chose.
    pub fn conf(&mut self, name: &str, value: &str) -> &mut Self {
        self.conf.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets `shared_preload_libraries` (replacing an earlier list).
    pub fn shared_preload_libraries(&mut self, libraries: &[&str]) -> &mut Self {
        self.preload = libraries.iter().map(|l| l.to_string()).collect();
        self
    }

    /// The directory with initdb, pg_ctl, postgres, psql and pg_recvlogical. Default:
    /// `$DDL_PG_BINDIR`, else the bindir of `$DDL_PG_CONFIG`, else `/usr/lib/postgresql/15/bin`,
    /// else `pg_config --bindir`.
    pub fn bindir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.bindir = Some(dir.into());
        self
    }

    /// Runs initdb in a new temp directory and starts the server. The directory is removed
    /// when the [`Cluster`] is dropped, and also when this fails.
    pub fn build(&self) -> Result<Cluster, Error> {
        let bindir = self.bindir.clone().unwrap_or_else(os::default_bindir);
        let base = TempDir::for_postgres(&self.name)?;
        // From here on, Drop cleans up whatever happens.
        let mut cluster = Cluster {
            name: self.name.clone(),
            data: base.path().join("data"),
            sock: base.path().join("sock"),
            log: base.path().join("server.log"),
            base,
            bindir,
            port: 0,
            running: false,
        };
        std::fs::create_dir(&cluster.sock)
            .map_err(|e| Error::io(format_args!("cannot create {}", cluster.sock.display()), e))?;
        os::give_to_server_user(&cluster.sock)?;
        cluster.initdb()?;

        let conf_path = cluster.data.join("postgresql.conf");
        let initdb_conf = std::fs::read_to_string(&conf_path)
            .map_err(|e| Error::io(format_args!("cannot read {}", conf_path.display()), e))?;
        let mut attempt = 1;
        loop {
            cluster.port = free_port()?;
            let conf = format!("{initdb_conf}{}", self.conf_block(&cluster));
            std::fs::write(&conf_path, conf)
                .map_err(|e| Error::io(format_args!("cannot write {}", conf_path.display()), e))?;
            match cluster.start() {
                Ok(()) => return Ok(cluster),
                Err(e) if attempt < PORT_ATTEMPTS && port_was_taken(&e) => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Our block at the end of postgresql.conf.
    fn conf_block(&self, cluster: &Cluster) -> String {
        let mut lines = vec![
            ("listen_addresses".to_string(), "127.0.0.1".to_string()),
            ("port".to_string(), cluster.port.to_string()),
            (
                "unix_socket_directories".to_string(),
                cluster.sock.display().to_string(),
            ),
            ("wal_level".to_string(), "logical".to_string()),
            ("max_replication_slots".to_string(), "20".to_string()),
            ("max_wal_senders".to_string(), "20".to_string()),
            ("max_prepared_transactions".to_string(), "10".to_string()),
            ("fsync".to_string(), "off".to_string()),
            ("shared_buffers".to_string(), "32MB".to_string()),
        ];
        if os::has_setting(&cluster.bindir, "output_plugin_libraries") {
            lines.push((
                "output_plugin_libraries".to_string(),
                "pgoutput, test_decoding, ddl_pgoutput".to_string(),
            ));
        }
        if !self.preload.is_empty() {
            lines.push((
                "shared_preload_libraries".to_string(),
                self.preload.join(","),
            ));
        }
        lines.extend(self.conf.iter().cloned());
        let mut block =
            String::from("\n# ---- ddl-testkit (fsync=off: a throwaway cluster) ----\n");
        for (name, value) in lines {
            block.push_str(&format!("{name} = '{}'\n", value.replace('\'', "''")));
        }
        block
    }
}

/// How [`Cluster::stop`] shuts the server down (pg_ctl's `-m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// Wait for clients to disconnect.
    Smart,
    /// Disconnect clients, shut down cleanly.
    Fast,
    /// Kill everything at once, like a crash; the next start runs crash recovery.
    Immediate,
}

impl StopMode {
    fn as_arg(self) -> &'static str {
        match self {
            StopMode::Smart => "smart",
            StopMode::Fast => "fast",
            StopMode::Immediate => "immediate",
        }
    }
}

/// A running (or stopped) throwaway PostgreSQL cluster in its own temp directory.
///
/// Dropping it stops the server at once (immediate mode) and removes the directory (a
/// [`TempDir`]), also while a test panics. Set `DDL_TESTKIT_KEEP=1` to keep the directory for a
/// post-mortem (the server is still stopped; the path is printed to stderr). A process killed
/// by SIGKILL leaves its directories behind: they are named `ddl-testkit-*` in the temp dir.
#[derive(Debug)]
pub struct Cluster {
    name: String,
    base: TempDir,
    data: PathBuf,
    sock: PathBuf,
    log: PathBuf,
    bindir: PathBuf,
    port: u16,
    running: bool,
}

impl Cluster {
    /// The name given to the builder.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of the unix socket (inside the cluster's temp dir).
    pub fn socket_dir(&self) -> &Path {
        &self.sock
    }

    /// The data directory (PGDATA).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The temp directory holding everything of this cluster (data, socket, log); removed on drop.
    pub fn base_dir(&self) -> &Path {
        self.base.path()
    }

    /// Leaves the server running and its directory in place (nothing is stopped or removed
    /// when this returns), for someone to look at it; returns the directory. Stop it with
    /// `pg_ctl -D <dir>/data stop` as the `postgres` OS user, then remove the directory.
    pub fn keep(self) -> PathBuf {
        let dir = self.base_dir().to_path_buf();
        std::mem::forget(self);
        dir
    }

    /// The server log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// A libpq keyword/value connection string for database `db` as superuser `postgres` over
    /// TCP, usable by psql, pg_recvlogical, libpq clients and `CREATE SUBSCRIPTION ... CONNECTION`
    /// on another cluster of the same machine.
    pub fn connstr(&self, db: &str) -> String {
        self.client().connstr(db)
    }

    /// The path of a program in the PostgreSQL bindir (`bin("pgbench")`).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }

    /// `psql -X -q -A -t -v ON_ERROR_STOP=1 -d <connstr(db)>`, for running it your own way.
    pub fn psql_command(&self, db: &str) -> Command {
        self.client().psql_command(db)
    }

    /// Runs `sql` (one or more statements, fed on stdin) in database `db` and returns the
    /// unaligned, tuples-only output (`|` between columns, one row a line, no trailing newline).
    /// Stops at the first error; the error carries psql's stderr.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, Error> {
        self.client().psql(db, sql)
    }

    /// A psql client of this cluster that does not borrow it: for a thread that keeps working
    /// while the cluster is stopped, killed and started again (its calls fail meanwhile).
    pub fn client(&self) -> Client {
        Client {
            name: self.name.clone(),
            psql: self.bin("psql"),
            port: self.port,
        }
    }

    /// A pg_recvlogical runner for slot `slot` in database `db` (plugin `pgoutput` by default).
    pub fn recvlogical(&self, db: &str, slot: &str) -> RecvLogical {
        RecvLogical::new(self.bin("pg_recvlogical"), self.connstr(db), slot)
    }

    /// Starts the server (`pg_ctl start -w`) on the same port as before. On failure the error
    /// carries the tail of the server log.
    pub fn start(&mut self) -> Result<(), Error> {
        self.start_as(None)
    }

    /// [`start`](Cluster::start), with `postgres` run instead of the bindir's (`pg_ctl -p`): a
    /// wrapper that runs the server under a tool (valgrind, perf) and execs the real one.
    pub fn start_as(&mut self, postgres: Option<&Path>) -> Result<(), Error> {
        let mut cmd = os::server_command(&self.bin("pg_ctl"), self.base.path());
        cmd.args(["start", "-w", "-t", PG_CTL_WAIT_SECS, "-D"])
            .arg(&self.data)
            .arg("-l")
            .arg(&self.log);
        if let Some(postgres) = postgres {
            cmd.arg("-p").arg(postgres);
        }
        // Only this attempt's part of the log goes into an error.
        let log_start = std::fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0);
        let out = os::output(&mut cmd)?;
        if out.status.success() {
            self.running = true;
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::Start,
            format!(
                "server {} did not start ({}): {}\n--- {} (last lines) ---\n{}",
                self.name,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end(),
                self.log.display(),
                os::tail_from(&self.log, log_start, LOG_LINES_IN_ERRORS)
            ),
        ))
    }

    /// Stops the server (`pg_ctl stop -w -m <mode>`). [`StopMode::Immediate`] is a crash as far
    /// as the server is concerned.
    pub fn stop(&mut self, mode: StopMode) -> Result<(), Error> {
        let mut cmd = os::server_command(&self.bin("pg_ctl"), self.base.path());
        cmd.args([
            "stop",
            "-w",
            "-t",
            PG_CTL_WAIT_SECS,
            "-m",
            mode.as_arg(),
            "-D",
        ])
        .arg(&self.data);
        os::run(&mut cmd)?;
        self.running = false;
        Ok(())
    }

    /// Kills the server the way a crash does: every process of it gets SIGKILL, so none of them
    /// runs another instruction (no shutdown checkpoint, no `quickdie`, no last message to a
    /// client), and the next [`start`](Cluster::start) runs crash recovery. Unlike
    /// [`StopMode::Immediate`] (SIGQUIT, which the processes handle) and unlike a SIGKILL of the
    /// postmaster alone (its backends would go on running, and committing, until they notice).
    ///
    /// The postmaster is stopped (SIGSTOP) first so that it forks nothing new, then its children
    /// and it are killed; returns once all of them are gone (reaped, so that the next start does
    /// not find the old postmaster's PID alive). Files the server wrote and the OS holds are
    /// kept: this is a crash of the processes, not of the machine.
    pub fn kill(&mut self) -> Result<(), Error> {
        let postmaster = os::postmaster_pid(&self.data)?;
        os::signal(&[postmaster], "STOP")?;
        let mut victims = os::children(postmaster);
        victims.push(postmaster);
        os::signal(&victims, "KILL")?;
        os::wait_gone(&victims, KILL_WAIT)?;
        self.running = false;
        Ok(())
    }

    /// Fast stop, then start on the same port (e.g. after changing postgresql.conf).
    pub fn restart(&mut self) -> Result<(), Error> {
        self.stop(StopMode::Fast)?;
        self.start()
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        os::tail(&self.log, lines)
    }

    fn initdb(&self) -> Result<(), Error> {
        let mut cmd = os::server_command(&self.bin("initdb"), self.base.path());
        cmd.arg("-D")
            .arg(&self.data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--locale=C",
                "--encoding=UTF8",
                "--no-sync",
                "--no-instructions",
            ])
            .env("LC_ALL", "C");
        os::run(&mut cmd).map(|_| ())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Stop first; the directory goes when `base` is dropped right after.
        if self.running {
            let _ = self.stop(StopMode::Immediate);
        }
    }
}

/// What [`Cluster::client`] returns: psql against the cluster's port, owned, `Send`.
#[derive(Debug, Clone)]
pub struct Client {
    name: String,
    psql: PathBuf,
    port: u16,
}

impl Client {
    /// See [`Cluster::connstr`].
    pub fn connstr(&self, db: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname={}",
            self.port,
            quote_conninfo(db)
        )
    }

    /// See [`Cluster::psql_command`].
    pub fn psql_command(&self, db: &str) -> Command {
        let mut cmd = Command::new(&self.psql);
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.connstr(db));
        cmd
    }

    /// See [`Cluster::psql`].
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, Error> {
        let mut cmd = self.psql_command(db);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::new(ErrorKind::Command, format!("cannot start psql: {e}")))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let script = sql.to_string();
        // A thread writes, so a script with much output cannot deadlock on full pipes.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(script.as_bytes());
        });
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io("cannot wait for psql", e))?;
        let _ = writer.join();
        if !out.status.success() {
            return Err(Error::new(
                ErrorKind::Sql,
                format!(
                    "psql on {} (database {db}) failed ({}):\n{}",
                    self.name,
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim_end()
                ),
            ));
        }
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }
}

/// A TCP port that was free a moment ago (bind 127.0.0.1:0, read the port, release it).
fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("cannot bind 127.0.0.1:0 to find a free port", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::io("cannot read the bound address", e))?
        .port();
    Ok(port)
}

/// Whether a start failed because another process took the port in the meantime.
fn port_was_taken(e: &Error) -> bool {
    e.kind() == ErrorKind::Start && e.message().contains("Address already in use")
}

/// Quotes a conninfo value when it needs it (spaces, quotes, backslashes, empty).
fn quote_conninfo(value: &str) -> String {
    if !value.is_empty() && !value.contains([' ', '\'', '\\', '=']) {
        return value.to_string();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_values_are_quoted_when_needed() {
        assert_eq!(quote_conninfo("postgres"), "postgres");
        assert_eq!(quote_conninfo("my db"), "'my db'");
        assert_eq!(quote_conninfo("it's"), "'it\\'s'");
        assert_eq!(quote_conninfo(""), "''");
    }

    #[test]
    fn conf_values_are_quoted_and_user_lines_come_last() {
        let mut b = ClusterBuilder::new();
        b.conf("wal_level", "replica")
            .conf("application_name", "o'clock")
            .shared_preload_libraries(&["a", "b"]);
        let c = Cluster {
            name: "x".into(),
            base: TempDir::new("unit").unwrap(),
            data: "/b/data".into(),
            sock: "/b/sock".into(),
            log: "/b/server.log".into(),
            bindir: "/bin".into(),
            port: 5999,
            running: false,
        };
        let block = b.conf_block(&c);
        assert!(block.contains("port = '5999'\n"));
        assert!(block.contains("shared_preload_libraries = 'a,b'\n"));
        assert!(block.contains("application_name = 'o''clock'\n"));
        let default = block.find("wal_level = 'logical'").unwrap();
        let user = block.find("wal_level = 'replica'").unwrap();
        assert!(default < user);
    }
}
