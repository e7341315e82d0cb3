//! Relation ('R'): a table's name, replica identity and published columns.

use std::iter::FusedIterator;

use nom::combinator::map;
use nom::sequence::tuple;

use crate::primitive::{be_i32, be_u32, be_u8, cstr, fail, put_cstr, put_i32, put_message};
use crate::primitive::{put_stream_xid, put_u16, put_u32, put_u8, stream_xid, Overflow, PResult};
use crate::sequence::{Item, Sequence};
use crate::tags::RELATION_TAG;
use crate::{Error, ErrorKind, PgStr, ProtocolContext};

/// `LOGICALREP_IS_REPLICA_IDENTITY`: the column is part of the replica identity key.
const IS_REPLICA_IDENTITY: u8 = 1;

/// Relation: sent before the first change to a table in a session (and, when streaming, in each
/// streamed transaction), and again after the table's definition changed. Later changes name the
/// table by [`rel_id`](RelationBody::rel_id) only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationBody<'a> {
    xid: Option<u32>,
    rel_id: u32,
    namespace: PgStr<'a>,
    name: PgStr<'a>,
    replica_identity: u8,
    columns: Columns<'a>,
}

impl<'a> RelationBody<'a> {
    /// The transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// The table's OID on the publisher.
    pub fn rel_id(&self) -> u32 {
        self.rel_id
    }

    /// The schema name; empty means `pg_catalog` (pgoutput abbreviates it).
    pub fn namespace(&self) -> PgStr<'a> {
        self.namespace
    }

    /// The table name.
    pub fn name(&self) -> PgStr<'a> {
        self.name
    }

    /// `pg_class.relreplident`: `d` default, `n` nothing, `f` full, `i` index.
    pub fn replica_identity(&self) -> u8 {
        self.replica_identity
    }

    /// The published columns (not dropped, not generated unless published, in the column
    /// list if there is one), in the order their values appear in tuples.
    pub fn columns(&self) -> Columns<'a> {
        self.columns.clone()
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, RELATION_TAG);
        put_head(
            out,
            self.xid,
            self.rel_id,
            self.namespace,
            self.name,
            self.replica_identity,
        );
        self.columns.0.encode(out);
    }
}

/// One column of a [`RelationBody`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column<'a> {
    flags: u8,
    name: PgStr<'a>,
    type_oid: u32,
    type_modifier: i32,
}

impl<'a> Column<'a> {
    /// A column to give [`write_relation`].
    pub fn new(flags: u8, name: PgStr<'a>, type_oid: u32, type_modifier: i32) -> Column<'a> {
        Column {
            flags,
            name,
            type_oid,
            type_modifier,
        }
    }

    /// Flags: 1 when the column is part of the replica identity key; other bits are unused.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// True when the column is part of the replica identity key (flag 1).
    pub fn is_key(&self) -> bool {
        self.flags & IS_REPLICA_IDENTITY != 0
    }

    /// The column name.
    pub fn name(&self) -> PgStr<'a> {
        self.name
    }

    /// The column type's OID on the publisher (see [`TypeBody`](crate::TypeBody) for types
    /// that are not built in).
    pub fn type_oid(&self) -> u32 {
        self.type_oid
    }

    /// `atttypmod`, -1 when the type has none.
    pub fn type_modifier(&self) -> i32 {
        self.type_modifier
    }
}

impl<'a> Item<'a> for Column<'a> {
    fn parse(i: &'a [u8]) -> PResult<'a, Self> {
        map(
            tuple((be_u8, cstr, be_u32, be_i32)),
            |(flags, name, type_oid, type_modifier)| Column {
                flags,
                name,
                type_oid,
                type_modifier,
            },
        )(i)
    }
}

/// The columns of a [`RelationBody`], read lazily from the message: an iterator of
/// `Result<Column, Error>`.
///
/// Parsing the message already stepped over every column to find where the message ends, so
/// for a parsed message every item is `Ok` (see [`TupleData`](crate::TupleData) for why they
/// are `Result`s all the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns<'a>(Sequence<'a, Column<'a>>);

impl<'a> Iterator for Columns<'a> {
    type Item = Result<Column<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_item()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0.remaining(), Some(self.0.remaining()))
    }
}

impl ExactSizeIterator for Columns<'_> {}

impl FusedIterator for Columns<'_> {}

fn is_replica_identity(b: u8) -> bool {
    matches!(b, b'd' | b'n' | b'f' | b'i')
}

pub(crate) fn parse<'a>(
    i: &'a [u8],
    ctx: &ProtocolContext,
    total: usize,
) -> PResult<'a, RelationBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    let (i, (rel_id, namespace, name)) = tuple((be_u32, cstr, cstr))(i)?;
    let (rest, replica_identity) = be_u8(i)?;
    if !is_replica_identity(replica_identity) {
        return fail(i, ErrorKind::InvalidReplicaIdentity(replica_identity));
    }
    let (rest, columns) = Sequence::parse(rest, total, RELATION_TAG)?;
    Ok((
        rest,
        RelationBody {
            xid,
            rel_id,
            namespace,
            name,
            replica_identity,
            columns: Columns(columns),
        },
    ))
}

fn put_head(
    out: &mut Vec<u8>,
    xid: Option<u32>,
    rel_id: u32,
    namespace: PgStr<'_>,
    name: PgStr<'_>,
    replica_identity: u8,
) {
    put_stream_xid(out, xid);
    put_u32(out, rel_id);
    put_cstr(out, namespace);
    put_cstr(out, name);
    put_u8(out, replica_identity);
}

/// Writes a Relation message (`logicalrep_write_rel`). `xid` is for streamed blocks only; an
/// empty `namespace` stands for `pg_catalog`.
///
/// Fails on a replica identity other than `d`, `n`, `f`, `i` (offset of that byte) or on more
/// than 65535 columns; `out` is then left as it was.
pub fn write_relation(
    xid: Option<u32>,
    rel_id: u32,
    namespace: PgStr<'_>,
    name: PgStr<'_>,
    replica_identity: u8,
    columns: &[Column<'_>],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if !is_replica_identity(replica_identity) {
        // Where the byte would have gone: tag, xid, OID, two strings with their NULs.
        let offset = 1 + xid.map_or(0, |_| 4) + 4 + namespace.len() + 1 + name.len() + 1;
        return Err(Error::new(
            ErrorKind::InvalidReplicaIdentity(replica_identity),
            offset,
            Some(RELATION_TAG),
        ));
    }
    put_message(out, RELATION_TAG, |out| {
        put_head(out, xid, rel_id, namespace, name, replica_identity);
        let count = u16::try_from(columns.len()).map_err(|_| Overflow { at: out.len() })?;
        put_u16(out, count);
        for column in columns {
            put_u8(out, column.flags);
            put_cstr(out, column.name);
            put_u32(out, column.type_oid);
            put_i32(out, column.type_modifier);
        }
        Ok(())
    })
}
