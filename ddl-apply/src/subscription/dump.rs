//! copy_schema's two programs: this server's `pg_dump`, which writes a database's schema as a
//! custom-format archive, and its `pg_restore`, which turns the archive's chosen entries into
//! the SQL that makes them.
//!
//! Why an archive and never a plain script cut by its lines: in a plain script an object's SQL
//! and pg_dump's own comments and psql meta-commands are lines of the same text, so a comment,
//! literal or body of the publisher's (whoever wrote it) can hold a line that reads as pg_dump's
//! (`\restrict ...`, `-- Name: ...`, the closing comment). The archive's table of contents keeps
//! every entry's name, type, schema, owner and SQL in fields of their own
//! ([`pg_dump_archive`]), the entries to make are chosen by dump ID (`pg_restore --use-list`),
//! and pg_restore writes their SQL. The only lines taken out of what it writes are the two
//! `\restrict`/`\unrestrict` lines it writes with a key made here at random for this run, which
//! no object's text can know.

use ddl_server::errors::{self, OrInternal};
use pg_dump_archive::Archive;
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::PgLogLevel;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::process::Command;

/// A `pg_dump --format=custom --schema-only` archive, in a file of the server's own.
pub(super) struct Dump {
    file: TempFile,
    bytes: Vec<u8>,
}

impl Dump {
    /// This server's pg_dump of the database `conninfo` names (`whose`, for messages), with
    /// `args` (`--snapshot=...`, `--table=...`), in this database's encoding.
    pub(super) fn of(conninfo: &str, args: &[String], whose: &str) -> Dump {
        let file = TempFile::new("dump");
        let (conninfo, password) = split_password(conninfo);
        let mut command = Command::new(program("pg_dump"));
        command
            .args([
                "--format=custom",
                "--schema-only",
                "--no-publications",
                "--no-subscriptions",
                "--no-password",
                // ddl_sync is here already (the subscription's options need it): its schema
                // holds the node's own configuration and apply log, never the publisher's.
                "--exclude-schema=ddl_sync",
            ])
            .args(args)
            .arg(format!("--encoding={}", database_encoding()))
            .arg(format!("--file={}", file.0.display()))
            .arg(format!("--dbname={conninfo}"));
        if let Some(password) = password {
            command.env("PGPASSWORD", password);
        }
        run(
            command,
            "pg_dump",
            &format!("pg_dump of {whose}"),
            PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
        );
        let bytes = std::fs::read(&file.0).unwrap_or_else(|e| {
            errors::io(
                &e,
                format_args!("cannot read pg_dump's archive {}: {e}", file.0.display()),
            )
        });
        Dump { file, bytes }
    }

    /// The archive's table of contents.
    pub(super) fn toc(&self) -> Archive<'_> {
        match Archive::parse(&self.bytes) {
            Ok(archive) => archive,
            Err(e) => {
                ErrorReport::new(
                    PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
                    format!("ddl_sync: copy_schema cannot read pg_dump's archive: {e}"),
                    "ddl_sync",
                )
                .report(PgLogLevel::ERROR);
                unreachable!("an ERROR does not return")
            }
        }
    }

    /// pg_restore's SQL for the entries `ids`, in this order (and the settings it always
    /// writes first); empty for no entries.
    pub(super) fn script(&self, ids: &[i32]) -> String {
        if ids.is_empty() {
            return String::new();
        }
        let list = TempFile::new("list");
        std::fs::write(&list.0, pg_dump_archive::use_list(ids.iter().copied())).unwrap_or_else(
            |e| errors::io(&e, format_args!("cannot write {}: {e}", list.0.display())),
        );
        let sql = TempFile::new("sql");
        let key = restrict_key();
        let mut command = Command::new(program("pg_restore"));
        command
            .arg(format!("--use-list={}", list.0.display()))
            .arg(format!("--file={}", sql.0.display()))
            .arg(format!("--restrict-key={key}"))
            .arg(&self.file.0);
        run(
            command,
            "pg_restore",
            "pg_restore of the publisher's archive",
            PgSqlErrorCode::ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
        );
        let bytes = std::fs::read(&sql.0).unwrap_or_else(|e| {
            errors::io(
                &e,
                format_args!("cannot read pg_restore's script {}: {e}", sql.0.display()),
            )
        });
        let script = String::from_utf8(bytes).unwrap_or_else(|_| {
            errors::raise(
                PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
                "pg_restore's script is not valid UTF-8",
            )
        });
        without_restrict_lines(&script, &key)
    }
}

/// psql's `\restrict KEY`/`\unrestrict KEY` lines, which SPI cannot run: pg_restore writes
/// them with the key it was given, so only its own two lines can match.
fn without_restrict_lines(script: &str, key: &str) -> String {
    let restrict = format!("\\restrict {key}");
    let unrestrict = format!("\\unrestrict {key}");
    script
        .split_inclusive('\n')
        .filter(|line| {
            let line = line.trim_end_matches('\n');
            line != restrict && line != unrestrict
        })
        .collect()
}

/// 32 random hexadecimal digits from the server's strong random source (pg_restore accepts
/// letters and digits).
fn restrict_key() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: fills the 16 bytes of a local buffer.
    if !unsafe { pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), bytes.len()) } {
        errors::internal("could not generate a random key for pg_restore");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A connection string to this database, as the current user, over this server's first Unix
/// socket directory (or localhost).
pub(super) fn own_conninfo() -> String {
    let (sockets, port, database, user) = Spi::connect(|client| {
        let row = client
            .select(
                "SELECT pg_catalog.current_setting('unix_socket_directories'),
                        pg_catalog.current_setting('port'), pg_catalog.current_database()::pg_catalog.text,
                        CURRENT_USER::pg_catalog.text",
                None,
                &[],
            )?
            .first();
        Ok::<_, pgrx::spi::Error>((
            row.get::<String>(1)?.unwrap_or_default(),
            row.get::<String>(2)?.unwrap_or_default(),
            row.get::<String>(3)?.unwrap_or_default(),
            row.get::<String>(4)?.unwrap_or_default(),
        ))
    })
    .or_internal("cannot read this server's connection settings");
    let host = sockets
        .split(',')
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or("localhost")
        .to_string();
    [
        ("host", host),
        ("port", port),
        ("dbname", database),
        ("user", user),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", quote_value(v)))
    .collect::<Vec<_>>()
    .join(" ")
}

/// Runs `command` (the program `name`; `what` it does, for the error), with no input and its
/// errors kept for the ERROR (with `code`) that a failure raises; answers cancel requests meanwhile (the
/// child is killed then).
fn run(mut command: Command, name: &str, what: &str, code: PgSqlErrorCode) {
    let errors = TempFile::new("err");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(errors.writer());
    let mut child = command.spawn().unwrap_or_else(|e| {
        errors::raise(
            PgSqlErrorCode::ERRCODE_SYSTEM_ERROR,
            format_args!("cannot run {}: {e}", program(name).display()),
        )
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => errors::raise(
                PgSqlErrorCode::ERRCODE_SYSTEM_ERROR,
                format_args!("cannot wait for {name}: {e}"),
            ),
        }
        // SAFETY: reads the backend's interrupt flags (a cancel or shutdown raises its ERROR
        // here, after the child is gone).
        if unsafe { pg_sys::InterruptPending != 0 } {
            let _ = child.kill();
            let _ = child.wait();
            check_for_interrupts!();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if !status.success() {
        let said = std::fs::read_to_string(&errors.0).unwrap_or_default();
        ereport!(
            ERROR,
            code,
            format!("{what} failed ({status}): {}", said.trim())
        );
    }
}

/// The program `name` (`pg_dump`, `pg_restore`) next to this server's `postgres`: the same
/// release, which reads this server's archives and writes what it can run.
fn program(name: &str) -> PathBuf {
    // SAFETY: my_exec_path is the NUL-terminated path of the running postgres binary, set at
    // startup and never changed.
    let postgres = unsafe { std::ffi::CStr::from_ptr((&raw const pg_sys::my_exec_path).cast()) };
    let postgres = PathBuf::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(postgres.to_bytes()),
    );
    postgres.with_file_name(name)
}

fn database_encoding() -> String {
    // SAFETY: the database encoding's static name.
    unsafe { std::ffi::CStr::from_ptr(pg_sys::GetDatabaseEncodingName()) }
        .to_string_lossy()
        .into_owned()
}

/// A keyword/value connection string without its `password`, and the password: it goes to
/// pg_dump through the environment, which other users cannot read, not the command line. A
/// URI is passed on as it is.
fn split_password(conninfo: &str) -> (String, Option<String>) {
    if conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://") {
        return (conninfo.to_string(), None);
    }
    let mut kept = Vec::new();
    let mut password = None;
    for (key, value) in conninfo_pairs(conninfo) {
        if key == "password" {
            password = Some(value);
        } else {
            kept.push(format!("{key}={}", quote_value(&value)));
        }
    }
    (kept.join(" "), password)
}

/// The `keyword = value` pairs of a libpq connection string (values bare, or single-quoted
/// with `\'` and `\\`).
fn conninfo_pairs(conninfo: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut chars = conninfo.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        if key.is_empty() {
            return pairs;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == '=') {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

fn quote_value(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A new file in the data directory's `base/pgsql_tmp` (the server's own temporary files,
/// 0700, which no other OS user can plant a link in; the `pgsql_tmp` name prefix makes a
/// restart remove a file a crash left), removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    /// Creates the file, empty; an existing one of the name is an ERROR, not overwritten.
    fn new(what: &str) -> TempFile {
        // A backend's working directory is the data directory.
        let dir = PathBuf::from("base/pgsql_tmp");
        if let Err(e) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            errors::io(
                &e,
                format_args!("cannot create directory {}: {e}", dir.display()),
            );
        }
        // SAFETY: the backend's pid, a global set at startup.
        let pid = unsafe { pg_sys::MyProcPid };
        // A copy holds two archives at once (the publisher's and this database's).
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::current_dir()
            .unwrap_or_default()
            .join(dir)
            .join(format!("pgsql_tmp{pid}.ddl_sync_copy_schema.{n}.{what}"));
        if let Err(e) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            errors::io(&e, format_args!("cannot create {}: {e}", path.display()));
        }
        TempFile(path)
    }

    /// The file, open for writing (for a child's stderr).
    fn writer(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.0)
            .unwrap_or_else(|e| {
                errors::io(&e, format_args!("cannot open {}: {e}", self.0.display()))
            })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
