//! `cargo xtask package`: release artifacts in PostgreSQL's directory layout.
//!
//! The tree under `target/package/ddl_sync-<version>-pg15/` mirrors the absolute paths the target
//! `pg_config` reports (pkglibdir, sharedir/extension, bindir, and
//! includedir-server/extension/ddl_sync for the adapter header), so `cp -a tree/. /` or
//! `tar -C / -xzf` installs it; the `.tar.gz` next to it is that tree archived.

use crate::cmd::Cmd;
use crate::{install, project_root, setup, Result};
use std::path::{Path, PathBuf};

pub fn run() -> Result {
    setup::ensure()?;
    let root = project_root();
    let pg_config = setup::pg_config();
    let version = crate_version(&root.join("ddl-apply/Cargo.toml"))?;
    let name = format!("ddl_sync-{version}-pg{}", setup::PG_MAJOR);
    let out = root.join("target/package");
    let stage = out.join(&name);
    if stage.exists() {
        std::fs::remove_dir_all(&stage)
            .map_err(|e| format!("cannot clean {}: {e}", stage.display()))?;
    }

    // The ddl_sync extension: library, control file and generated SQL.
    Cmd::new("cargo")
        .args(["pgrx", "package", "--pg-config", &pg_config, "--out-dir"])
        .args([&stage])
        .dir(root.join("ddl-apply"))
        .run()?;

    // The output plugin and the command-line tool are plain cargo artifacts. Two invocations:
    // `--bin` would otherwise narrow both packages to binaries and skip the plugin's library.
    Cmd::new("cargo")
        .args(["build", "--release", "-p", "ddl-decode"])
        .dir(&root)
        .run()?;
    Cmd::new("cargo")
        .args(["build", "--release", "-p", "ddl-wire", "--bin", "ddl-dump"])
        .dir(&root)
        .run()?;
    let release = root.join("target/release");
    let pkglibdir = pg_config_dir(&pg_config, "--pkglibdir")?;
    let bindir = pg_config_dir(&pg_config, "--bindir")?;
    copy(
        &release.join("libddl_pgoutput.so"),
        &under(&stage, &pkglibdir).join("ddl_pgoutput.so"),
    )?;
    copy(
        &release.join("ddl-dump"),
        &under(&stage, &bindir).join("ddl-dump"),
    )?;
    // The C header for adapters registered by other extensions.
    let header = root.join(install::ADAPTER_HEADER);
    let header_name = header.file_name().ok_or("the header has a file name")?;
    copy(
        &header,
        &under(&stage, &install::header_dir(&pg_config)?).join(header_name),
    )?;

    let archive = out.join(format!("{name}.tar.gz"));
    Cmd::new("tar")
        .args(["-czf"])
        .args([&archive])
        .args(["-C"])
        .args([&stage, Path::new(".")])
        .run()?;
    println!("package: {}", stage.display());
    println!("package: {}", archive.display());
    Ok(())
}

fn pg_config_dir(pg_config: &str, flag: &str) -> Result<PathBuf> {
    Cmd::new(pg_config).args([flag]).read().map(PathBuf::from)
}

/// `abs` re-rooted under `stage`.
fn under(stage: &Path, abs: &Path) -> PathBuf {
    stage.join(abs.strip_prefix("/").unwrap_or(abs))
}

fn copy(from: &Path, to: &Path) -> Result {
    let dir = to
        .parent()
        .ok_or_else(|| format!("{} has no parent", to.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

/// The `version = "..."` of a crate manifest (each crate has its own; no workspace inheritance).
fn crate_version(manifest: &Path) -> Result<String> {
    let text = std::fs::read_to_string(manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("version = \"")?
                .strip_suffix('"')
                .map(str::to_string)
        })
        .ok_or_else(|| format!("no version line in {}", manifest.display()))
}
