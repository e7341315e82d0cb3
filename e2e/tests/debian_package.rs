//! The Debian package as operators install it: `cargo xtask package --deb --debug` (the debug
//! build that `cargo xtask test` has already compiled, packed as the release one is), then
//! README.md's Quickstart with its Debian install block, `sudo apt install
//! ./postgresql-*-ddl-sync_*.deb`, run by apt inside a fresh Debian root
//! (`ddl_e2e::debian_root`): apt brings the server package `postgresql-<major>` the package
//! depends on from the machine's own apt sources, as on a new server. The Quickstart's servers
//! then run from that root's PostgreSQL programs, which find their libraries and extensions
//! relative to themselves (see `ddl_e2e::pgtree`): the files apt installed, where Debian's
//! server looks for them.
//!
//! Where no apt source of the machine has `postgresql-<major>` (Debian 12 has 15 only; 16, 17
//! and 18 come from apt.postgresql.org), the test checks what it can: apt refuses the package
//! for that unmet dependency, naming it, and installs nothing. It says so in its output.

use ddl_e2e::debian_root::DebianRoot;
use ddl_e2e::pgtree::{debug_deb, pg_config_value, system_pg_config};
use ddl_e2e::quickstart::{wait_for_subscriptions, Install, Quickstart};
use ddl_e2e::readme::section_blocks;
use ddl_e2e::{compare, query};
use ddl_testkit::TempDir;
use std::path::Path;

/// The major and the version in `postgresql-<major>-ddl-sync_<version>-<revision>_<arch>.deb`.
fn deb_name_parts(deb: &Path) -> (String, String) {
    let name = deb.file_name().expect("a file").to_string_lossy();
    name.strip_prefix("postgresql-")
        .and_then(|n| n.split_once("-ddl-sync_"))
        .and_then(|(major, rest)| {
            let (version, _) = rest.split_once('_')?;
            let (upstream, _revision) = version.rsplit_once('-')?;
            Some((major.to_string(), upstream.to_string()))
        })
        .unwrap_or_else(|| panic!("unexpected package name {name}"))
}

#[test]
fn apt_installs_the_package_on_a_fresh_debian_and_the_readme_quickstart_runs() {
    let deb = debug_deb();
    let (major, version) = deb_name_parts(&deb);
    let package = format!("postgresql-{major}-ddl-sync");
    let server = format!("postgresql-{major}");
    let root = DebianRoot::fresh();
    let file = deb.file_name().expect("a file name");
    std::fs::copy(&deb, root.path().join(file)).expect("copy the package into the root");

    let (available, _) = root.run(&format!("apt-cache show {server} >/dev/null 2>&1"));
    if !available {
        let (ok, out) = root.run(&format!("apt-get install ./{}", file.to_string_lossy()));
        assert!(!ok, "apt installed {package} without {server}:\n{out}");
        assert!(
            // `(>= 16.15)`, or a pre-release's `(>= 19~rc1)`.
            out.contains(&format!("Depends: {server} (>= {major}")),
            "apt did not name the missing server package:\n{out}"
        );
        let (installed, _) = root.run(&format!("dpkg -s {package} >/dev/null 2>&1"));
        assert!(!installed, "a refused install left {package} installed");
        println!(
            "debian_package: no apt source of this machine has {server}; apt refuses {package} \
             for it, and the Quickstart was not run with the package"
        );
        return;
    }

    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let work = TempDir::new("quickstart-deb").expect("work dir");
    let bindir = root.under(Path::new(&format!("/usr/lib/postgresql/{major}/bin")));
    let mut run = Quickstart::new(
        bindir,
        Install::Deb {
            root: root.path().to_path_buf(),
        },
        work.path(),
    );
    for block in &section_blocks(&readme, "## Quickstart") {
        run.block(block);
    }
    assert!(run.installed, "the Quickstart has no Debian install block");

    // apt's own record: installed, with every file where Debian's server looks.
    let (ok, listed) = root.run(&format!("dpkg -L {package}"));
    assert!(ok, "dpkg does not know {package}:\n{listed}");
    for file in [
        format!("/usr/lib/postgresql/{major}/lib/ddl_pgoutput.so"),
        format!("/usr/lib/postgresql/{major}/lib/ddl_sync.so"),
        format!("/usr/lib/postgresql/{major}/bin/ddl-dump"),
        format!("/usr/share/postgresql/{major}/extension/ddl_sync.control"),
        format!("/usr/share/postgresql/{major}/extension/ddl_sync--{version}.sql"),
        format!("/usr/include/postgresql/{major}/server/extension/ddl_sync/ddl_sync_adapter.h"),
    ] {
        assert!(
            listed.lines().any(|l| l == file),
            "{package} does not install {file}:\n{listed}"
        );
    }

    let publisher = run
        .nodes
        .get("publisher")
        .expect("the Quickstart has a publisher");
    let subscriber = run
        .nodes
        .get("subscriber")
        .expect("the Quickstart has a subscriber");
    // The servers ran from the root, with the package's libraries.
    assert_eq!(
        query(
            publisher,
            "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'"
        ),
        root.under(Path::new(&format!("/usr/lib/postgresql/{major}/lib")))
            .display()
            .to_string()
    );
    assert_eq!(
        query(subscriber, "SELECT ddl_sync.library_version()"),
        version
    );
    wait_for_subscriptions(subscriber, &run.nodes);
    compare::assert_same_schema(publisher, subscriber);
    compare::assert_all_applied(subscriber);

    // The server apt chose is the newest minor release of the machine's sources, so the build
    // may run in a newer one than its headers: on 15, Debian's 15.20, whose
    // ReorderBufferChange is 8 bytes longer than 15.18's (ddl_server::releases).
    let headers = pg_config_value(&system_pg_config(), "--version");
    let server = query(publisher, "SHOW server_version");
    println!("debian_package: a build of {headers}'s headers replicated DDL in {server}");
    let number = |v: &str| -> Vec<u32> {
        v.trim_start_matches("PostgreSQL ")
            .split(|c: char| !c.is_ascii_digit())
            .take(2)
            .map(|n| n.parse().unwrap_or(0))
            .collect()
    };
    assert!(
        number(&server) >= number(&headers),
        "the server ({server}) is older than the headers ({headers}) apt's dependency names"
    );
}
