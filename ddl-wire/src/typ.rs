//! Type ('Y'): the name of a column type that is not built in (`typ` as in proto.c, since
//! `type` is a keyword).

use nom::combinator::map;
use nom::sequence::tuple;

use crate::primitive::PResult;
use crate::primitive::{be_u32, cstr, put_cstr, put_stream_xid, put_u32, put_u8, stream_xid};
use crate::tags::TYPE_TAG;
use crate::{PgStr, ProtocolContext};

/// Type: names a column type whose OID the subscriber cannot be assumed to share; pgoutput
/// sends it before the Relation that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeBody<'a> {
    xid: Option<u32>,
    type_oid: u32,
    namespace: PgStr<'a>,
    name: PgStr<'a>,
}

impl<'a> TypeBody<'a> {
    /// The transaction id, inside a streamed block only.
    pub fn xid(&self) -> Option<u32> {
        self.xid
    }

    /// The type's OID on the publisher.
    pub fn type_oid(&self) -> u32 {
        self.type_oid
    }

    /// The schema of the type (of its base type, for a domain); empty means `pg_catalog`.
    pub fn namespace(&self) -> PgStr<'a> {
        self.namespace
    }

    /// The type name (of its base type, for a domain).
    pub fn name(&self) -> PgStr<'a> {
        self.name
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        write_type(self.xid, self.type_oid, self.namespace, self.name, out);
    }
}

pub(crate) fn parse<'a>(i: &'a [u8], ctx: &ProtocolContext) -> PResult<'a, TypeBody<'a>> {
    let (i, xid) = stream_xid(i, ctx)?;
    map(
        tuple((be_u32, cstr, cstr)),
        move |(type_oid, namespace, name)| TypeBody {
            xid,
            type_oid,
            namespace,
            name,
        },
    )(i)
}

/// Writes a Type message (`logicalrep_write_typ`). `xid` is for streamed blocks only.
pub fn write_type(
    xid: Option<u32>,
    type_oid: u32,
    namespace: PgStr<'_>,
    name: PgStr<'_>,
    out: &mut Vec<u8>,
) {
    put_u8(out, TYPE_TAG);
    put_stream_xid(out, xid);
    put_u32(out, type_oid);
    put_cstr(out, namespace);
    put_cstr(out, name);
}
