//! Partition bounds computed where the statement runs.
//!
//! `CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (current_timestamp) TO (MAXVALUE)` (and the
//! same bound in `ALTER TABLE p ATTACH PARTITION`) evaluates its bound once, when it runs, and
//! stores the value. Replayed as text, each subscriber would store its own value: the
//! partitions' ranges would differ between the nodes, and the first row the publisher routes by
//! its bound that the subscriber's bound rejects stops the subscription
//! ("violates partition constraint"). So when a bound holds anything but literals, the
//! recorded statement carries the bound as the publisher stored it (`pg_get_expr` of
//! `relpartbound`, printed with `DateStyle = ISO` so it reads back the same everywhere) in
//! place of the client's expressions; the rest of the text is the client's.

use pgrx::list::PgList;
use pgrx::pg_sys;
use pgrx::spi::Spi;

/// A bound to replace in the statement's text: bytes `start..end` of the query string (from
/// the `FROM`/`IN` keyword to the bound's last parenthesis), and the stored bound in the
/// database encoding.
pub struct Replacement {
    pub start: usize,
    pub end: usize,
    pub text: Vec<u8>,
}

/// The replacement for the partition bound of `parsetree` (a CREATE TABLE ... PARTITION OF or
/// an ALTER TABLE ... ATTACH PARTITION, as the command collection holds it), when the bound is
/// not all literals; `query` is the whole query string the statement is part of.
///
/// # Safety
/// In a backend, inside the transaction that ran the statement; `parsetree` is its tree.
pub unsafe fn evaluated(
    parsetree: *mut pg_sys::Node,
    table: pg_sys::Oid,
    query: &[u8],
) -> Option<Replacement> {
    // SAFETY: the caller's promise: the statement's tree, a node of the type its tag says.
    let (bound, partition) = unsafe {
        match (*parsetree).type_ {
            pg_sys::NodeTag::T_CreateStmt => {
                ((*(parsetree as *mut pg_sys::CreateStmt)).partbound, table)
            }
            pg_sys::NodeTag::T_AlterTableStmt => attached(parsetree.cast())?,
            _ => return None,
        }
    };
    // SAFETY: null or the tree's PartitionBoundSpec, whose value lists hold raw parser nodes.
    if bound.is_null() || unsafe { (*bound).is_default || all_literals(bound) } {
        return None;
    }
    // SAFETY: as above.
    let (strategy, location) = unsafe { ((*bound).strategy, (*bound).location) };
    let groups = match strategy as u8 {
        b'l' => 1,
        b'r' => 2,
        _ => return None, // hash: modulus and remainder are integers in the grammar
    };
    let start = usize::try_from(location).ok()?;
    let end = after_groups(query, start, groups)?;
    let stored = ddl_server::guc::with_settings(
        &[
            ("DateStyle", "ISO"),
            ("IntervalStyle", "postgres"),
            ("extra_float_digits", "3"),
        ],
        || {
            // Bytes in the database encoding, as the query string they go into.
            Spi::get_one_with_args::<Vec<u8>>(
                "SELECT pg_catalog.convert_to(pg_catalog.pg_get_expr(relpartbound, oid),
                                              pg_catalog.getdatabaseencoding())
                   FROM pg_catalog.pg_class WHERE oid = $1",
                &[partition.into()],
            )
        },
    )
    .ok()
    .flatten()?;
    Some(Replacement {
        start,
        end,
        text: stored.strip_prefix(b"FOR VALUES ")?.to_vec(),
    })
}

/// The bound of the ATTACH PARTITION subcommand of `stmt`, and the partition it attaches.
///
/// # Safety
/// `stmt` is an ALTER TABLE's tree; in a transaction.
unsafe fn attached(
    stmt: *mut pg_sys::AlterTableStmt,
) -> Option<(*mut pg_sys::PartitionBoundSpec, pg_sys::Oid)> {
    // SAFETY: the caller's promise: `cmds` is a List of AlterTableCmds.
    unsafe { PgList::<pg_sys::AlterTableCmd>::from_pg((*stmt).cmds) }
        .iter_ptr()
        .find_map(|cmd| {
            // SAFETY: an AlterTableCmd of the list, whose `def` is null or a node; a
            // PartitionCmd by its tag, naming the partition with a RangeVar.
            unsafe {
                let def = (*cmd).def;
                if (*cmd).subtype != pg_sys::AlterTableType::AT_AttachPartition
                    || def.is_null()
                    || (*def).type_ != pg_sys::NodeTag::T_PartitionCmd
                {
                    return None;
                }
                let cmd = def as *mut pg_sys::PartitionCmd;
                Some(((*cmd).bound, ddl_server::relation_oid((*cmd).name)?))
            }
        })
}

/// Whether every value of the bound is a literal (possibly cast or collated), or MINVALUE /
/// MAXVALUE: then the text means the same on every node.
///
/// # Safety
/// `bound` is a PartitionBoundSpec of a raw parse tree.
unsafe fn all_literals(bound: *mut pg_sys::PartitionBoundSpec) -> bool {
    // SAFETY: the caller's promise.
    let lists = unsafe {
        [
            (*bound).listdatums,
            (*bound).lowerdatums,
            (*bound).upperdatums,
        ]
    };
    lists.into_iter().all(|list| {
        // SAFETY: a value list of the bound: NIL or nodes.
        unsafe { PgList::<pg_sys::Node>::from_pg(list) }
            .iter_ptr()
            // SAFETY: as above.
            .all(|node| unsafe { literal(node) })
    })
}

/// Whether `node` is a literal, possibly cast or collated, or MINVALUE / MAXVALUE.
///
/// # Safety
/// `node` is null or a node of a raw parse tree.
unsafe fn literal(node: *mut pg_sys::Node) -> bool {
    if node.is_null() {
        return true;
    }
    // SAFETY: the caller's promise; a node of the type its tag says, whose `arg` is null or
    // a node of the same tree.
    unsafe {
        match (*node).type_ {
            // MINVALUE and MAXVALUE are column references in the raw tree.
            pg_sys::NodeTag::T_A_Const | pg_sys::NodeTag::T_ColumnRef => true,
            pg_sys::NodeTag::T_TypeCast => literal((*(node as *mut pg_sys::TypeCast)).arg),
            pg_sys::NodeTag::T_CollateClause => {
                literal((*(node as *mut pg_sys::CollateClause)).arg)
            }
            _ => false,
        }
    }
}

/// The byte offset just after the `groups`-th top-level parenthesised group that starts at
/// or after `start` in `sql`, as PostgreSQL's own lexer reads the text (`core_yylex`, with this
/// session's `standard_conforming_strings` and `backslash_quote`, as the parser read it): so
/// literals of every kind, quoted identifiers, dollar quotes and comments are what the parser
/// saw, never a guess of ours. `None` when the text ends first, or holds a NUL byte, or the
/// lexer raises an error (the text was parsed already, so it does not; if it ever did, the
/// statement would be recorded as the client wrote it rather than fail).
fn after_groups(sql: &[u8], start: usize, groups: usize) -> Option<usize> {
    let text = std::ffi::CString::new(sql.get(start..)?).ok()?;
    ddl_server::xact::catching_parser_error(|| {
        // SAFETY: the scanner reads the NUL-terminated copy, keeps its state in `extra`, which
        // outlives it, and is finished before both go; tokens are read until the end (0).
        unsafe {
            let mut extra: pg_sys::core_yy_extra_type = std::mem::zeroed();
            let extra = &raw mut extra;
            let scanner = pg_sys::scanner_init(
                text.as_ptr(),
                extra,
                &raw const pg_sys::ScanKeywords,
                (&raw const pg_sys::ScanKeywordTokens).cast(),
            );
            ddl_server::versions::quiet_escape_string_warning(extra);
            let (mut depth, mut closed, mut end) = (0usize, 0usize, None);
            loop {
                let mut value: pg_sys::core_YYSTYPE = std::mem::zeroed();
                let mut location = 0;
                match u8::try_from(pg_sys::core_yylex(&mut value, &mut location, scanner)) {
                    Ok(0) => break,
                    Ok(b'(') => depth += 1,
                    Ok(b')') => {
                        let Some(d) = depth.checked_sub(1) else { break };
                        depth = d;
                        if depth == 0 {
                            closed += 1;
                            if closed == groups {
                                end = usize::try_from(location).ok().map(|l| start + l + 1);
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
            pg_sys::scanner_finish(scanner);
            end
        }
    })
    .ok()
    .flatten()
}
