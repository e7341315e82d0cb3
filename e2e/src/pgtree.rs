//! A private PostgreSQL installation to install the package into, and the package itself.
//!
//! Why a private tree: the package test must see what the archive installs and nothing else,
//! while the system's PostgreSQL directories are shared (and hold whatever the last
//! `cargo xtask install` put there). PostgreSQL is relocatable: a server program finds its
//! share and lib directories relative to its own (symlink-resolved) path, by taking the part
//! of the configured path that differs from the configured bindir. Debian's PostgreSQL 15 is
//! configured with bindir `/usr/lib/postgresql/15/bin`, pkglibdir `/usr/lib/postgresql/15/lib`
//! and sharedir `/usr/share/postgresql/15`, so `postgres` copied to
//! `ROOT/usr/lib/postgresql/15/bin/` loads libraries from `ROOT/usr/lib/postgresql/15/lib/` and
//! extensions from `ROOT/usr/share/postgresql/15/extension/`. [`PgTree::fresh`] therefore lays
//! out, under a temp directory `ROOT`, the directories the system `pg_config` names:
//!
//! - bindir: copies of every program (copies, not links: the path is resolved through links);
//! - pkglibdir and sharedir: symbolic links to each system entry, except `sharedir/extension`,
//!   a real directory of links to each system extension file;
//!
//! leaving out every file this project installs (`ddl_*` in pkglibdir, `ddl_sync*` among the
//! extensions). The archive is then installed with its own `install.sh` and `DESTDIR=ROOT`, so
//! it lands exactly where it would on the real system, but under `ROOT`. [`PgTree::fresh`]
//! checks that the copied `pg_config` reports the private directories, so a PostgreSQL that
//! is not relocatable fails here instead of silently using the system's files.

use ddl_testkit::TempDir;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The PostgreSQL the package is built for: `$DDL_PG_CONFIG`, else Debian's PostgreSQL 15
/// (the default of `cargo xtask`, see xtask's `setup::pg_config`).
pub fn system_pg_config() -> PathBuf {
    std::env::var_os("DDL_PG_CONFIG")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin/pg_config"))
}

/// What `pg_config` answers to `flag` (`--version`); panics when it cannot tell.
pub fn pg_config_value(pg_config: &Path, flag: &str) -> String {
    let out = Command::new(pg_config)
        .arg(flag)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", pg_config.display()));
    assert!(
        out.status.success(),
        "{} {flag} failed",
        pg_config.display()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// What `pg_config` answers to `flag` (`--bindir`), as a path; panics when it cannot tell.
pub fn pg_config_dir(pg_config: &Path, flag: &str) -> PathBuf {
    PathBuf::from(pg_config_value(pg_config, flag))
}

/// A private copy of the system's PostgreSQL installation, without this project's files (see
/// the module documentation). Removed on drop.
pub struct PgTree {
    dir: TempDir,
    system_bindir: PathBuf,
    system_pkglibdir: PathBuf,
    system_sharedir: PathBuf,
    system_includedir_server: PathBuf,
}

impl PgTree {
    /// Lays the tree out and checks that PostgreSQL takes its directories from it.
    pub fn fresh() -> PgTree {
        let pg_config = system_pg_config();
        let tree = PgTree {
            dir: TempDir::new("pgtree").expect("temp dir for the PostgreSQL tree"),
            system_bindir: pg_config_dir(&pg_config, "--bindir"),
            system_pkglibdir: pg_config_dir(&pg_config, "--pkglibdir"),
            system_sharedir: pg_config_dir(&pg_config, "--sharedir"),
            system_includedir_server: pg_config_dir(&pg_config, "--includedir-server"),
        };
        let bindir = tree.bindir();
        mkdir(&bindir);
        for (from, name) in entries(&tree.system_bindir) {
            let to = bindir.join(&name);
            std::fs::copy(&from, &to).unwrap_or_else(|e| {
                panic!("cannot copy {} to {}: {e}", from.display(), to.display())
            });
        }
        link_entries(&tree.system_pkglibdir, &tree.pkglibdir(), "ddl_");
        link_entries(&tree.system_sharedir, &tree.sharedir(), "extension");
        link_entries(
            &tree.system_sharedir.join("extension"),
            &tree.extension_dir(),
            "ddl_sync",
        );

        let private = tree.bindir().join("pg_config");
        for (flag, expected) in [
            ("--sharedir", tree.sharedir()),
            ("--pkglibdir", tree.pkglibdir()),
        ] {
            assert_eq!(
                pg_config_dir(&private, flag),
                expected,
                "PostgreSQL does not find its {flag} relative to its programs, so a private \
                 tree would still use the system's files"
            );
        }
        tree
    }

    /// The `DESTDIR` that installs into this tree.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The private bindir (for `ClusterBuilder::bindir`, and `PATH`).
    pub fn bindir(&self) -> PathBuf {
        self.under(&self.system_bindir)
    }

    /// The private pkglibdir (`$libdir`).
    pub fn pkglibdir(&self) -> PathBuf {
        self.under(&self.system_pkglibdir)
    }

    /// The private sharedir.
    pub fn sharedir(&self) -> PathBuf {
        self.under(&self.system_sharedir)
    }

    /// The private `sharedir/extension`.
    pub fn extension_dir(&self) -> PathBuf {
        self.sharedir().join("extension")
    }

    /// The private `includedir-server` (only what the package installs there).
    pub fn includedir_server(&self) -> PathBuf {
        self.under(&self.system_includedir_server)
    }

    /// `abs`, a system path, inside this tree.
    pub fn under(&self, abs: &Path) -> PathBuf {
        self.root().join(abs.strip_prefix("/").unwrap_or(abs))
    }

    /// Installs `archive` as its INSTALL file says (`tar -xzf`, then `install.sh`), with
    /// `DESTDIR` set to this tree.
    pub fn install(&self, archive: &Path) {
        let work = TempDir::new("unpack").expect("temp dir to unpack into");
        run_sh(
            "tar -xzf \"$ARCHIVE\" && DESTDIR=\"$ROOT\" ./ddl_sync-*/install.sh >/dev/null",
            work.path(),
            &[
                ("ARCHIVE", archive.as_os_str()),
                ("ROOT", self.root().as_os_str()),
            ],
        );
    }
}

/// Runs `script` with `sh -e -c` in `dir` with extra environment `env`; panics with its output
/// when it fails.
pub fn run_sh(script: &str, dir: &Path, env: &[(&str, &std::ffi::OsStr)]) -> String {
    let mut cmd = Command::new("sh");
    cmd.args(["-e", "-c", script]).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run sh: {e}"));
    assert!(
        out.status.success(),
        "`{script}` failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The entries of `dir` as (path, file name), sorted.
fn entries(dir: &Path) -> Vec<(PathBuf, std::ffi::OsString)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
            (e.path(), e.file_name())
        })
        .collect();
    out.sort();
    out
}

/// Links each entry of `from` into `to` (made), except names starting with `except`.
fn link_entries(from: &Path, to: &Path, except: &str) {
    mkdir(to);
    for (path, name) in entries(from) {
        if name.to_string_lossy().starts_with(except) {
            continue;
        }
        let link = to.join(&name);
        std::os::unix::fs::symlink(&path, &link)
            .unwrap_or_else(|e| panic!("cannot link {}: {e}", link.display()));
    }
}

fn mkdir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
}

/// The archive of this tree's debug build, made once per test process by `cargo xtask
/// package --debug` (with the cargo that runs the tests), so the test always installs what the
/// tree builds now, never an archive left from an earlier build.
pub fn debug_archive() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| debug_package(&[], ".tar.gz")).clone()
}

/// The Debian package of this tree's debug build, made as [`debug_archive`] is, by `cargo
/// xtask package --deb --debug`.
pub fn debug_deb() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| debug_package(&["--deb"], ".deb"))
        .clone()
}

/// Runs `cargo xtask package --debug` with `args`; the path it names that ends in `suffix`.
fn debug_package(args: &[&str], suffix: &str) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(&cargo)
        .args(["xtask", "package", "--debug"])
        .args(args)
        .current_dir(&workspace)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cargo.to_string_lossy()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo xtask package --debug {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("package: "))
        .find(|p| p.ends_with(suffix))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("cargo xtask package named no {suffix}:\n{stdout}"))
}
