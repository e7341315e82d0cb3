//! `cargo xtask package --deb [--debug]`: the Debian package `postgresql-<major>-ddl-sync`, as
//! operators install extensions: `apt install ./postgresql-15-ddl-sync_<version>-1_amd64.deb`.
//!
//! The package holds the staged tree of [`crate::package::stage`], moved from the directories
//! of the `pg_config` it was built with to the layout that Debian's and apt.postgresql.org's
//! server packages share (`/usr/lib/postgresql/<major>/lib`, `/usr/share/postgresql/<major>`,
//! ...), so that it installs beside `postgresql-<major>` from either. For 15 the two are the same
//! directories; 16 to 18 are built here against trees in `/usr/local` (`cargo xtask setup`),
//! whose headers are those of the same minor releases.
//!
//! It depends on `postgresql-<major> (>= <major>.<minor>)`, the minor release of the headers: the
//! libraries refuse to load into an older one (ddl-server's `versions::headers_unfit`), and apt
//! says so before anything is installed. The C library version is the newest symbol version the
//! ELF files need, read from them with `objdump -T`.

use crate::cmd::Cmd;
use crate::package::{copy, files_under, under, write, PgDirs, Staged};
use crate::{setup, Result};
use std::path::{Path, PathBuf};

/// Who answers for the package (Debian's `Maintainer` field is mandatory).
const MAINTAINER: &str = "ddl_sync developers <ddl-sync@users.invalid>";
/// The Debian revision of this packaging.
const REVISION: &str = "1";

/// Builds the package from `staged` and returns its path, beside the staged directory.
pub fn build(staged: &Staged) -> Result<PathBuf> {
    let major = setup::pg().major();
    let name = format!("postgresql-{major}-ddl-sync");
    let work = staged.dir.with_file_name(format!("{name}.deb.d"));
    if work.exists() {
        std::fs::remove_dir_all(&work)
            .map_err(|e| format!("cannot clean {}: {e}", work.display()))?;
    }
    let debian = PgDirs::debian(major);
    let mut elf = Vec::new();
    for installed in files_under(&staged.root)? {
        let moved = staged.dirs.moved_to(&installed, &debian).ok_or_else(|| {
            format!(
                "{} is in none of pg_config's directories",
                installed.display()
            )
        })?;
        let from = under(&staged.root, &installed);
        let to = under(&work, &moved);
        copy(&from, &to, mode(&from)?)?;
        if is_elf(&to)? {
            elf.push(to);
        }
    }
    let doc = work.join(format!("usr/share/doc/{name}"));
    copy(&staged.dir.join("README.md"), &doc.join("README.md"), 0o644)?;
    write(&doc.join("copyright"), &copyright(), 0o644)?;

    let version = format!("{}-{REVISION}", staged.version);
    let arch = Cmd::new("dpkg").args(["--print-architecture"]).read()?;
    let control = Control {
        package: &name,
        version: &version,
        arch: &arch,
        depends: format!(
            "postgresql-{major} (>= {}), libc6 (>= {})",
            server_release(&staged.pg_version)?,
            glibc_needed(&elf)?
        ),
        installed_kib: kib(&work)?,
        major,
        extension_version: &staged.version,
    };
    write(&work.join("DEBIAN/control"), &control.text(), 0o644)?;

    let deb = staged
        .dir
        .with_file_name(format!("{name}_{version}_{arch}.deb"));
    Cmd::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .args([&work, &deb])
        .run()?;
    std::fs::remove_dir_all(&work).map_err(|e| format!("cannot remove {}: {e}", work.display()))?;
    Ok(deb)
}

/// The fields of `DEBIAN/control`.
struct Control<'a> {
    package: &'a str,
    version: &'a str,
    arch: &'a str,
    depends: String,
    installed_kib: u64,
    major: &'a str,
    extension_version: &'a str,
}

impl Control<'_> {
    fn text(&self) -> String {
        format!(
            "Package: {}\nVersion: {}\nArchitecture: {}\nMaintainer: {MAINTAINER}\n\
             Installed-Size: {}\nDepends: {}\nSection: database\nPriority: optional\n\
             Description: DDL replication for PostgreSQL {} (ddl_sync {})\n \
             Logical replication copies rows, not schema changes. This package carries each\n \
             DDL statement of a publisher to its subscribers in commit order: the output\n \
             plugin ddl_pgoutput (pgoutput's protocol, byte for byte, plus the DDL) and the\n \
             extension ddl_sync, which replays the DDL inside the subscription's own apply\n \
             worker. See /usr/share/doc/{}/README.md for the set-up.\n",
            self.package,
            self.version,
            self.arch,
            self.installed_kib,
            self.depends,
            self.major,
            self.extension_version,
            self.package
        )
    }
}

/// `major.minor` of `pg_config --version` (`PostgreSQL 16.15` or `PostgreSQL 15.18 (Debian
/// 15.18-0+deb12u1)`), or a pre-release as Debian orders it (`PostgreSQL 19rc1` is `19~rc1`,
/// before `19.0`).
fn server_release(pg_version: &str) -> Result<String> {
    let release = pg_version.split_whitespace().nth(1).unwrap_or("");
    let numbered = |v: &str| {
        v.split('.')
            .all(|p| !p.is_empty() && p.parse::<u32>().is_ok())
    };
    let prerelease = ["beta", "rc"].iter().find_map(|tag| {
        let (major, n) = release.split_once(tag)?;
        (numbered(major) && numbered(n)).then(|| format!("{major}~{tag}{n}"))
    });
    if release.split('.').count() == 2 && numbered(release) {
        Ok(release.to_string())
    } else {
        prerelease.ok_or_else(|| format!("pg_config --version names no release: {pg_version:?}"))
    }
}

/// The newest `GLIBC_x.y` symbol version any of `files` needs.
fn glibc_needed(files: &[PathBuf]) -> Result<String> {
    let mut newest: Option<Vec<u32>> = None;
    for file in files {
        let symbols = Cmd::new("objdump").args(["-T"]).args([file]).read()?;
        for version in glibc_versions(&symbols) {
            if newest.as_ref().is_none_or(|n| version > *n) {
                newest = Some(version);
            }
        }
    }
    newest
        .map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join("."))
        .ok_or_else(|| "no file of the package names a GLIBC symbol version".to_string())
}

/// Each `GLIBC_x.y[.z]` in `objdump -T` output, as numbers.
fn glibc_versions(symbols: &str) -> impl Iterator<Item = Vec<u32>> + '_ {
    symbols.split_whitespace().filter_map(|word| {
        let version = word.trim_start_matches('(').trim_end_matches(')');
        let numbers: Option<Vec<u32>> = version
            .strip_prefix("GLIBC_")?
            .split('.')
            .map(|n| n.parse().ok())
            .collect();
        numbers
    })
}

/// The Debian-format copyright file: the license of every crate (ddl-apply's `license`).
fn copyright() -> String {
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
     Upstream-Name: ddl_sync\n\n\
     Files: *\n\
     Copyright: the ddl_sync developers\n\
     License: PostgreSQL\n \
     Permission to use, copy, modify, and distribute this software and its\n \
     documentation for any purpose, without fee, and without a written agreement\n \
     is hereby granted, provided that the above copyright notice and this\n \
     paragraph and the following two paragraphs appear in all copies.\n .\n \
     IN NO EVENT SHALL THE AUTHORS BE LIABLE TO ANY PARTY FOR DIRECT, INDIRECT,\n \
     SPECIAL, INCIDENTAL, OR CONSEQUENTIAL DAMAGES, INCLUDING LOST PROFITS,\n \
     ARISING OUT OF THE USE OF THIS SOFTWARE AND ITS DOCUMENTATION, EVEN IF THE\n \
     AUTHORS HAVE BEEN ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.\n .\n \
     THE AUTHORS SPECIFICALLY DISCLAIM ANY WARRANTIES, INCLUDING, BUT NOT LIMITED\n \
     TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR\n \
     PURPOSE. THE SOFTWARE PROVIDED HEREUNDER IS ON AN \"AS IS\" BASIS, AND THE\n \
     AUTHORS HAVE NO OBLIGATIONS TO PROVIDE MAINTENANCE, SUPPORT, UPDATES,\n \
     ENHANCEMENTS, OR MODIFICATIONS.\n"
        .to_string()
}

/// The package's size as installed, in KiB (Debian's `Installed-Size`).
fn kib(dir: &Path) -> Result<u64> {
    let mut bytes = 0;
    for file in files_under(dir)? {
        let path = under(dir, &file);
        bytes += std::fs::metadata(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
    }
    Ok(bytes.div_ceil(1024))
}

fn is_elf(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(file.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF")
}

/// The permission bits of `path`.
fn mode(path: &Path) -> Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_release_is_read_from_pg_config() {
        assert_eq!(server_release("PostgreSQL 16.15").unwrap(), "16.15");
        assert_eq!(
            server_release("PostgreSQL 15.18 (Debian 15.18-0+deb12u1)").unwrap(),
            "15.18"
        );
        assert_eq!(server_release("PostgreSQL 19beta1").unwrap(), "19~beta1");
        assert_eq!(
            server_release("PostgreSQL 19rc1 (Debian 19~rc1-1)").unwrap(),
            "19~rc1"
        );
        assert!(server_release("PostgreSQL 19devel").is_err());
    }

    #[test]
    fn glibc_versions_are_compared_as_numbers() {
        let dump = "0000 DF *UND* 0000 (GLIBC_2.9) memcpy\n\
                    0000 DF *UND* 0000 (GLIBC_2.34) __libc_start_main\n\
                    0000 DF *UND* 0000 GLIBC_2.3.4 __chk_fail\n";
        let mut found: Vec<Vec<u32>> = glibc_versions(dump).collect();
        found.sort();
        assert_eq!(found, [vec![2, 3, 4], vec![2, 9], vec![2, 34]]);
    }

    #[test]
    fn the_control_file_names_its_dependencies() {
        let text = Control {
            package: "postgresql-16-ddl-sync",
            version: "0.4.0-1",
            arch: "amd64",
            depends: "postgresql-16 (>= 16.15), libc6 (>= 2.34)".into(),
            installed_kib: 12,
            major: "16",
            extension_version: "0.4.0",
        }
        .text();
        assert!(
            text.contains("\nDepends: postgresql-16 (>= 16.15), libc6 (>= 2.34)\n"),
            "{text}"
        );
        // Every continuation line of the description starts with a space.
        let description = text.split("Description: ").nth(1).expect("a description");
        assert!(
            description.lines().skip(1).all(|l| l.starts_with(' ')),
            "{text}"
        );
    }
}
