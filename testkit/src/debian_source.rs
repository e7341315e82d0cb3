//! Debian source packages of PostgreSQL, through apt with a private state directory: the
//! regression suite of the installed server, and the source of a major version that has no
//! package for this Debian release (PostgreSQL 18 from Debian's `unstable`); and binary
//! packages of newer suites, downloaded, never installed (PostgreSQL 19 from `experimental`).
//!
//! The deb-src entries are derived from the machine's own apt sources at run time (`-o
//! Dir::State::Lists`, `-o Dir::Etc::SourceParts`), so no mirror is written down here and the
//! machine's apt configuration is left as it was.

use crate::error::{Error, ErrorKind};
use crate::os::run;
use std::path::{Path, PathBuf};
use std::process::Command;

/// apt, pointed at deb-src twins of the machine's sources, with its lists in a directory of
/// ours.
pub struct AptSources {
    dir: PathBuf,
}

impl AptSources {
    /// deb-src entries of the machine's `deb` entries in `dir` (made when missing), and their
    /// package lists fetched. With `extra_suite` (`"unstable"`), the entries are instead those of
    /// the machine's main Debian archive with its suite replaced: a newer release's sources from
    /// the same mirror.
    pub fn update(dir: &Path, extra_suite: Option<&str>) -> Result<AptSources, Error> {
        let apt = AptSources {
            dir: dir.to_path_buf(),
        };
        let entries = match extra_suite {
            None => deb_src_entries(),
            Some(suite) => other_suite_entries(suite, "deb-src"),
        };
        apt.fetch_lists(&entries)
    }

    /// Binary package entries of the machine's main Debian archive with its suite replaced by
    /// `suites` (`"unstable experimental"`), in `dir`, and their package lists fetched: to
    /// download packages with [`AptSources::download`], not to install them.
    pub fn binaries(dir: &Path, suites: &str) -> Result<AptSources, Error> {
        let apt = AptSources {
            dir: dir.to_path_buf(),
        };
        let entries = other_suite_entries(suites, "deb");
        apt.fetch_lists(&entries)
    }

    /// Writes `entries` as our sources and fetches their lists.
    fn fetch_lists(self, entries: &[(String, String)]) -> Result<AptSources, Error> {
        let parts = self.dir.join("sources.list.d");
        let _ = std::fs::remove_dir_all(&parts);
        for d in [&parts, &self.dir.join("lists/partial")] {
            std::fs::create_dir_all(d)
                .map_err(|e| Error::io(format_args!("cannot create {}", d.display()), e))?;
        }
        if entries.is_empty() {
            return Err(Error::new(
                ErrorKind::Command,
                "the machine's apt sources have no deb entries to derive ours from",
            ));
        }
        for (name, text) in entries {
            let path = parts.join(name);
            std::fs::write(&path, text)
                .map_err(|e| Error::io(format_args!("cannot write {}", path.display()), e))?;
        }
        run(self.command("apt-get").arg("update"))?;
        Ok(self)
    }

    /// The newest version of source package `package` the entries offer.
    pub fn newest_version(&self, package: &str) -> Result<String, Error> {
        let out = run(self
            .command("apt-cache")
            .args(["showsrc", "--only-source", package]))?;
        let mut newest: Option<String> = None;
        for v in String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("Version: "))
        {
            let newer = match &newest {
                None => true,
                Some(n) => Command::new("dpkg")
                    .args(["--compare-versions", v, "gt", n])
                    .status()
                    .is_ok_and(|s| s.success()),
            };
            if newer {
                newest = Some(v.to_string());
            }
        }
        newest.ok_or_else(|| {
            Error::new(
                ErrorKind::Command,
                format!("no apt source offers the source package {package}"),
            )
        })
    }

    /// Downloads `package` at `version` and unpacks it, Debian's patches applied, into `dest`
    /// (replaced when it exists).
    pub fn unpack(&self, package: &str, version: &str, dest: &Path) -> Result<(), Error> {
        let download = self.dir.join(format!("download/{package}_{version}"));
        std::fs::create_dir_all(&download)
            .map_err(|e| Error::io(format_args!("cannot create {}", download.display()), e))?;
        run(self
            .command("apt-get")
            .args(["source", "--download-only", &format!("{package}={version}")])
            .current_dir(&download))?;
        let dsc = std::fs::read_dir(&download)
            .map_err(|e| Error::io(format_args!("cannot read {}", download.display()), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "dsc"))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Command,
                    format!("apt-get source {package}={version} gave no .dsc"),
                )
            })?;
        let _ = std::fs::remove_dir_all(dest);
        run(Command::new("dpkg-source").arg("-x").arg(&dsc).arg(dest))?;
        Ok(())
    }

    /// The version of binary package `package` that apt would take from our entries: the
    /// newest of the suites that are not `NotAutomatic` (experimental is), else the newest.
    pub fn candidate(&self, package: &str) -> Result<String, Error> {
        let out = run(self.command("apt-cache").args(["policy", package]))?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("Candidate: "))
            .filter(|v| *v != "(none)")
            .map(str::to_string)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Command,
                    format!("no apt source offers the package {package}"),
                )
            })
    }

    /// Downloads binary package `package` at `version` into `dest` (made when missing) and
    /// returns the file.
    pub fn download(&self, package: &str, version: &str, dest: &Path) -> Result<PathBuf, Error> {
        std::fs::create_dir_all(dest)
            .map_err(|e| Error::io(format_args!("cannot create {}", dest.display()), e))?;
        run(self
            .command("apt-get")
            .args(["download", &format!("{package}={version}")])
            .current_dir(dest))?;
        // apt names the file `<package>_<version, its epoch's colon escaped>_<arch>.deb`.
        let version = version.replace(':', "%3a");
        std::fs::read_dir(dest)
            .map_err(|e| Error::io(format_args!("cannot read {}", dest.display()), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{package}_{version}_")))
            })
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Command,
                    format!("apt-get download {package}={version} gave no file"),
                )
            })
    }

    /// `program` (apt-get or apt-cache) reading only our entries and lists.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.arg("-q")
            .arg(format!(
                "-oDir::State::Lists={}",
                self.dir.join("lists").display()
            ))
            .arg("-oDir::Etc::SourceList=/dev/null")
            .arg(format!(
                "-oDir::Etc::SourceParts={}",
                self.dir.join("sources.list.d").display()
            ));
        cmd
    }
}

/// The machine's apt source files: `/etc/apt/sources.list`, then `sources.list.d/` in order.
fn source_files() -> Vec<(String, String)> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut found: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        found.sort();
        files.extend(found);
    }
    files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let name = path.file_name()?.to_str()?.to_string();
            Some((name, text))
        })
        .collect()
}

/// deb-src twins of the machine's enabled `deb` entries, as (file name, contents): deb822
/// `.sources` files get `Types: deb-src`, one-line `.list` files `deb-src` lines.
fn deb_src_entries() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, (name, text)) in source_files().iter().enumerate() {
        let (derived, ext) = if name.ends_with(".sources") {
            (deb822_stanzas(text, None, "deb-src"), "sources")
        } else if name.ends_with(".list") {
            let lines = text
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("deb "))
                .map(|rest| format!("deb-src {rest}\n"))
                .collect();
            (lines, "list")
        } else {
            continue;
        };
        if !derived.is_empty() {
            out.push((format!("{i:02}-src.{ext}"), derived));
        }
    }
    out
}

/// The deb822 stanzas of the machine's main Debian archive (the one whose suites include this
/// release's codename itself, not its `-security` or `-updates`) as `types` stanzas (`deb` or
/// `deb-src`) of `suite` (one or several, space-separated).
fn other_suite_entries(suite: &str, types: &str) -> Vec<(String, String)> {
    let Some(codename) = codename() else {
        return Vec::new();
    };
    let stanzas: String = source_files()
        .iter()
        .filter(|(name, _)| name.ends_with(".sources"))
        .map(|(_, text)| deb822_stanzas(text, Some((&codename, suite)), types))
        .collect();
    if stanzas.is_empty() {
        Vec::new()
    } else {
        vec![(format!("00-{types}.sources"), stanzas)]
    }
}

/// `VERSION_CODENAME` of /etc/os-release (`bookworm`).
fn codename() -> Option<String> {
    std::fs::read_to_string("/etc/os-release")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// The stanzas of a deb822 file whose `Types` include `deb`, as `types` stanzas. With
/// `Some((codename, suite))`, only stanzas whose `Suites` include `codename`, with `Suites:
/// suite` instead.
fn deb822_stanzas(text: &str, replace: Option<(&str, &str)>, types: &str) -> String {
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
        if let Some((codename, _)) = replace {
            let suites = value("Suites").unwrap_or("");
            if !suites.split_whitespace().any(|s| s == codename) {
                continue;
            }
        }
        for line in &fields {
            if line.starts_with("Types:") {
                out.push_str(&format!("Types: {types}\n"));
            } else if let (Some((_, suite)), true) = (replace, line.starts_with("Suites:")) {
                out.push_str(&format!("Suites: {suite}\n"));
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::deb822_stanzas;

    const MACHINE: &str = "Types: deb\nURIs: http://mirror.example/debian\n\
        Suites: bookworm bookworm-updates\nComponents: main\n\n\
        Types: deb\nURIs: http://mirror.example/debian-security\n\
        Suites: bookworm-security\nComponents: main\n";

    #[test]
    fn every_deb_stanza_gets_a_deb_src_twin() {
        let out = deb822_stanzas(MACHINE, None, "deb-src");
        assert_eq!(out.matches("Types: deb-src\n").count(), 2);
        assert!(out.contains("Suites: bookworm-security\n"));
    }

    #[test]
    fn another_suite_comes_from_the_main_archive_only() {
        let out = deb822_stanzas(MACHINE, Some(("bookworm", "unstable")), "deb-src");
        assert_eq!(
            out,
            "Types: deb-src\nURIs: http://mirror.example/debian\nSuites: unstable\n\
             Components: main\n\n"
        );
        let binaries = deb822_stanzas(MACHINE, Some(("bookworm", "unstable experimental")), "deb");
        assert!(binaries.starts_with("Types: deb\n"), "{binaries}");
        assert!(
            binaries.contains("Suites: unstable experimental\n"),
            "{binaries}"
        );
    }
}
