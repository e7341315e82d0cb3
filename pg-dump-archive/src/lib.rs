//! The table of contents of a `pg_dump --format=custom` archive: see README.md.
//!
//! The archive is pg_dump's own structure: a header, then one entry per object, each a fixed
//! sequence of length-prefixed strings and integers (`ReadHead` and `ReadToc` in pg_dump's
//! `pg_backup_archiver.c`, `_ReadExtraToc` in `pg_backup_custom.c`). Nothing here reads SQL:
//! an entry's name, type, schema and owner are fields of their own, whatever its SQL holds, so
//! no text inside a definition (a newline, a comment, a line that looks like pg_dump's own
//! headers) can make another entry or end one.
//!
//! Every read is bounds-checked and every count is checked against what is left, so no input
//! makes [`Archive::parse`] panic or allocate more than the input's size.

#![forbid(unsafe_code)]

mod reader;

use reader::Reader;
use std::fmt;

/// The archive versions this crate reads: 1.10 (PostgreSQL 8.4's pg_dump) to 1.16 (17 and 18).
/// Older ones lack fields every entry needs; newer ones may have fields this crate does not
/// know, so they are refused rather than misread.
pub const OLDEST: Version = Version(1, 10, 0);
pub const NEWEST: Version = Version(1, 16, 255);

/// pg_dump's archive format number for the custom format (`archCustom`).
const FORMAT_CUSTOM: u8 = 1;

/// An archive version: major, minor, revision (`MAKE_ARCHIVE_VERSION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u8, pub u8, pub u8);

impl Version {
    /// The versions that added fields this crate reads (`K_VERS_1_*`).
    const TABLE_AM: Version = Version(1, 14, 0);
    const COMPRESSION_ALGORITHM: Version = Version(1, 15, 0);
    const RELKIND: Version = Version(1, 16, 0);
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// What a malformed archive did wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The byte offset where reading stopped.
    pub offset: usize,
    pub what: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a pg_dump custom-format archive this version can read: {} (at byte {})",
            self.what, self.offset
        )
    }
}

impl std::error::Error for Error {}

/// The section of the dump an entry belongs to (`teSection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Comments, privileges and the like, which go with their object.
    None,
    PreData,
    Data,
    PostData,
}

/// A whole archive's header and table of contents, borrowing the archive's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive<'a> {
    pub version: Version,
    /// The dumped database's name.
    pub database: Option<&'a str>,
    /// The dumped server's version (`server_version`), and pg_dump's own.
    pub server_version: Option<&'a str>,
    pub pg_dump_version: Option<&'a str>,
    /// In pg_dump's order: an object's dependencies come before it.
    pub entries: Vec<Entry<'a>>,
}

/// One entry of the table of contents: one object (or a comment, a privilege, ... on one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The dump ID: what `pg_restore --use-list` selects the entry by.
    pub id: i32,
    /// The entry's type: `TABLE`, `FUNCTION`, `ACL`, `COMMENT`, `DEFAULT`, `ENCODING`, ...
    pub desc: &'a str,
    /// Its name, as pg_restore's headers print it (`customers`, `f(integer)`, `TABLE t`).
    pub tag: &'a str,
    /// Its schema, where it has one.
    pub namespace: Option<&'a str>,
    /// Its owner, where it has one.
    pub owner: Option<&'a str>,
    pub tablespace: Option<&'a str>,
    /// The table access method (archives 1.14 and later).
    pub table_am: Option<&'a str>,
    pub section: Section,
    /// The SQL that makes it, as pg_dump wrote it (without the owner, tablespace and access
    /// method, which pg_restore sets from the fields above).
    pub definition: Option<&'a str>,
    /// The SQL that drops it.
    pub drop_statement: Option<&'a str>,
    /// The dump IDs of the entries it depends on.
    pub dependencies: Vec<i32>,
}

/// What names an object across two archives: type, schema, name (not the owner, which may
/// differ).
pub type Key<'a> = (&'a str, Option<&'a str>, &'a str);

impl<'a> Entry<'a> {
    pub fn key(&self) -> Key<'a> {
        (self.desc, self.namespace, self.tag)
    }

    /// Whether two entries make the same object the same way: the same SQL, owner, tablespace
    /// and access method (what pg_restore would run for either).
    pub fn same_definition(&self, other: &Entry<'_>) -> bool {
        self.definition == other.definition
            && self.owner == other.owner
            && self.tablespace == other.tablespace
            && self.table_am == other.table_am
    }

    /// The settings pg_restore always restores first, whatever a list selects (its
    /// `REQ_SPECIAL` entries): they are the script's preamble, not objects.
    pub fn is_setting(&self) -> bool {
        matches!(self.desc, "ENCODING" | "STDSTRINGS" | "SEARCHPATH")
    }

    /// The database itself (`DATABASE`, `DATABASE PROPERTIES`: its comment, privileges and
    /// settings), which pg_restore restores only with `--create`, whatever a list selects: not
    /// an object of the schema.
    pub fn is_database(&self) -> bool {
        matches!(self.desc, "DATABASE" | "DATABASE PROPERTIES")
    }

    /// `TYPE schema.name` (or `TYPE name`), for messages.
    pub fn describe(&self) -> String {
        match self.namespace {
            Some(schema) => format!("{} {schema}.{}", self.desc, self.tag),
            None => format!("{} {}", self.desc, self.tag),
        }
    }
}

impl<'a> Archive<'a> {
    /// Reads the header and the table of contents of `bytes`, a custom-format archive; what
    /// follows the table of contents (data blocks) is not read.
    pub fn parse(bytes: &'a [u8]) -> Result<Archive<'a>, Error> {
        let mut r = Reader::new(bytes);
        let version = read_header(&mut r)?;
        let database = r.string()?;
        let server_version = r.string()?;
        let pg_dump_version = r.string()?;
        let count = r.count()?;
        let mut entries = Vec::new();
        for _ in 0..count {
            entries.push(read_entry(&mut r, version)?);
        }
        Ok(Archive {
            version,
            database,
            server_version,
            pg_dump_version,
            entries,
        })
    }
}

/// `ReadHead`: magic, version, integer and offset sizes, format, compression, creation time.
/// Leaves `r` at the database name.
fn read_header(r: &mut Reader<'_>) -> Result<Version, Error> {
    if r.bytes(5)? != b"PGDMP" {
        return Err(r.error("it does not start with PGDMP"));
    }
    let version = Version(r.byte()?, r.byte()?, r.byte()?);
    if version < OLDEST || version > NEWEST {
        return Err(r.error(format!(
            "archive version {version} (this crate reads {OLDEST} to {NEWEST})"
        )));
    }
    let int_size = r.byte()?;
    r.set_int_size(int_size)?;
    let offset_size = r.byte()?;
    r.set_offset_size(offset_size)?;
    let format = r.byte()?;
    if format != FORMAT_CUSTOM {
        return Err(r.error(format!(
            "archive format {format} (only the custom format, {FORMAT_CUSTOM}, has this layout)"
        )));
    }
    if version >= Version::COMPRESSION_ALGORITHM {
        r.byte()?;
    } else {
        r.int()?;
    }
    // Creation time: seconds, minutes, hours, day, month, year, DST.
    for _ in 0..7 {
        r.int()?;
    }
    Ok(version)
}

/// `ReadToc`'s loop body and the custom format's `_ReadExtraToc`: one entry.
fn read_entry<'a>(r: &mut Reader<'a>, version: Version) -> Result<Entry<'a>, Error> {
    let id = r.int()?;
    if id <= 0 {
        return Err(r.error(format!("entry ID {id} out of range")));
    }
    let _had_dumper = r.int()?;
    let _table_oid = r.string()?;
    let _oid = r.string()?;
    let tag = r.required_string("tag")?;
    let desc = r.required_string("type")?;
    let section = match r.int()? {
        1 => Section::None,
        2 => Section::PreData,
        3 => Section::Data,
        4 => Section::PostData,
        n => return Err(r.error(format!("section {n} of entry {id}"))),
    };
    let definition = r.string()?;
    let drop_statement = r.string()?;
    let _copy_statement = r.string()?;
    let namespace = r.string()?;
    let tablespace = r.string()?;
    let table_am = if version >= Version::TABLE_AM {
        r.string()?
    } else {
        None
    };
    if version >= Version::RELKIND {
        r.int()?;
    }
    let owner = r.string()?;
    // "WITH OIDS": pg_restore refuses "true" too.
    if r.string()? != Some("false") {
        return Err(r.error(format!("entry {id} is a table WITH OIDS")));
    }
    let mut dependencies = Vec::new();
    while let Some(dependency) = r.string()? {
        match dependency.parse::<i32>() {
            Ok(d) if d > 0 => dependencies.push(d),
            _ => {
                return Err(r.error(format!(
                    "dependency {dependency:?} of entry {id} is not a dump ID"
                )))
            }
        }
    }
    r.offset()?;
    Ok(Entry {
        id,
        desc,
        tag,
        namespace,
        owner,
        tablespace,
        table_am,
        section,
        definition,
        drop_statement,
        dependencies,
    })
}

/// A list file for `pg_restore --use-list` that restores `ids`, in this order: one dump ID a
/// line and nothing else, so no name can add a line.
pub fn use_list(ids: impl IntoIterator<Item = i32>) -> String {
    ids.into_iter().map(|id| format!("{id}\n")).collect()
}

#[cfg(test)]
mod tests;
