//! README.md's Quickstart, run as written against throwaway servers (`crate::readme` for the
//! block convention): its install block installs the package, its postgresql.conf blocks
//! configure a publisher and a subscriber, its SQL and shell blocks run on them in order, and
//! what it shows as output (```` ```text ```` blocks) must be what they print. The only changes
//! to the text, all of them here:
//!
//! - `sudo ` (install block) becomes what [`Install`] says: `env DESTDIR=<private tree> ` for
//!   the archive, `chroot <fresh Debian root> ` for the Debian package;
//! - `host=NODE dbname=postgres` (NODE a node's name) becomes that cluster's connection string
//!   (`host=127.0.0.1 port=... user=postgres dbname=postgres`);
//! - SQL runs in psql (`-X -q`, aligned output) on database `postgres` as `postgres`; shell
//!   blocks run with `sh -e`, `PATH` starting with the server's bindir and `PGHOST`, `PGPORT`,
//!   `PGUSER` naming their node, as a shell on that server would;
//! - before a block on a subscriber, the run waits until its subscriptions have replayed
//!   everything their publisher had written (a reader would wait a moment);
//! - a shell block that follows a slot forever is stopped once it has printed its output.
//!
//! Used by the package tests (`tests/package.rs`, `tests/debian_package.rs`).

use crate::pgtree::run_sh;
use crate::readme::{conf_settings, Block};
use crate::{query, wait_caught_up, wait_for};
use ddl_testkit::{Cluster, ClusterBuilder};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a subscriber may take to catch up, and a followed stream to show its output.
const WAIT: Duration = Duration::from_secs(120);

/// How the package is installed, and so which install block runs.
pub enum Install {
    /// The archive (block ```` ```sh install ````), into a private tree (`DESTDIR`).
    Archive {
        /// The tree's root.
        destdir: PathBuf,
    },
    /// The Debian package (block ```` ```sh install-deb ````), with apt in a Debian root
    /// (`chroot`) that holds the package in its top directory.
    Deb {
        /// The root.
        root: PathBuf,
    },
}

impl Install {
    /// The block's node name.
    fn node(&self) -> &'static str {
        match self {
            Install::Archive { .. } => "install",
            Install::Deb { .. } => "install-deb",
        }
    }
}

/// The state of a Quickstart run.
pub struct Quickstart {
    /// The servers' programs.
    bindir: PathBuf,
    install: Install,
    /// Where the archive's install block runs, and followed output is kept.
    work: PathBuf,
    /// postgresql.conf settings per node, until the node starts.
    conf: BTreeMap<String, Vec<(String, String)>>,
    /// The servers, by the README's node names.
    pub nodes: BTreeMap<String, Cluster>,
    /// Whether an install block ran.
    pub installed: bool,
    /// (lang, node) of every block whose shown output was compared.
    pub checked_outputs: Vec<(String, String)>,
}

impl Quickstart {
    /// A run whose servers start from `bindir`, installing as `install` says, keeping files in
    /// `work`.
    pub fn new(bindir: PathBuf, install: Install, work: &Path) -> Quickstart {
        Quickstart {
            bindir,
            install,
            work: work.to_path_buf(),
            conf: BTreeMap::new(),
            nodes: BTreeMap::new(),
            installed: false,
            checked_outputs: Vec::new(),
        }
    }

    /// Runs `block`, the next of the Quickstart's.
    pub fn block(&mut self, block: &Block) {
        let at = format!("README.md line {}", block.line);
        match (block.lang.as_str(), block.node.as_str()) {
            ("sh", "install" | "install-deb") if block.node != self.install.node() => {}
            ("sh", "install" | "install-deb") => {
                assert!(
                    block.expected.is_none(),
                    "{at}: install output is not checked"
                );
                let (sudo, dir) = match &self.install {
                    Install::Archive { destdir } => (
                        format!("env DESTDIR='{}' ", destdir.display()),
                        self.work.clone(),
                    ),
                    Install::Deb { root } => {
                        (format!("chroot '{}' ", root.display()), root.clone())
                    }
                };
                run_sh(&block.text.replace("sudo ", &sudo), &dir, &[]);
                self.installed = true;
            }
            ("conf", node) => {
                assert!(
                    !self.nodes.contains_key(node),
                    "{at}: postgresql.conf of {node} after it started"
                );
                self.conf
                    .entry(node.to_string())
                    .or_default()
                    .extend(conf_settings(&block.text));
            }
            ("sql", node) => {
                self.start(node);
                wait_for_subscriptions(&self.nodes[node], &self.nodes);
                let out = self.psql(node, &block.text, &at);
                if let Some(expected) = &block.expected {
                    assert_eq!(normalise(&out), normalise(expected), "{at}: output differs");
                    self.checked_outputs.push(("sql".into(), node.into()));
                }
            }
            ("sh", node) => {
                self.start(node);
                wait_for_subscriptions(&self.nodes[node], &self.nodes);
                let expected = block
                    .expected
                    .as_deref()
                    .unwrap_or_else(|| panic!("{at}: a shell block on a node shows its output"));
                self.follow(node, block, expected);
                self.checked_outputs.push(("sh".into(), node.into()));
            }
            (lang, node) => panic!("{at}: unknown block ```{lang} {node}"),
        }
    }

    /// Starts `node` from the bindir with the postgresql.conf lines seen so far.
    fn start(&mut self, node: &str) {
        if self.nodes.contains_key(node) {
            return;
        }
        let mut builder = ClusterBuilder::new();
        builder.name(node).bindir(&self.bindir);
        for (name, value) in self.conf.get(node).into_iter().flatten() {
            if name == "shared_preload_libraries" {
                let libraries: Vec<&str> = value.split(',').map(str::trim).collect();
                builder.shared_preload_libraries(&libraries);
            } else {
                builder.conf(name, value);
            }
        }
        let cluster = builder
            .build()
            .unwrap_or_else(|e| panic!("cannot start {node}: {e}"));
        self.nodes.insert(node.to_string(), cluster);
    }

    /// Runs SQL in psql with its default (aligned) output; the README's connection strings
    /// are replaced by the clusters' own.
    fn psql(&self, node: &str, sql: &str, at: &str) -> String {
        let mut sql = sql.to_string();
        for (name, cluster) in &self.nodes {
            sql = sql.replace(
                &format!("host={name} dbname=postgres"),
                &cluster.connstr("postgres"),
            );
        }
        let pg = &self.nodes[node];
        let mut child = Command::new(pg.bin("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(pg.connstr("postgres"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start psql");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(sql.as_bytes()).expect("write to psql");
        }
        let out = child.wait_with_output().expect("wait for psql");
        assert!(
            out.status.success(),
            "{at}: psql on {node} failed ({}):\n{sql}\n{}\n--- log ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            pg.log_tail(20)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a shell block that follows a stream, until its output shows `expected` (then it is
    /// stopped); it must not end before.
    fn follow(&self, node: &str, block: &Block, expected: &str) {
        use std::os::unix::process::CommandExt;
        let at = format!("README.md line {}", block.line);
        let pg = &self.nodes[node];
        let out_path = self.work.join(format!("line-{}.out", block.line));
        let out_file = std::fs::File::create(&out_path).expect("output file");
        let path = std::env::join_paths(std::iter::once(self.bindir.clone()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("PATH");
        let mut group = Group(
            Command::new("sh")
                .args(["-e", "-c", &block.text])
                .env("PATH", path)
                .env("PGHOST", pg.socket_dir())
                .env("PGPORT", pg.port().to_string())
                .env("PGUSER", "postgres")
                .stdin(Stdio::null())
                .stdout(out_file)
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .expect("start sh"),
        );
        let child = &mut group.0;
        wait_for(&format!("{at} to print its output"), WAIT, || {
            let out = std::fs::read_to_string(&out_path).unwrap_or_default();
            if let Some(status) = child.try_wait().expect("poll sh") {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                panic!("{at}: the block ended ({status}) before its output:\n{out}\n{err}");
            }
            if shows(&out, expected) {
                Ok(())
            } else {
                Err(format!("output so far:\n{out}"))
            }
        });
    }
}

/// A shell in a process group of its own: dropping it stops the whole group (pg_recvlogical
/// would otherwise go on reconnecting), also when the test fails.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

/// Whether the lines of `expected` appear in `out` in order; an expected line starting with
/// `... ` stands for any line that ends with the rest (the varying offsets, numbers, LSNs).
fn shows(out: &str, expected: &str) -> bool {
    let mut lines = out.lines();
    expected
        .lines()
        .filter(|l| !l.trim().is_empty())
        .all(|want| {
            lines.any(|got| match want.strip_prefix("... ") {
                Some(tail) => got.ends_with(tail),
                None => got == want,
            })
        })
}

/// psql output without trailing blanks on each line and around the whole.
fn normalise(text: &str) -> String {
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_matches('\n')
        .to_string()
}

/// Waits until every subscription of `node` has replayed what its publisher (one of `nodes`,
/// found by the port in the subscription's connection string) had written.
pub fn wait_for_subscriptions(node: &Cluster, nodes: &BTreeMap<String, Cluster>) {
    let subs = query(
        node,
        "SELECT subname || ' ' || subconninfo FROM pg_subscription ORDER BY subname",
    );
    for line in subs.lines().filter(|l| !l.is_empty()) {
        let (name, conninfo) = line.split_once(' ').expect("name and conninfo");
        let publisher = nodes
            .values()
            .find(|c| conninfo.contains(&format!("port={} ", c.port())))
            .unwrap_or_else(|| panic!("subscription {name} connects to no node: {conninfo}"));
        wait_caught_up(publisher, node, name, WAIT);
    }
}
