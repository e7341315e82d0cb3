//! Record authentication: only records the capture wrote become DDL events.
//!
//! Anyone may write a `ddl_sync` logical message (`pg_logical_emit_message` is executable by
//! PUBLIC, and a GRANT or a superuser's SECURITY DEFINER wrapper could open it wider still), so
//! the prefix proves nothing. The capture therefore ends each record with a BLAKE3 keyed-hash
//! tag under a key that only the server can read, and the output plugin turns a message into
//! an event only when the tag is right. The tag covers the record's xid, and the plugin checks that
//! xid against the transaction that carries the message: the exact bytes of a genuine record,
//! emitted again by someone else, belong to another transaction and are refused.
//!
//! The key is 32 random bytes in `$PGDATA/ddl_sync_record.key` (mode 0600, created on first
//! use): readable only by the server's OS user and, through SQL, by roles that may read any
//! server file (superusers, `pg_read_server_files`), who could forge records anyway. Being in
//! the data directory, it follows the cluster into base backups and physical standbys, which
//! must decode the same WAL after a failover. Each process reads it once.
//!
//! Why BLAKE3 and not HMAC-SHA256, which sealed the records of 0.3: every captured statement
//! pays for its tag, and on a CPU without SHA extensions (Intel servers before Ice Lake) the
//! HMAC of a typical record cost 34,000 instructions, a fifteenth of a whole CREATE TABLE
//! (BENCHMARKS.md, "Instructions"); BLAKE3's keyed mode is a MAC of the same strength at a
//! fraction of that on any x86-64. Records sealed by 0.3 still verify (HMAC-SHA256 under the
//! same key), so WAL written before an upgrade decodes after it.

use ddl_server::errors;
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
/// Domain separation: the records' BLAKE3 key is derived from the file's key for this purpose
/// alone, so a tag made for anything else under the file's key never verifies as a record.
const CONTEXT: &str = "ddl_sync 2026-12 record tag v3";
/// The same, for the HMAC-SHA256 tags of 0.3's records.
const HMAC_CONTEXT: &[u8] = b"ddl_sync record v2\0";

/// The file's key, and the BLAKE3 key derived from it.
struct Keys {
    file: [u8; KEY_LEN],
    records: [u8; KEY_LEN],
}

static KEYS: OnceLock<Keys> = OnceLock::new();

/// Writes the tag of `payload` (an encoded record) into its last [`RECORD_TAG_LEN`] bytes.
/// ERRORs when the key cannot be read or made: no record leaves unsealed.
pub fn seal(payload: &mut [u8]) {
    let keys = keys();
    let Some(body_len) = payload.len().checked_sub(RECORD_TAG_LEN) else {
        errors::internal("a record is shorter than its tag");
    };
    let tag = tag_of(&keys.records, &payload[..body_len]);
    payload[body_len..].copy_from_slice(&tag);
}

/// Whether `payload` ends with the right tag: this version's, or the HMAC-SHA256 of a record
/// that 0.3 sealed. Constant time in the tag's bytes.
pub fn verify(payload: &[u8]) -> bool {
    let Some(body) = DdlRecord::sealed_part(payload) else {
        return false;
    };
    let Ok(tag) = <[u8; RECORD_TAG_LEN]>::try_from(&payload[body.len()..]) else {
        return false;
    };
    let keys = keys();
    // blake3::Hash compares with a byte array in constant time.
    blake3::keyed_hash(&keys.records, body) == tag || hmac_verifies(&keys.file, body, &tag)
}

fn tag_of(records_key: &[u8; KEY_LEN], body: &[u8]) -> [u8; RECORD_TAG_LEN] {
    *blake3::keyed_hash(records_key, body).as_bytes()
}

/// Whether `tag` is 0.3's HMAC-SHA256 tag of `body` under the file's key.
fn hmac_verifies(file_key: &[u8; KEY_LEN], body: &[u8], tag: &[u8]) -> bool {
    // HMAC takes a key of any length: the Err cannot happen, and would mean "does not verify".
    // (No ERROR here: this runs in the unit tests, outside a server.)
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(file_key) else {
        return false;
    };
    mac.update(HMAC_CONTEXT);
    mac.update(body);
    mac.verify_slice(tag).is_ok()
}

fn keys() -> &'static Keys {
    if let Some(keys) = KEYS.get() {
        return keys;
    }
    match load_or_create(&data_directory()) {
        Ok(file) => KEYS.get_or_init(|| Keys {
            file,
            records: blake3::derive_key(CONTEXT, &file),
        }),
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

#[cfg(test)]
mod tests {
    use super::*;

    const FILE_KEY: [u8; KEY_LEN] = [7; KEY_LEN];

    #[test]
    fn a_tag_depends_on_every_byte_and_on_the_key() {
        let records = blake3::derive_key(CONTEXT, &FILE_KEY);
        let body = b"\x03\x02 a record body";
        let tag = tag_of(&records, body);
        let mut changed = *body;
        changed[5] ^= 1;
        assert_ne!(tag, tag_of(&records, &changed));
        let other = blake3::derive_key(CONTEXT, &[8; KEY_LEN]);
        assert_ne!(tag, tag_of(&other, body));
        // The derived key is not the file's: a plain keyed hash under the file's key differs.
        assert_ne!(tag, *blake3::keyed_hash(&FILE_KEY, body).as_bytes());
    }

    #[test]
    fn a_tag_of_0_3_verifies_only_as_hmac_of_its_body() {
        let body = b"\x02\x02 an old record";
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&FILE_KEY).unwrap();
        mac.update(HMAC_CONTEXT);
        mac.update(body);
        let tag: [u8; RECORD_TAG_LEN] = mac.finalize().into_bytes().into();
        assert!(hmac_verifies(&FILE_KEY, body, &tag));
        assert!(!hmac_verifies(&FILE_KEY, b"\x02\x02 another record", &tag));
        assert!(!hmac_verifies(&[8; KEY_LEN], body, &tag));
    }
}
