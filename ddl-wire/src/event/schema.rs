//! The event schema: the one definition of a DDL event's fields. Each line names a field of
//! [`DdlEvent`], its Rust type and its column of `ddl_sync.events`; the column's SQL type and
//! whether it may be NULL follow from the Rust type (`Option<T>`: nullable). From it come the
//! struct, [`EVENT_COLUMNS`] and the conversions every reader and writer of the row uses: the
//! plugin's tuple (ddl-decode), the subscriber's reading of the row (ddl-server's `event_row`),
//! the pgoutput reader ([`super::EventsRelation`]) and ddl-dump's JSON.
//!
//! To add a field: a line here (at the end: `ALTER TABLE ... ADD COLUMN` puts a column last),
//! the column in ddl-apply's `sql/catalog.sql` and the upgrade script, what fills it (usually
//! [`DdlEvent::from_record`]) and what uses it. A field a publisher of an older version does
//! not send must be an `Option`: its column is NULL there, or missing.

use super::value::{FieldType, Lsn, Value};
use super::{EventColumn, EventError};

/// Defines [`DdlEvent`], [`EVENT_COLUMNS`] and the conversions between them from one list.
macro_rules! event_schema {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty = $column:literal;
    )*) => {
        /// One DDL statement as a row of `ddl_sync.events`: what a consumer of a `ddl_pgoutput`
        /// stream receives, and what a subscriber replays.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct DdlEvent<'a> {
            $($(#[doc = $doc])* pub $field: $ty,)*
        }

        /// The columns of `ddl_sync.events` that carry an event, in [`DdlEvent`] field order.
        pub const EVENT_COLUMNS: &[EventColumn] = DdlEvent::<'static>::COLUMNS;

        /// Each field's position in [`EVENT_COLUMNS`].
        #[allow(non_camel_case_types)]
        enum At {
            $($field,)*
        }

        impl<'a> DdlEvent<'a> {
            /// [`EVENT_COLUMNS`] (a const of this impl, where the fields' lifetime is known).
            const COLUMNS: &'static [EventColumn] = &[$(
                EventColumn {
                    name: $column,
                    field: stringify!($field),
                    ty: <$ty as FieldType<'a>>::SQL,
                    nullable: <$ty as FieldType<'a>>::NULLABLE,
                },
            )*];

            /// The value of each column of [`EVENT_COLUMNS`], in its order (`None`: NULL).
            pub fn values(&self) -> [Option<Value<'a>>; EVENT_COLUMNS.len()] {
                [$(self.$field.to_value(),)*]
            }

            /// The event whose column values `value` gives, asked for each column of
            /// [`EVENT_COLUMNS`] with its position there (`None`: NULL, or a column the row
            /// does not have). A value of the wrong type, or NULL where the column may not be,
            /// is an error that names the column.
            pub fn from_values(
                mut value: impl FnMut(
                    usize,
                    &'static EventColumn,
                ) -> Result<Option<Value<'a>>, EventError>,
            ) -> Result<DdlEvent<'a>, EventError> {
                Ok(DdlEvent {
                    $($field: {
                        let at = At::$field as usize;
                        let column = &EVENT_COLUMNS[at];
                        <$ty as FieldType>::from_value(column, value(at, column)?)?
                    },)*
                })
            }
        }
    };
}

event_schema! {
    /// The LSN of the statement's message on the node that sent it.
    lsn: Lsn = "lsn";
    /// The system identifier of the node where the statement first ran.
    origin_sysid: u64 = "origin_sysid";
    /// The statement's LSN on that node: `(origin_sysid, origin_lsn)` names it everywhere.
    origin_lsn: Lsn = "origin_lsn";
    /// The xid of the (sub)transaction that ran it.
    xid: u64 = "xid";
    /// Sent by the client, not run from inside a function or DO block.
    top_level: bool = "top_level";
    /// Replayed from another node and passed on.
    forwarded: bool = "forwarded";
    /// The kind token (`table`, `index`, ...).
    kind: &'a str = "kind";
    /// The SQL dialect (`postgres`, `tsql`, ...).
    dialect: &'a str = "dialect";
    /// The command tag (`CREATE TABLE`, ...).
    command_tag: &'a str = "command_tag";
    /// The object's schema, empty when it has none.
    schema: &'a str = "schema_name";
    /// The schema-qualified object identity.
    object_identity: &'a str = "object_identity";
    /// The statement.
    sql: &'a str = "sql";
    /// The search_path it ran with.
    search_path: &'a str = "search_path";
    /// The role it ran as.
    role: &'a str = "role_name";
    /// The session user.
    session_user: &'a str = "session_user_name";
    /// The database it ran in.
    database: &'a str = "database_name";
    /// The tables the statement created or changed, as `CREATE TABLE` statements of the columns
    /// a row has (see ddl-wire's record format), empty when none; `None` when the publisher
    /// does not send them (extension 0.3.0 and older).
    tables: Option<&'a str> = "tables";
    /// The session's settings that change what the statement means, one `name=value` per
    /// line, empty when none; `None` as for `tables`.
    settings: Option<&'a str> = "settings";
    /// What the statement's role could do on the node that ran it (see
    /// [`crate::describe_role_rights`]); `None` when not known (an older publisher).
    role_rights: Option<&'a str> = "role_rights";
    /// What the statement bound by name on the node that ran it ([`crate::parse_name_set`]
    /// reads it); `None` when not known (an older publisher).
    bindings: Option<&'a str> = "bindings";
    /// The node whose capture sealed the record: the origin itself, or in a cascade the last
    /// node that replayed the statement and passed it on; `None` from an older publisher.
    capturing_sysid: Option<u64> = "capturing_sysid";
    /// The stored generated columns of the table the statement made or changed whose values
    /// this stream sends (PostgreSQL 18's `publish_generated_columns`, or a column list naming
    /// them), as a set of names ([`crate::parse_name_set`]), empty when none. Not part of the
    /// sealed record: the plugin fills it for its own session's publications, as of the
    /// statement. `None` from an older publisher.
    sent_generated_columns: Option<&'a str> = "sent_generated_columns";
    /// What the statement made, as JSON ([`crate::Description`]): the record's, made by the
    /// capture from the catalogs right after the statement, and a subscriber compares what its
    /// replay made. `None` for a kind not described yet, or from an older publisher.
    description: Option<&'a str> = "description";
}

impl<'a> DdlEvent<'a> {
    /// The event of `record`, decoded from the message at `lsn`. A record captured on this node
    /// names its origin LSN as 0: the statement's LSN is the message's own.
    pub fn from_record(record: &crate::DdlRecord<'a>, lsn: Lsn) -> DdlEvent<'a> {
        use crate::RecordFlags;
        let origin_lsn = match record.origin.original_lsn {
            0 => lsn,
            original => Lsn(original),
        };
        DdlEvent {
            lsn,
            origin_sysid: record.origin.original_sysid,
            origin_lsn,
            xid: u64::from(record.xid),
            top_level: record.flags.contains(RecordFlags::TOP_LEVEL),
            forwarded: record.flags.contains(RecordFlags::FORWARDED),
            kind: record.kind,
            dialect: record.dialect,
            command_tag: record.command_tag,
            schema: record.schema,
            object_identity: record.object_identity,
            sql: record.sql,
            search_path: record.search_path,
            role: record.role,
            session_user: record.session_user,
            database: record.database,
            tables: Some(record.tables),
            settings: Some(record.settings),
            // Not known for a record written before version 4: NULL, not "no rights".
            role_rights: (!record.role_rights.is_empty()).then_some(record.role_rights),
            bindings: record.bindings,
            capturing_sysid: Some(record.origin.capturing_sysid),
            // The plugin's, from its catalogs and for its session (ddl-decode's `events`).
            sent_generated_columns: None,
            description: (!record.description.is_empty()).then_some(record.description),
        }
    }
}

/// The columns of `ddl_sync.events` that carry an event, as `(name, SQL type)`.
pub fn event_columns() -> impl Iterator<Item = (&'static str, &'static str)> {
    EVENT_COLUMNS.iter().map(|c| (c.name, c.ty.sql_name()))
}
