//! Record authentication: only records the capture wrote become DDL events.
//!
//! Anyone may write a `ddl_sync` logical message (`pg_logical_emit_message` is executable by
//! PUBLIC, and a GRANT or a superuser's SECURITY DEFINER wrapper could open it wider still), so
//! the prefix proves nothing. The capture therefore ends each record with an HMAC-SHA256 tag
//! under a key that only the server can read, and the output plugin turns a message into an
//! event only when the tag is right. The tag covers the record's xid, and the plugin checks that
//! xid against the transaction that carries the message: the exact bytes of a genuine record,
//! emitted again by someone else, belong to another transaction and are refused.
//!
//! The key is 32 random bytes in `$PGDATA/ddl_sync_record.key` (mode 0600, created on first
//! use): readable only by the server's OS user and, through SQL, by roles that may read any
//! server file (superusers, `pg_read_server_files`), who could forge records anyway. Being in
//! the data directory, it follows the cluster into base backups and physical standbys, which
//! must decode the same WAL after a failover. Each process reads it once.

use hmac::{Hmac, Mac};
use pgrx::pg_sys;
use pgrx::prelude::*;
use sha2::Sha256;
use std::ffi::CStr;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ddl_wire::{DdlRecord, RECORD_TAG_LEN};

/// The key file's name in the data directory.
pub const KEY_FILE: &str = "ddl_sync_record.key";
const KEY_LEN: usize = 32;
/// Domain separation: a tag made for anything else under this key never verifies as a record.
const CONTEXT: &[u8] = b"ddl_sync record v2\0";

static KEY: OnceLock<[u8; KEY_LEN]> = OnceLock::new();

/// Writes the tag of `payload` (an encoded record) into its last [`RECORD_TAG_LEN`] bytes.
/// ERRORs when the key cannot be read or made: no record leaves unsealed.
pub fn seal(payload: &mut [u8]) {
    let key = key();
    let Some(body_len) = payload.len().checked_sub(RECORD_TAG_LEN) else {
        error!("ddl_sync: a record is shorter than its tag");
    };
    let tag = tag_of(&key, &payload[..body_len]);
    payload[body_len..].copy_from_slice(&tag);
}

/// Whether `payload` ends with the right tag. Constant time in the tag's bytes.
pub fn verify(payload: &[u8]) -> bool {
    let Some(body) = DdlRecord::sealed_part(payload) else {
        return false;
    };
    let mut mac = mac(&key());
    mac.update(body);
    mac.verify_slice(&payload[body.len()..]).is_ok()
}

fn mac(key: &[u8; KEY_LEN]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(CONTEXT);
    mac
}

fn tag_of(key: &[u8; KEY_LEN], body: &[u8]) -> [u8; RECORD_TAG_LEN] {
    let mut mac = mac(key);
    mac.update(body);
    mac.finalize().into_bytes().into()
}

fn key() -> [u8; KEY_LEN] {
    if let Some(key) = KEY.get() {
        return *key;
    }
    match load_or_create(&data_directory()) {
        Ok(key) => *KEY.get_or_init(|| key),
        Err(e) => {
            ereport!(
                PgLogLevel::ERROR,
                PgSqlErrorCode::ERRCODE_CONFIG_FILE_ERROR,
                format!("ddl_sync: cannot read or create the record key \"{KEY_FILE}\": {e}"),
                "The key lives in the data directory; the server's OS user must be able to create and read it."
            );
            unreachable!("ereport(ERROR) does not return")
        }
    }
}

fn data_directory() -> PathBuf {
    // SAFETY: DataDir is set before any backend or walsender runs SQL, and never freed.
    let dir = unsafe { pg_sys::DataDir };
    if dir.is_null() {
        return PathBuf::from(".");
    }
    // SAFETY: a NUL-terminated path owned by the server. A path is bytes, not text: taken
    // as they are, whatever they would be as UTF-8.
    PathBuf::from(std::ffi::OsStr::from_bytes(
        unsafe { CStr::from_ptr(dir) }.to_bytes(),
    ))
}

/// Reads the key, making it first when there is none. Two processes may race to make it: each
/// writes its own temporary file and links it into place, and the loser reads the winner's.
fn load_or_create(dir: &Path) -> Result<[u8; KEY_LEN], String> {
    let path = dir.join(KEY_FILE);
    match read_key(&path) {
        Ok(key) => return Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.to_string()),
    }
    let mut fresh = [0u8; KEY_LEN];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut fresh))
        .map_err(|e| format!("no random bytes: {e}"))?;
    let temporary = dir.join(format!("{KEY_FILE}.{}", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut f| {
            f.write_all(&fresh)?;
            f.sync_all()
        })
        .and_then(|()| match fs::hard_link(&temporary, &path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        });
    let _ = fs::remove_file(&temporary);
    written.map_err(|e| e.to_string())?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    read_key(&path).map_err(|e| e.to_string())
}

fn read_key(path: &Path) -> std::io::Result<[u8; KEY_LEN]> {
    let bytes = fs::read(path)?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} bytes, not {KEY_LEN}", b.len()),
        )
    })
}
