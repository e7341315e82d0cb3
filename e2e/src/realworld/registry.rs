//! Where the applications' SQL comes from, fetched at run time and never kept in this
//! repository: Debian's binary packages of three releases (through apt, with lists of our own
//! derived from the machine's sources: `ddl_testkit::debian_source`) and PyPI's wheels
//! (through pip). Downloads and unpacked trees are cached under the directory given.

use ddl_testkit::debian_source::AptSources;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A package unpacked: its tree and the version it is.
pub struct Unpacked {
    /// The root of the unpacked files (`usr/share/...` below it).
    pub root: PathBuf,
    /// The package's version (`1.4.15+dfsg.1-1+deb11u4`, `3.10.0`).
    pub version: String,
}

impl Unpacked {
    /// `path` below the root, which must exist.
    pub fn file(&self, path: &str) -> Result<PathBuf, String> {
        let file = self.root.join(path);
        if file.exists() {
            Ok(file)
        } else {
            Err(format!("{} is not in the package", path))
        }
    }

    /// The entries of directory `path` below the root, as (file name, path).
    pub fn dir(&self, path: &str) -> Result<Vec<(String, PathBuf)>, String> {
        let dir = self.file(path)?;
        let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .filter_map(|e| {
                let path = e.ok()?.path();
                Some((path.file_name()?.to_str()?.to_string(), path))
            })
            .collect();
        found.sort();
        Ok(found)
    }
}

/// The registries, with a cache.
pub struct Registries {
    cache: PathBuf,
    suites: BTreeMap<&'static str, AptSources>,
}

impl Registries {
    /// Registries caching under `cache`.
    pub fn new(cache: &Path) -> Registries {
        Registries {
            cache: cache.to_path_buf(),
            suites: BTreeMap::new(),
        }
    }

    /// Binary package `package` as Debian release `suite` (`bullseye`, `bookworm`, `trixie`,
    /// with its `-updates`) offers it, unpacked.
    pub fn deb(&mut self, suite: &'static str, package: &str) -> Result<Unpacked, String> {
        if !self.suites.contains_key(suite) {
            let dir = self.cache.join(format!("apt-{suite}"));
            let apt = AptSources::binaries(&dir, &format!("{suite} {suite}-updates"))
                .map_err(|e| format!("apt lists of {suite}: {e}"))?;
            self.suites.insert(suite, apt);
        }
        let apt = &self.suites[suite];
        let version = apt
            .candidate(package)
            .map_err(|e| format!("{package} in {suite}: {e}"))?;
        let root = self
            .cache
            .join("unpacked")
            .join(format!("{package}_{}", version.replace(':', "%3a")));
        if !root.join(".complete").exists() {
            let deb = apt
                .download(package, &version, &self.cache.join("debs"))
                .map_err(|e| format!("{package} {version}: {e}"))?;
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root)
                .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
            run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root))?;
            write_stamp(&root)?;
        }
        Ok(Unpacked { root, version })
    }

    /// The wheel of PyPI project `project` at `version` (any platform: only its SQL is read),
    /// unpacked.
    pub fn wheel(&self, project: &str, version: &str) -> Result<Unpacked, String> {
        let root = self
            .cache
            .join("unpacked")
            .join(format!("{project}-{version}"));
        if !root.join(".complete").exists() {
            let dest = self.cache.join("wheels");
            run(Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
                .args([
                    "--python-version",
                    "3.12",
                    "--platform",
                    "manylinux_2_28_x86_64",
                ])
                .arg(format!("{project}=={version}"))
                .arg("-d")
                .arg(&dest))?;
            let prefix = format!("{}-{version}-", project.replace('-', "_"));
            let wheel = std::fs::read_dir(&dest)
                .map_err(|e| format!("cannot read {}: {e}", dest.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
                })
                .ok_or_else(|| format!("pip gave no wheel of {project} {version}"))?;
            let _ = std::fs::remove_dir_all(&root);
            run(Command::new("python3")
                .args(["-m", "zipfile", "-e"])
                .arg(&wheel)
                .arg(&root))?;
            write_stamp(&root)?;
        }
        Ok(Unpacked {
            root,
            version: version.to_string(),
        })
    }
}

fn write_stamp(root: &Path) -> Result<(), String> {
    std::fs::write(root.join(".complete"), "")
        .map_err(|e| format!("cannot write in {}: {e}", root.display()))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Debian's order of package versions (`dpkg --compare-versions`): `1.6~beta` before `1.6`.
pub fn debian_order(a: &str, b: &str) -> Ordering {
    let says = |op: &str| {
        Command::new("dpkg")
            .args(["--compare-versions", a, op, b])
            .status()
            .is_ok_and(|s| s.success())
    };
    if says("lt") {
        Ordering::Less
    } else if says("gt") {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// The upstream part of a Debian version: no epoch, nothing from the first `+`, `~` or `-`
/// (`1:2.7.5-3+deb12u1` is `2.7.5`).
pub fn upstream(version: &str) -> &str {
    let version = version.split_once(':').map_or(version, |(_, v)| v);
    version.split(['+', '~', '-']).next().unwrap_or(version)
}

/// Dotted numeric order (`4.5.10` after `4.5.9`); a part's trailing letters sort after the
/// plain number (`1.1.11a` after `1.1.11`).
pub fn dotted_order(a: &str, b: &str) -> Ordering {
    let parts = |v: &str| -> Vec<(u64, String)> {
        v.split('.')
            .map(|p| {
                let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
                (digits.parse().unwrap_or(0), p[digits.len()..].to_string())
            })
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// Of `files` (version, path), those after `base` in `order`, in that order.
pub fn after(
    base: &str,
    mut files: Vec<(String, PathBuf)>,
    order: fn(&str, &str) -> Ordering,
) -> Vec<(String, PathBuf)> {
    files.retain(|(version, _)| order(version, base) == Ordering::Greater);
    files.sort_by(|a, b| order(&a.0, &b.0));
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_versions() {
        assert_eq!(upstream("1:2.7.5-3+deb12u1"), "2.7.5");
        assert_eq!(upstream("4.4.6+dfsg-1.1+deb12u4"), "4.4.6");
        assert_eq!(upstream("1.6~beta+dfsg-1"), "1.6");
    }

    #[test]
    fn dotted_versions() {
        assert_eq!(dotted_order("4.5.10", "4.5.9"), Ordering::Greater);
        assert_eq!(dotted_order("1.1.11a", "1.1.11"), Ordering::Greater);
        assert_eq!(dotted_order("2.6", "2.6"), Ordering::Equal);
        let files = vec![
            ("4.5.1".to_string(), PathBuf::from("b")),
            ("4.4.6".to_string(), PathBuf::from("a")),
            ("5.0.3".to_string(), PathBuf::from("c")),
            ("4.10.0".to_string(), PathBuf::from("d")),
        ];
        let names: Vec<String> = after("4.4.6", files, dotted_order)
            .into_iter()
            .map(|(v, _)| v)
            .collect();
        assert_eq!(names, ["4.5.1", "4.10.0", "5.0.3"]);
    }
}
