//! A zero-copy codec for `pgoutput`, PostgreSQL's logical replication protocol (protocol
//! versions 1 to 4, every message), and readers for the files that capture it.
//!
//! # Overview
//!
//! - [`Message::parse`] reads one message into a [`Message`] whose bodies borrow from the input:
//!   names are [`PgStr`]s, column values are [`TupleValue`]s over the original bytes, and the
//!   columns of a Relation ([`Columns`]) and the values of a tuple ([`TupleData`]) are iterators
//!   that read the bytes on demand. Parsing allocates nothing.
//! - [`Message::encode`] writes a parsed message back, byte for byte. The `write_*` functions
//!   ([`write_insert`], [`write_relation`], ...) write messages from values, one per message
//!   type, as proto.c's `logicalrep_write_*` do.
//! - The bytes alone do not say how to read some messages: changes inside a streamed block start
//!   with a transaction id, and Stream Abort grows two fields under `streaming = parallel`. A
//!   [`ProtocolContext`] says so. [`StreamDecoder`] keeps it up to date over a whole stream and
//!   refuses messages that cannot come where they do.
//! - [`RecvlogicalReader`] reads files written by pg_recvlogical, where messages have no
//!   length; [`FramedReader`] reads length-prefixed captures of
//!   `pg_logical_slot_peek_binary_changes`.
//! - Every failure is an [`Error`] that names the message type and the byte offset, and tells
//!   input that is cut short ([`Error::is_incomplete`]) from input that is wrong. No input makes
//!   any of this panic.
//!
//! # Example
//!
//! A publisher sends a Relation message once, then changes that refer to it by OID:
//!
//! ```
//! use ddl_wire::{
//!     write_insert, write_relation, Column, Message, PgStr, ProtocolContext, StreamDecoder,
//!     Streaming, TupleValue,
//! };
//!
//! # fn main() -> Result<(), ddl_wire::Error> {
//! // What pgoutput would send for `INSERT INTO public.t VALUES (42, NULL)`.
//! let columns = [
//!     Column::new(1, PgStr::from(c"id"), 23, -1),   // int4, replica identity key
//!     Column::new(0, PgStr::from(c"note"), 25, -1), // text
//! ];
//! let (mut relation, mut insert) = (Vec::new(), Vec::new());
//! write_relation(None, 16384, c"public".into(), c"t".into(), b'd', &columns, &mut relation)?;
//! write_insert(None, 16384, &[TupleValue::Text(b"42"), TupleValue::Null], &mut insert)?;
//!
//! // A consumer that asked for proto_version '1'.
//! let mut decoder = StreamDecoder::new(ProtocolContext::new(1, Streaming::Off)?);
//! let Message::Relation(rel) = decoder.decode(&relation)? else { unreachable!() };
//! let Message::Insert(row) = decoder.decode(&insert)? else { unreachable!() };
//! assert_eq!(row.rel_id(), rel.rel_id());
//!
//! for (column, value) in rel.columns().zip(row.tuple()) {
//!     let (column, value) = (column?, value?);
//!     let name = column.name(); // a PgStr: Display is lossy UTF-8
//!     match value {
//!         TupleValue::Text(text) => println!("{name} = {}", String::from_utf8_lossy(text)),
//!         TupleValue::Null => println!("{name} is null"),
//!         _ => {}
//!     }
//! }
//!
//! // Parsed messages encode back to the same bytes.
//! let mut again = Vec::new();
//! Message::Insert(row).encode(&mut again);
//! assert_eq!(again, insert);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod begin;
mod begin_prepare;
mod commit;
mod commit_prepared;
mod context;
mod decoder;
mod delete;
mod description;
mod error;
mod event;
mod file_reader;
mod framed;
mod insert;
mod logical_message;
mod message;
mod name_set;
mod origin;
mod pg_str;
mod prepare;
mod primitive;
mod record;
mod recvlogical;
mod relation;
mod role_rights;
mod rollback_prepared;
mod sequence;
mod stream_abort;
mod stream_commit;
mod stream_prepare;
mod stream_start;
mod stream_stop;
mod tags;
mod truncate;
mod tuple;
mod typ;
mod update;

pub use crate::{
    begin::{write_begin, BeginBody},
    begin_prepare::{write_begin_prepare, BeginPrepareBody},
    commit::{write_commit, CommitBody},
    commit_prepared::{write_commit_prepared, CommitPreparedBody},
    context::{ProtocolContext, Streaming},
    decoder::StreamDecoder,
    delete::{write_delete, DeleteBody},
    description::{
        differences, Action, ColumnDescription, Description, DescriptionError, Difference,
        ObjectDescription, Part, TableDescription, DESCRIPTION_VERSION,
    },
    error::{Error, ErrorKind},
    event::{
        event_columns, DdlEvent, EventColumn, EventError, EventErrorKind, EventsRelation, Lsn,
        SqlType, Value, EVENTS_SCHEMA, EVENTS_TABLE, EVENT_COLUMNS,
    },
    framed::{write_frame, FramedReader},
    insert::{write_insert, InsertBody},
    logical_message::{write_logical_message, LogicalMessageBody},
    message::Message,
    name_set::{encode_name_set, parse_name_set, NameSetError},
    origin::{write_origin, OriginBody},
    pg_str::PgStr,
    prepare::{write_prepare, PrepareBody, PreparedTxn},
    record::{
        DdlRecord, RecordError, RecordErrorKind, RecordFlags, RecordOrigin, MEANING_SETTINGS,
        MEANING_SETTING_DEFAULTS, OLDEST_RECORD_FORMAT_VERSION, RECORD_FORMAT_VERSION,
        RECORD_PREFIX, RECORD_TAG_LEN,
    },
    recvlogical::RecvlogicalReader,
    relation::{write_relation, Column, Columns, RelationBody},
    role_rights::{describe_role_rights, has_every_right, rights_beyond, ROLE_ATTRIBUTES},
    rollback_prepared::{write_rollback_prepared, RollbackPreparedBody},
    stream_abort::{write_stream_abort, StreamAbortBody},
    stream_commit::{write_stream_commit, StreamCommitBody},
    stream_prepare::{write_stream_prepare, StreamPrepareBody},
    stream_start::{write_stream_start, StreamStartBody},
    stream_stop::write_stream_stop,
    tags::{
        message_type_name, BEGIN_PREPARE_TAG, BEGIN_TAG, COMMIT_PREPARED_TAG, COMMIT_TAG,
        DELETE_TAG, INSERT_TAG, MESSAGE_TAG, MESSAGE_TYPES, ORIGIN_TAG, PREPARE_TAG, RELATION_TAG,
        ROLLBACK_PREPARED_TAG, STREAM_ABORT_TAG, STREAM_COMMIT_TAG, STREAM_PREPARE_TAG,
        STREAM_START_TAG, STREAM_STOP_TAG, TRUNCATE_TAG, TYPE_TAG, UPDATE_TAG,
    },
    truncate::{write_truncate, RelIds, TruncateBody},
    tuple::{OldTupleKind, TupleData, TupleValue},
    typ::{write_type, TypeBody},
    update::{write_update, UpdateBody},
};

/// Runs the README's examples as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
