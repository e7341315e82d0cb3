//! `cargo xtask setup`: from a fresh Debian 12 machine to everything the project builds and tests
//! with. Idempotent: each step checks first and says what it found, so a second run installs
//! nothing. Uses sudo for apt when not root.

use crate::cmd::Cmd;
use crate::Result;
use std::path::Path;

/// The PostgreSQL major version the server crates build against.
pub const PG_MAJOR: &str = "15";
/// pgrx and cargo-pgrx must match exactly; 0.19 needs a newer rustc than Debian 12's rustup pin here.
pub const PGRX_VERSION: &str = "0.18.1";

/// The pg_config of the PostgreSQL we build for (Debian's versioned path, not the
/// postgresql-common wrapper in /usr/bin, which answers for the newest installed major).
pub fn pg_config() -> String {
    std::env::var("DDL_PG_CONFIG")
        .unwrap_or_else(|_| format!("/usr/lib/postgresql/{PG_MAJOR}/bin/pg_config"))
}

pub fn run() -> Result {
    apt_packages()?;
    cargo_pgrx()?;
    pgrx_init()?;
    println!("setup: done");
    Ok(())
}

/// Runs setup only when something is missing, so every other task can call it cheaply.
pub fn ensure() -> Result {
    if installed_version(&format!("postgresql-server-dev-{PG_MAJOR}")).is_some()
        && installed_version("build-essential").is_some()
        && cargo_pgrx_version().as_deref() == Some(PGRX_VERSION)
        && pgrx_initialized()
        && sudo_available()
    {
        return Ok(());
    }
    run()
}

fn apt_packages() -> Result {
    let server = format!("postgresql-{PG_MAJOR}");
    let dev = format!("postgresql-server-dev-{PG_MAJOR}");
    let mut wanted: Vec<String> = Vec::new();
    let mut updated = false;
    if installed_version(&server).is_none() {
        println!("setup: {server} is not installed");
        // Debian's package would create and start a 'main' cluster we never use.
        disable_main_cluster()?;
        apt_update(&mut updated)?;
        apt_install(std::slice::from_ref(&server))?;
    }
    let server_version =
        installed_version(&server).ok_or_else(|| format!("{server} did not install"))?;
    println!("setup: {server} {server_version}");
    // The headers must match the server exactly: a newer candidate of server-dev would pull a
    // newer server and libpq underneath running clusters.
    match installed_version(&dev) {
        Some(v) if v == server_version => println!("setup: {dev} {v}"),
        _ => wanted.push(format!("{dev}={server_version}")),
    }
    // build-essential: make, gcc and dpkg-source, for PostgreSQL's regression suite (built
    // from Debian's source package by `cargo xtask regress` and the e2e test `regress`).
    for pkg in [
        "libclang-dev",
        "clang",
        "sudo",
        "pkg-config",
        "libssl-dev",
        "build-essential",
    ] {
        match installed_version(pkg) {
            Some(v) => println!("setup: {pkg} {v}"),
            None => wanted.push(pkg.to_string()),
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    apt_update(&mut updated)?;
    apt_install(&wanted)
}

fn apt_update(done: &mut bool) -> Result {
    if !*done {
        as_root(["apt-get", "update", "-q"])?;
        *done = true;
    }
    Ok(())
}

fn apt_install(pkgs: &[String]) -> Result {
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    args.extend(pkgs.iter().map(String::as_str));
    as_root(args)
}

fn disable_main_cluster() -> Result {
    let conf = Path::new("/etc/postgresql-common/createcluster.conf");
    if conf.exists() {
        return Ok(());
    }
    as_root(["mkdir", "-p", "/etc/postgresql-common"])?;
    as_root([
        "sh",
        "-c",
        "echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf",
    ])
}

/// `Some(version)` when the Debian package is installed.
fn installed_version(pkg: &str) -> Option<String> {
    let out = Cmd::new("dpkg-query")
        .args(["-W", "-f=${Status} ${Version}", pkg])
        .probe()?;
    out.strip_prefix("install ok installed ")
        .map(str::to_string)
}

fn is_root() -> bool {
    Cmd::new("id").args(["-u"]).probe().as_deref() == Some("0")
}

fn sudo_available() -> bool {
    Cmd::new("sudo").args(["--version"]).probe().is_some()
}

fn as_root<I, S>(args: I) -> Result
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut args = args.into_iter();
    let program = args.next().ok_or("as_root: empty command")?;
    if is_root() {
        Cmd::new(program)
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .run()
    } else {
        Cmd::new("sudo")
            .args(["env", "DEBIAN_FRONTEND=noninteractive"])
            .args([program])
            .args(args)
            .run()
    }
}

fn cargo_pgrx_version() -> Option<String> {
    let out = Cmd::new("cargo").args(["pgrx", "--version"]).probe()?;
    out.split_whitespace().last().map(str::to_string)
}

fn cargo_pgrx() -> Result {
    match cargo_pgrx_version() {
        Some(v) if v == PGRX_VERSION => {
            println!("setup: cargo-pgrx {v}");
            Ok(())
        }
        found => {
            println!("setup: cargo-pgrx {PGRX_VERSION} needed, found {found:?}");
            Cmd::new("cargo")
                .args([
                    "install",
                    "cargo-pgrx",
                    "--version",
                    PGRX_VERSION,
                    "--locked",
                ])
                .run()
        }
    }
}

fn pgrx_home() -> std::path::PathBuf {
    match std::env::var_os("PGRX_HOME") {
        Some(h) => h.into(),
        None => Path::new(&std::env::var("HOME").unwrap_or_else(|_| "/root".into())).join(".pgrx"),
    }
}

/// pgrx knows our pg15 when its config names our pg_config.
fn pgrx_initialized() -> bool {
    std::fs::read_to_string(pgrx_home().join("config.toml"))
        .map(|c| c.contains(&format!("pg{PG_MAJOR} = \"{}\"", pg_config())))
        .unwrap_or(false)
}

fn pgrx_init() -> Result {
    if pgrx_initialized() {
        println!("setup: pgrx knows pg{PG_MAJOR} at {}", pg_config());
        return Ok(());
    }
    // Only the installed server is registered: nothing is downloaded or compiled.
    Cmd::new("cargo")
        .args(["pgrx", "init", &format!("--pg{PG_MAJOR}"), &pg_config()])
        .run()
}
