//! The capture proper: event triggers that record each DDL statement once it has run.
//!
//! The `ddl_sync` extension installs them (ENABLE ALWAYS, so that DDL replayed by an apply
//! worker, which runs with session_replication_role = replica, is captured for cascades):
//!
//! ```sql
//! CREATE FUNCTION ddl_sync.capture_sql_drop() RETURNS event_trigger
//!     LANGUAGE c AS '$libdir/ddl_pgoutput', 'ddl_sync_capture_sql_drop';
//! CREATE FUNCTION ddl_sync.capture_ddl_command_end() RETURNS event_trigger
//!     LANGUAGE c AS '$libdir/ddl_pgoutput', 'ddl_sync_capture_ddl_command_end';
//! ```
//!
//! Why event triggers and not only the hook: PostgreSQL's own command collection
//! (`pg_event_trigger_ddl_commands()`, `pg_event_trigger_dropped_objects()`) knows the object a
//! statement really changed after name resolution: its class and OID, schema, identity, whether
//! it is temporary, and whether an extension script made it. The hook supplies what the
//! triggers lack: the statement's own text and whether the client sent it. For a DROP and the
//! commonest CREATE and ALTER TABLE, PostgreSQL's object access hook says the same for less
//! (`objects.rs`, `direct.rs`), and the collection is not read.

use crate::rules::Verdict;
use crate::statement::{self, Dropped, Statement};
use crate::{
    collection, direct, emit, forget, keyless, objects, partition_bound, rules, shape, stats,
    volatile,
};
use ddl_filter::{classify_object, Classification};
use ddl_wire::{Action, Description, ObjectDescription, DESCRIPTION_VERSION};
use ddl_wire::{DdlRecord, RecordFlags, RecordOrigin, RECORD_TAG_LEN};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::ffi::CStr;
use std::rc::Rc;

use ddl_server::function_info_v1;

function_info_v1!(pg_finfo_ddl_sync_capture_sql_drop);
function_info_v1!(pg_finfo_ddl_sync_capture_ddl_command_end);

/// `sql_drop`: forget the rules about what the statement dropped (the object access hook
/// has kept, for `ddl_command_end`, what it names: see `objects.rs`).
///
/// # Safety
/// Called by PostgreSQL as an event trigger function.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn ddl_sync_capture_sql_drop(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: the caller's promise: PostgreSQL's call frame.
    unsafe { ddl_server::event_trigger::data(fcinfo) };
    // SAFETY: an event trigger runs inside its statement's transaction.
    let rules = unsafe { rules::PublicationRules::current() };
    // SAFETY: as above.
    if rules.is_empty() && !unsafe { forget::anything_to_forget() } {
        return pg_sys::Datum::from(0usize);
    }
    // Seen by the hook, unless the library was loaded after the statement began.
    let dropped = statement::with_innermost(|s| s.dropped.clone()).unwrap_or_else(dropped_objects);
    // SAFETY: in the sql_drop trigger, inside the statement's transaction.
    unsafe { forget::forget(&rules, &dropped) };
    pg_sys::Datum::from(0usize)
}

/// `ddl_command_end`: capture the innermost statement.
///
/// # Safety
/// Called by PostgreSQL as an event trigger function.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn ddl_sync_capture_ddl_command_end(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: the caller's promise: PostgreSQL's call frame.
    let data = unsafe { ddl_server::event_trigger::data(fcinfo) };
    // Statements of an extension script are the CREATE/ALTER EXTENSION's business.
    // SAFETY: a backend global, true while an extension script runs.
    if !unsafe { pg_sys::creating_extension } {
        // SAFETY: the trigger's EventTriggerData.
        let tag = unsafe { ddl_server::event_trigger::tag_name(data) };
        // SAFETY: in the ddl_command_end trigger, which fires inside the statement.
        unsafe { capture(tag) };
    }
    pg_sys::Datum::from(0usize)
}

/// The object a statement changed, from PostgreSQL's command collection.
pub(crate) struct Target {
    pub class_id: u32,
    pub object_id: u32,
    pub schema: String,
    pub identity: String,
    pub object_type: String,
    pub temporary: bool,
    /// The statement to record instead of the client's (see [`partly_temporary_drop`] and
    /// `definition`).
    pub recorded: Option<Recorded>,
    /// PostgreSQL's `CollectedCommand` of the statement (its `pg_ddl_command`), when the
    /// command collection reported one: valid until the statement ends.
    pub command: *mut pg_sys::CollectedCommand,
    /// An ALTER TABLE's subcommands that may compute values (`volatile.rs`).
    pub subcommands: Vec<volatile::Subcommand>,
    /// Every relation the command collection reported for the statement (the record's
    /// `tables` describes those that are tables).
    pub relations: Vec<u32>,
    /// The statement made the target, a table, without parents or foreign keys (`direct.rs`).
    pub made_alone: bool,
    /// The OID of the target's schema when known without a lookup by name, else 0.
    pub namespace_id: u32,
}

/// A statement recorded instead of the client's text, in PostgreSQL's own syntax whatever the
/// session's dialect. The publications' rules judge the client's statement.
#[derive(Clone)]
pub(crate) struct Recorded {
    /// Its command tag, when it is not the client's statement's.
    pub tag: Option<&'static str>,
    pub sql: String,
    /// The record's `tables`, when the tables do not exist yet to be described.
    pub tables: Option<String>,
    /// What `sql` names besides what the statement bound (`ddl_server::bindings`), when its
    /// objects do not exist yet to be read.
    pub uses: Vec<pg_sys::ObjectAddress>,
}

/// Captures the statement that ended with command tag `tag`.
///
/// # Safety
/// In a `ddl_command_end` event trigger, inside its statement (which the hook runs, if it is
/// installed: then the innermost entry of the statement stack is it).
unsafe fn capture(tag: &str) {
    if statement::with_innermost(|s| s.captured).unwrap_or(false) {
        return;
    }
    // Most statements of a database without DDL publications stop here, having read one small
    // catalog: nothing below is free (the command collection computes every object's identity).
    // SAFETY: inside the statement's transaction.
    let rules = unsafe { rules::PublicationRules::current() };
    if rules.none_enabled() {
        return;
    }
    let Some(target) = target(tag) else { return };
    // SAFETY: the caller's promise; `target.command` comes from this statement's collection.
    unsafe { capture_target(&rules, tag, &target) };
}

/// Writes the record of the innermost statement, which changed `target`, when a publication
/// takes it.
///
/// # Safety
/// Runs in a backend inside a transaction, while the hook (if installed) runs the statement;
/// `target.command` is null or the statement's collected command.
pub(crate) unsafe fn capture_target(rules: &rules::PublicationRules, tag: &str, target: &Target) {
    if target.temporary || is_system_schema(&target.schema) {
        return;
    }
    let kind = match classify_object(tag, object_type(target)) {
        Classification::Replicated(kind) => kind,
        Classification::NotReplicated(_) => return,
    };
    // Without the hook (ddl_pgoutput not preloaded) the statement text is unknown: then say so,
    // but only where a publication would have wanted the statement.
    // SAFETY: the caller's promise: the innermost statement runs, its query string is valid.
    let text = statement::with_innermost(|s| (unsafe { statement_text(s) }, s.top_level));
    let (text, top_level) = text.unwrap_or_default();
    let recorded = target.recorded.clone().or_else(|| {
        // SAFETY: the caller's promise, for the statement and for `target.command`.
        unsafe { evaluated_partition_bound(tag, target) }
    });
    let session = Session::current();
    // The session's replication origin: an apply worker's.
    let forwarded = ddl_server::versions::session_origin() != 0;
    let mut flags = RecordFlags::TRANSACTIONAL | RecordFlags::DEFAULTS_LEFT_OUT;
    if top_level {
        flags = flags | RecordFlags::TOP_LEVEL;
    }
    if forwarded {
        flags = flags | RecordFlags::FORWARDED;
    }
    // SAFETY: read from the control file at startup.
    let sysid = unsafe { pg_sys::GetSystemIdentifier() };
    // Replayed by ddl_sync's apply trigger: keep the key of the node where it first ran.
    let (original_sysid, original_lsn) = if forwarded {
        crate::replay_origin::get().unwrap_or((sysid, 0))
    } else {
        (sysid, 0)
    };
    let namespace_id = if target.class_id == u32::from(pg_sys::NamespaceRelationId) {
        target.object_id
    } else if target.namespace_id != 0 {
        target.namespace_id
    } else {
        namespace_oid(&target.schema)
    };
    // SAFETY: inside the statement's transaction (a DDL statement has its xid already).
    let xid = u32::from(unsafe { pg_sys::GetCurrentTransactionId() });
    let record = DdlRecord {
        flags,
        xid,
        kind: kind.token(),
        class_id: target.class_id,
        object_id: target.object_id,
        namespace_id,
        origin: RecordOrigin {
            capturing_sysid: sysid,
            original_sysid,
            original_lsn,
        },
        dialect: &session.dialect,
        command_tag: tag,
        schema: &target.schema,
        object_identity: &target.identity,
        sql: &text,
        search_path: &session.search_path,
        settings: &session.settings,
        role_rights: &session.role_rights,
        role: &session.role,
        session_user: &session.session_user,
        database: &session.database,
        tables: "",
        bindings: None,
        renamed_from: "",
        description: "",
        tag: [0; RECORD_TAG_LEN],
    };
    let verdicts = rules.verdicts(&record);
    if !verdicts.iter().any(|(_, v)| *v == Verdict::Takes) {
        log_verdicts(&record, &verdicts);
        stats::count_capture(&verdicts);
        return;
    }
    if record.sql.is_empty() {
        warning!(
            "ddl_sync: {tag} not captured: ddl_pgoutput is not in shared_preload_libraries, so \
             the statement's text is unknown"
        );
        return;
    }
    if tag == "ALTER TABLE" && !forwarded {
        // May refuse the statement, or plan the replication of its new values.
        // SAFETY: in the statement's trigger; the subcommands are its own.
        unsafe { volatile::check(pg_sys::Oid::from(target.object_id), &target.subcommands) };
    }
    if !forwarded {
        keyless::consider(target);
    }
    let renamed_from = statement::with_innermost(|s| s.renamed_from.clone())
        .flatten()
        .unwrap_or_default();
    let record = match &recorded {
        Some(recorded) => DdlRecord {
            dialect: "postgres",
            command_tag: recorded.tag.unwrap_or(tag),
            sql: &recorded.sql,
            renamed_from: &renamed_from,
            ..record
        },
        None => DdlRecord {
            renamed_from: &renamed_from,
            ..record
        },
    };
    // Not for a statement captured before it runs: its objects do not exist yet.
    let made = recorded.as_ref().is_none_or(|r| r.tables.is_none());
    let known = ddl_server::describe::Known {
        relation: (target.class_id == u32::from(pg_sys::RelationRelationId))
            .then(|| pg_sys::Oid::from(target.object_id)),
        made_alone: target.made_alone,
    };
    let description = if made { describe(&record, known) } else { None };
    // The target's columns, when the description has them, for the record's `tables`.
    let described_table = description
        .as_ref()
        .and_then(|d| d.objects.first())
        .filter(|o| {
            o.kind == "table" && o.action != Action::Dropped && o.identity == record.object_identity
        })
        .zip(known.relation)
        .map(|(object, relid)| (u32::from(relid), object));
    let tables = match recorded.as_ref().and_then(|r| r.tables.clone()) {
        Some(tables) => tables,
        // SAFETY: in the statement's transaction, the relations it reported.
        None => unsafe { shape::tables(&target.relations, described_table) },
    };
    let mut uses = recorded
        .as_ref()
        .map(|r| r.uses.clone())
        .unwrap_or_default();
    // SAFETY: in the statement's transaction, after it ran (or, captured before, with what it
    // will make in `uses`).
    let bindings = unsafe { bindings(&mut uses) };
    let description = description.map(|d| d.to_json());
    let record = DdlRecord {
        tables: &tables,
        bindings: Some(&bindings),
        description: description.as_deref().unwrap_or(""),
        ..record
    };
    emit::emit_record(&record);
    log_verdicts(&record, &verdicts);
    stats::count_capture(&verdicts);
}

/// The record's `description`: what the statement made, as JSON, from the catalogs right
/// after it; `None` when it makes nothing described. Made here, not by the plugin: this
/// backend's catalog caches hold what the statement just touched, which a walsender would
/// rebuild from its historic snapshot (most of a description's cost there), and the
/// statement's locks are this backend's own.
fn describe(record: &DdlRecord<'_>, known: ddl_server::describe::Known) -> Option<Description> {
    match ddl_server::describe::statement(
        record.command_tag,
        record.object_identity,
        record.renamed_from,
        known,
    ) {
        Ok(description) => with_dropped_dependents(description),
        Err(e) => {
            warning!(
                "ddl_sync: {} {} is replicated without its description, which subscribers \
                 then cannot verify: {e}",
                record.command_tag,
                record.object_identity
            );
            None
        }
    }
}

/// The record's `bindings`: what the innermost statement bound by name (the objects it made
/// or changed use, the functions it ran), with `uses`.
///
/// # Safety
/// In the statement's transaction.
// Not inlined: `cargo xtask bench instructions` profiles it.
#[inline(never)]
unsafe fn bindings(uses: &mut Vec<pg_sys::ObjectAddress>) -> String {
    let (holders, ran) =
        statement::with_innermost(|s| (s.holders.clone(), s.ran.clone())).unwrap_or_default();
    // SAFETY: the caller's promise.
    uses.extend(unsafe { ddl_server::bindings::referenced(&holders) });
    uses.extend(ran.into_iter().map(|function| pg_sys::ObjectAddress {
        classId: pg_sys::ProcedureRelationId,
        objectId: function,
        objectSubId: 0,
    }));
    // SAFETY: the caller's promise.
    ddl_wire::encode_name_set(
        uses.iter()
            .filter_map(|o| unsafe { ddl_server::bindings::identity(o) }),
    )
}

/// DEBUG1: which publications took the statement, and which rule kept it from the others.
fn log_verdicts(record: &DdlRecord<'_>, verdicts: &[(pg_sys::Oid, Verdict)]) {
    if !ddl_server::log::interesting(PgLogLevel::DEBUG1) {
        return;
    }
    let name = |oid: pg_sys::Oid| {
        // SAFETY: a syscache lookup (missing_ok), in the capture's transaction.
        let name = unsafe { pg_sys::get_publication_name(oid, true) };
        if name.is_null() {
            format!("{oid:?}")
        } else {
            // SAFETY: a NUL-terminated name from the catalog.
            unsafe { ddl_server::text::utf8_ptr(name) }
        }
    };
    for (publication, verdict) in verdicts {
        let publication = name(*publication);
        let (tag, identity) = (record.command_tag, record.object_identity);
        match verdict {
            Verdict::Takes => {
                debug1!("ddl_sync: captured {tag} {identity} for publication \"{publication}\"")
            }
            Verdict::Filtered { row, .. } if *row == pg_sys::InvalidOid => debug1!(
                "ddl_sync: {tag} {identity} filtered for publication \"{publication}\": none of \
                 its enabled publication_sync rows applies"
            ),
            Verdict::Filtered { row, rule: None } => debug1!(
                "ddl_sync: {tag} {identity} filtered for publication \"{publication}\" by the \
                 kinds of publication_sync row {row:?}"
            ),
            Verdict::Filtered {
                row,
                rule: Some(rule),
            } => debug1!(
                "ddl_sync: {tag} {identity} filtered for publication \"{publication}\" by rule \
                 {rule} of publication_sync row {row:?}"
            ),
        }
    }
}

/// The target's object type for classification. PostgreSQL reports a domain as `type`; here it
/// is `domain`, so that COMMENT ON DOMAIN is of kind domain like every other domain statement
/// (the replay's `object.rs` in ddl-apply resolves it the same way, and must agree).
fn object_type(target: &Target) -> &str {
    let is_domain = target.class_id == u32::from(pg_sys::TypeRelationId)
        // SAFETY: a syscache lookup ('\0' for no such type), in the capture's transaction.
        && unsafe { pg_sys::get_typtype(pg_sys::Oid::from(target.object_id)) } as u8
            == pg_sys::TYPTYPE_DOMAIN;
    if is_domain {
        "domain"
    } else {
        &target.object_type
    }
}

/// The object of the statement: the `ddl_command_end` row with the statement's own tag (a
/// CREATE TABLE also reports the sequences and indexes it made), else the first, else what it
/// dropped. Reads the command collection: in a `ddl_command_end` event trigger only (PostgreSQL's
/// ERROR elsewhere).
fn target(tag: &str) -> Option<Target> {
    // SAFETY: in the ddl_command_end trigger of the innermost statement, which has run.
    if let Some(target) = statement::with_innermost(|s| unsafe { direct::target(tag, s) }).flatten()
    {
        return Some(target);
    }
    let mut first = None;
    let mut own: Option<Target> = None;
    let mut relations = Vec::new();
    let mut subcommands = Vec::new();
    let each = |row: &collection::Row| {
        if row.bool(c"in_extension") {
            return;
        }
        let class_id = row.oid(c"classid");
        let object_id = row.oid(c"objid");
        if class_id == u32::from(pg_sys::RelationRelationId) {
            relations.push(object_id);
        }
        let is_own = row.text_is(c"command_tag", tag);
        // PostgreSQL collects an ALTER TABLE in parts, one more after each statement it runs
        // on the way (the sequence of a serial column): its subcommands are in all of them.
        if is_own && tag == "ALTER TABLE" && own.as_ref().is_none_or(|o| o.object_id == object_id) {
            // SAFETY: the row's collected command, valid until the statement ends.
            subcommands.extend(unsafe { volatile::collected(row.pointer(c"command").cast()) });
        }
        if own.is_some() || (!is_own && first.is_some()) {
            return;
        }
        let schema = row.text(c"schema_name");
        let found = Target {
            class_id,
            object_id,
            temporary: schema.starts_with("pg_temp"),
            schema,
            identity: row.text(c"object_identity"),
            object_type: row.text(c"object_type"),
            recorded: None,
            command: row.pointer(c"command").cast(),
            subcommands: Vec::new(),
            relations: Vec::new(),
            made_alone: false,
            namespace_id: 0,
        };
        if is_own {
            own = Some(found);
        } else {
            first = Some(found);
        }
    };
    // A DROP collects no command (ProcessUtilitySlow): what it dropped is its target.
    if !statement::with_innermost(|s| s.drop_stmt().is_some()).unwrap_or(false) {
        // SAFETY: in the ddl_command_end trigger, inside its statement's transaction.
        unsafe { collection::for_each_row(collection::Collection::Commands, each) };
    }
    own.or(first)
        .map(|target| Target {
            relations,
            subcommands,
            ..target
        })
        .or_else(|| statement::with_innermost(dropped_target).flatten())
}

/// `description` with the tables and views the statement dropped because they depended on
/// what it changed or dropped (`DROP ... CASCADE`, a column's dependent view): a subscriber
/// where they did not depend on it (a statement refused there, a view made otherwise) drops
/// them too, and CDC consumers learn that they went.
fn with_dropped_dependents(description: Option<Description>) -> Option<Description> {
    let dependents: Vec<ObjectDescription> = statement::with_innermost(|s| {
        s.dropped
            .iter()
            .filter(|d| !d.original && !d.identity.is_empty() && !d.temporary)
            .map(|d| ObjectDescription {
                action: Action::Dropped,
                kind: d.object_type.clone(),
                identity: d.identity.clone(),
                ..Default::default()
            })
            .collect()
    })
    .unwrap_or_default();
    if dependents.is_empty() {
        return description;
    }
    let mut description = description.unwrap_or(Description {
        version: DESCRIPTION_VERSION,
        objects: Vec::new(),
    });
    description.objects.extend(dependents);
    Some(description)
}

/// The target of a DROP: what it named, which the object access hook saw go. A statement that
/// drops several objects is captured once, named by the first of them that is permanent, and is
/// temporary only when everything it named was.
fn dropped_target(s: &mut Statement) -> Option<Target> {
    let mut named: Vec<&Dropped> = s.dropped.iter().filter(|d| d.original).collect();
    // In the order the statement names them (the hook sees dependents go first).
    if let Some(objects::Watch::On(originals)) = &s.watch {
        named.sort_by_key(|d| {
            let address = (d.class_id, d.object_id, d.sub_id);
            originals.iter().position(|o| *o == address)
        });
    }
    let permanent: Vec<&Dropped> = named.iter().copied().filter(|d| !d.temporary).collect();
    let first = permanent.first().or(named.first()).copied()?;
    Some(Target {
        class_id: first.class_id,
        object_id: first.object_id,
        schema: first.schema.clone(),
        identity: first.identity.clone(),
        object_type: first.object_type.clone(),
        temporary: permanent.is_empty(),
        recorded: (!permanent.is_empty() && permanent.len() < named.len()).then(|| Recorded {
            tag: None,
            sql: partly_temporary_drop(&permanent, s.cascade()),
            tables: None,
            uses: Vec::new(),
        }),
        command: std::ptr::null_mut(),
        subcommands: Vec::new(),
        relations: Vec::new(),
        made_alone: false,
        namespace_id: first.namespace_id,
    })
}

/// `DROP TABLE kept, tmp` where `tmp` is temporary: the client's text would fail on another node
/// (no `tmp` there), so the statement is recorded as the drop of its permanent objects alone,
/// named by their identities (already quoted and schema-qualified by PostgreSQL).
fn partly_temporary_drop(permanent: &[&Dropped], cascade: bool) -> String {
    let object_type = permanent[0].object_type.to_uppercase();
    let names: Vec<&str> = permanent.iter().map(|d| d.identity.as_str()).collect();
    let behavior = if cascade { " CASCADE" } else { "" };
    format!("DROP {object_type} {}{behavior}", names.join(", "))
}

/// What the statement dropped, from the command collection, for a statement the object access
/// hook did not see. In a `sql_drop` event trigger only (PostgreSQL's ERROR elsewhere).
fn dropped_objects() -> Vec<Dropped> {
    let mut out = Vec::new();
    let each = |row: &collection::Row| {
        let address = (row.oid(c"classid"), row.oid(c"objid"), row.int(c"objsubid"));
        out.push(Dropped::unnamed(address));
    };
    // SAFETY: in the sql_drop trigger, inside its statement's transaction.
    unsafe { collection::for_each_row(collection::Collection::Dropped, each) };
    out
}

/// Schemas whose objects are never replicated: they are the server's own or session-local.
fn is_system_schema(schema: &str) -> bool {
    matches!(schema, "pg_catalog" | "information_schema" | "pg_toast")
        || schema.starts_with("pg_temp")
        || schema.starts_with("pg_toast_temp")
}

/// The OID of the schema named `schema` (UTF-8), 0 when there is none.
fn namespace_oid(schema: &str) -> u32 {
    if schema.is_empty() {
        return 0;
    }
    // The name went to UTF-8 for the record; the catalog has it in the database encoding.
    ddl_server::relcache::namespace_named(schema).map_or(0, u32::from)
}

/// The statement's text in UTF-8 (records are UTF-8 whatever the server encoding).
///
/// # Safety
/// `s` is an entry of the statement stack whose statement still runs (its query string is
/// valid); in its transaction.
unsafe fn statement_text(s: &Statement) -> String {
    // SAFETY: the caller's promise: the NUL-terminated query string the hook was given.
    let query = unsafe { CStr::from_ptr(s.query) };
    // SAFETY: the caller's promise.
    let (start, end) = unsafe { statement_bytes(s) };
    if start == 0 && end == query.to_bytes().len() {
        // SAFETY: a server string.
        return statement::cut(&unsafe { ddl_server::text::utf8(query) }, -1, 0).to_string();
    }
    let part = std::ffi::CString::new(&query.to_bytes()[start..end]).unwrap_or_default();
    // SAFETY: bytes of a server string.
    let part = unsafe { ddl_server::text::utf8(&part) };
    statement::cut(&part, -1, 0).to_string()
}

/// Where the statement is in its query string, in bytes of the server encoding (which
/// stmt_location/len count: cut before converting).
///
/// # Safety
/// `s` is an entry of the statement stack whose statement still runs.
unsafe fn statement_bytes(s: &Statement) -> (usize, usize) {
    // SAFETY: the caller's promise: the NUL-terminated query string the hook was given.
    let len = unsafe { CStr::from_ptr(s.query) }.to_bytes().len();
    let start = usize::try_from(s.location).unwrap_or(0).min(len);
    let end = match usize::try_from(s.len) {
        Ok(0) | Err(_) => len,
        Ok(n) => start.saturating_add(n).min(len),
    };
    (start, end)
}

/// The statement with its partition bound as stored, when `tag` made or attached a partition
/// whose bound is not all literals (see [`partition_bound`]).
///
/// # Safety
/// While the hook runs the statement, in its transaction; `target.command` is null or the
/// statement's collected command.
unsafe fn evaluated_partition_bound(tag: &str, target: &Target) -> Option<Recorded> {
    if !matches!(tag, "CREATE TABLE" | "ALTER TABLE") || target.command.is_null() {
        return None;
    }
    // SAFETY: the caller's promise: the collected command, with the statement's tree.
    let parsetree = unsafe { (*target.command).parsetree };
    // SAFETY: the caller's promise: the innermost statement runs.
    let innermost = statement::with_innermost(|s| (s.query, unsafe { statement_bytes(s) }));
    let (query, (start, end)) = innermost?;
    // SAFETY: that statement's NUL-terminated query string, valid while it runs.
    let bytes = unsafe { CStr::from_ptr(query) }.to_bytes();
    // SAFETY: the statement's own tree, `table` what it made or changed, in its transaction.
    let bound = unsafe { partition_bound::evaluated(parsetree, target.object_id.into(), bytes) }?;
    if bound.start < start || bound.end > end {
        return None;
    }
    let mut spliced = bytes[start..bound.start].to_vec();
    spliced.extend_from_slice(&bound.text);
    spliced.extend_from_slice(&bytes[bound.end..end]);
    let spliced = std::ffi::CString::new(spliced).ok()?;
    // SAFETY: bytes in the database encoding: the query string's, and the stored bound
    // converted to it.
    let sql = unsafe { ddl_server::text::utf8(&spliced) };
    Some(Recorded {
        tag: None,
        sql: statement::cut(&sql, -1, 0).to_string(),
        tables: None,
        uses: Vec::new(),
    })
}

// The settings that, like the search_path, change what a statement means are
// `ddl_wire::MEANING_SETTINGS`, which the subscriber sets around the statement; [`SessionKey`]
// holds the variables behind each.

unsafe extern "C" {
    // PostgreSQL's variables behind `xmloption` (xml.h) and `lc_monetary` (pg_locale.h), which
    // pgrx's bindings leave out.
    static xmloption: std::ffi::c_int;
    static locale_monetary: *const std::ffi::c_char;
}

/// Who ran the statement, and how the session was set up.
struct Session {
    dialect: String,
    search_path: String,
    /// The record's `settings` (see `ddl_wire::MEANING_SETTINGS`).
    settings: String,
    role: String,
    /// What `role` may do here (`ddl_server::roles::rights`).
    role_rights: String,
    session_user: String,
    database: String,
}

/// What decides a [`Session`]'s content, read from the server's own variables (a few
/// comparisons, where reading the settings by name and converting them costs more than the
/// rest of a record): the session is read again when one of them, or a role's name
/// (`invalidation`), changes. `TimeZone` is the zone itself: a respelling of the same zone
/// ('utc' after 'UTC') keeps the first spelling, which means the same.
struct SessionKey {
    dialect: Vec<u8>,
    search_path: Vec<u8>,
    date_style: (i32, i32),
    interval_style: i32,
    standard_conforming_strings: bool,
    default_table_access_method: Vec<u8>,
    time_zone: usize,
    /// `backslash_quote`, `array_nulls`, `transform_null_equals`, `xmloption`.
    reading: (i32, bool, bool, i32),
    lc_monetary: Vec<u8>,
    /// Behind a static of guc.c: read by name (one hash lookup per statement).
    timezone_abbreviations: Vec<u8>,
    roles: (pg_sys::Oid, pg_sys::Oid),
    generation: u64,
}

/// The values of the settings that change how literals and comparisons are read, from their
/// variables.
///
/// # Safety
/// In a backend: the server's own variables.
unsafe fn reading() -> (i32, bool, bool, i32) {
    // SAFETY: the caller's promise.
    unsafe {
        (
            pg_sys::backslash_quote,
            pg_sys::Array_nulls,
            pg_sys::Transform_null_equals,
            xmloption,
        )
    }
}

/// `timezone_abbreviations`' value (empty when unset), read from its variable: the capture
/// compares it at every statement, and a lookup by name cost more than the rest of the
/// comparison (`versions::string_setting_variable`).
fn timezone_abbreviations<'a>() -> &'a [u8] {
    thread_local! {
        static VARIABLE: std::cell::OnceCell<Option<*mut *mut std::ffi::c_char>> =
            const { std::cell::OnceCell::new() };
    }
    const NAME: &CStr = c"timezone_abbreviations";
    // SAFETY: in a backend, with a NUL-terminated name.
    let find = || unsafe { ddl_server::versions::string_setting_variable(NAME) };
    match VARIABLE.with(|v| *v.get_or_init(find)) {
        // SAFETY: a built-in setting's variable (a C string or NULL), read in the backend
        // that owns it.
        Some(variable) => unsafe { bytes(*variable) },
        None => setting(NAME),
    }
}

/// The value of setting `name`, by name (empty when it is not defined). Valid until the next
/// GetConfigOption: the caller copies or compares it first.
fn setting<'a>(name: &std::ffi::CStr) -> &'a [u8] {
    // SAFETY: a NUL-terminated name; missing_ok: NULL for a setting that is not defined.
    unsafe { bytes(pg_sys::GetConfigOption(name.as_ptr(), true, false)) }
}

/// The bytes of a server string variable (empty when unset).
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn bytes<'a>(p: *const std::ffi::c_char) -> &'a [u8] {
    if p.is_null() {
        &[]
    } else {
        // SAFETY: the caller's promise.
        unsafe { CStr::from_ptr(p) }.to_bytes()
    }
}

/// Babelfish sessions parse T-SQL when this (otherwise unknown) setting says so.
fn dialect_setting<'a>() -> &'a [u8] {
    setting(c"babelfishpg_tsql.sql_dialect")
}

/// Whether the dialect setting is Babelfish's own, not a placeholder: any role may set an
/// unknown `babelfishpg_tsql.*` setting on a server without Babelfish, which parses the
/// statement as PostgreSQL all the same. Only a loaded library defines the variable. (Asked
/// when the setting has a value, so it exists.)
fn dialect_setting_is_defined() -> bool {
    // SAFETY: a NUL-terminated name; missing_ok.
    let flags =
        unsafe { pg_sys::GetConfigOptionFlags(c"babelfishpg_tsql.sql_dialect".as_ptr(), true) };
    u32::try_from(flags).is_ok_and(|f| f & pg_sys::GUC_CUSTOM_PLACEHOLDER == 0)
}

impl SessionKey {
    /// Whether the session still has the content read at this key.
    fn holds(&self) -> bool {
        // SAFETY: the server's own setting variables, read in the backend that owns them;
        // the two strings are set for every session.
        unsafe {
            self.generation == crate::invalidation::generation()
                && self.date_style == (pg_sys::DateStyle, pg_sys::DateOrder)
                && self.interval_style == pg_sys::IntervalStyle
                && self.standard_conforming_strings
                    == ddl_server::versions::standard_conforming_strings()
                && self.time_zone == pg_sys::session_timezone as usize
                && self.reading == reading()
                && self.roles
                    == (
                        ddl_server::roles::current(),
                        ddl_server::roles::session_user(),
                    )
                && self.search_path == bytes(pg_sys::namespace_search_path)
                && self.default_table_access_method == bytes(pg_sys::default_table_access_method)
                && self.dialect == dialect_setting()
                && self.lc_monetary == bytes(locale_monetary)
                && self.timezone_abbreviations == timezone_abbreviations()
        }
    }

    fn now() -> SessionKey {
        // SAFETY: as in `holds`.
        unsafe {
            SessionKey {
                dialect: dialect_setting().to_vec(),
                search_path: bytes(pg_sys::namespace_search_path).to_vec(),
                date_style: (pg_sys::DateStyle, pg_sys::DateOrder),
                interval_style: pg_sys::IntervalStyle,
                standard_conforming_strings: ddl_server::versions::standard_conforming_strings(),
                default_table_access_method: bytes(pg_sys::default_table_access_method).to_vec(),
                time_zone: pg_sys::session_timezone as usize,
                reading: reading(),
                lc_monetary: bytes(locale_monetary).to_vec(),
                timezone_abbreviations: timezone_abbreviations().to_vec(),
                roles: (
                    ddl_server::roles::current(),
                    ddl_server::roles::session_user(),
                ),
                generation: crate::invalidation::generation(),
            }
        }
    }
}

impl Session {
    /// The current session's, read again only when it changed (see [`SessionKey`]).
    fn current() -> Rc<Session> {
        thread_local! {
            static CACHED: RefCell<Option<(SessionKey, Rc<Session>)>> =
                const { RefCell::new(None) };
        }
        // SAFETY: in a backend; the role names cached below follow its role invalidations.
        unsafe { crate::invalidation::register() };
        let cached = CACHED.with_borrow(|c| {
            c.as_ref()
                .filter(|(key, _)| key.holds())
                .map(|(_, session)| session.clone())
        });
        if let Some(session) = cached {
            return session;
        }
        let key = SessionKey::now();
        let session = Rc::new(Session::read());
        CACHED.set(Some((key, session.clone())));
        session
    }

    /// Reads the settings and names of the current session, in a transaction.
    fn read() -> Session {
        let text = |p: *const std::ffi::c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: a setting's value or a catalog name, just returned below: a
                // NUL-terminated server string.
                unsafe { ddl_server::text::utf8_ptr(p) }
            }
        };
        // A setting's value is valid until the next GetConfigOption; `text` copies it first.
        let dialect = String::from_utf8_lossy(dialect_setting()).into_owned();
        // SAFETY: a built-in setting.
        let search_path =
            text(unsafe { pg_sys::GetConfigOption(c"search_path".as_ptr(), false, false) });
        // Those at their built-in default are left out (the record says so:
        // `RecordFlags::DEFAULTS_LEFT_OUT`).
        let settings = ddl_wire::MEANING_SETTING_DEFAULTS
            .iter()
            .filter_map(|(name, default)| {
                let c_name = std::ffi::CString::new(*name).ok()?;
                // SAFETY: a NUL-terminated name; missing_ok.
                let value = text(unsafe { pg_sys::GetConfigOption(c_name.as_ptr(), true, false) });
                // A value on several lines has no place in the format (none of these
                // settings takes one).
                (value != *default && !value.contains('\n')).then(|| format!("{name}={value}"))
            })
            .collect::<Vec<_>>()
            .join("\n");
        // SAFETY: catalog lookups in the capture's transaction: NULL for a role that is gone
        // (noerr) or a database that is.
        let (role, session_user, database) = unsafe {
            (
                pg_sys::GetUserNameFromId(pg_sys::GetUserId(), true),
                pg_sys::GetUserNameFromId(pg_sys::GetSessionUserId(), true),
                pg_sys::get_database_name(pg_sys::MyDatabaseId),
            )
        };
        // SAFETY: catalog cache lookups in the capture's transaction.
        let role_rights = unsafe { ddl_server::roles::rights(pg_sys::GetUserId()) };
        Session {
            role_rights,
            dialect: if dialect.eq_ignore_ascii_case("tsql") && dialect_setting_is_defined() {
                "tsql".into()
            } else {
                "postgres".into()
            },
            search_path,
            settings,
            role: text(role),
            session_user: text(session_user),
            database: text(database),
        }
    }
}
