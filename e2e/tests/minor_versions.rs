//! The libraries refuse a server whose minor release their headers do not fit
//! (`ddl_server::releases::headers_unfit`): PostgreSQL's magic block compares only the major,
//! so without this a build made with newer headers loads into an older minor release, which
//! may lack what those headers describe. (The other direction, a build running in a newer minor
//! release, is e2e `debian_package` on 15: Debian's 15.20 with a build of 15.18's headers.)
//!
//! This build (made with the headers of the 17 under test) is copied into a private copy of an
//! older 17's tree (`DDL_PG_OLDER_MINOR`, which `cargo xtask --pg 17 test` sets from
//! `cargo xtask setup`): preloaded, the server does not start and its log says why; loaded by
//! `LOAD` or `CREATE EXTENSION`, the session gets the same ERROR. The server under test loads both
//! libraries, as every other test shows. Other majors have no older minor set up: the test
//! says so and passes.

use ddl_e2e::pgtree::pg_config_value;
use ddl_testkit::{ClusterBuilder, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn copy(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// Copies each file of `dir` whose name starts with `prefix` into `to`.
fn copy_starting_with(dir: &Path, prefix: &str, to: &Path) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("entry").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        {
            copy(&path, to);
        }
    }
}

#[test]
fn a_build_refuses_an_older_minor_release_of_its_major() {
    let Some(older) = std::env::var_os("DDL_PG_OLDER_MINOR").map(PathBuf::from) else {
        eprintln!(
            "minor_versions: not run: no older minor release of this major is set up \
             (DDL_PG_OLDER_MINOR, set by cargo xtask --pg 17 test)"
        );
        return;
    };
    let tested = PathBuf::from(std::env::var("DDL_PG_CONFIG").expect("DDL_PG_CONFIG"));
    let tree = TempDir::for_postgres("older-minor").expect("a temp dir");
    let root = tree.path().join("pg");
    copy(&older, &root);
    // This build's files, where the older tree's server looks for them.
    let (lib, extensions) = (
        PathBuf::from(pg_config_value(&tested, "--pkglibdir")),
        PathBuf::from(pg_config_value(&tested, "--sharedir")).join("extension"),
    );
    copy_starting_with(&lib, "ddl_", &root.join("lib"));
    copy_starting_with(&extensions, "ddl_sync", &root.join("share/extension"));
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&root)
        .status()
        .expect("chmod");
    assert!(status.success());
    let bindir = root.join("bin");
    let older_version = pg_config_value(&bindir.join("pg_config"), "--version");
    let tested_version = pg_config_value(&tested, "--version");
    assert_ne!(
        older_version, tested_version,
        "two different minor releases"
    );
    let number = |v: &str| v.trim_start_matches("PostgreSQL ").to_string();
    let why = format!(
        "cannot run in this server: it was built with the headers of PostgreSQL {}, newer than \
         this server ({})",
        number(&tested_version),
        number(&older_version)
    );

    let preloaded = ClusterBuilder::new()
        .name("older-minor-preload")
        .bindir(&bindir)
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build();
    let error = match preloaded {
        Ok(_) => panic!("{older_version} started with this build of ddl_pgoutput preloaded"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains(&format!("ddl_pgoutput {why}")), "{error}");

    let plain = ClusterBuilder::new()
        .name("older-minor")
        .bindir(&bindir)
        .build()
        .expect("an older-minor server without our libraries");
    // Each library on its own, and the extension, whose functions are in both.
    for (sql, library) in [
        ("LOAD 'ddl_sync'", "ddl_sync"),
        ("LOAD 'ddl_pgoutput'", "ddl_pgoutput"),
        ("CREATE EXTENSION ddl_sync", "ddl_"),
    ] {
        let out = plain.psql("postgres", sql).expect_err(sql).to_string();
        assert!(out.contains(library) && out.contains(&why), "{sql}: {out}");
    }
}
