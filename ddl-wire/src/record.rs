//! The captured-DDL record: the payload of a `ddl_sync` logical decoding message.
//!
//! The capture hook writes one record per DDL statement with `LogLogicalMessage`; the output
//! plugin parses it, and it never leaves the publisher as such (subscribers see the fields as
//! columns of `ddl_sync.events`). The format is binary and versioned because the record is the
//! only copy of the DDL in WAL: a plugin built from an older ddl-wire must refuse a newer record
//! with a clear error, never misread it.
//!
//! Layout of format version 5 (all integers big-endian, like the pgoutput protocol):
//!
//! ```text
//! u8   format version (5)
//! u8   flags: 0x01 top level (else nested in a function / DO block),
//!             0x02 transactional, 0x04 forwarded (replayed DDL passed on)
//! u32  xid of the (sub)transaction that ran the statement
//! u32  class id: the OID of the catalog the object is in (pg_class, pg_proc, ...; 0 if none)
//! u32  object id: the object's OID on the capturing node (0 if none)
//! u32  namespace id: the OID of the object's schema on the capturing node (0 if none)
//! u64  system identifier of the node that captured the record
//! u64  system identifier of the node where the statement first ran (= above unless forwarded)
//! u64  LSN of the statement on that first node (0 unless forwarded: the plugin adds the LSN)
//! then sixteen strings, each u32 length + UTF-8 bytes (no NUL terminator):
//!      dialect, command tag, kind, schema, object identity, statement, search_path,
//!      current role, session user, database, tables, settings, role rights, bindings,
//!      renamed from, description
//! 32 bytes authentication tag over everything before it
//! ```
//! Nothing may follow the tag. Version 4 is the same without `renamed from` and
//! `description`, version 3 also
//! without `role rights` and `bindings`, version 2 also without `tables` and `settings`; all
//! are still read (a server upgraded with records of the old library in its WAL), as empty
//! ones (and `bindings` as not known).
//!
//! Why `tables`: the statement's text may not run on a subscriber (a role or object only the
//! publisher has), and a table the subscriber lacks stops its subscription at the table's first
//! row. So each record also says what every table the statement created or changed looks like to
//! a row: a `CREATE TABLE` of its columns and replica identity key, one per table, each ending
//! with `;`. A subscriber that could not run the statement makes the table from that.
//!
//! Why `settings`: like its search_path, some of the session's settings change what a
//! statement means: how its text is read and what it stores ([`MEANING_SETTINGS`]). One
//! `name=value` per line; the subscriber sets those it knows around the statement. The capture
//! leaves out those at PostgreSQL's built-in default (flag `DEFAULTS_LEFT_OUT`; most are, and
//! every byte of a record is sealed and written to WAL), and the output plugin puts them back
//! into the event ([`DdlRecord::full_settings`]), which says every setting.
//!
//! Why `role rights`: a role is named the same on every node, but what a role of that name may
//! do is each node's own. The field says what the statement's role could do where it ran
//! ([`describe_role_rights`](crate::describe_role_rights)), so that a subscriber never replays it as a role of the same name that
//! may do more there.
//!
//! Why `bindings`: the subscriber parses the statement's text again, against its own catalogs,
//! where a role of its own may have planted a better match for a name (an operator
//! `public.<>(varchar, varchar)`, a function overload): the same text would then call that
//! role's code, as whoever replays or applies it. The field lists, by identity, what the
//! statement bound by name where it ran ([`encode_name_set`](crate::encode_name_set)), so
//! that a subscriber can refuse a replay that binds anything else of a role it does not trust.
//!
//! Why `renamed from`: after `ALTER ... RENAME` or `SET SCHEMA` the catalogs, and so the
//! object identity, know only the new name; the capture reads the old one before the statement
//! runs, so that a consumer is told both.
//!
//! Why `description`: what the statement made, as the catalogs say right after it
//! ([`Description`](crate::Description) as JSON; empty for a statement that makes nothing
//! described), so that a subscriber can show that its replay made the same. The capture makes
//! it, in the statement's own backend, where the catalog caches hold what the statement just
//! touched: the walsender would have to rebuild them from its historic snapshot, and wait for
//! the locks of a transaction it streams while it runs.
//!
//! Why a tag: `pg_logical_emit_message` is executable by PUBLIC, so the prefix proves nothing
//! about who wrote a message. The capture seals each record with a MAC under a key that only
//! the server can read (keyed BLAKE3, see `ddl-capture`), and the record's xid binds it to the
//! transaction that carries it. This crate only frames the tag: computing and checking it
//! needs the key, which never leaves the server. Version 1 records (no tag) are refused.
//!
//! An EMPTY `ddl_sync` message is not a record but padding: the capture writes one after a
//! record written in a subtransaction (in it), and one before a subtransaction that starts
//! right after a record (not transactional), so that the record's decoding position never ties
//! with the next row change of another (sub)transaction (a message is queued at the end of its
//! WAL record, a row change at the start of its own). Readers skip it.

use std::borrow::Cow;
use std::fmt;

/// The record format version this crate writes.
pub const RECORD_FORMAT_VERSION: u8 = 5;

/// The oldest record format version this crate reads.
pub const OLDEST_RECORD_FORMAT_VERSION: u8 = 2;

/// The session settings a record's `settings` carries, as `pg_settings` spells them: those that
/// change how a statement's text is read, or what it stores, so that the same text means the
/// same on every node. Literals of dates, times and intervals (`DateStyle`, `IntervalStyle`,
/// `TimeZone`, `timezone_abbreviations`), of strings (`standard_conforming_strings`,
/// `backslash_quote`), arrays (`array_nulls`), XML (`xmloption`) and money (`lc_monetary`);
/// `x = NULL` read as `x IS NULL` (`transform_null_equals`); the access method a table gets
/// (`default_table_access_method`). The capture writes these, the subscriber sets these and
/// nothing else: one list for both.
pub const MEANING_SETTINGS: [&str; 11] = {
    let mut names = [""; 11];
    let mut i = 0;
    while i < names.len() {
        names[i] = MEANING_SETTING_DEFAULTS[i].0;
        i += 1;
    }
    names
};

/// Each of [`MEANING_SETTINGS`] with PostgreSQL's built-in default, as `SHOW` writes it (the
/// same on 15 to 19).
pub const MEANING_SETTING_DEFAULTS: [(&str, &str); 11] = [
    ("DateStyle", "ISO, MDY"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "GMT"),
    ("timezone_abbreviations", "Default"),
    ("standard_conforming_strings", "on"),
    ("backslash_quote", "safe_encoding"),
    ("array_nulls", "on"),
    ("xmloption", "content"),
    ("lc_monetary", "C"),
    ("transform_null_equals", "off"),
    ("default_table_access_method", "heap"),
];

/// The length of the authentication tag that ends every record.
pub const RECORD_TAG_LEN: usize = 32;

/// The logical decoding message prefix the capture hook writes records under.
pub const RECORD_PREFIX: &str = "ddl_sync";

/// Record flags (one byte on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RecordFlags(u8);

impl RecordFlags {
    /// The statement was sent by the client (not run from inside a function or DO block).
    pub const TOP_LEVEL: RecordFlags = RecordFlags(0x01);
    /// The statement ran inside a transaction whose outcome decides whether it happened.
    pub const TRANSACTIONAL: RecordFlags = RecordFlags(0x02);
    /// The statement was replayed from another node and is passed on (cascading replication).
    pub const FORWARDED: RecordFlags = RecordFlags(0x04);
    /// `settings` leaves out the settings at PostgreSQL's built-in default
    /// ([`MEANING_SETTING_DEFAULTS`]); [`DdlRecord::full_settings`] puts them back. A reader
    /// that does not know the flag refuses the record rather than read it without them.
    pub const DEFAULTS_LEFT_OUT: RecordFlags = RecordFlags(0x08);
    const ALL: u8 = 0x0f;

    /// No flag set.
    pub const fn empty() -> RecordFlags {
        RecordFlags(0)
    }
    /// The raw byte.
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// `None` when a bit this version does not know is set.
    pub const fn from_bits(bits: u8) -> Option<RecordFlags> {
        if bits & !Self::ALL == 0 {
            Some(RecordFlags(bits))
        } else {
            None
        }
    }
    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: RecordFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for RecordFlags {
    type Output = RecordFlags;
    fn bitor(self, rhs: RecordFlags) -> RecordFlags {
        RecordFlags(self.0 | rhs.0)
    }
}

/// Where a DDL statement first ran: `(system_identifier, lsn)` names it on every node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordOrigin {
    /// The system identifier of the node that captured this record.
    pub capturing_sysid: u64,
    /// The system identifier of the node where the statement first ran.
    pub original_sysid: u64,
    /// The statement's LSN on that node; 0 when it is the capturing node (the output plugin then
    /// uses the message's own LSN).
    pub original_lsn: u64,
}

/// One captured DDL statement, borrowing its strings from the message payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DdlRecord<'a> {
    /// Flags.
    pub flags: RecordFlags,
    /// The xid of the (sub)transaction that ran the statement; the output plugin uses it to
    /// attribute the event to that subtransaction when streaming.
    pub xid: u32,
    /// The OID of the system catalog the object belongs to (e.g. 1259, pg_class), 0 if none.
    /// With `object_id` it lets the output plugin match relation- and object-level rules even
    /// for an object the statement dropped; the OIDs mean nothing on other nodes.
    pub class_id: u32,
    /// The object's OID on the capturing node, 0 if none or not known yet (a table of
    /// `CREATE TABLE AS`, captured before it is created).
    pub object_id: u32,
    /// The OID of the object's schema on the capturing node, 0 if none.
    pub namespace_id: u32,
    /// Where the statement comes from.
    pub origin: RecordOrigin,
    /// The SQL dialect the session parsed it with (`postgres`, `tsql`, ...).
    pub dialect: &'a str,
    /// The command tag (`CREATE TABLE`, `ALTER INDEX`, ...).
    pub command_tag: &'a str,
    /// The statement's kind, as the `ddl` option spells it (`table`, `index`, ...). A token, not
    /// ddl-filter's bit: readers of the record need no copy of that table.
    pub kind: &'a str,
    /// The schema of the object, empty when the object has none (e.g. a schema or extension).
    pub schema: &'a str,
    /// The schema-qualified object identity (`public.orders`).
    pub object_identity: &'a str,
    /// The statement text, exactly one statement cut from the client's query string.
    pub sql: &'a str,
    /// The session's search_path when it ran.
    pub search_path: &'a str,
    /// The current role when it ran.
    pub role: &'a str,
    /// The session user.
    pub session_user: &'a str,
    /// The database it ran in.
    pub database: &'a str,
    /// The tables the statement created or changed as a row sees them: `CREATE TABLE` statements
    /// of their columns (and replica identity key), each ending with `;`; empty when none (and
    /// in version 2 records).
    pub tables: &'a str,
    /// The session's settings that change what the statement means, one `name=value` per
    /// line; without those at their built-in default when the flags say so
    /// ([`RecordFlags::DEFAULTS_LEFT_OUT`]: read [`DdlRecord::full_settings`]); empty in
    /// version 2 records.
    pub settings: &'a str,
    /// What the current role could do where the statement ran ([`describe_role_rights`](crate::describe_role_rights));
    /// empty in records before version 4 (not known).
    pub role_rights: &'a str,
    /// What the statement bound by name where it ran, by identity
    /// ([`encode_name_set`](crate::encode_name_set)); `None` in records before version 4 (not
    /// known), which are written with none.
    pub bindings: Option<&'a str>,
    /// For a rename (`ALTER ... RENAME`, `RENAME COLUMN`) or a move (`ALTER ... SET SCHEMA`),
    /// the object's identity before the statement, in the form of `object_identity`; empty
    /// otherwise (and in records before version 5).
    pub renamed_from: &'a str,
    /// What the statement made ([`Description`](crate::Description) as JSON), empty when it
    /// makes nothing described, when describing it failed (the capture then warns), for a
    /// statement captured before it runs (`CREATE TABLE AS`), and in records before version 5.
    pub description: &'a str,
    /// The authentication tag over the rest of the record, as written (see [`DdlRecord::sealed_part`]).
    pub tag: [u8; RECORD_TAG_LEN],
}

/// Why a record could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    kind: RecordErrorKind,
    offset: usize,
}

/// The kinds of [`RecordError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordErrorKind {
    /// The record was written by a newer (or unknown) format version.
    UnsupportedVersion(u8),
    /// The payload ends inside the named field (`tag`: the authentication tag).
    Truncated(&'static str),
    /// A flag bit this version does not know.
    UnknownFlags(u8),
    /// The named string field is not UTF-8.
    InvalidUtf8(&'static str),
    /// Bytes follow the authentication tag.
    TrailingBytes(usize),
}

impl RecordError {
    /// What went wrong.
    pub fn kind(&self) -> &RecordErrorKind {
        &self.kind
    }
    /// The byte offset in the payload where it went wrong.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ddl_sync record at byte {}: ", self.offset)?;
        match &self.kind {
            RecordErrorKind::UnsupportedVersion(v) => write!(
                f,
                "format version {v} is not supported (this reader knows versions \
                 {OLDEST_RECORD_FORMAT_VERSION} to {RECORD_FORMAT_VERSION}; a newer ddl_pgoutput \
                 wrote it?)"
            ),
            RecordErrorKind::Truncated(field) => write!(f, "payload ends inside field {field}"),
            RecordErrorKind::UnknownFlags(b) => write!(f, "unknown flag bits 0x{b:02x}"),
            RecordErrorKind::InvalidUtf8(field) => write!(f, "field {field} is not valid UTF-8"),
            RecordErrorKind::TrailingBytes(n) => write!(f, "{n} unexpected bytes after the tag"),
        }
    }
}

impl std::error::Error for RecordError {}

/// The names of the string fields, in wire order (used in errors).
const STRING_FIELDS: [&str; 16] = [
    "dialect",
    "command_tag",
    "kind",
    "schema",
    "object_identity",
    "sql",
    "search_path",
    "role",
    "session_user",
    "database",
    "tables",
    "settings",
    "role_rights",
    "bindings",
    "renamed_from",
    "description",
];

impl<'a> DdlRecord<'a> {
    /// Parses a whole record; the payload must be used up exactly.
    pub fn parse(payload: &'a [u8]) -> Result<DdlRecord<'a>, RecordError> {
        let mut r = Reader {
            buf: payload,
            pos: 0,
        };
        let version = r.u8("format version")?;
        if !(OLDEST_RECORD_FORMAT_VERSION..=RECORD_FORMAT_VERSION).contains(&version) {
            return Err(RecordError {
                kind: RecordErrorKind::UnsupportedVersion(version),
                offset: 0,
            });
        }
        let flag_byte = r.u8("flags")?;
        let flags = RecordFlags::from_bits(flag_byte).ok_or(RecordError {
            kind: RecordErrorKind::UnknownFlags(flag_byte & !RecordFlags::ALL),
            offset: 1,
        })?;
        let xid = r.u32("xid")?;
        let class_id = r.u32("class_id")?;
        let object_id = r.u32("object_id")?;
        let namespace_id = r.u32("namespace_id")?;
        let origin = RecordOrigin {
            capturing_sysid: r.u64("capturing_sysid")?,
            original_sysid: r.u64("original_sysid")?,
            original_lsn: r.u64("original_lsn")?,
        };
        let mut s = [""; 16];
        // Version 2 ends before `tables`, version 3 before `role_rights`, version 4 before
        // `renamed_from`.
        let fields = match version {
            2 => 10,
            3 => 12,
            4 => 14,
            _ => 16,
        };
        for (slot, field) in s.iter_mut().zip(STRING_FIELDS).take(fields) {
            *slot = r.string(field)?;
        }
        let tag = r.array::<RECORD_TAG_LEN>("tag")?;
        if r.pos != payload.len() {
            return Err(RecordError {
                kind: RecordErrorKind::TrailingBytes(payload.len() - r.pos),
                offset: r.pos,
            });
        }
        let [dialect, command_tag, kind, schema, object_identity, sql, search_path, role, session_user, database, tables, settings, role_rights, bindings, renamed_from, description] =
            s;
        let bindings = (fields >= 14).then_some(bindings);
        Ok(DdlRecord {
            flags,
            xid,
            kind,
            class_id,
            object_id,
            namespace_id,
            origin,
            dialect,
            command_tag,
            schema,
            object_identity,
            sql,
            search_path,
            role,
            session_user,
            database,
            tables,
            settings,
            role_rights,
            bindings,
            renamed_from,
            description,
            tag,
        })
    }

    /// The bytes of an encoded record that its tag covers: all but the tag. `None` when the
    /// payload is too short to hold a tag.
    pub fn sealed_part(payload: &[u8]) -> Option<&[u8]> {
        payload
            .len()
            .checked_sub(RECORD_TAG_LEN)
            .map(|n| &payload[..n])
    }

    /// The settings the statement ran with, one `name=value` per line: `settings`, with those
    /// it leaves out at their default put back when the flags say so
    /// ([`RecordFlags::DEFAULTS_LEFT_OUT`]), in the order of [`MEANING_SETTINGS`] (a line of a
    /// setting this crate does not know is kept, after them).
    pub fn full_settings(&self) -> Cow<'a, str> {
        if !self.flags.contains(RecordFlags::DEFAULTS_LEFT_OUT) {
            return Cow::Borrowed(self.settings);
        }
        let written = |name: &str| {
            self.settings.lines().find_map(|line| {
                line.split_once('=')
                    .filter(|(n, _)| *n == name)
                    .map(|(_, value)| value)
            })
        };
        let mut full = String::with_capacity(self.settings.len() + 256);
        for (name, default) in MEANING_SETTING_DEFAULTS {
            if !full.is_empty() {
                full.push('\n');
            }
            full.push_str(name);
            full.push('=');
            full.push_str(written(name).unwrap_or(default));
        }
        let known = |line: &str| {
            line.split_once('=')
                .is_some_and(|(name, _)| MEANING_SETTINGS.contains(&name))
        };
        for line in self.settings.lines().filter(|l| !known(l)) {
            full.push('\n');
            full.push_str(line);
        }
        Cow::Owned(full)
    }

    /// Appends the record in the current format version, ending with `self.tag` (the writer
    /// computes the real tag over [`DdlRecord::sealed_part`] and overwrites the last
    /// [`RECORD_TAG_LEN`] bytes).
    pub fn encode(&self, out: &mut Vec<u8>) {
        // Version, flags, four u32 and three u64, then each string after its u32 length.
        let fixed = 2 + 4 * 4 + 8 * 3 + RECORD_TAG_LEN;
        out.reserve(fixed + self.strings().iter().map(|s| 4 + s.len()).sum::<usize>());
        out.push(RECORD_FORMAT_VERSION);
        out.push(self.flags.bits());
        out.extend_from_slice(&self.xid.to_be_bytes());
        out.extend_from_slice(&self.class_id.to_be_bytes());
        out.extend_from_slice(&self.object_id.to_be_bytes());
        out.extend_from_slice(&self.namespace_id.to_be_bytes());
        out.extend_from_slice(&self.origin.capturing_sysid.to_be_bytes());
        out.extend_from_slice(&self.origin.original_sysid.to_be_bytes());
        out.extend_from_slice(&self.origin.original_lsn.to_be_bytes());
        for s in self.strings() {
            // A statement longer than 4 GiB cannot reach here: PostgreSQL's query strings and
            // logical messages are limited to 1 GiB.
            out.extend_from_slice(&(s.len() as u32).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        out.extend_from_slice(&self.tag);
    }

    /// The name of the first string field that holds a NUL byte, if any: such a field cannot
    /// become a PostgreSQL `text` value (the capture never writes one).
    pub fn strings_with_nul(&self) -> Option<&'static str> {
        self.strings()
            .into_iter()
            .zip(STRING_FIELDS)
            .find(|(s, _)| memchr::memchr(0, s.as_bytes()).is_some())
            .map(|(_, field)| field)
    }

    fn strings(&self) -> [&'a str; 16] {
        [
            self.dialect,
            self.command_tag,
            self.kind,
            self.schema,
            self.object_identity,
            self.sql,
            self.search_path,
            self.role,
            self.session_user,
            self.database,
            self.tables,
            self.settings,
            self.role_rights,
            self.bindings.unwrap_or(""),
            self.renamed_from,
            self.description,
        ]
    }
}

/// A cursor that turns running out of bytes into an error naming the field.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], RecordError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end.and_then(|e| self.buf.get(self.pos..e)) {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(RecordError {
                kind: RecordErrorKind::Truncated(field),
                offset: self.pos,
            }),
        }
    }
    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], RecordError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, field)?);
        Ok(a)
    }
    fn u8(&mut self, field: &'static str) -> Result<u8, RecordError> {
        Ok(self.array::<1>(field)?[0])
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, RecordError> {
        self.array(field).map(u32::from_be_bytes)
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, RecordError> {
        self.array(field).map(u64::from_be_bytes)
    }
    fn string(&mut self, field: &'static str) -> Result<&'a str, RecordError> {
        let len = self.u32(field)? as usize;
        let start = self.pos;
        let bytes = self.take(len, field)?;
        std::str::from_utf8(bytes).map_err(|e| RecordError {
            kind: RecordErrorKind::InvalidUtf8(field),
            offset: start + e.valid_up_to(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DdlRecord<'static> {
        DdlRecord {
            flags: RecordFlags::TOP_LEVEL | RecordFlags::TRANSACTIONAL,
            xid: 731,
            kind: "table",
            class_id: 1259,
            object_id: 16_384,
            namespace_id: 2200,
            origin: RecordOrigin {
                capturing_sysid: 7_301_234_567_890_123_456,
                original_sysid: 7_301_234_567_890_123_456,
                original_lsn: 0,
            },
            dialect: "postgres",
            command_tag: "ALTER TABLE",
            schema: "public",
            object_identity: "public.orders",
            sql: "ALTER TABLE orders ADD COLUMN note text",
            search_path: "\"$user\", public",
            role: "app",
            session_user: "app",
            database: "shop",
            tables: "CREATE TABLE public.orders (id integer, note text, PRIMARY KEY (id));",
            settings: "DateStyle=ISO, MDY\ndefault_table_access_method=heap",
            role_rights: "NOSUPERUSER NOCREATEDB CREATEROLE NOREPLICATION NOBYPASSRLS",
            bindings: Some("type public.money_amount\n"),
            renamed_from: "public.old_orders",
            description: r#"{"version":1,"objects":[{"action":"altered","kind":"table","identity":"public.orders"}]}"#,
            tag: [7; RECORD_TAG_LEN],
        }
    }

    fn encoded(r: &DdlRecord<'_>) -> Vec<u8> {
        let mut v = Vec::new();
        r.encode(&mut v);
        v
    }

    #[test]
    fn round_trips() {
        let bytes = encoded(&sample());
        assert_eq!(DdlRecord::parse(&bytes), Ok(sample()));
    }

    #[test]
    fn every_truncation_is_an_error_naming_a_field() {
        let bytes = encoded(&sample());
        for n in 0..bytes.len() {
            let err = DdlRecord::parse(&bytes[..n]).unwrap_err();
            assert!(
                matches!(err.kind(), RecordErrorKind::Truncated(_)),
                "{n}: {err}"
            );
            assert!(err.offset() <= n);
        }
    }

    #[test]
    fn newer_version_is_refused_not_misread() {
        let mut bytes = encoded(&sample());
        bytes[0] = RECORD_FORMAT_VERSION + 1;
        let err = DdlRecord::parse(&bytes).unwrap_err();
        assert_eq!(err.kind(), &RecordErrorKind::UnsupportedVersion(6));
        assert!(err
            .to_string()
            .contains("format version 6 is not supported"));
    }

    #[test]
    fn version_4_records_are_read_without_renamed_from_or_description() {
        let v4 = DdlRecord {
            renamed_from: "",
            description: "",
            ..sample()
        };
        let mut bytes = encoded(&v4);
        bytes[0] = 4;
        // Version 5 with empty `renamed_from` and `description` is version 4 plus their
        // lengths, before the tag.
        let at = bytes.len() - RECORD_TAG_LEN - 8;
        bytes.drain(at..at + 8);
        assert_eq!(DdlRecord::parse(&bytes), Ok(v4));
        let mut longer = encoded(&sample());
        longer[0] = 4;
        assert!(matches!(
            DdlRecord::parse(&longer).unwrap_err().kind(),
            RecordErrorKind::TrailingBytes(_)
        ));
    }

    #[test]
    fn version_3_records_are_read_without_role_rights_or_bindings() {
        let v3 = DdlRecord {
            role_rights: "",
            bindings: None,
            renamed_from: "",
            description: "",
            ..sample()
        };
        let mut bytes = encoded(&v3);
        bytes[0] = 3;
        // Version 5 with empty `role_rights`, `bindings`, `renamed_from` and `description` is
        // version 3 plus their lengths, before the tag.
        let at = bytes.len() - RECORD_TAG_LEN - 16;
        bytes.drain(at..at + 16);
        assert_eq!(DdlRecord::parse(&bytes), Ok(v3));
        let mut longer = encoded(&sample());
        longer[0] = 3;
        assert!(matches!(
            DdlRecord::parse(&longer).unwrap_err().kind(),
            RecordErrorKind::TrailingBytes(_)
        ));
    }

    #[test]
    fn version_2_records_are_read_without_tables_or_settings() {
        let v2 = DdlRecord {
            tables: "",
            settings: "",
            role_rights: "",
            bindings: None,
            renamed_from: "",
            description: "",
            ..sample()
        };
        let mut bytes = encoded(&v2);
        bytes[0] = 2;
        // Version 5 with empty `tables`, `settings`, `role_rights`, `bindings`, `renamed_from`
        // and `description` is version 2 plus their lengths, just before the tag.
        let at = bytes.len() - RECORD_TAG_LEN - 24;
        bytes.drain(at..at + 24);
        assert_eq!(DdlRecord::parse(&bytes), Ok(v2));
        // ... and a version 2 record with those fields has bytes too many.
        let mut longer = encoded(&sample());
        longer[0] = 2;
        assert!(matches!(
            DdlRecord::parse(&longer).unwrap_err().kind(),
            RecordErrorKind::TrailingBytes(_)
        ));
    }

    #[test]
    fn settings_left_out_at_their_default_are_put_back() {
        let written = "TimeZone=Etc/UTC\nlc_monetary=C.UTF-8\nlater_setting=x";
        let record = DdlRecord {
            flags: RecordFlags::TRANSACTIONAL | RecordFlags::DEFAULTS_LEFT_OUT,
            settings: written,
            ..sample()
        };
        let bytes = encoded(&record);
        let parsed = DdlRecord::parse(&bytes).unwrap();
        assert_eq!(
            parsed.full_settings(),
            "DateStyle=ISO, MDY\nIntervalStyle=postgres\nTimeZone=Etc/UTC\n\
             timezone_abbreviations=Default\nstandard_conforming_strings=on\n\
             backslash_quote=safe_encoding\narray_nulls=on\nxmloption=content\n\
             lc_monetary=C.UTF-8\ntransform_null_equals=off\n\
             default_table_access_method=heap\nlater_setting=x"
        );
        // Without the flag the field is all there is (a record that wrote every setting, or
        // none: version 2's, whose settings are not known).
        let whole = DdlRecord {
            settings: written,
            ..sample()
        };
        assert_eq!(whole.full_settings(), written);
        // A reader that does not know the flag refuses the record: it would read it without
        // the settings left out.
        let mut bytes = encoded(&record);
        bytes[1] |= 0x10;
        assert_eq!(
            DdlRecord::parse(&bytes).unwrap_err().kind(),
            &RecordErrorKind::UnknownFlags(0x10)
        );
    }

    #[test]
    fn unknown_flags_trailing_bytes_and_bad_utf8_are_refused() {
        let mut bytes = encoded(&sample());
        bytes[1] |= 0x80;
        assert_eq!(
            DdlRecord::parse(&bytes).unwrap_err().kind(),
            &RecordErrorKind::UnknownFlags(0x80)
        );

        let mut bytes = encoded(&sample());
        bytes.push(0);
        assert_eq!(
            DdlRecord::parse(&bytes).unwrap_err().kind(),
            &RecordErrorKind::TrailingBytes(1)
        );

        let mut bytes = encoded(&sample());
        let at = bytes.windows(6).position(|w| w == b"orders").unwrap();
        bytes[at] = 0xff;
        let err = DdlRecord::parse(&bytes).unwrap_err();
        assert_eq!(err.kind(), &RecordErrorKind::InvalidUtf8("object_identity"));
        assert_eq!(err.offset(), at);
    }

    #[test]
    fn the_tag_ends_the_record_and_covers_the_rest() {
        let bytes = encoded(&sample());
        let sealed = DdlRecord::sealed_part(&bytes).unwrap();
        assert_eq!(sealed.len(), bytes.len() - RECORD_TAG_LEN);
        assert_eq!(&bytes[sealed.len()..], &[7; RECORD_TAG_LEN]);
        assert_eq!(DdlRecord::sealed_part(&bytes[..RECORD_TAG_LEN - 1]), None);
    }

    #[test]
    fn version_1_records_without_a_tag_are_refused() {
        let mut bytes = encoded(&sample());
        bytes[0] = 1;
        assert_eq!(
            DdlRecord::parse(&bytes).unwrap_err().kind(),
            &RecordErrorKind::UnsupportedVersion(1)
        );
    }

    #[test]
    fn a_nul_byte_is_named_by_its_field() {
        assert_eq!(sample().strings_with_nul(), None);
        let r = DdlRecord {
            sql: "DROP TABLE t\0 CASCADE",
            ..sample()
        };
        assert_eq!(r.strings_with_nul(), Some("sql"));
    }

    #[test]
    fn huge_length_does_not_overflow() {
        let mut bytes = encoded(&sample())[..42].to_vec();
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(
            DdlRecord::parse(&bytes).unwrap_err().kind(),
            &RecordErrorKind::Truncated("dialect")
        );
    }
}
