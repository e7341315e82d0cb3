//! The message type bytes of pgoutput's protocol (`LogicalRepMsgType` in
//! replication/logicalproto.h) and their names: a leaf that every message's module and the
//! dispatch in `message.rs` read, and that depends on nothing.

/// Begin, `'B'`.
pub const BEGIN_TAG: u8 = b'B';
/// Commit, `'C'`.
pub const COMMIT_TAG: u8 = b'C';
/// Origin, `'O'`.
pub const ORIGIN_TAG: u8 = b'O';
/// Relation, `'R'`.
pub const RELATION_TAG: u8 = b'R';
/// Type, `'Y'`.
pub const TYPE_TAG: u8 = b'Y';
/// Insert, `'I'`.
pub const INSERT_TAG: u8 = b'I';
/// Update, `'U'`.
pub const UPDATE_TAG: u8 = b'U';
/// Delete, `'D'`.
pub const DELETE_TAG: u8 = b'D';
/// Truncate, `'T'`.
pub const TRUNCATE_TAG: u8 = b'T';
/// Message (logical decoding message), `'M'`.
pub const MESSAGE_TAG: u8 = b'M';
/// Stream Start, `'S'` (protocol 2).
pub const STREAM_START_TAG: u8 = b'S';
/// Stream Stop, `'E'` (protocol 2).
pub const STREAM_STOP_TAG: u8 = b'E';
/// Stream Commit, `'c'` (protocol 2).
pub const STREAM_COMMIT_TAG: u8 = b'c';
/// Stream Abort, `'A'` (protocol 2).
pub const STREAM_ABORT_TAG: u8 = b'A';
/// Begin Prepare, `'b'` (protocol 3).
pub const BEGIN_PREPARE_TAG: u8 = b'b';
/// Prepare, `'P'` (protocol 3).
pub const PREPARE_TAG: u8 = b'P';
/// Commit Prepared, `'K'` (protocol 3).
pub const COMMIT_PREPARED_TAG: u8 = b'K';
/// Rollback Prepared, `'r'` (protocol 3).
pub const ROLLBACK_PREPARED_TAG: u8 = b'r';
/// Stream Prepare, `'p'` (protocol 3).
pub const STREAM_PREPARE_TAG: u8 = b'p';

/// Every message type of pgoutput (PostgreSQL 15's proto.c) with the name protocol.sgml gives
/// it: transaction and row messages first, then those of streaming and two-phase commit.
pub const MESSAGE_TYPES: [(u8, &str); 19] = [
    (BEGIN_TAG, "Begin"),
    (ORIGIN_TAG, "Origin"),
    (RELATION_TAG, "Relation"),
    (TYPE_TAG, "Type"),
    (INSERT_TAG, "Insert"),
    (UPDATE_TAG, "Update"),
    (DELETE_TAG, "Delete"),
    (TRUNCATE_TAG, "Truncate"),
    (MESSAGE_TAG, "Message"),
    (COMMIT_TAG, "Commit"),
    (STREAM_START_TAG, "Stream Start"),
    (STREAM_STOP_TAG, "Stream Stop"),
    (STREAM_COMMIT_TAG, "Stream Commit"),
    (STREAM_ABORT_TAG, "Stream Abort"),
    (BEGIN_PREPARE_TAG, "Begin Prepare"),
    (PREPARE_TAG, "Prepare"),
    (COMMIT_PREPARED_TAG, "Commit Prepared"),
    (ROLLBACK_PREPARED_TAG, "Rollback Prepared"),
    (STREAM_PREPARE_TAG, "Stream Prepare"),
];

/// The name protocol.sgml gives the message type `tag`; `None` for a byte that is none.
pub fn message_type_name(tag: u8) -> Option<&'static str> {
    MESSAGE_TYPES
        .iter()
        .find(|(t, _)| *t == tag)
        .map(|(_, name)| *name)
}
