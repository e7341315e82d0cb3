//! Shared by the round-trip, robustness and allocation tests: a deterministic PRNG, a model of
//! every message type that writes itself with the crate's `write_*` functions and checks a
//! parsed message field by field, and generators of valid message sequences.
//!
//! Each test binary uses a different part of this module. ddl-dump's tests include it too
//! (`#[path]`, for the PRNG), and read the fixtures next to it.
#![allow(dead_code)]

use ddl_wire::*;

/// xorshift64*: deterministic, so a failure replays with the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 once, so that small seeds still give a well-mixed, non-zero state.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n`, `n > 0`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Edge values often, any value otherwise.
    pub fn u32(&mut self) -> u32 {
        match self.below(6) {
            0 => 0,
            1 => u32::MAX,
            2 => 1 << 31,
            _ => self.next_u64() as u32,
        }
    }

    pub fn u64(&mut self) -> u64 {
        match self.below(6) {
            0 => 0,
            1 => u64::MAX,
            2 => 1 << 63,
            _ => self.next_u64(),
        }
    }

    pub fn i64(&mut self) -> i64 {
        self.u64() as i64
    }

    pub fn i32(&mut self) -> i32 {
        match self.below(5) {
            0 => -1,
            1 => i32::MIN,
            _ => self.u32() as i32,
        }
    }

    pub fn xid(&mut self) -> u32 {
        self.u32()
    }

    /// Arbitrary bytes (NUL, '\n', high bytes included).
    pub fn bytes(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.byte()).collect()
    }

    fn byte(&mut self) -> u8 {
        match self.below(8) {
            0 => 0,
            1 => b'\n',
            2 => 0xFF,
            _ => self.next_u64() as u8,
        }
    }

    /// A string for a NUL-terminated field: any bytes but NUL (non-UTF-8 and '\n' included).
    pub fn name(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.byte().max(1)).collect()
    }
}

/// Every context pgoutput can be in: each valid (version, streaming) pair, in and out of a
/// streamed block when streaming is on.
pub fn contexts() -> Vec<ProtocolContext> {
    let mut all = Vec::new();
    for version in 1..=4 {
        for streaming in [Streaming::Off, Streaming::On, Streaming::Parallel] {
            if let Ok(ctx) = ProtocolContext::new(version, streaming) {
                all.push(ctx);
                if streaming != Streaming::Off {
                    all.push(ctx.with_in_stream(true));
                }
            }
        }
    }
    all
}

pub const ALL_TAGS: [u8; 19] = [
    BEGIN_TAG,
    COMMIT_TAG,
    ORIGIN_TAG,
    RELATION_TAG,
    TYPE_TAG,
    INSERT_TAG,
    UPDATE_TAG,
    DELETE_TAG,
    TRUNCATE_TAG,
    MESSAGE_TAG,
    STREAM_START_TAG,
    STREAM_STOP_TAG,
    STREAM_COMMIT_TAG,
    STREAM_ABORT_TAG,
    BEGIN_PREPARE_TAG,
    PREPARE_TAG,
    COMMIT_PREPARED_TAG,
    ROLLBACK_PREPARED_TAG,
    STREAM_PREPARE_TAG,
];

/// Message types that exist in `ctx`'s protocol version.
pub fn tags_for(ctx: &ProtocolContext) -> Vec<u8> {
    ALL_TAGS
        .iter()
        .copied()
        .filter(|t| match *t {
            STREAM_START_TAG | STREAM_STOP_TAG | STREAM_COMMIT_TAG | STREAM_ABORT_TAG => {
                ctx.proto_version() >= 2
            }
            BEGIN_PREPARE_TAG
            | PREPARE_TAG
            | COMMIT_PREPARED_TAG
            | ROLLBACK_PREPARED_TAG
            | STREAM_PREPARE_TAG => ctx.proto_version() >= 3,
            _ => true,
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Unchanged,
    Text(Vec<u8>),
    Binary(Vec<u8>),
}

impl Val {
    pub fn as_value(&self) -> TupleValue<'_> {
        match self {
            Val::Null => TupleValue::Null,
            Val::Unchanged => TupleValue::UnchangedToast,
            Val::Text(t) => TupleValue::Text(t),
            Val::Binary(b) => TupleValue::Binary(b),
        }
    }

    fn from_value(v: TupleValue<'_>) -> Val {
        match v {
            TupleValue::Null => Val::Null,
            TupleValue::UnchangedToast => Val::Unchanged,
            TupleValue::Text(t) => Val::Text(t.to_vec()),
            TupleValue::Binary(b) => Val::Binary(b.to_vec()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Col {
    pub flags: u8,
    pub name: Vec<u8>,
    pub type_oid: u32,
    pub type_modifier: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prep {
    pub prepare_lsn: u64,
    pub end_lsn: u64,
    pub prepare_time: i64,
    pub xid: u32,
    pub gid: Vec<u8>,
}

impl Prep {
    /// The fields as the writers take them.
    pub fn txn(&self) -> PreparedTxn<'_> {
        PreparedTxn {
            prepare_lsn: self.prepare_lsn,
            end_lsn: self.end_lsn,
            prepare_time: self.prepare_time,
            xid: self.xid,
            gid: pg(&self.gid),
        }
    }
}

/// One message, as plain owned values.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    Begin {
        final_lsn: u64,
        commit_time: i64,
        xid: u32,
    },
    Commit {
        commit_lsn: u64,
        end_lsn: u64,
        commit_time: i64,
    },
    Origin {
        lsn: u64,
        name: Vec<u8>,
    },
    Relation {
        xid: Option<u32>,
        rel_id: u32,
        namespace: Vec<u8>,
        name: Vec<u8>,
        replica_identity: u8,
        columns: Vec<Col>,
    },
    Type {
        xid: Option<u32>,
        type_oid: u32,
        namespace: Vec<u8>,
        name: Vec<u8>,
    },
    Insert {
        xid: Option<u32>,
        rel_id: u32,
        new: Vec<Val>,
    },
    Update {
        xid: Option<u32>,
        rel_id: u32,
        old: Option<(OldTupleKind, Vec<Val>)>,
        new: Vec<Val>,
    },
    Delete {
        xid: Option<u32>,
        rel_id: u32,
        kind: OldTupleKind,
        old: Vec<Val>,
    },
    Truncate {
        xid: Option<u32>,
        cascade: bool,
        restart_identity: bool,
        rel_ids: Vec<u32>,
    },
    LogicalMessage {
        xid: Option<u32>,
        transactional: bool,
        lsn: u64,
        prefix: Vec<u8>,
        content: Vec<u8>,
    },
    StreamStart {
        xid: u32,
        first_segment: bool,
    },
    StreamStop,
    StreamCommit {
        xid: u32,
        commit_lsn: u64,
        end_lsn: u64,
        commit_time: i64,
    },
    StreamAbort {
        xid: u32,
        subxid: u32,
        abort_info: Option<(u64, i64)>,
    },
    BeginPrepare(Prep),
    Prepare(Prep),
    CommitPrepared {
        commit_lsn: u64,
        end_lsn: u64,
        commit_time: i64,
        xid: u32,
        gid: Vec<u8>,
    },
    RollbackPrepared {
        prepare_end_lsn: u64,
        rollback_end_lsn: u64,
        prepare_time: i64,
        rollback_time: i64,
        xid: u32,
        gid: Vec<u8>,
    },
    StreamPrepare(Prep),
}

fn random_tuple(rng: &mut Rng) -> Vec<Val> {
    let n = rng.below(7);
    (0..n)
        .map(|_| match rng.below(4) {
            0 => Val::Null,
            1 => Val::Unchanged,
            2 => Val::Text(rng.bytes(24)),
            _ => Val::Binary(rng.bytes(24)),
        })
        .collect()
}

fn random_prep(rng: &mut Rng) -> Prep {
    Prep {
        prepare_lsn: rng.u64(),
        end_lsn: rng.u64(),
        prepare_time: rng.i64(),
        xid: rng.xid(),
        gid: rng.name(20),
    }
}

fn pg(bytes: &[u8]) -> PgStr<'_> {
    PgStr::new(bytes).expect("models hold no NUL in strings")
}

fn values(vals: &[Val]) -> Vec<TupleValue<'_>> {
    vals.iter().map(Val::as_value).collect()
}

impl Model {
    /// A random message of type `tag` that is valid in `ctx` (transaction id prefix exactly when
    /// in a streamed block, abort info exactly under streaming = parallel).
    pub fn random_of(tag: u8, rng: &mut Rng, ctx: &ProtocolContext) -> Model {
        let xid = ctx.in_stream().then(|| rng.xid());
        match tag {
            BEGIN_TAG => Model::Begin {
                final_lsn: rng.u64(),
                commit_time: rng.i64(),
                xid: rng.xid(),
            },
            COMMIT_TAG => Model::Commit {
                commit_lsn: rng.u64(),
                end_lsn: rng.u64(),
                commit_time: rng.i64(),
            },
            ORIGIN_TAG => Model::Origin {
                lsn: rng.u64(),
                name: rng.name(20),
            },
            RELATION_TAG => Model::Relation {
                xid,
                rel_id: rng.u32(),
                namespace: rng.name(12),
                name: rng.name(12),
                replica_identity: rng.pick(b"dnfi"),
                columns: (0..rng.below(6))
                    .map(|_| Col {
                        flags: if rng.below(4) == 0 {
                            rng.next_u64() as u8
                        } else {
                            rng.below(2) as u8
                        },
                        name: rng.name(10),
                        type_oid: rng.u32(),
                        type_modifier: rng.i32(),
                    })
                    .collect(),
            },
            TYPE_TAG => Model::Type {
                xid,
                type_oid: rng.u32(),
                namespace: rng.name(12),
                name: rng.name(12),
            },
            INSERT_TAG => Model::Insert {
                xid,
                rel_id: rng.u32(),
                new: random_tuple(rng),
            },
            UPDATE_TAG => Model::Update {
                xid,
                rel_id: rng.u32(),
                old: match rng.below(3) {
                    0 => None,
                    1 => Some((OldTupleKind::Key, random_tuple(rng))),
                    _ => Some((OldTupleKind::Full, random_tuple(rng))),
                },
                new: random_tuple(rng),
            },
            DELETE_TAG => Model::Delete {
                xid,
                rel_id: rng.u32(),
                kind: if rng.coin() {
                    OldTupleKind::Key
                } else {
                    OldTupleKind::Full
                },
                old: random_tuple(rng),
            },
            TRUNCATE_TAG => Model::Truncate {
                xid,
                cascade: rng.coin(),
                restart_identity: rng.coin(),
                rel_ids: (0..rng.below(5)).map(|_| rng.u32()).collect(),
            },
            MESSAGE_TAG => Model::LogicalMessage {
                xid,
                // Non-transactional messages never come inside a streamed block.
                transactional: ctx.in_stream() || rng.coin(),
                lsn: rng.u64(),
                prefix: rng.name(12),
                content: rng.bytes(40),
            },
            STREAM_START_TAG => Model::StreamStart {
                xid: rng.xid(),
                first_segment: rng.coin(),
            },
            STREAM_STOP_TAG => Model::StreamStop,
            STREAM_COMMIT_TAG => Model::StreamCommit {
                xid: rng.xid(),
                commit_lsn: rng.u64(),
                end_lsn: rng.u64(),
                commit_time: rng.i64(),
            },
            STREAM_ABORT_TAG => Model::StreamAbort {
                xid: rng.xid(),
                subxid: rng.xid(),
                abort_info: (ctx.streaming() == Streaming::Parallel)
                    .then(|| (rng.u64(), rng.i64())),
            },
            BEGIN_PREPARE_TAG => Model::BeginPrepare(random_prep(rng)),
            PREPARE_TAG => Model::Prepare(random_prep(rng)),
            COMMIT_PREPARED_TAG => Model::CommitPrepared {
                commit_lsn: rng.u64(),
                end_lsn: rng.u64(),
                commit_time: rng.i64(),
                xid: rng.xid(),
                gid: rng.name(20),
            },
            ROLLBACK_PREPARED_TAG => Model::RollbackPrepared {
                prepare_end_lsn: rng.u64(),
                rollback_end_lsn: rng.u64(),
                prepare_time: rng.i64(),
                rollback_time: rng.i64(),
                xid: rng.xid(),
                gid: rng.name(20),
            },
            STREAM_PREPARE_TAG => Model::StreamPrepare(random_prep(rng)),
            other => panic!("no model for tag {other}"),
        }
    }

    /// A random message of any type that `ctx`'s version has.
    pub fn random(rng: &mut Rng, ctx: &ProtocolContext) -> Model {
        let tags = tags_for(ctx);
        let tag = rng.pick(&tags);
        Model::random_of(tag, rng, ctx)
    }

    pub fn tag(&self) -> u8 {
        match self {
            Model::Begin { .. } => BEGIN_TAG,
            Model::Commit { .. } => COMMIT_TAG,
            Model::Origin { .. } => ORIGIN_TAG,
            Model::Relation { .. } => RELATION_TAG,
            Model::Type { .. } => TYPE_TAG,
            Model::Insert { .. } => INSERT_TAG,
            Model::Update { .. } => UPDATE_TAG,
            Model::Delete { .. } => DELETE_TAG,
            Model::Truncate { .. } => TRUNCATE_TAG,
            Model::LogicalMessage { .. } => MESSAGE_TAG,
            Model::StreamStart { .. } => STREAM_START_TAG,
            Model::StreamStop => STREAM_STOP_TAG,
            Model::StreamCommit { .. } => STREAM_COMMIT_TAG,
            Model::StreamAbort { .. } => STREAM_ABORT_TAG,
            Model::BeginPrepare(_) => BEGIN_PREPARE_TAG,
            Model::Prepare(_) => PREPARE_TAG,
            Model::CommitPrepared { .. } => COMMIT_PREPARED_TAG,
            Model::RollbackPrepared { .. } => ROLLBACK_PREPARED_TAG,
            Model::StreamPrepare(_) => STREAM_PREPARE_TAG,
        }
    }

    /// Writes the message with the crate's `write_*` function for its type.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Model::Begin {
                final_lsn,
                commit_time,
                xid,
            } => write_begin(*final_lsn, *commit_time, *xid, out),
            Model::Commit {
                commit_lsn,
                end_lsn,
                commit_time,
            } => write_commit(*commit_lsn, *end_lsn, *commit_time, out),
            Model::Origin { lsn, name } => write_origin(*lsn, pg(name), out),
            Model::Relation {
                xid,
                rel_id,
                namespace,
                name,
                replica_identity,
                columns,
            } => {
                let cols: Vec<Column<'_>> = columns
                    .iter()
                    .map(|c| Column::new(c.flags, pg(&c.name), c.type_oid, c.type_modifier))
                    .collect();
                write_relation(
                    *xid,
                    *rel_id,
                    pg(namespace),
                    pg(name),
                    *replica_identity,
                    &cols,
                    out,
                )
                .unwrap()
            }
            Model::Type {
                xid,
                type_oid,
                namespace,
                name,
            } => write_type(*xid, *type_oid, pg(namespace), pg(name), out),
            Model::Insert { xid, rel_id, new } => {
                write_insert(*xid, *rel_id, &values(new), out).unwrap()
            }
            Model::Update {
                xid,
                rel_id,
                old,
                new,
            } => {
                let old_values = old.as_ref().map(|(k, v)| (*k, values(v)));
                let old_ref = old_values.as_ref().map(|(k, v)| (*k, v.as_slice()));
                write_update(*xid, *rel_id, old_ref, &values(new), out).unwrap()
            }
            Model::Delete {
                xid,
                rel_id,
                kind,
                old,
            } => write_delete(*xid, *rel_id, *kind, &values(old), out).unwrap(),
            Model::Truncate {
                xid,
                cascade,
                restart_identity,
                rel_ids,
            } => write_truncate(*xid, *cascade, *restart_identity, rel_ids, out).unwrap(),
            Model::LogicalMessage {
                xid,
                transactional,
                lsn,
                prefix,
                content,
            } => {
                write_logical_message(*xid, *transactional, *lsn, pg(prefix), content, out).unwrap()
            }
            Model::StreamStart { xid, first_segment } => {
                write_stream_start(*xid, *first_segment, out)
            }
            Model::StreamStop => write_stream_stop(out),
            Model::StreamCommit {
                xid,
                commit_lsn,
                end_lsn,
                commit_time,
            } => write_stream_commit(*xid, *commit_lsn, *end_lsn, *commit_time, out),
            Model::StreamAbort {
                xid,
                subxid,
                abort_info,
            } => write_stream_abort(*xid, *subxid, *abort_info, out),
            Model::BeginPrepare(p) => write_begin_prepare(&p.txn(), out),
            Model::Prepare(p) => write_prepare(&p.txn(), out),
            Model::StreamPrepare(p) => write_stream_prepare(&p.txn(), out),
            Model::CommitPrepared {
                commit_lsn,
                end_lsn,
                commit_time,
                xid,
                gid,
            } => write_commit_prepared(*commit_lsn, *end_lsn, *commit_time, *xid, pg(gid), out),
            Model::RollbackPrepared {
                prepare_end_lsn,
                rollback_end_lsn,
                prepare_time,
                rollback_time,
                xid,
                gid,
            } => write_rollback_prepared(
                *prepare_end_lsn,
                *rollback_end_lsn,
                *prepare_time,
                *rollback_time,
                *xid,
                pg(gid),
                out,
            ),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    /// Reads every field of `message` back through the public getters into a model.
    pub fn from_message(message: &Message<'_>) -> Model {
        let s = |p: PgStr<'_>| p.as_bytes().to_vec();
        let vals = |t: TupleData<'_>| -> Vec<Val> {
            t.map(|v| Val::from_value(v.expect("parsed tuples iterate without error")))
                .collect()
        };
        let prep = |t: &PreparedTxn<'_>| Prep {
            prepare_lsn: t.prepare_lsn,
            end_lsn: t.end_lsn,
            prepare_time: t.prepare_time,
            xid: t.xid,
            gid: s(t.gid),
        };
        match message {
            Message::Begin(b) => Model::Begin {
                final_lsn: b.final_lsn(),
                commit_time: b.commit_time(),
                xid: b.xid(),
            },
            Message::Commit(b) => Model::Commit {
                commit_lsn: b.commit_lsn(),
                end_lsn: b.end_lsn(),
                commit_time: b.commit_time(),
            },
            Message::Origin(b) => Model::Origin {
                lsn: b.origin_lsn(),
                name: s(b.name()),
            },
            Message::Relation(b) => Model::Relation {
                xid: b.xid(),
                rel_id: b.rel_id(),
                namespace: s(b.namespace()),
                name: s(b.name()),
                replica_identity: b.replica_identity(),
                columns: b
                    .columns()
                    .map(|c| {
                        let c = c.expect("parsed columns iterate without error");
                        assert_eq!(c.is_key(), c.flags() & 1 == 1);
                        Col {
                            flags: c.flags(),
                            name: s(c.name()),
                            type_oid: c.type_oid(),
                            type_modifier: c.type_modifier(),
                        }
                    })
                    .collect(),
            },
            Message::Type(b) => Model::Type {
                xid: b.xid(),
                type_oid: b.type_oid(),
                namespace: s(b.namespace()),
                name: s(b.name()),
            },
            Message::Insert(b) => Model::Insert {
                xid: b.xid(),
                rel_id: b.rel_id(),
                new: vals(b.tuple()),
            },
            Message::Update(b) => {
                let old = match (b.key_tuple(), b.old_tuple()) {
                    (Some(k), None) => Some((OldTupleKind::Key, vals(k))),
                    (None, Some(o)) => Some((OldTupleKind::Full, vals(o))),
                    (None, None) => None,
                    (Some(_), Some(_)) => panic!("update with both a key and an old tuple"),
                };
                assert_eq!(b.old_tuple_kind(), old.as_ref().map(|(k, _)| *k));
                Model::Update {
                    xid: b.xid(),
                    rel_id: b.rel_id(),
                    old,
                    new: vals(b.new_tuple()),
                }
            }
            Message::Delete(b) => {
                let (kind, old) = match (b.key_tuple(), b.old_tuple()) {
                    (Some(k), None) => (OldTupleKind::Key, vals(k)),
                    (None, Some(o)) => (OldTupleKind::Full, vals(o)),
                    other => panic!("delete must have exactly one old tuple: {other:?}"),
                };
                assert_eq!(b.old_tuple_kind(), kind);
                Model::Delete {
                    xid: b.xid(),
                    rel_id: b.rel_id(),
                    kind,
                    old,
                }
            }
            Message::Truncate(b) => Model::Truncate {
                xid: b.xid(),
                cascade: b.cascade(),
                restart_identity: b.restart_identity(),
                rel_ids: {
                    let ids = b.rel_ids();
                    let len = ids.len();
                    let v: Vec<u32> = ids.collect();
                    assert_eq!(v.len(), len, "RelIds::len is exact");
                    v
                },
            },
            Message::LogicalMessage(b) => Model::LogicalMessage {
                xid: b.xid(),
                transactional: b.transactional(),
                lsn: b.lsn(),
                prefix: s(b.prefix()),
                content: b.content().to_vec(),
            },
            Message::StreamStart(b) => Model::StreamStart {
                xid: b.xid(),
                first_segment: b.first_segment(),
            },
            Message::StreamStop => Model::StreamStop,
            Message::StreamCommit(b) => Model::StreamCommit {
                xid: b.xid(),
                commit_lsn: b.commit_lsn(),
                end_lsn: b.end_lsn(),
                commit_time: b.commit_time(),
            },
            Message::StreamAbort(b) => {
                assert_eq!(b.abort_lsn().is_some(), b.abort_time().is_some());
                Model::StreamAbort {
                    xid: b.xid(),
                    subxid: b.subxid(),
                    abort_info: b.abort_lsn().zip(b.abort_time()),
                }
            }
            Message::BeginPrepare(b) => Model::BeginPrepare(prep(b.txn())),
            Message::Prepare(b) => Model::Prepare(prep(b.txn())),
            Message::StreamPrepare(b) => Model::StreamPrepare(prep(b.txn())),
            Message::CommitPrepared(b) => Model::CommitPrepared {
                commit_lsn: b.commit_lsn(),
                end_lsn: b.end_lsn(),
                commit_time: b.commit_time(),
                xid: b.xid(),
                gid: s(b.gid()),
            },
            Message::RollbackPrepared(b) => Model::RollbackPrepared {
                prepare_end_lsn: b.prepare_end_lsn(),
                rollback_end_lsn: b.rollback_end_lsn(),
                prepare_time: b.prepare_time(),
                rollback_time: b.rollback_time(),
                xid: b.xid(),
                gid: s(b.gid()),
            },
            other => panic!("message type not modelled: {other:?}"),
        }
    }
}

/// Reads every lazily parsed part of `message` (columns, values, relation ids, names) without
/// allocating, and folds what it read into a number so none of it is optimised away.
pub fn walk(message: &Message<'_>) -> u64 {
    let mut sum = Fold(0);
    match message {
        Message::Relation(r) => {
            sum.name(r.namespace());
            sum.name(r.name());
            for column in r.columns() {
                match column {
                    Ok(c) => {
                        sum.name(c.name());
                        sum.add(u64::from(c.type_oid()));
                        sum.add(c.type_modifier() as u64);
                        sum.add(u64::from(c.is_key()));
                    }
                    Err(e) => sum.add(e.offset() as u64),
                }
            }
        }
        Message::Type(t) => {
            sum.name(t.namespace());
            sum.name(t.name());
        }
        Message::Origin(o) => sum.name(o.name()),
        Message::Insert(i) => sum.tuple(i.tuple()),
        Message::Update(u) => {
            if let Some(t) = u.key_tuple() {
                sum.tuple(t);
            }
            if let Some(t) = u.old_tuple() {
                sum.tuple(t);
            }
            sum.tuple(u.new_tuple());
        }
        Message::Delete(d) => {
            if let Some(t) = d.key_tuple() {
                sum.tuple(t);
            }
            if let Some(t) = d.old_tuple() {
                sum.tuple(t);
            }
        }
        Message::Truncate(t) => {
            for oid in t.rel_ids() {
                sum.add(u64::from(oid));
            }
        }
        Message::LogicalMessage(m) => {
            sum.name(m.prefix());
            sum.add(m.content().len() as u64);
        }
        Message::BeginPrepare(p) => sum.name(p.txn().gid),
        Message::Prepare(p) => sum.name(p.txn().gid),
        Message::StreamPrepare(p) => sum.name(p.txn().gid),
        Message::CommitPrepared(p) => sum.name(p.gid()),
        Message::RollbackPrepared(p) => sum.name(p.gid()),
        other => sum.add(u64::from(other.tag())),
    }
    sum.0
}

struct Fold(u64);

impl Fold {
    fn add(&mut self, v: u64) {
        self.0 = self.0.wrapping_mul(31).wrapping_add(v);
    }

    fn name(&mut self, s: PgStr<'_>) {
        self.add(s.len() as u64);
        self.add(u64::from(s.to_str().is_ok()));
    }

    fn tuple(&mut self, t: TupleData<'_>) {
        for value in t {
            match value {
                Ok(TupleValue::Null) => self.add(1),
                Ok(TupleValue::UnchangedToast) => self.add(2),
                Ok(TupleValue::Text(b)) | Ok(TupleValue::Binary(b)) => self.add(3 + b.len() as u64),
                Err(e) => self.add(1000 + e.offset() as u64),
            }
        }
    }
}

const CHANGE_TAGS: [u8; 7] = [
    RELATION_TAG,
    TYPE_TAG,
    INSERT_TAG,
    UPDATE_TAG,
    DELETE_TAG,
    TRUNCATE_TAG,
    MESSAGE_TAG,
];

fn changes(rng: &mut Rng, ctx: &ProtocolContext, out: &mut Vec<Model>) {
    for _ in 0..rng.below(4) + 1 {
        let tag = rng.pick(&CHANGE_TAGS);
        let mut change = Model::random_of(tag, rng, ctx);
        if let Model::LogicalMessage { transactional, .. } = &mut change {
            *transactional = true;
        }
        out.push(change);
    }
}

/// A random sequence of messages in an order pgoutput could send under `ctx` (which must be
/// outside a streamed block): transactions, streamed blocks ending in Stream Commit, Abort or
/// Prepare, two-phase transactions, non-transactional messages.
pub fn session(rng: &mut Rng, ctx: &ProtocolContext) -> Vec<Model> {
    let outside = ctx.with_in_stream(false);
    let inside = ctx.with_in_stream(true);
    let streaming = ctx.streaming() != Streaming::Off;
    let two_phase = ctx.proto_version() >= 3;
    let mut out = Vec::new();
    for _ in 0..rng.below(5) + 1 {
        match rng.below(4) {
            0 if streaming => {
                let xid = rng.xid();
                for block in 0..rng.below(2) + 1 {
                    out.push(Model::StreamStart {
                        xid,
                        first_segment: block == 0,
                    });
                    if block == 0 && rng.coin() {
                        out.push(Model::random_of(ORIGIN_TAG, rng, &inside));
                    }
                    changes(rng, &inside, &mut out);
                    out.push(Model::StreamStop);
                }
                let mut end = [STREAM_COMMIT_TAG, STREAM_ABORT_TAG, STREAM_PREPARE_TAG].to_vec();
                if !two_phase {
                    end.pop();
                }
                let tag = rng.pick(&end);
                out.push(Model::random_of(tag, rng, &outside));
            }
            1 if two_phase => {
                out.push(Model::random_of(BEGIN_PREPARE_TAG, rng, &outside));
                changes(rng, &outside, &mut out);
                out.push(Model::random_of(PREPARE_TAG, rng, &outside));
                let tag = rng.pick(&[COMMIT_PREPARED_TAG, ROLLBACK_PREPARED_TAG]);
                out.push(Model::random_of(tag, rng, &outside));
            }
            2 => out.push(Model::LogicalMessage {
                xid: None,
                transactional: false,
                lsn: rng.u64(),
                prefix: rng.name(8),
                content: rng.bytes(16),
            }),
            _ => {
                out.push(Model::random_of(BEGIN_TAG, rng, &outside));
                if rng.coin() {
                    out.push(Model::random_of(ORIGIN_TAG, rng, &outside));
                }
                changes(rng, &outside, &mut out);
                out.push(Model::random_of(COMMIT_TAG, rng, &outside));
            }
        }
    }
    out
}

/// pg_recvlogical's output: each message, then '\n'.
pub fn recvlogical_file(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut file = Vec::new();
    for m in messages {
        file.extend_from_slice(m);
        file.push(b'\n');
    }
    file
}

/// The fixture framing: a big-endian u32 length, then the message.
pub fn framed_file(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut file = Vec::new();
    for m in messages {
        write_frame(m, &mut file).unwrap();
    }
    file
}
