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
    let end = sql_text::after_groups(query, start, groups)?;
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

/// Scanning SQL text without parsing it.
pub mod sql_text {
    /// The byte offset just after the `groups`-th top-level parenthesised group that starts at
    /// or after `start` in `sql`, skipping string literals, quoted identifiers, dollar quotes
    /// and comments; `None` when the text ends first.
    pub fn after_groups(sql: &[u8], start: usize, groups: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut closed = 0usize;
        let mut i = start;
        while i < sql.len() {
            match sql[i] {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        closed += 1;
                        if closed == groups {
                            return Some(i + 1);
                        }
                    }
                }
                b'\'' => {
                    let escapes = i > 0 && matches!(sql[i - 1], b'E' | b'e');
                    i = after_quoted(sql, i, b'\'', escapes)?;
                    continue;
                }
                b'"' => {
                    i = after_quoted(sql, i, b'"', false)?;
                    continue;
                }
                b'-' if sql.get(i + 1) == Some(&b'-') => {
                    i = sql[i..].iter().position(|&b| b == b'\n').map(|n| i + n)?;
                }
                b'/' if sql.get(i + 1) == Some(&b'*') => {
                    i = after_block_comment(sql, i)?;
                    continue;
                }
                b'$' => {
                    if let Some(end) = after_dollar_quote(sql, i) {
                        i = end;
                        continue;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// After the literal opened by `quote` at `open` (a doubled quote is part of it; with
    /// `escapes`, so is a backslash-escaped byte).
    fn after_quoted(sql: &[u8], open: usize, quote: u8, escapes: bool) -> Option<usize> {
        let mut i = open + 1;
        while i < sql.len() {
            if escapes && sql[i] == b'\\' {
                i += 2;
                continue;
            }
            if sql[i] == quote {
                if sql.get(i + 1) == Some(&quote) {
                    i += 2;
                    continue;
                }
                return Some(i + 1);
            }
            i += 1;
        }
        None
    }

    /// After the (nestable) comment opened at `open`.
    fn after_block_comment(sql: &[u8], open: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = open;
        while i + 1 < sql.len() {
            match (sql[i], sql[i + 1]) {
                (b'/', b'*') => {
                    depth += 1;
                    i += 2;
                }
                (b'*', b'/') => {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => i += 1,
            }
        }
        None
    }

    /// After the dollar-quoted string opening at `open` (`$tag$...$tag$`), if one opens there.
    fn after_dollar_quote(sql: &[u8], open: usize) -> Option<usize> {
        let tag_len = sql[open + 1..]
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80))?;
        if sql.get(open + 1 + tag_len) != Some(&b'$') || sql[open + 1].is_ascii_digit() {
            return None;
        }
        let tag = &sql[open..open + tag_len + 2];
        let body = open + tag.len();
        sql[body..]
            .windows(tag.len())
            .position(|w| w == tag)
            .map(|n| body + n + tag.len())
    }

    #[cfg(test)]
    mod tests {
        use super::after_groups;

        fn bound<'a>(sql: &'a str, keyword: &str, groups: usize) -> Option<&'a str> {
            let start = sql.find(keyword)?;
            after_groups(sql.as_bytes(), start, groups).map(|end| &sql[start..end])
        }

        #[test]
        fn finds_the_end_of_range_and_list_bounds() {
            let sql = "CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (now()) TO (MAXVALUE) PARTITION BY LIST (a)";
            assert_eq!(bound(sql, "FROM", 2), Some("FROM (now()) TO (MAXVALUE)"));
            let sql = "create table l1 partition of l for values in (('a'), lower('B')) with (fillfactor=70)";
            assert_eq!(bound(sql, "in (", 1), Some("in (('a'), lower('B'))"));
        }

        #[test]
        fn parentheses_in_literals_identifiers_and_comments_do_not_count() {
            let sql = r#"... FOR VALUES IN (')', E'\')', "a)b", $x$)$x$ /* ) (/* ) */ */, 1 -- )
            ) rest"#;
            let start = sql.find("IN").unwrap();
            let end = after_groups(sql.as_bytes(), start, 1).unwrap();
            assert_eq!(&sql[end..], " rest");
        }

        #[test]
        fn unterminated_text_gives_none() {
            assert_eq!(after_groups(b"IN ('a", 0, 1), None);
            assert_eq!(after_groups(b"IN (1", 0, 1), None);
            assert_eq!(after_groups(b"FROM (1) TO (2", 0, 2), None);
            assert_eq!(after_groups(b"IN (1))", 0, 2), None);
        }
    }
}
