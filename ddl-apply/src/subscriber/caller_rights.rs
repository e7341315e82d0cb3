//! The functions an apply-time expression calls, judged for the role that wrote it.
//!
//! [`crate::subscriber::apply_code`] finds calls in `pg_depend`, which records no dependency on
//! PostgreSQL's own (pinned) objects, and it passes functions owned by a superuser, which every
//! built-in is. Yet a built-in runs with its caller's rights, and during apply the caller is the
//! subscription owner. `CHECK (pg_catalog.query_to_xml('SELECT ...', false, false, '') IS NOT
//! NULL)` would run any SQL as a superuser for every row applied. So every expression that the
//! statement wrote (the trees PostgreSQL stored for CHECK constraints, defaults and generated
//! columns, index expressions and predicates, partition keys, domain defaults) is walked, and
//! each function it calls, directly, as an operator or as a type's input or output function,
//! must be:
//! - executable by the role the expression is judged for: EXECUTE is checked against the caller
//!   when the function runs, so `pg_read_file` or `lo_export` would run for the superuser;
//! - none of the built-ins in [`CALLER_RIGHTS`], which act with their caller's rights on what
//!   their arguments name (unless SECURITY DEFINER, which only a superuser can make of one),
//!   nor a function of the extensions in [`CALLER_RIGHTS_EXTENSIONS`];
//! - for `nextval`, `currval` and `setval`: called on a constant sequence (what
//!   `DEFAULT nextval('s')` stores) that the role may use (USAGE; UPDATE for `setval`).

use crate::subscriber::apply_code::{Received, RECEIVED_DEFAULTS};
use pgrx::prelude::*;
use pgrx::spi::Spi;
use pgrx::{PgList, PgMemoryContexts};
use std::ffi::{c_void, CString};

/// Built-ins in `pg_catalog` that act with their caller's rights on objects or text their
/// arguments name, so that the subscription owner calling them does what the expression's author
/// could not; each group with the reason the refusal gives. Most of those PostgreSQL revokes
/// from PUBLIC are not listed: the EXECUTE rule refuses them (those listed check for a
/// superuser in their C code instead, or are listed with their kin).
pub const CALLER_RIGHTS: &[(&str, &[&str])] = &[
    (
        "runs the SQL text it is given as its caller",
        &[
            "query_to_xml",
            "query_to_xmlschema",
            "query_to_xml_and_xmlschema",
            "ts_stat",
            "ts_rewrite",
        ],
    ),
    (
        "reads the relations its arguments name with its caller's rights (and runs their \
         views' functions as its caller)",
        &[
            "table_to_xml",
            "table_to_xmlschema",
            "table_to_xml_and_xmlschema",
            "cursor_to_xml",
            "cursor_to_xmlschema",
            "schema_to_xml",
            "schema_to_xmlschema",
            "schema_to_xml_and_xmlschema",
            "database_to_xml",
            "database_to_xmlschema",
            "database_to_xml_and_xmlschema",
        ],
    ),
    (
        "changes settings of the apply worker's session with its caller's rights (a \
         superuser's: session_replication_role, for one)",
        &["set_config"],
    ),
    (
        "reads sequences with its caller's rights",
        &[
            "lastval",
            "pg_sequence_last_value",
            "pg_sequence_parameters",
        ],
    ),
    (
        "reads or writes large objects with its caller's rights",
        &[
            "lo_open",
            "lo_close",
            "loread",
            "lowrite",
            "lo_lseek",
            "lo_lseek64",
            "lo_tell",
            "lo_tell64",
            "lo_truncate",
            "lo_truncate64",
            "lo_creat",
            "lo_create",
            "lo_unlink",
            "lo_import",
            "lo_export",
            "lo_from_bytea",
            "lo_get",
            "lo_put",
        ],
    ),
    (
        "reads server files or rotates the server log for a superuser",
        &["pg_read_file_old", "pg_rotate_logfile_old"],
    ),
    (
        "signals other sessions with its caller's rights",
        &["pg_cancel_backend", "pg_terminate_backend"],
    ),
    (
        "reaches the subscriber's other sessions from the apply worker (a notification, or an \
         advisory lock the worker would hold until it exits)",
        &[
            "pg_notify",
            "pg_advisory_lock",
            "pg_advisory_lock_shared",
            "pg_try_advisory_lock",
            "pg_try_advisory_lock_shared",
        ],
    ),
    (
        "creates, reads, moves or drops replication slots with its caller's rights",
        &[
            "pg_create_physical_replication_slot",
            "pg_create_logical_replication_slot",
            "pg_copy_physical_replication_slot",
            "pg_copy_logical_replication_slot",
            "pg_drop_replication_slot",
            "pg_replication_slot_advance",
            "pg_sync_replication_slots",
            "pg_logical_slot_get_changes",
            "pg_logical_slot_peek_changes",
            "pg_logical_slot_get_binary_changes",
            "pg_logical_slot_peek_binary_changes",
        ],
    ),
    (
        "maintains objects its caller need not own, with its caller's rights",
        &[
            "pg_import_system_collations",
            "pg_nextoid",
            "brin_summarize_new_values",
            "brin_summarize_range",
            "brin_desummarize_range",
            "gin_clean_pending_list",
            "pg_restore_relation_stats",
            "pg_restore_attribute_stats",
            "pg_clear_relation_stats",
            "pg_clear_attribute_stats",
        ],
    ),
];

/// Extensions whose every function is refused in such an expression: they run SQL text or
/// open connections with their caller's rights (`dblink`, `tablefunc`'s `crosstab` and
/// `connectby`, `xml2`'s `xpath_table`), schedule jobs as their caller (`pg_cron`), or read raw
/// pages or server files for a superuser (`pageinspect`, `adminpack`).
pub const CALLER_RIGHTS_EXTENSIONS: (&str, &[&str]) = (
    "belongs to an extension whose functions act with their caller's rights (SQL text, \
     connections, jobs, raw pages or server files)",
    &[
        "dblink",
        "tablefunc",
        "xml2",
        "pg_cron",
        "pageinspect",
        "adminpack",
    ],
);

/// The functions the sequence rule covers, and the privilege each needs on its sequence.
const SEQUENCE_FUNCTIONS: &[(&str, &str)] = &[
    ("nextval", "USAGE"),
    ("currval", "USAGE"),
    ("setval", "UPDATE"),
];

/// What the expressions written since the subtransaction `since` began call that would act with
/// the subscription owner's rights beyond those of the role each is judged for (the replaying
/// role, or with `by_owner` the owner of the table or domain, superusers' skipped), one finding
/// per entry; the defaults of `received` columns, which never run here, left out.
pub fn findings(
    since: pg_sys::TransactionId,
    by_owner: bool,
    received: &Received,
) -> Result<Vec<String>, String> {
    let expressions = written_since(since, by_owner, received)?;
    if expressions.is_empty() {
        return Ok(Vec::new());
    }
    // SAFETY: reads this backend's current user.
    let current = unsafe { pg_sys::GetUserId() };
    let mut whats = Vec::new();
    let mut functions = Vec::new();
    let mut authors = Vec::new();
    let mut sequences = Vec::new();
    for expression in &expressions {
        for call in calls_in(&expression.tree) {
            whats.push(expression.what.clone());
            functions.push(call.function);
            authors.push(if by_owner { expression.owner } else { current });
            sequences.push(call.sequence);
        }
    }
    judge(&whats, &functions, &authors, &sequences)
}

/// An expression PostgreSQL stored, as `pg_describe_object` names what holds it.
struct Expression {
    what: String,
    tree: CString,
    owner: pg_sys::Oid,
}

/// The expressions whose catalog rows the statement wrote (their xmin is the subtransaction
/// `since` or one below it; see [`crate::subscriber::apply_code::code_left_behind`]).
fn written_since(
    since: pg_sys::TransactionId,
    by_owner: bool,
    received: &Received,
) -> Result<Vec<Expression>, String> {
    // Every name and operator is qualified: the caller's search_path may be anyone's.
    const QUERY: &str = "
        WITH mine AS (SELECT pg_catalog.age($1::pg_catalog.text::pg_catalog.xid) AS age),
        received_defaults AS (RECEIVED)
        SELECT e.what, e.tree, e.owner FROM (
            SELECT pg_catalog.pg_describe_object('pg_catalog.pg_constraint'::pg_catalog.regclass, c.oid, 0),
                   c.conbin::pg_catalog.text, COALESCE(r.relowner, t.typowner), c.xmin
              FROM pg_catalog.pg_constraint c
              LEFT JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) c.conrelid
              LEFT JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.contypid
             WHERE c.conbin IS NOT NULL
            UNION ALL
            SELECT pg_catalog.pg_describe_object('pg_catalog.pg_attrdef'::pg_catalog.regclass, d.oid, 0),
                   d.adbin::pg_catalog.text, r.relowner, d.xmin
              FROM pg_catalog.pg_attrdef d
              JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) d.adrelid
             WHERE d.oid NOT IN (SELECT oid FROM received_defaults)
            UNION ALL
            SELECT pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, i.indexrelid, 0),
                   x.tree, r.relowner, i.xmin
              FROM pg_catalog.pg_index i
              JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) i.indrelid
              CROSS JOIN LATERAL (VALUES (i.indexprs::pg_catalog.text), (i.indpred::pg_catalog.text)) AS x (tree)
             WHERE x.tree IS NOT NULL
            UNION ALL
            SELECT pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, p.partrelid, 0),
                   p.partexprs::pg_catalog.text, r.relowner, p.xmin
              FROM pg_catalog.pg_partitioned_table p
              JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) p.partrelid
             WHERE p.partexprs IS NOT NULL
            UNION ALL
            SELECT pg_catalog.pg_describe_object('pg_catalog.pg_type'::pg_catalog.regclass, t.oid, 0),
                   t.typdefaultbin::pg_catalog.text, t.typowner, t.xmin
              FROM pg_catalog.pg_type t
             WHERE t.typdefaultbin IS NOT NULL
        ) AS e (what, tree, owner, row_xmin)
        WHERE pg_catalog.age(e.row_xmin) OPERATOR(pg_catalog.<=) (SELECT age FROM mine)
          AND NOT ($2 AND EXISTS (SELECT FROM pg_catalog.pg_roles o
                                   WHERE o.oid OPERATOR(pg_catalog.=) e.owner AND o.rolsuper))";
    let since = u32::from(since).to_string();
    let query = QUERY.replace("RECEIVED", RECEIVED_DEFAULTS);
    Spi::connect(|client| {
        let rows = client
            .select(
                &query,
                None,
                &[
                    since.as_str().into(),
                    by_owner.into(),
                    received.tables.clone().into(),
                    received.columns.clone().into(),
                ],
            )
            .map_err(|e| e.to_string())?;
        let mut found = Vec::new();
        for row in rows {
            let what: Option<String> = row.get(1).map_err(|e| e.to_string())?;
            let tree: Option<String> = row.get(2).map_err(|e| e.to_string())?;
            let owner: Option<pg_sys::Oid> = row.get(3).map_err(|e| e.to_string())?;
            let (Some(what), Some(tree), Some(owner)) = (what, tree, owner) else {
                return Err("an expression's catalog row lacks its tree or owner".into());
            };
            let tree = CString::new(tree).map_err(|_| "an expression tree holds a NUL byte")?;
            found.push(Expression { what, tree, owner });
        }
        Ok(found)
    })
}

/// A function an expression calls, and the sequence its first argument names when that is a
/// constant `regclass` (what `nextval('s')` stores).
struct Call {
    function: pg_sys::Oid,
    sequence: Option<pg_sys::Oid>,
}

/// The calls in `tree`, the text of a `pg_node_tree`.
fn calls_in(tree: &CString) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    let mut scratch = PgMemoryContexts::new("ddl_sync apply-time expression");
    // SAFETY: the tree is parsed into `scratch`, a context of our own, deleted when it drops
    // after the walk; `calls` outlives the walk, and only the walker callbacks reach it, one
    // at a time, through `context`.
    unsafe {
        scratch.switch_to(|_| {
            let node = pg_sys::stringToNode(tree.as_ptr()).cast::<pg_sys::Node>();
            let context: *mut Vec<Call> = &mut calls;
            walk(node, context.cast());
        });
    }
    calls
}

/// Notes the calls of `node` and walks on into its children. Never stops early (`false`).
#[pg_guard]
unsafe extern "C-unwind" fn walk(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    // SAFETY: `node` is a node of the tree `calls_in` parsed (PostgreSQL's walker hands on only
    // those), `context` the list it passed.
    unsafe {
        if (*node).type_ == pg_sys::NodeTag::T_FuncExpr {
            let expr = node.cast::<pg_sys::FuncExpr>();
            let first = PgList::<pg_sys::Node>::from_pg((*expr).args).head();
            note(
                context,
                Call {
                    function: (*expr).funcid,
                    sequence: first.and_then(|arg| constant_regclass(arg)),
                },
            );
        } else {
            // Operators, NULLIF, IS DISTINCT FROM, ANY/ALL, row comparisons and I/O coercions:
            // the functions they run, as PostgreSQL's own mutability checks find them.
            pg_sys::check_functions_in_node(node, Some(note_function), context);
        }
        pg_sys::expression_tree_walker(node, Some(walk), context)
    }
}

/// [`walk`]'s callback for `check_functions_in_node`. Never stops early (`false`).
#[pg_guard]
unsafe extern "C-unwind" fn note_function(function: pg_sys::Oid, context: *mut c_void) -> bool {
    // SAFETY: `context` is the list `walk` passed on.
    unsafe {
        note(
            context,
            Call {
                function,
                sequence: None,
            },
        )
    };
    false
}

/// Adds `call` to the calls that `context` points to.
///
/// # Safety
/// `context` points to the `Vec<Call>` of [`calls_in`], not borrowed elsewhere meanwhile.
unsafe fn note(context: *mut c_void, call: Call) {
    // SAFETY: see the function's contract.
    unsafe { (*context.cast::<Vec<Call>>()).push(call) };
}

/// The relation `arg` names when it is a constant, non-NULL `regclass`.
///
/// # Safety
/// `arg` is a valid expression node.
unsafe fn constant_regclass(arg: *mut pg_sys::Node) -> Option<pg_sys::Oid> {
    // SAFETY: see the function's contract; a T_Const node is a Const.
    unsafe {
        if arg.is_null() || (*arg).type_ != pg_sys::NodeTag::T_Const {
            return None;
        }
        let constant = arg.cast::<pg_sys::Const>();
        ((*constant).consttype == pg_sys::REGCLASSOID && !(*constant).constisnull)
            .then(|| pg_sys::Oid::from((*constant).constvalue.value() as u32))
    }
}

/// The findings for the calls given as parallel arrays (what holds the expression, the function,
/// the role judged, the constant sequence of the first argument).
fn judge(
    whats: &[String],
    functions: &[pg_sys::Oid],
    authors: &[pg_sys::Oid],
    sequences: &[Option<pg_sys::Oid>],
) -> Result<Vec<String>, String> {
    const QUERY: &str = "
        SELECT DISTINCT pg_catalog.format('%s calls %s, which %s', c.what,
                   c.fn::pg_catalog.regprocedure, w.why)
          FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.oid[]),
                          pg_catalog.unnest($3::pg_catalog.oid[]), pg_catalog.unnest($4::pg_catalog.oid[]))
               AS c (what, fn, author, seq)
          JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) c.fn
          CROSS JOIN LATERAL (
              SELECT pg_catalog.format('role %I may not execute', c.author::pg_catalog.regrole)
               WHERE NOT COALESCE(pg_catalog.has_function_privilege(c.author, c.fn, 'EXECUTE'), false)
              UNION ALL
              SELECT d.why FROM ROWS FROM (pg_catalog.unnest($5::pg_catalog.text[]), pg_catalog.unnest($6::pg_catalog.text[])) AS d (name, why)
               WHERE NOT p.prosecdef
                 AND p.pronamespace OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace
                 AND p.proname OPERATOR(pg_catalog.=) d.name
              UNION ALL
              SELECT $9 WHERE EXISTS (
                  SELECT FROM pg_catalog.pg_depend e
                    JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) e.refobjid
                   WHERE e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                     AND e.objid OPERATOR(pg_catalog.=) c.fn
                     AND e.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                     AND e.deptype OPERATOR(pg_catalog.=) 'e'
                     AND x.extname OPERATOR(pg_catalog.=) ANY ($10::pg_catalog.name[]))
              UNION ALL
              SELECT CASE WHEN s.oid IS NULL
                          THEN 'names no constant sequence: it would use whichever its argument names, with its caller''s rights'
                          ELSE pg_catalog.format('uses sequence %s, which role %I may not (%s)',
                                   s.oid::pg_catalog.regclass, c.author::pg_catalog.regrole, q.privilege) END
                FROM ROWS FROM (pg_catalog.unnest($7::pg_catalog.text[]), pg_catalog.unnest($8::pg_catalog.text[])) AS q (name, privilege)
                LEFT JOIN pg_catalog.pg_class s
                  ON s.oid OPERATOR(pg_catalog.=) c.seq AND s.relkind OPERATOR(pg_catalog.=) 'S'
               WHERE p.pronamespace OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace
                 AND p.proname OPERATOR(pg_catalog.=) q.name
                 AND NOT COALESCE(pg_catalog.has_sequence_privilege(c.author, s.oid, q.privilege), false)
          ) AS w (why)
         ORDER BY 1";
    let (names, whys): (Vec<&str>, Vec<&str>) = CALLER_RIGHTS
        .iter()
        .flat_map(|(why, names)| names.iter().map(move |name| (*name, *why)))
        .unzip();
    let (sequence_functions, privileges): (Vec<&str>, Vec<&str>) =
        SEQUENCE_FUNCTIONS.iter().copied().unzip();
    Spi::connect(|client| {
        let rows = client
            .select(
                QUERY,
                None,
                &[
                    whats.to_vec().into(),
                    functions.to_vec().into(),
                    authors.to_vec().into(),
                    sequences.to_vec().into(),
                    names.into(),
                    whys.into(),
                    sequence_functions.into(),
                    privileges.into(),
                    CALLER_RIGHTS_EXTENSIONS.0.into(),
                    CALLER_RIGHTS_EXTENSIONS.1.to_vec().into(),
                ],
            )
            .map_err(|e| e.to_string())?;
        rows.map(|row| {
            row.get::<String>(1)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "a finding without text".to_string())
        })
        .collect()
    })
}

#[cfg(any(test, feature = "pg_test"))]
#[path = "caller_rights_tests.rs"]
mod caller_rights_tests;
