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
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting, PgLogLevel, PostgresGucEnum};
use std::ffi::CStr;

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

/// Checks the ALTER TABLE that the capture is about to record (`command`, from PostgreSQL's
/// command collection), and applies the policy: an ERROR, a WARNING, or a [`Refill`] on the
/// innermost statement.
///
/// # Safety
/// Runs in the `ddl_command_end` event trigger, inside the statement; `command` is valid.
pub unsafe fn check(command: *mut pg_sys::CollectedCommand) {
    if (*command).type_ != pg_sys::CollectedCommandType::SCT_AlterTable
        || (*command).d.alterTable.classId != pg_sys::RelationRelationId
    {
        return;
    }
    let relid = (*command).d.alterTable.objectId;
    let subcommands = subcommands(command);
    if subcommands.is_empty() {
        return;
    }
    let rel = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let rewritten = rewritten(rel, &subcommands);
    let published = !rewritten.is_empty() && row_published(rel);
    pg_sys::relation_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    if !published {
        return;
    }
    let table = qualified_name(relid);
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
    for refill in refills {
        Spi::run(&refill.update).unwrap_or_else(|e| {
            error!(
                "ddl_sync: cannot replicate the rewritten values ({}): {e}",
                refill.update
            )
        });
    }
    pg_sys::AtEOXact_GUC(true, level);
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
enum Subcommand {
    AddColumn(i16),
    AlterType(i16, *mut pg_sys::Node),
}

/// The subcommands of the statement on its table itself (recursion to inheritors is implied:
/// the same columns, and statements on the parent reach them).
unsafe fn subcommands(command: *mut pg_sys::CollectedCommand) -> Vec<Subcommand> {
    let relid = (*command).d.alterTable.objectId;
    let subcmds =
        pgrx::list::PgList::<pg_sys::CollectedATSubcmd>::from_pg((*command).d.alterTable.subcmds);
    let mut out = Vec::new();
    for sub in subcmds.iter_ptr() {
        let address = (*sub).address;
        let cmd = (*sub).parsetree.cast::<pg_sys::AlterTableCmd>();
        if address.objectId != relid || address.objectSubId <= 0 || cmd.is_null() {
            continue; // IF NOT EXISTS that did nothing, or another relation
        }
        let attnum = address.objectSubId as i16;
        use pg_sys::AlterTableType as At;
        match (*cmd).subtype {
            At::AT_AddColumn | At::AT_AddColumnRecurse => out.push(Subcommand::AddColumn(attnum)),
            At::AT_AlterColumnType => {
                let def = (*cmd).def.cast::<pg_sys::ColumnDef>();
                if !def.is_null() && !(*def).cooked_default.is_null() {
                    out.push(Subcommand::AlterType(attnum, (*def).cooked_default));
                }
            }
            _ => {}
        }
    }
    out
}

/// The columns whose values the subcommands computed with an expression that is not immutable.
unsafe fn rewritten(rel: pg_sys::Relation, subcommands: &[Subcommand]) -> Vec<Rewritten> {
    let relid = (*rel).rd_id;
    // Only for the message: most subcommands never get here.
    let deparse = |expr: *mut pg_sys::Node| {
        let context = pg_sys::deparse_context_for(pg_sys::get_rel_name(relid), relid);
        CStr::from_ptr(pg_sys::deparse_expression(expr, context, false, false))
            .to_string_lossy()
            .into_owned()
    };
    let mut out = Vec::new();
    for subcommand in subcommands {
        let (attnum, expr, using) = match *subcommand {
            Subcommand::AddColumn(attnum) => (
                attnum,
                pg_sys::build_column_default(rel, i32::from(attnum)),
                false,
            ),
            Subcommand::AlterType(attnum, expr) => (attnum, expr, true),
        };
        if expr.is_null() || !not_immutable(expr) {
            continue;
        }
        let attribute = attribute(rel, attnum);
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
            name: quote(attribute.attname.data.as_ptr()),
            how,
        });
    }
    out
}

unsafe fn not_immutable(expr: *mut pg_sys::Node) -> bool {
    pg_sys::contain_mutable_functions(expr) || pg_sys::contain_volatile_functions(expr)
}

unsafe fn attribute(rel: pg_sys::Relation, attnum: i16) -> &'static pg_sys::FormData_pg_attribute {
    let desc = (*rel).rd_att;
    &(*desc).attrs.as_slice((*desc).natts as usize)[attnum as usize - 1]
}

unsafe fn quote(name: *const std::ffi::c_char) -> String {
    CStr::from_ptr(pg_sys::quote_identifier(name))
        .to_string_lossy()
        .into_owned()
}

unsafe fn qualified_name(relid: pg_sys::Oid) -> String {
    let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
    CStr::from_ptr(pg_sys::quote_qualified_identifier(
        schema,
        pg_sys::get_rel_name(relid),
    ))
    .to_string_lossy()
    .into_owned()
}

/// Whether a publication of this database publishes the table's rows at all: if none does, its
/// rows are each node's own anyway.
unsafe fn row_published(rel: pg_sys::Relation) -> bool {
    let actions = publication_actions(rel);
    actions.pubinsert || actions.pubupdate || actions.pubdelete
}

unsafe fn publication_actions(rel: pg_sys::Relation) -> pg_sys::PublicationActions {
    let mut desc = pg_sys::PublicationDesc::default();
    pg_sys::RelationBuildPublicationDesc(rel, &mut desc);
    desc.pubactions
}

/// Whether the table (with its inheritors) has a row, as the statement left it.
unsafe fn has_rows(table: &str) -> bool {
    // Read-write SPI takes a new snapshot after a command counter increment: the statement's
    // own rewrite is visible (the portal's snapshot predates it).
    Spi::connect_mut(|client| {
        client
            .update(&format!("SELECT EXISTS (SELECT FROM {table})"), None, &[])?
            .first()
            .get_one::<bool>()
    })
    .unwrap_or_else(|e| error!("ddl_sync: cannot read {table}: {e}"))
    .unwrap_or(false)
}

/// The UPDATE that replicates the rewritten values, after checking that subscribers can find
/// the rows it updates; an ERROR saying why not otherwise.
unsafe fn refill(relid: pg_sys::Oid, table: &str, rewritten: &[Rewritten]) -> String {
    let rel = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let updates = publication_actions(rel).pubupdate;
    let desc = (*rel).rd_att;
    let columns: Vec<(String, bool)> = (*desc)
        .attrs
        .as_slice((*desc).natts as usize)
        .iter()
        .filter(|a| !a.attisdropped)
        .map(|a| {
            let settable = a.attgenerated == 0
                && a.attidentity != pg_sys::ATTRIBUTE_IDENTITY_ALWAYS as std::ffi::c_char;
            (quote(a.attname.data.as_ptr()), settable)
        })
        .collect();
    pg_sys::relation_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
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
unsafe fn identity_problem(relid: pg_sys::Oid, rewritten: &[&str]) -> Option<String> {
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
    .unwrap_or_else(|e| error!("ddl_sync: cannot read the replica identity of {relid:?}: {e}"))
}
