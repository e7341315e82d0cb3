//! `cargo xtask install [--debug]`: build and install `ddl_pgoutput` and the `ddl_sync` extension
//! into the PostgreSQL that `pg_config` names (pkglibdir, sharedir/extension, and the adapter
//! header under includedir-server/extension/ddl_sync).
//!
//! `cargo xtask test` installs debug builds this way before the cluster tests, which load the
//! libraries from the server's own directories as a user's server would.

use crate::cmd::Cmd;
use crate::{project_root, setup, Result};
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

/// Installs both libraries and the extension's files, the adapter header among them.
pub fn install(profile: Profile) -> Result {
    setup::ensure()?;
    let mut pgrx = vec!["pgrx", "install", "--pg-config"];
    let pg_config = setup::pg_config();
    pgrx.push(&pg_config);
    if profile == Profile::Release {
        pgrx.push("--release");
    }
    Cmd::new("cargo")
        .args(pgrx)
        .dir(project_root().join("ddl-apply"))
        .run()?;
    install_header(&pg_config)?;
    install_plugin(profile)
}

/// The C header of the adapter registration API (see ddl-apply's README, "Adapters").
pub const ADAPTER_HEADER: &str = "ddl-apply/include/ddl_sync_adapter.h";

/// Where extensions' builds find [`ADAPTER_HEADER`]: `extension/ddl_sync/` under
/// `pg_config --includedir-server`, where PGXS installs an extension's headers.
pub fn header_dir(pg_config: &str) -> Result<PathBuf> {
    let server = Cmd::new(pg_config).args(["--includedir-server"]).read()?;
    Ok(PathBuf::from(server).join("extension").join("ddl_sync"))
}

fn install_header(pg_config: &str) -> Result {
    let dir = header_dir(pg_config)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let from = project_root().join(ADAPTER_HEADER);
    let name = from.file_name().ok_or("the header has a file name")?;
    install_file(&from, &dir.join(name))
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
    Cmd::new("cargo").args(build).dir(&root).run()?;
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
