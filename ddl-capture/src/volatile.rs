//! ALTER TABLE statements that give existing rows values computed on each node.
//!
//! `ADD COLUMN ... DEFAULT random()` (or `now()`, `clock_timestamp()`, `nextval(...)`, a
//! `serial` or identity column) and `ALTER COLUMN ... TYPE ... USING <not immutable>` compute
//! the values of every existing row while the statement runs. The statement is replicated as
//! text, so each subscriber computes its own values; the publisher's never travel, because a
//! table rewrite (or a fast default) is not a logical change. With rows in the table, the two
//! sides then differ silently.
//!
//! The capture detects such a statement when a publication takes it, from PostgreSQL's command
//! collection: each `ADD COLUMN` subcommand's column default as stored in the catalog
//! (`build_column_default`: the column's own default, identity, or its domain's default) and
//! each `ALTER COLUMN TYPE` subcommand's `USING` expression after parse analysis. An
//! expression that is not immutable (`contain_mutable_functions`) may give another value on
//! another node; stable ones count too (`now()` is evaluated once per node, at different
//! times). Then the setting `ddl_sync.volatile_rewrite` decides:
//!
//! - `refuse` (default): the statement fails with the columns, the reason and the workaround;
//! - `warn`: a WARNING, and the statement is replicated as it is (the values differ);
//! - `rows`: the statement is replicated, and after it the hook runs `UPDATE table SET c = c`
//!   with `session_replication_role = replica` (no ordinary trigger or rule fires), so the new
//!   values travel as row updates after the statement and overwrite the subscribers' own. This
//!   needs a replica identity the subscribers can find the rows by (a key without the
//!   rewritten columns) and a publication that publishes the table's updates; otherwise the
//!   statement fails and says why.
//!
//! Not applied to statements replayed from another node (the node where the statement ran
//! first decided), to tables without rows, or to tables no publication publishes rows of.

use crate::statement;
use ddl_server::errors;
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting, PgLogLevel, PostgresGucEnum};

/// What to do with a statement that would leave different values on the subscribers.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
    #[name = c"refuse"]
    Refuse,
    #[name = c"warn"]
    Warn,
    #[name = c"rows"]
    Rows,
}

static POLICY: GucSetting<Policy> = GucSetting::<Policy>::new(Policy::Refuse);

/// Defines `ddl_sync.volatile_rewrite`.
pub fn define_setting() {
    GucRegistry::define_enum_guc(
        c"ddl_sync.volatile_rewrite",
        c"What a replicated ALTER TABLE that computes existing rows' values on each node does.",
        c"refuse: the statement fails; warn: a WARNING, the values differ between nodes; rows: \
          the publisher's values are replicated as row updates after the statement.",
        &POLICY,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// A table whose rewritten values the hook replicates once the statement has run.
#[derive(Debug)]
pub struct Refill {
    /// `UPDATE ... SET c = c` for one updatable column (any will do: pgoutput sends the
    /// whole new row).
    pub update: String,
}

/// A column whose existing values the statement computed on this node.
struct Rewritten {
    name: String,
    /// Why, for the message: `DEFAULT random()`, `USING (...)`, `identity`.
    how: String,
}

/// Checks the ALTER TABLE of table `relid` that the capture is about to record, whose
/// `subcommands` are those of [`collected`] (or the columns it added, `direct.rs`), and applies the policy: an ERROR, a
/// WARNING, or a [`Refill`] on the innermost statement.
///
/// # Safety
/// Runs in the `ddl_command_end` event trigger, inside the statement, which the subcommands
/// are of.
pub unsafe fn check(relid: pg_sys::Oid, subcommands: &[Subcommand]) {
    if subcommands.is_empty() {
        return;
    }
    // SAFETY: the statement's table (relation_open raises an ERROR for one that is gone),
    // open until the close below, without a lock: the ALTER TABLE holds its own to the end of
    // the transaction; the subcommands are the statement's, on that table.
    let (rewritten, published) = unsafe {
        let rel = pg_sys::relation_open(relid, pg_sys::NoLock as pg_sys::LOCKMODE);
        let rewritten = rewritten(rel, subcommands);
        let published = !rewritten.is_empty() && row_published(rel);
        pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        (rewritten, published)
    };
    if !published {
        return;
    }
    // The table exists: it was open just now, and the statement holds its lock.
    let table = ddl_server::relcache::qualified_name(relid).unwrap_or_default();
    if !has_rows(&table) {
        return;
    }
    let message =
        format!("ALTER TABLE would give the existing rows of {table} values computed on each node");
    let detail = rewritten
        .iter()
        .map(|r| format!("Column {}: {}.", r.name, r.how))
        .collect::<Vec<_>>()
        .join("\n");
    match POLICY.get() {
        Policy::Refuse => report(
            PgLogLevel::ERROR,
            message,
            detail,
            "Add the column without the default, fill it with UPDATE (rows replicate), then \
             ALTER COLUMN ... SET DEFAULT; or SET ddl_sync.volatile_rewrite = 'rows' to \
             replicate the resulting values (or 'warn' to let them differ).",
        ),
        Policy::Warn => report(
            PgLogLevel::WARNING,
            message,
            detail,
            "Each subscriber keeps the values it computes. SET ddl_sync.volatile_rewrite = \
             'rows' replicates the publisher's instead.",
        ),
        Policy::Rows => {
            let update = refill(relid, &table, &rewritten);
            statement::with_innermost(|s| s.refills.push(Refill { update }));
        }
    }
}

/// Runs the refills of a statement that has run.
///
/// # Safety
/// Runs in the ProcessUtility hook after the statement, inside its transaction.
pub unsafe fn run_refills(refills: Vec<Refill>) {
    if refills.is_empty() {
        return;
    }
    // Like an apply worker: ordinary triggers and rules stay quiet, the rows are not new.
    // SAFETY: the caller's promise: in a transaction. A new GUC nest level, popped below (or by
    // the transaction's abort on an ERROR) with the value saved in it; NUL-terminated strings.
    let level = unsafe {
        let level = pg_sys::NewGUCNestLevel();
        pg_sys::set_config_option(
            c"session_replication_role".as_ptr(),
            c"replica".as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        level
    };
    for refill in refills {
        Spi::run(&refill.update).unwrap_or_else(|e| {
            errors::internal(format_args!(
                "cannot replicate the rewritten values ({}): {e}",
                refill.update
            ))
        });
    }
    // SAFETY: the level made above, popped once: session_replication_role is restored.
    unsafe { pg_sys::AtEOXact_GUC(true, level) };
}

fn report(level: PgLogLevel, message: String, detail: String, hint: &str) {
    pgrx::pg_sys::panic::ErrorReport::new(
        PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        message,
        "ddl_sync",
    )
    .set_detail(detail)
    .set_hint(hint)
    .report(level);
}

/// An `ADD COLUMN` (the new column's number) or an `ALTER COLUMN TYPE` (its number and the
/// `USING` expression after parse analysis, when there is one).
pub enum Subcommand {
    AddColumn(i16),
    AlterType(i16, *mut pg_sys::Node),
}

/// The subcommands of the statement on its table itself, from PostgreSQL's command collection
/// (recursion to inheritors is implied: the same columns, and statements on the parent reach
/// them); none for a command that is not an ALTER TABLE of a relation.
///
/// # Safety
/// `command` is the statement's collected command, valid for the call.
pub unsafe fn collected(command: *mut pg_sys::CollectedCommand) -> Vec<Subcommand> {
    // SAFETY: the caller's promise; `d` is the `alterTable` variant for SCT_AlterTable, whose
    // `subcmds` is a List of CollectedATSubcmds.
    let (relid, subcmds) = unsafe {
        if (*command).type_ != pg_sys::CollectedCommandType::SCT_AlterTable
            || (*command).d.alterTable.classId != pg_sys::RelationRelationId
        {
            return Vec::new();
        }
        let alter = &(*command).d.alterTable;
        (
            alter.objectId,
            pgrx::list::PgList::<pg_sys::CollectedATSubcmd>::from_pg(alter.subcmds),
        )
    };
    let mut out = Vec::new();
    for sub in subcmds.iter_ptr() {
        // SAFETY: a subcommand of the list: its address, and its AlterTableCmd (or null).
        let (address, cmd) = unsafe {
            (
                (*sub).address,
                (*sub).parsetree.cast::<pg_sys::AlterTableCmd>(),
            )
        };
        if address.objectId != relid || address.objectSubId <= 0 || cmd.is_null() {
            continue; // IF NOT EXISTS that did nothing, or another relation
        }
        let attnum = address.objectSubId as i16;
        use pg_sys::AlterTableType as At;
        // SAFETY: a non-null AlterTableCmd; an ALTER COLUMN TYPE's `def` is null or its
        // ColumnDef, whose `cooked_default` is the analysed USING expression (or null).
        let (subtype, using) = unsafe {
            let def = (*cmd).def.cast::<pg_sys::ColumnDef>();
            let using = if (*cmd).subtype == At::AT_AlterColumnType && !def.is_null() {
                (*def).cooked_default
            } else {
                std::ptr::null_mut()
            };
            ((*cmd).subtype, using)
        };
        match subtype {
            t if ddl_server::versions::ADD_COLUMN.contains(&t) => {
                out.push(Subcommand::AddColumn(attnum))
            }
            At::AT_AlterColumnType if !using.is_null() => {
                out.push(Subcommand::AlterType(attnum, using));
            }
            _ => {}
        }
    }
    out
}

/// The columns whose values the subcommands computed with an expression that is not immutable.
///
/// # Safety
/// `rel` is the open table of the statement the subcommands are of (their expressions valid);
/// in its transaction.
unsafe fn rewritten(rel: pg_sys::Relation, subcommands: &[Subcommand]) -> Vec<Rewritten> {
    // SAFETY: the caller's promise.
    let relid = unsafe { (*rel).rd_id };
    // Only for the message: most subcommands never get here.
    let deparse = |expr: *mut pg_sys::Node| {
        // SAFETY: an analysed expression on the columns of `relid`, an open relation (so it
        // has a name), deparsed in a context made for it; the result is a server string.
        unsafe {
            let context = pg_sys::deparse_context_for(pg_sys::get_rel_name(relid), relid);
            ddl_server::text::utf8_ptr(pg_sys::deparse_expression(expr, context, false, false))
        }
    };
    let mut out = Vec::new();
    for subcommand in subcommands {
        let (attnum, expr, using) = match *subcommand {
            Subcommand::AddColumn(attnum) => (
                attnum,
                // SAFETY: the caller's promise: `attnum` is a column the statement added.
                unsafe { pg_sys::build_column_default(rel, i32::from(attnum)) },
                false,
            ),
            Subcommand::AlterType(attnum, expr) => (attnum, expr, true),
        };
        // SAFETY: an expression tree: the column's default, or the statement's USING.
        if expr.is_null() || !unsafe { not_immutable(expr) } {
            continue;
        }
        // SAFETY: a column of the open relation; used while it is open.
        let attribute = unsafe { attribute(rel, attnum) };
        let how = if using {
            format!(
                "USING {} is not immutable, each node computes it for itself",
                deparse(expr)
            )
        } else if attribute.attidentity != 0 {
            "an identity column, numbered on each node in its own row order".to_owned()
        } else {
            format!(
                "DEFAULT {} is not immutable, each node computes it for itself",
                deparse(expr)
            )
        };
        out.push(Rewritten {
            // SAFETY: a NameData is NUL-terminated.
            name: unsafe { ddl_server::text::utf8_identifier(attribute.attname.data.as_ptr()) },
            how,
        });
    }
    out
}

/// Whether `expr` may give another value on another node.
///
/// # Safety
/// `expr` is an analysed expression tree; in a transaction.
unsafe fn not_immutable(expr: *mut pg_sys::Node) -> bool {
    // SAFETY: the caller's promise; both only walk the tree.
    unsafe { pg_sys::contain_mutable_functions(expr) || pg_sys::contain_volatile_functions(expr) }
}

/// Column `attnum` (from 1) of `rel`.
///
/// # Safety
/// `rel` is an open relation with a column `attnum`; the result is used only while it is open.
unsafe fn attribute(rel: pg_sys::Relation, attnum: i16) -> &'static pg_sys::FormData_pg_attribute {
    // SAFETY: the caller's promise: the open relation's descriptor, of `natts` attributes.
    unsafe { &ddl_server::versions::attributes((*rel).rd_att)[attnum as usize - 1] }
}

/// Whether a publication of this database publishes the table's rows at all: if none does, its
/// rows are each node's own anyway.
///
/// # Safety
/// `rel` is an open relation; in a transaction.
unsafe fn row_published(rel: pg_sys::Relation) -> bool {
    // SAFETY: the caller's promise.
    let actions = unsafe { publication_actions(rel) };
    actions.pubinsert || actions.pubupdate || actions.pubdelete
}

/// What the publications of this database publish of `rel`.
///
/// # Safety
/// `rel` is an open relation; in a transaction.
pub(crate) unsafe fn publication_actions(rel: pg_sys::Relation) -> pg_sys::PublicationActions {
    let mut desc = pg_sys::PublicationDesc::default();
    // SAFETY: the caller's promise; fills `desc`.
    unsafe { pg_sys::RelationBuildPublicationDesc(rel, &mut desc) };
    desc.pubactions
}

/// Whether the table (with its inheritors) has a row, as the statement left it.
fn has_rows(table: &str) -> bool {
    // Read-write SPI takes a new snapshot after a command counter increment: the statement's
    // own rewrite is visible (the portal's snapshot predates it).
    Spi::connect_mut(|client| {
        client
            .update(&format!("SELECT EXISTS (SELECT FROM {table})"), None, &[])?
            .first()
            .get_one::<bool>()
    })
    .unwrap_or_else(|e| errors::internal(format_args!("cannot read {table}: {e}")))
    .unwrap_or(false)
}

/// The UPDATE that replicates the rewritten values, after checking that subscribers can find
/// the rows it updates; an ERROR saying why not otherwise. In a transaction.
fn refill(relid: pg_sys::Oid, table: &str, rewritten: &[Rewritten]) -> String {
    // SAFETY: relation_open raises an ERROR for a relation that does not exist; open until
    // the close below.
    let rel = unsafe { pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE) };
    // SAFETY: `rel` is open: its publication actions, and its descriptor of `natts` attributes.
    let (updates, attrs) = unsafe {
        let desc = (*rel).rd_att;
        (
            publication_actions(rel).pubupdate,
            ddl_server::versions::attributes(desc),
        )
    };
    let columns: Vec<(String, bool)> = attrs
        .iter()
        .filter(|a| !a.attisdropped)
        .map(|a| {
            let settable = a.attgenerated == 0
                && a.attidentity != pg_sys::ATTRIBUTE_IDENTITY_ALWAYS as std::ffi::c_char;
            // SAFETY: a NameData is NUL-terminated.
            (
                unsafe { ddl_server::text::utf8_identifier(a.attname.data.as_ptr()) },
                settable,
            )
        })
        .collect();
    // SAFETY: opened above, closed once; `attrs` is not used after.
    unsafe { pg_sys::relation_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE) };
    let names: Vec<&str> = rewritten.iter().map(|r| r.name.as_str()).collect();
    let cannot = |why: String| -> ! {
        report(
            PgLogLevel::ERROR,
            format!(
                "ddl_sync.volatile_rewrite = 'rows' cannot replicate the new values of {table}"
            ),
            why,
            "Add the column without the default, fill it with UPDATE (rows replicate), then \
             ALTER COLUMN ... SET DEFAULT; or SET ddl_sync.volatile_rewrite = 'warn' to let \
             the values differ.",
        );
        unreachable!("ERROR returns no control")
    };
    if !updates {
        cannot(format!(
            "No publication publishes the updates of {table}, which would carry them."
        ));
    }
    if let Some(problem) = identity_problem(relid, &names) {
        cannot(problem);
    }
    // Any updatable column will do; a rewritten one first (the statement's own).
    let target = columns
        .iter()
        .filter(|(_, settable)| *settable)
        .map(|(name, _)| name)
        .find(|name| names.contains(&name.as_str()))
        .or_else(|| columns.iter().find(|(_, s)| *s).map(|(name, _)| name))
        .unwrap_or_else(|| {
            cannot(format!(
                "{table} has no column an UPDATE may set (only generated and identity ALWAYS columns)."
            ))
        });
    format!("UPDATE {table} SET {target} = {target}")
}

/// Why subscribers could not find the rows of the table (or of one of its inheritors) by
/// their replica identity after the statement; `None` when they can.
fn identity_problem(relid: pg_sys::Oid, rewritten: &[&str]) -> Option<String> {
    let rewritten: Vec<String> = rewritten.iter().map(|s| s.to_string()).collect();
    // Read-write, for a snapshot that sees the statement's own catalog changes (a new key).
    Spi::connect_mut(|client| {
        let rows = client.update(
            "WITH RECURSIVE tree(relid) AS (
                 SELECT $1::pg_catalog.oid
                 UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.relid)
             SELECT c.oid::pg_catalog.regclass::text, c.relreplident::text,
                    (SELECT pg_catalog.array_agg(pg_catalog.quote_ident(a.attname))
                       FROM pg_catalog.pg_index x
                       JOIN pg_catalog.pg_attribute a
                         ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey::pg_catalog.int2[])
                      WHERE x.indrelid = c.oid
                        AND CASE c.relreplident WHEN 'd' THEN x.indisprimary
                                                WHEN 'i' THEN x.indisreplident ELSE false END)
               FROM tree JOIN pg_catalog.pg_class c ON c.oid = tree.relid
              WHERE c.relkind IN ('r', 'p')
              ORDER BY 1",
            None,
            &[relid.into()],
        )?;
        for row in rows {
            let name = row.get::<String>(1)?.unwrap_or_default();
            let identity = row.get::<String>(2)?.unwrap_or_default();
            let key = row.get::<Vec<String>>(3)?;
            let problem = match (identity.as_str(), key) {
                ("f", _) => format!(
                    "{name} has REPLICA IDENTITY FULL: subscribers look rows up by all their \
                     values, and their own values of the new column match none."
                ),
                ("n", _) => format!("{name} has REPLICA IDENTITY NOTHING: its updates cannot be published."),
                (_, None) => format!("{name} has no replica identity key (no primary key): its updates cannot be published."),
                (_, Some(key)) => match key.iter().find(|k| rewritten.contains(k)) {
                    Some(column) => format!(
                        "The replica identity of {name} includes column {column}, whose values \
                         differ: subscribers could not find the rows."
                    ),
                    None => continue,
                },
            };
            return Ok(Some(problem));
        }
        Ok::<_, pgrx::spi::Error>(None)
    })
    .unwrap_or_else(|e| {
        errors::internal(format_args!(
            "cannot read the replica identity of {relid:?}: {e}"
        ))
    })
}
