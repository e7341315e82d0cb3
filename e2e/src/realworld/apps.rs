//! The applications: where each one's PostgreSQL schema and upgrade scripts are in its
//! packages, and in what order they make its history. A history starts from the oldest release
//! that ships a whole schema (Debian 11's package, or the first migration) and goes on with the
//! upgrade scripts a newer release ships for every version after it, as the application's own
//! upgrade would run them; an application whose packages ship no such chain replays its
//! current install script.

use super::registry::{after, debian_order, dotted_order, upstream, Registries, Unpacked};
use std::path::{Path, PathBuf};

/// One script of a history.
pub struct Step {
    /// What it is (`roundcube-core 1.6.5 upgrade 1.6~beta+dfsg-1`).
    pub label: String,
    /// Its SQL, as the application ships it (after the substitutions its installer makes).
    pub sql: Vec<u8>,
}

/// An application's history, ready to replay.
pub struct History {
    /// The packages and versions it comes from.
    pub source: String,
    /// Extensions its installer creates first (as a superuser would, with the package).
    pub extensions: &'static [&'static str],
    /// Its scripts, in order.
    pub steps: Vec<Step>,
}

/// An application.
pub struct App {
    /// A short name (also its database's).
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// Fetches its history.
    pub history: fn(&mut Registries) -> Result<History, String>,
}

/// Every application, smallest first.
pub const APPS: [App; 9] = [
    App {
        name: "pdns",
        about: "PowerDNS's PostgreSQL backend: Debian 11's schema, then 12's upgrade",
        history: pdns,
    },
    App {
        name: "roundcube",
        about: "Roundcube webmail: Debian 11's schema, then 12's dbconfig-common upgrades",
        history: roundcube,
    },
    App {
        name: "bacula",
        about: "Bacula's director catalog: Debian 12's schema, then 13's dbconfig-common upgrades",
        history: bacula,
    },
    App {
        name: "request_tracker",
        about: "Request Tracker: RT 4's schema, then RT 5's upgrades (Debian 12)",
        history: request_tracker,
    },
    App {
        name: "glewlwyd",
        about: "Glewlwyd identity provider: Debian 11's schema, then 12's upgrades (pgcrypto)",
        history: glewlwyd,
    },
    App {
        name: "tt_rss",
        about: "Tiny Tiny RSS: Debian 12's install script",
        history: tt_rss,
    },
    App {
        name: "kamailio",
        about: "Kamailio SIP server: Debian 12's module tables, standard first",
        history: kamailio,
    },
    App {
        name: "icinga2_ido",
        about: "Icinga 2's IDO database: Debian 12's install script",
        history: icinga2_ido,
    },
    App {
        name: "procrastinate",
        about: "procrastinate (PyPI 3.10.0), a task queue: its 38 migrations from the first",
        history: procrastinate,
    },
];

/// The application named `name`.
pub fn app(name: &str) -> Option<&'static App> {
    APPS.iter().find(|a| a.name == name)
}

fn pdns(r: &mut Registries) -> Result<History, String> {
    const SCHEMA: &str = "usr/share/pdns-backend-pgsql/schema";
    let base = r.deb("bullseye", "pdns-backend-pgsql")?;
    let newer = r.deb("bookworm", "pdns-backend-pgsql")?;
    // `A_to_B_schema.pgsql.sql` upgrades a schema of version A to B.
    let upgrades: Vec<(String, PathBuf)> = newer
        .dir(SCHEMA)?
        .into_iter()
        .filter_map(|(name, path)| {
            let to = name
                .strip_suffix("_schema.pgsql.sql")?
                .split_once("_to_")?
                .1;
            Some((to.to_string(), path))
        })
        .collect();
    let mut steps = vec![step(
        "pdns-backend-pgsql",
        &base,
        "schema",
        &base.file(&format!("{SCHEMA}/schema.pgsql.sql"))?,
    )?];
    for (to, path) in after(upstream(&base.version), upgrades, dotted_order) {
        steps.push(step(
            "pdns-backend-pgsql",
            &newer,
            &format!("upgrade to {to}"),
            &path,
        )?);
    }
    Ok(history(&[&base, &newer], "pdns-backend-pgsql", &[], steps))
}

fn roundcube(r: &mut Registries) -> Result<History, String> {
    let base = r.deb("bullseye", "roundcube-core")?;
    let newer = r.deb("bookworm", "roundcube-core")?;
    dbconfig("roundcube-core", "roundcube", &base, &newer, &[], None)
}

fn bacula(r: &mut Registries) -> Result<History, String> {
    let base = r.deb("bookworm", "bacula-director-pgsql")?;
    let newer = r.deb("trixie", "bacula-director-pgsql")?;
    dbconfig(
        "bacula-director-pgsql",
        "bacula-director-pgsql",
        &base,
        &newer,
        &[],
        Some("bacula"),
    )
}

/// A dbconfig-common history: `base`'s install script (after its `install-dbadmin` one, with
/// the database's name for `_DBC_DBNAME_` when `dbname` is given), then each upgrade `newer`
/// ships for a version after `base`'s, in Debian's version order, its `upgrade-dbadmin` script
/// first, as dbconfig-common runs them.
fn dbconfig(
    package: &str,
    data: &str,
    base: &Unpacked,
    newer: &Unpacked,
    extensions: &'static [&'static str],
    dbname: Option<&str>,
) -> Result<History, String> {
    let dir = format!("usr/share/dbconfig-common/data/{data}");
    let substitute = |mut sql: Vec<u8>| {
        if let Some(name) = dbname {
            sql = replace(&sql, b"_DBC_DBNAME_", name.as_bytes());
        }
        sql
    };
    let mut steps = Vec::new();
    if let Ok(admin) = base.file(&format!("{dir}/install-dbadmin/pgsql")) {
        let mut s = step(package, base, "install (as the database admin)", &admin)?;
        s.sql = substitute(s.sql);
        steps.push(s);
    }
    steps.push(step(
        package,
        base,
        "install",
        &base.file(&format!("{dir}/install/pgsql"))?,
    )?);
    let upgrades = after(
        &base.version,
        newer.dir(&format!("{dir}/upgrade/pgsql"))?,
        debian_order,
    );
    let admin_upgrades = newer
        .dir(&format!("{dir}/upgrade-dbadmin/pgsql"))
        .unwrap_or_default();
    for (version, path) in upgrades {
        if let Some((_, admin)) = admin_upgrades.iter().find(|(v, _)| *v == version) {
            let mut s = step(
                package,
                newer,
                &format!("upgrade {version} (as the database admin)"),
                admin,
            )?;
            s.sql = substitute(s.sql);
            steps.push(s);
        }
        steps.push(step(package, newer, &format!("upgrade {version}"), &path)?);
    }
    Ok(history(&[base, newer], package, extensions, steps))
}

fn request_tracker(r: &mut Registries) -> Result<History, String> {
    let base = r.deb("bookworm", "request-tracker4")?;
    let newer = r.deb("bookworm", "request-tracker5")?;
    let mut steps = vec![step(
        "request-tracker4",
        &base,
        "schema",
        &base.file("usr/share/request-tracker4/etc/schema.Pg")?,
    )?];
    // Each version's directory may hold a schema.Pg (SQL); its other files are RT's Perl.
    let upgrades: Vec<(String, PathBuf)> = newer
        .dir("usr/share/request-tracker5/etc/upgrade")?
        .into_iter()
        .map(|(version, dir)| (version, dir.join("schema.Pg")))
        .filter(|(_, file)| file.exists())
        .collect();
    for (version, path) in after(upstream(&base.version), upgrades, dotted_order) {
        steps.push(step(
            "request-tracker5",
            &newer,
            &format!("upgrade {version}"),
            &path,
        )?);
    }
    Ok(History {
        source: format!(
            "request-tracker4 {} (bookworm), request-tracker5 {} (bookworm)",
            base.version, newer.version
        ),
        extensions: &[],
        steps,
    })
}

fn glewlwyd(r: &mut Registries) -> Result<History, String> {
    const DIR: &str = "usr/share/doc/glewlwyd/database";
    let base = r.deb("bullseye", "glewlwyd")?;
    let newer = r.deb("bookworm", "glewlwyd")?;
    let mut steps = vec![step(
        "glewlwyd",
        &base,
        "schema",
        &base.file(&format!("{DIR}/init.postgre.sql.gz"))?,
    )?];
    let upgrades: Vec<(String, PathBuf)> = newer
        .dir(DIR)?
        .into_iter()
        .filter_map(|(name, path)| {
            let version = name
                .strip_prefix("upgrade-")?
                .strip_suffix("-core.postgre.sql")?;
            Some((version.to_string(), path))
        })
        .collect();
    for (version, path) in after(upstream(&base.version), upgrades, dotted_order) {
        steps.push(step(
            "glewlwyd",
            &newer,
            &format!("upgrade to {version}"),
            &path,
        )?);
    }
    // Its password functions use pgcrypto's `gen_salt`.
    Ok(history(&[&base, &newer], "glewlwyd", &["pgcrypto"], steps))
}

fn tt_rss(r: &mut Registries) -> Result<History, String> {
    install_only(
        r,
        "tt-rss",
        "usr/share/tt-rss/schema/ttrss_schema_pgsql.sql",
    )
}

fn kamailio(r: &mut Registries) -> Result<History, String> {
    let package = r.deb("bookworm", "kamailio-postgres-modules")?;
    let mut files: Vec<(String, PathBuf)> = package
        .dir("usr/share/kamailio/postgres")?
        .into_iter()
        .filter(|(name, _)| name.ends_with("-create.sql"))
        .collect();
    // `standard` holds the `version` table the others insert into.
    files.sort_by_key(|(name, _)| (name != "standard-create.sql", name.clone()));
    let steps = files
        .iter()
        .map(|(name, path)| step("kamailio-postgres-modules", &package, name, path))
        .collect::<Result<_, _>>()?;
    Ok(history(
        &[&package],
        "kamailio-postgres-modules",
        &[],
        steps,
    ))
}

fn icinga2_ido(r: &mut Registries) -> Result<History, String> {
    install_only(
        r,
        "icinga2-ido-pgsql",
        "usr/share/icinga2-ido-pgsql/schema/pgsql.sql",
    )
}

/// The install script at `path` of Debian 12's `package`, alone: its packages ship no chain of
/// upgrade scripts from a whole schema.
fn install_only(r: &mut Registries, package: &str, path: &str) -> Result<History, String> {
    let unpacked = r.deb("bookworm", package)?;
    let steps = vec![step(package, &unpacked, "install", &unpacked.file(path)?)?];
    Ok(history(&[&unpacked], package, &[], steps))
}

fn procrastinate(r: &mut Registries) -> Result<History, String> {
    let wheel = r.wheel("procrastinate", "3.10.0")?;
    // Named `<version>_<serial>_<what>.sql`: their names sort in the order they apply.
    let steps = wheel
        .dir("procrastinate/sql/migrations")?
        .iter()
        .filter(|(name, _)| name.ends_with(".sql"))
        .map(|(name, path)| step("procrastinate", &wheel, name, path))
        .collect::<Result<_, _>>()?;
    Ok(History {
        source: format!("procrastinate {} (PyPI wheel)", wheel.version),
        extensions: &[],
        steps,
    })
}

/// A history of `package`'s `releases` (base first).
fn history(
    releases: &[&Unpacked],
    package: &str,
    extensions: &'static [&'static str],
    steps: Vec<Step>,
) -> History {
    let versions: Vec<&str> = releases.iter().map(|u| u.version.as_str()).collect();
    History {
        source: format!("{package} {}", versions.join(", then ")),
        extensions,
        steps,
    }
}

/// The script at `path` of `package` (gzip-compressed when its name ends with `.gz`).
fn step(package: &str, from: &Unpacked, what: &str, path: &Path) -> Result<Step, String> {
    let sql = if path.extension().is_some_and(|e| e == "gz") {
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(path)
            .output()
            .map_err(|e| format!("cannot run gzip: {e}"))?;
        if !out.status.success() {
            return Err(format!("cannot decompress {}", path.display()));
        }
        out.stdout
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    Ok(Step {
        label: format!("{package} {} {what}", from.version),
        sql,
    })
}

/// `text` with every `from` replaced by `to`.
fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.windows(from.len()).position(|w| w == from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}
