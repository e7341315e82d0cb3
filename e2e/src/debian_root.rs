//! A fresh Debian system in a directory, to install the Debian package into as on a new server.
//!
//! `debootstrap --variant=minbase` of the machine's own release, from the machine's own apt
//! mirror, runs once and is kept as a tarball under `target/debian-root/`; each
//! [`DebianRoot::fresh`] unpacks it anew, gives it the machine's apt sources (so its suites,
//! updates and security included, are the machine's) and runs `apt-get update`. Nothing is
//! mounted into it: removing the directory removes only its own files.
//!
//! Set for tests, as a system image for servers would be: services are not started by package
//! scripts (`policy-rc.d`), postgresql-common makes no `main` cluster, and apt answers yes (the
//! README's `apt install` asks when it brings the server too).

use crate::pgtree::run_sh;
use ddl_testkit::TempDir;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Debian root, removed on drop.
pub struct DebianRoot {
    dir: TempDir,
}

impl DebianRoot {
    /// A new root from the cached bootstrap (made when missing), ready for apt.
    pub fn fresh() -> DebianRoot {
        let base = bootstrap();
        let root = DebianRoot {
            dir: TempDir::new("debian-root").expect("temp dir for a Debian root"),
        };
        let path = root.path();
        run_sh(
            "tar -xpf \"$BASE\" -C \"$ROOT\" &&
             rm -f \"$ROOT\"/etc/apt/sources.list &&
             cp -a /etc/apt/sources.list /etc/apt/sources.list.d \"$ROOT\"/etc/apt/ 2>/dev/null || true
             cp /etc/resolv.conf \"$ROOT\"/etc/resolv.conf
             printf '#!/bin/sh\\nexit 101\\n' > \"$ROOT\"/usr/sbin/policy-rc.d
             chmod 755 \"$ROOT\"/usr/sbin/policy-rc.d
             mkdir -p \"$ROOT\"/etc/postgresql-common/createcluster.d
             echo 'create_main_cluster = false' \
                > \"$ROOT\"/etc/postgresql-common/createcluster.d/tests.conf
             echo 'APT::Get::Assume-Yes \"true\";' > \"$ROOT\"/etc/apt/apt.conf.d/90tests",
            Path::new("/"),
            &[("BASE", base.as_os_str()), ("ROOT", path.as_os_str())],
        );
        assert!(
            root.run("cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -q .")
                .0,
            "the machine's apt sources were not copied into the root"
        );
        let (ok, out) = root.run("apt-get update -q");
        assert!(ok, "apt-get update in the Debian root failed:\n{out}");
        root
    }

    /// The root directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `abs`, a path inside the root, as seen from outside.
    pub fn under(&self, abs: &Path) -> PathBuf {
        self.path().join(abs.strip_prefix("/").unwrap_or(abs))
    }

    /// Runs `script` with `sh -c` inside the root (`chroot`): whether it succeeded, and its
    /// output and errors.
    pub fn run(&self, script: &str) -> (bool, String) {
        let out = Command::new("chroot")
            .arg(self.path())
            .args(["sh", "-c", script])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap_or_else(|e| panic!("cannot run chroot: {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }
}

/// The cached bootstrap of the machine's release, made when missing.
fn bootstrap() -> PathBuf {
    let release = os_release("VERSION_CODENAME");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debian-root");
    let tarball = dir.join(format!("{release}-minbase.tar"));
    if tarball.exists() {
        return tarball;
    }
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let work = TempDir::new("debootstrap").expect("temp dir for debootstrap");
    let mirror = mirror(&release);
    let partial = tarball.with_extension("tar.partial");
    run_sh(
        "debootstrap --variant=minbase \"$RELEASE\" \"$TARGET\" \"$MIRROR\" >/dev/null &&
         tar -cpf \"$PARTIAL\" -C \"$TARGET\" . && mv \"$PARTIAL\" \"$TARBALL\"",
        Path::new("/"),
        &[
            ("RELEASE", release.as_ref()),
            ("TARGET", work.path().join("root").as_os_str()),
            ("MIRROR", mirror.as_ref()),
            ("PARTIAL", partial.as_os_str()),
            ("TARBALL", tarball.as_os_str()),
        ],
    );
    tarball
}

/// A field of `/etc/os-release`.
fn os_release(field: &str) -> String {
    let text = std::fs::read_to_string("/etc/os-release").expect("/etc/os-release");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}=")))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| panic!("/etc/os-release has no {field}"))
}

/// The mirror of the machine's apt sources that serves `release` (deb822 `.sources` files, or
/// one-line `sources.list` entries).
fn mirror(release: &str) -> String {
    let mut texts = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        for entry in dir.flatten() {
            texts.push(std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    texts.push(std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default());
    texts
        .iter()
        .find_map(|text| mirror_in(text, release))
        .unwrap_or_else(|| panic!("no apt source of this machine serves {release}"))
}

/// The first URI in `text` (a sources file in either format) whose suites include `release`.
fn mirror_in(text: &str, release: &str) -> Option<String> {
    // deb822: stanzas separated by blank lines, with `URIs:` and `Suites:` fields.
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).map(str::trim))
        };
        if let (Some(uris), Some(suites)) = (field("URIs:"), field("Suites:")) {
            if suites.split_whitespace().any(|s| s == release) {
                return uris.split_whitespace().next().map(str::to_string);
            }
        }
    }
    // One-line format: `deb [options] URI suite components...`.
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace().filter(|w| !w.starts_with('['));
        (words.next()? == "deb").then_some(())?;
        let uri = words.next()?;
        (words.next()? == release).then(|| uri.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::mirror_in;

    #[test]
    fn the_mirror_comes_from_either_sources_format() {
        let deb822 =
            "Types: deb\nURIs: http://a.example/debian\nSuites: bookworm bookworm-updates\n\
                      Components: main\n\nTypes: deb\nURIs: http://b.example/security\n\
                      Suites: bookworm-security\n";
        assert_eq!(
            mirror_in(deb822, "bookworm").as_deref(),
            Some("http://a.example/debian")
        );
        assert_eq!(mirror_in(deb822, "trixie"), None);
        let list = "# comment\ndeb [arch=amd64] http://c.example/debian bookworm main\n";
        assert_eq!(
            mirror_in(list, "bookworm").as_deref(),
            Some("http://c.example/debian")
        );
    }
}
