//! `cargo xtask install [--debug]`: build and install what `cargo xtask package` packs
//! (`ddl_pgoutput`, the `ddl_sync` extension with its upgrade scripts, the adapter header and
//! `ddl-dump`) into the directories of the PostgreSQL that `pg_config` names.
//!
//! `cargo xtask test` installs debug builds this way before the cluster tests, which load the
//! libraries from the server's own directories as a user's server would.

use crate::cmd::Cmd;
use crate::{package, project_root, setup, Result};
use std::path::{Path, PathBuf};

pub fn run(args: &[&str]) -> Result {
    let profile = match args {
        [] => Profile::Release,
        ["--debug"] => Profile::Debug,
        _ => return Err("usage: cargo xtask install [--debug]".into()),
    };
    install(profile)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
}

/// Stages the package for `profile` (see [`package`](crate::package)) and copies its tree onto
/// `/`, as the archive's `install.sh` does: the same set of files either way.
pub fn install(profile: Profile) -> Result {
    let staged = package::stage(profile)?;
    install_tree(&staged.root, &staged.root)
}

/// Copies every file under `dir` to its path relative to `tree`, re-rooted at `/`.
fn install_tree(tree: &Path, dir: &Path) -> Result {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        let target = Path::new("/").join(path.strip_prefix(tree).map_err(|e| e.to_string())?);
        if path.is_dir() {
            std::fs::create_dir_all(&target)
                .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
            install_tree(tree, &path)?;
        } else {
            install_file(&path, &target)?;
        }
    }
    Ok(())
}

/// Installs `ddl_pgoutput.so` alone: the `ddl_sync` extension's capture triggers are functions
/// of that library, so it must be in place before the extension is created anywhere, the pgrx
/// test cluster included.
pub fn install_plugin(profile: Profile) -> Result {
    let root = project_root();
    let mut build = vec!["build", "-p", "ddl-decode"];
    if profile == Profile::Release {
        build.push("--release");
    }
    Cmd::new("cargo")
        .args(build)
        .args(setup::pg().cargo_features())
        .dir(&root)
        .run()?;
    let dir = if profile == Profile::Release {
        "release"
    } else {
        "debug"
    };
    let built = root.join("target").join(dir).join("libddl_pgoutput.so");
    let pkglibdir = PathBuf::from(Cmd::new(setup::pg_config()).args(["--pkglibdir"]).read()?);
    install_file(&built, &pkglibdir.join("ddl_pgoutput.so"))
}

/// Copies through a temporary name and renames, so a running server that maps the old library
/// keeps its inode, and a new backend never sees a half-written file.
fn install_file(from: &Path, to: &Path) -> Result {
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::copy(from, &tmp)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to)
        .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), to.display()))?;
    println!("install: {}", to.display());
    Ok(())
}
