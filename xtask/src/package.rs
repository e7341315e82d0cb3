//! `cargo xtask package [--deb] [--debug]`: the installable archive, or with `--deb` the Debian
//! package of the same files (see [`crate::deb`]).
//!
//! `target/package/ddl_sync-<version>-pg15.tar.gz` (with `--debug`: the same name under
//! `target/package/debug/`) holds one directory of that name:
//!
//! ```text
//! INSTALL      what is in it, where it goes, how to install, what to put in postgresql.conf
//! README.md    the project's README (the Quickstart)
//! install.sh   copies root/ onto / (or onto $DESTDIR)
//! root/...     every file at the absolute path the target pg_config names: pkglibdir
//!              (ddl_pgoutput.so, ddl_sync.so), sharedir/extension (control file, install and
//!              upgrade scripts), includedir-server/extension/ddl_sync (ddl_sync_adapter.h),
//!              bindir (ddl-dump)
//! ```
//!
//! Why a directory and not a tree rooted at `/`: an archive that says what it is needs its
//! INSTALL text somewhere `tar -xzf` does not scatter over the file system. `cargo xtask
//! install` stages the same tree and copies `root/` exactly as `install.sh` does, so both
//! install the same set of files.

use crate::cmd::Cmd;
use crate::install::Profile;
use crate::{project_root, setup, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The C header of the adapter registration API (see ddl-apply's README, "Adapters").
const ADAPTER_HEADER: &str = "ddl-apply/include/ddl_sync_adapter.h";
/// The INSTALL text, with `@NAME@` placeholders filled in by [`install_text`].
const INSTALL_TEMPLATE: &str = include_str!("../package/INSTALL.in");
/// The installer shipped in the archive.
const INSTALL_SH: &str = include_str!("../package/install.sh");

const USAGE: &str = "usage: cargo xtask package [--deb] [--debug]";

pub fn run(args: &[&str]) -> Result {
    let mut profile = Profile::Release;
    let mut deb = false;
    for arg in args {
        match *arg {
            "--debug" => profile = Profile::Debug,
            "--deb" => deb = true,
            _ => return Err(USAGE.into()),
        }
    }
    let staged = stage(profile)?;
    if deb {
        let package = crate::deb::build(&staged)?;
        // The last line is read by the Debian package test (e2e/tests/debian_package.rs).
        println!("package: {}", package.display());
        return Ok(());
    }
    let parent = staged.dir.parent().ok_or("the stage has a parent")?;
    let name = staged.dir.file_name().ok_or("the stage has a name")?;
    let mut archive_name = name.to_owned();
    archive_name.push(".tar.gz");
    let archive = parent.join(archive_name);
    // Owned by root in the archive, whoever packed it: it is unpacked as root onto /.
    Cmd::new("tar")
        .args(["--owner=0", "--group=0", "--numeric-owner", "-czf"])
        .args([&archive])
        .args([Path::new("-C"), parent, Path::new(name)])
        .run()?;
    // The last line is read by the package test (e2e/tests/package.rs).
    println!("package: {}", archive.display());
    Ok(())
}

/// A staged package: `dir` is the archive's top directory, `root` the tree to copy onto `/`.
pub struct Staged {
    pub dir: PathBuf,
    pub root: PathBuf,
    /// The extension's version (ddl-apply's crate version).
    pub version: String,
    /// `pg_config --version` of the server it was built for.
    pub pg_version: String,
    /// That server's directories, which `root` mirrors.
    pub dirs: PgDirs,
}

/// Builds everything for `profile` and lays the package out under `target/package/`.
pub fn stage(profile: Profile) -> Result<Staged> {
    setup::ensure()?;
    let root = project_root();
    let pg_config = setup::pg_config();
    let version = crate_version(&root.join("ddl-apply/Cargo.toml"))?;
    let name = format!("ddl_sync-{version}-pg{}", setup::pg().major());
    let out = match profile {
        Profile::Release => root.join("target/package"),
        Profile::Debug => root.join("target/package/debug"),
    };
    let dir = out.join(&name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot clean {}: {e}", dir.display()))?;
    }
    let tree = dir.join("root");

    // The ddl_sync extension: library, control file, generated install script, and the upgrade
    // scripts `sql/ddl_sync--<from>--<to>.sql` (cargo-pgrx copies files of that pattern).
    let mut pgrx = vec!["pgrx", "package", "--pg-config", &pg_config];
    if profile == Profile::Debug {
        pgrx.push("--debug");
    }
    Cmd::new("cargo")
        .args(pgrx)
        .args([Path::new("--out-dir"), &tree])
        .dir(root.join("ddl-apply"))
        .run()?;

    // The output plugin and the command-line tool (crate ddl-dump) are plain cargo artifacts.
    // Two invocations: the PostgreSQL features are the plugin's alone.
    let release = profile == Profile::Release;
    let mut plugin = vec!["build", "-p", "ddl-decode"];
    let mut tool = vec!["build", "-p", "ddl-dump"];
    if release {
        plugin.push("--release");
        tool.push("--release");
    }
    Cmd::new("cargo")
        .args(plugin)
        .args(setup::pg().cargo_features())
        .dir(&root)
        .run()?;
    Cmd::new("cargo").args(tool).dir(&root).run()?;
    let built = root
        .join("target")
        .join(if release { "release" } else { "debug" });
    let dirs = PgDirs::of(&pg_config)?;
    copy(
        &built.join("libddl_pgoutput.so"),
        &under(&tree, &dirs.pkglibdir).join("ddl_pgoutput.so"),
        0o755,
    )?;
    copy(
        &built.join("ddl-dump"),
        &under(&tree, &dirs.bindir).join("ddl-dump"),
        0o755,
    )?;
    let header = root.join(ADAPTER_HEADER);
    copy(
        &header,
        &under(&tree, &dirs.header_dir()).join("ddl_sync_adapter.h"),
        0o644,
    )?;

    let files = files_under(&tree)?;
    let pg_version = Cmd::new(&pg_config).args(["--version"]).read()?;
    let text = install_text(&InstallFacts {
        version: &version,
        pg_version: &pg_version,
        profile,
        dirs: &dirs,
        files: &files,
    })?;
    write(&dir.join("INSTALL"), &text, 0o644)?;
    write(&dir.join("install.sh"), INSTALL_SH, 0o755)?;
    copy(&root.join("README.md"), &dir.join("README.md"), 0o644)?;
    println!("package: {}", dir.display());
    Ok(Staged {
        dir,
        root: tree,
        version,
        pg_version,
        dirs,
    })
}

/// The directories of the target PostgreSQL, as its `pg_config` prints them.
pub struct PgDirs {
    pub pkglibdir: PathBuf,
    pub sharedir: PathBuf,
    pub bindir: PathBuf,
    pub includedir_server: PathBuf,
}

impl PgDirs {
    fn of(pg_config: &str) -> Result<PgDirs> {
        let dir = |flag: &str| Cmd::new(pg_config).args([flag]).read().map(PathBuf::from);
        Ok(PgDirs {
            pkglibdir: dir("--pkglibdir")?,
            sharedir: dir("--sharedir")?,
            bindir: dir("--bindir")?,
            includedir_server: dir("--includedir-server")?,
        })
    }

    /// The layout of Debian's and apt.postgresql.org's `postgresql-<major>` packages.
    pub fn debian(major: &str) -> PgDirs {
        PgDirs {
            pkglibdir: format!("/usr/lib/postgresql/{major}/lib").into(),
            sharedir: format!("/usr/share/postgresql/{major}").into(),
            bindir: format!("/usr/lib/postgresql/{major}/bin").into(),
            includedir_server: format!("/usr/include/postgresql/{major}/server").into(),
        }
    }

    /// `path`, under one of these directories, moved to the same place under `other`'s.
    pub fn moved_to(&self, path: &Path, other: &PgDirs) -> Option<PathBuf> {
        [
            (&self.pkglibdir, &other.pkglibdir),
            (&self.sharedir, &other.sharedir),
            (&self.bindir, &other.bindir),
            (&self.includedir_server, &other.includedir_server),
        ]
        .into_iter()
        .find_map(|(from, to)| Some(to.join(path.strip_prefix(from).ok()?)))
    }

    /// Where extensions' builds find the adapter header: `extension/ddl_sync/` under
    /// `includedir-server`, where PGXS installs an extension's headers.
    fn header_dir(&self) -> PathBuf {
        self.includedir_server.join("extension").join("ddl_sync")
    }
}

/// What the INSTALL text says about one package.
struct InstallFacts<'a> {
    version: &'a str,
    pg_version: &'a str,
    profile: Profile,
    dirs: &'a PgDirs,
    /// The installed paths (absolute), sorted.
    files: &'a [PathBuf],
}

/// The INSTALL template with every `@NAME@` replaced; a placeholder left over is an error (the
/// template and this function went out of step).
fn install_text(facts: &InstallFacts) -> Result<String> {
    let files: String = facts
        .files
        .iter()
        .map(|f| format!("    {}\n", f.display()))
        .collect();
    let build = match facts.profile {
        Profile::Release => "release build",
        Profile::Debug => "DEBUG build, for tests; `cargo xtask package` makes the release build",
    };
    let values = [
        ("@VERSION@", facts.version.to_string()),
        ("@PG_VERSION@", facts.pg_version.to_string()),
        ("@PG_MAJOR@", setup::pg().major().to_string()),
        ("@BUILD@", build.to_string()),
        ("@FILES@", files.trim_end().to_string()),
        ("@PKGLIBDIR@", facts.dirs.pkglibdir.display().to_string()),
        ("@SHAREDIR@", facts.dirs.sharedir.display().to_string()),
        ("@BINDIR@", facts.dirs.bindir.display().to_string()),
        ("@HEADERDIR@", facts.dirs.header_dir().display().to_string()),
    ];
    let mut text = INSTALL_TEMPLATE.to_string();
    for (placeholder, value) in values {
        text = text.replace(placeholder, &value);
    }
    match leftover_placeholder(&text) {
        Some(left) => Err(format!("INSTALL.in: placeholder {left} has no value")),
        None => Ok(text),
    }
}

/// The first `@NAME@` (capitals and `_`) in `text`.
fn leftover_placeholder(text: &str) -> Option<&str> {
    let is_name = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    text.match_indices('@').find_map(|(at, _)| {
        let rest = &text[at + 1..];
        let end = rest.find('@')?;
        is_name(&rest[..end]).then(|| &text[at..at + end + 2])
    })
}

/// Every file under `tree`, as the absolute path it is installed at, sorted.
pub(crate) fn files_under(tree: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![tree.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
                .path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let rel = path.strip_prefix(tree).map_err(|e| e.to_string())?;
                out.push(Path::new("/").join(rel));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// `abs` re-rooted under `tree`.
pub(crate) fn under(tree: &Path, abs: &Path) -> PathBuf {
    tree.join(abs.strip_prefix("/").unwrap_or(abs))
}

/// Copies a file into the stage with the mode it is installed with.
pub(crate) fn copy(from: &Path, to: &Path, mode: u32) -> Result {
    make_parent(to)?;
    std::fs::copy(from, to)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    chmod(to, mode)
}

pub(crate) fn write(to: &Path, contents: &str, mode: u32) -> Result {
    make_parent(to)?;
    std::fs::write(to, contents).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    chmod(to, mode)
}

fn make_parent(path: &Path) -> Result {
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no parent", path.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

fn chmod(path: &Path, mode: u32) -> Result {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> PgDirs {
        PgDirs {
            pkglibdir: "/usr/lib/postgresql/15/lib".into(),
            sharedir: "/usr/share/postgresql/15".into(),
            bindir: "/usr/lib/postgresql/15/bin".into(),
            includedir_server: "/usr/include/postgresql/15/server".into(),
        }
    }

    #[test]
    fn install_text_fills_every_placeholder() {
        let files = [PathBuf::from("/usr/lib/postgresql/15/lib/ddl_sync.so")];
        let text = install_text(&InstallFacts {
            version: "9.8.7",
            pg_version: "PostgreSQL 15.99",
            profile: Profile::Release,
            dirs: &dirs(),
            files: &files,
        })
        .expect("every placeholder has a value");
        assert!(text.contains("ddl_sync 9.8.7"), "{text}");
        assert!(text.contains("PostgreSQL 15.99"), "{text}");
        assert!(
            text.contains("    /usr/lib/postgresql/15/lib/ddl_sync.so\n"),
            "{text}"
        );
        assert!(text.contains("shared_preload_libraries = 'ddl_pgoutput'"));
        assert!(text.contains("/usr/include/postgresql/15/server/extension/ddl_sync"));
    }

    #[test]
    fn leftover_placeholders_are_found() {
        assert_eq!(
            leftover_placeholder("a@b.c and @PG_MAJOR@"),
            Some("@PG_MAJOR@")
        );
        assert_eq!(leftover_placeholder("user@host, @ 5 @"), None);
    }

    #[test]
    fn files_under_lists_install_paths() {
        let tmp = ddl_testkit::TempDir::new("xtask-files").expect("temp dir");
        let tree = tmp.path().join("root");
        write(&tree.join("usr/lib/a.so"), "a", 0o755).expect("write");
        write(&tree.join("usr/share/x/b.sql"), "b", 0o644).expect("write");
        assert_eq!(
            files_under(&tree).expect("listed"),
            [
                PathBuf::from("/usr/lib/a.so"),
                PathBuf::from("/usr/share/x/b.sql")
            ]
        );
    }
}
