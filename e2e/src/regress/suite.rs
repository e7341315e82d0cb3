//! PostgreSQL's own regression suite, from Debian's source package of the installed server:
//! fetched once into a cache directory, with its C test library built against the installed
//! server headers.
//!
//! The source comes through apt with a private state directory (`-o Dir::State::Lists`, `-o
//! Dir::Etc::SourceParts`): deb-src entries are derived from the machine's own apt sources at
//! run time, so no mirror is written down here and the machine's apt configuration is left as
//! it was.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The suite of one server version, ready to run.
pub struct Suite {
    /// `src/test/regress` of the source package: `sql/`, `expected/`, `parallel_schedule`.
    pub regress_dir: PathBuf,
    /// The directory given to pg_regress as `--dlpath`: `regress.so` built here, and the
    /// server's own `autoinc.so` and `refint.so` (the `triggers` test loads them from there).
    pub lib_dir: PathBuf,
    /// `pg_regress` of the installed server-dev package.
    pub pg_regress: PathBuf,
    /// The Debian package it came from (`postgresql-15 15.18-0+deb12u1`).
    pub package: String,
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
        let version = output(Command::new("dpkg-query").args(["-W", "-f=${Version}", &package]))?;
        let home = cache.join(format!("{package}_{version}"));
        let source = home.join("source");
        let suite = Suite {
            regress_dir: source.join("src/test/regress"),
            lib_dir: home.join("lib"),
            pg_regress: PathBuf::from(pg_config_value(pg_config, "--pkglibdir")?)
                .join("pgxs/src/test/regress/pg_regress"),
            package: format!("{package} {version}"),
        };
        if !source.join("src/test/regress/parallel_schedule").exists() {
            fetch_source(&home, &package, &version)?;
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

/// Downloads the source package into `home/download` and unpacks it (Debian's patches applied)
/// into `home/source`.
fn fetch_source(home: &Path, package: &str, version: &str) -> Result<(), String> {
    let apt = home.join("apt");
    let parts = apt.join("sources.list.d");
    let lists = apt.join("lists");
    for dir in [&parts, &lists.join("partial"), &home.join("download")] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let sources = deb_src_entries()?;
    if sources.is_empty() {
        return Err("the machine's apt sources have no deb entries to derive deb-src from".into());
    }
    for (name, text) in &sources {
        std::fs::write(parts.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", parts.display()))?;
    }
    let private = |cmd: &mut Command| {
        cmd.arg("-q")
            .arg(format!("-oDir::State::Lists={}", lists.display()))
            .arg("-oDir::Etc::SourceList=/dev/null")
            .arg(format!("-oDir::Etc::SourceParts={}", parts.display()));
    };
    let mut update = Command::new("apt-get");
    private(&mut update);
    run(update.arg("update"))?;
    let mut download = Command::new("apt-get");
    private(&mut download);
    run(download
        .args(["source", "--download-only", &format!("{package}={version}")])
        .current_dir(home.join("download")))?;
    let dsc = std::fs::read_dir(home.join("download"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "dsc"))
        .ok_or_else(|| format!("apt-get source {package}={version} gave no .dsc"))?;
    let source = home.join("source");
    let _ = std::fs::remove_dir_all(&source);
    run(Command::new("dpkg-source").arg("-x").arg(&dsc).arg(&source))
}

/// deb-src twins of the machine's enabled `deb` entries, as (file name, contents): deb822
/// `.sources` files get `Types: deb-src`, one-line `.list` files `deb-src` lines.
fn deb_src_entries() -> Result<Vec<(String, String)>, String> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut found: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        found.sort();
        files.extend(found);
    }
    let mut out = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let derived = if name.ends_with(".sources") {
            deb822_src(&text)
        } else if name.ends_with(".list") {
            text.lines()
                .filter_map(|l| l.trim_start().strip_prefix("deb "))
                .map(|rest| format!("deb-src {rest}\n"))
                .collect()
        } else {
            continue;
        };
        if !derived.is_empty() {
            let ext = if name.ends_with(".sources") {
                "sources"
            } else {
                "list"
            };
            out.push((format!("{i:02}-src.{ext}"), derived));
        }
    }
    Ok(out)
}

/// The stanzas of a deb822 file whose `Types` include `deb`, as `deb-src` stanzas.
fn deb822_src(text: &str) -> String {
    let mut out = String::new();
    for stanza in text.split("\n\n") {
        let fields: Vec<&str> = stanza.lines().filter(|l| !l.starts_with('#')).collect();
        let value = |name: &str| {
            fields
                .iter()
                .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')))
                .map(str::trim)
        };
        let is_deb = value("Types").is_some_and(|t| t.split_whitespace().any(|t| t == "deb"));
        if !is_deb || value("Enabled") == Some("no") {
            continue;
        }
        for line in &fields {
            if line.starts_with("Types:") {
                out.push_str("Types: deb-src\n");
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push('\n');
    }
    out
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

fn pg_config_value(pg_config: &str, flag: &str) -> Result<String, String> {
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
