//! Which publications take a DDL statement, from `ddl_sync.publication_sync`.
//!
//! Both sides of the transport use this: the capture asks "does any publication take it?"
//! (no WAL at all otherwise), the output plugin "does one of this slot's publications?". In the
//! plugin the catalog is read under the historic snapshot: it is a `user_catalog_table`, so it
//! reads as it was when the statement ran, like pgoutput's own view of publications; a rule
//! changed later does not rewrite history, and replaying a slot gives the same output.
//!
//! For each publication the most specific enabled row decides: object, then relation, then
//! schema, then the publication row. No enabled row: the publication does not replicate DDL.

use ddl_filter::{DdlCandidate, DdlKinds, RuleSetBuilder};
use ddl_wire::DdlRecord;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::{CStr, CString};

/// One row of `ddl_sync.publication_sync`.
struct Row {
    pubid: pg_sys::Oid,
    kind: u8,
    nspid: pg_sys::Oid,
    relid: pg_sys::Oid,
    objid: pg_sys::Oid,
    enabled: bool,
    ddl: i32,
    extra: Option<String>,
}

impl Row {
    /// How specifically the row addresses the record's object; `None` when it does not.
    fn rank(&self, record: &DdlRecord<'_>) -> Option<u8> {
        let object = pg_sys::Oid::from(record.object_id);
        match self.kind {
            // For objects, pfsyncrelid holds the object's catalog (as pg_depend.classid).
            b'o' if self.objid == object
                && self.relid == pg_sys::Oid::from(record.class_id)
                && record.object_id != 0 =>
            {
                Some(3)
            }
            b'r' if self.relid == object
                && record.class_id == u32::from(pg_sys::RelationRelationId) =>
            {
                Some(2)
            }
            b'n' if self.nspid == pg_sys::Oid::from(record.namespace_id)
                && record.namespace_id != 0 =>
            {
                Some(1)
            }
            b'p' => Some(0),
            _ => None,
        }
    }
}

/// The OIDs of the named publications that exist (in the current, or historic, snapshot).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn publication_oids(names: &[String]) -> Vec<pg_sys::Oid> {
    names
        .iter()
        .filter_map(|name| CString::new(name.as_str()).ok())
        .map(|name| pg_sys::get_publication_oid(name.as_ptr(), true))
        .filter(|oid| *oid != pg_sys::InvalidOid)
        .collect()
}

/// Whether one of the publications `pubids` (every publication when `None`) takes `record`.
///
/// # Safety
/// Runs in a backend inside a transaction (in the plugin: in a decoding callback, with the
/// historic snapshot set up).
pub unsafe fn wanted(pubids: Option<&[pg_sys::Oid]>, record: &DdlRecord<'_>) -> bool {
    let Some(kind) = DdlKinds::parse(record.kind)
        .ok()
        .and_then(|k| k.token().and(k.kinds().next()))
    else {
        warning!(
            "ddl_sync: DDL record of xid {} has kind \"{}\", which is not one DDL kind; not sent",
            record.xid,
            record.kind
        );
        return false;
    };
    if pubids.is_some_and(|p| p.is_empty()) {
        return false;
    }
    let rows = read_rows(pubids);
    let mut all: Vec<pg_sys::Oid> = rows.iter().map(|r| r.pubid).collect();
    all.sort_unstable_by_key(|oid| u32::from(*oid));
    all.dedup();
    let pubids = pubids.unwrap_or(&all);
    let candidate = DdlCandidate {
        kind,
        tag: record.command_tag,
        schema: (!record.schema.is_empty()).then_some(record.schema),
        identity: (!record.object_identity.is_empty()).then_some(record.object_identity),
        sql: record.sql,
    };
    pubids.iter().any(|pubid| {
        let decisive = rows
            .iter()
            .filter(|r| r.pubid == *pubid && r.enabled)
            .filter_map(|r| r.rank(record).map(|rank| (rank, r)))
            .max_by_key(|(rank, _)| *rank);
        let Some((_, row)) = decisive else {
            return false;
        };
        let mut builder = RuleSetBuilder::new();
        builder.kinds(DdlKinds::from_bits_truncate(row.ddl));
        if let Some(extra) = &row.extra {
            builder.text(extra);
        }
        match builder.build() {
            Ok(rules) => rules.decide(&candidate).replicate(),
            Err(e) => {
                // The functions that write the catalog validate rules; a row that still fails
                // was written by hand. Sending the DDL is the choice that loses nothing: the
                // subscriber applies its own rules again.
                warning!("ddl_sync: ignoring unreadable rules of publication_sync row: {e}");
                DdlKinds::from_bits_truncate(row.ddl).contains(kind.kinds())
            }
        }
    })
}

/// The rows of `publication_sync` for `pubids` (all when `None`); none when the extension is
/// not installed.
unsafe fn read_rows(pubids: Option<&[pg_sys::Oid]>) -> Vec<Row> {
    let nsp = pg_sys::get_namespace_oid(c"ddl_sync".as_ptr(), true);
    let relid = if nsp == pg_sys::InvalidOid {
        pg_sys::InvalidOid
    } else {
        pg_sys::get_relname_relid(c"publication_sync".as_ptr(), nsp)
    };
    if relid == pg_sys::InvalidOid {
        return Vec::new();
    }
    let rel = pg_sys::table_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let desc = (*rel).rd_att;
    let natts = (*desc).natts as usize;
    let position = |name: &CStr| {
        (*desc)
            .attrs
            .as_slice(natts)
            .iter()
            .position(|a| !a.attisdropped && CStr::from_ptr(a.attname.data.as_ptr()) == name)
    };
    let columns = [
        c"pfsyncpubid",
        c"pfsynckind",
        c"pfsyncnspid",
        c"pfsyncrelid",
        c"pfsyncobjid",
        c"pfsyncenabled",
        c"pfsyncddl",
        c"pfsyncextra",
    ]
    .map(position);
    let Some(at) = columns.iter().copied().collect::<Option<Vec<usize>>>() else {
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        error!("ddl_sync: ddl_sync.publication_sync lacks a column this version reads");
    };
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    let mut rows = Vec::new();
    // A systable scan, not a heap scan: while decoding an in-progress (streamed) or prepared
    // transaction PostgreSQL allows only these, which check for a concurrent abort.
    let scan = pg_sys::systable_beginscan(
        rel,
        pg_sys::InvalidOid,
        false,
        std::ptr::null_mut(),
        0,
        std::ptr::null_mut(),
    );
    loop {
        let tuple = pg_sys::systable_getnext(scan);
        if tuple.is_null() {
            break;
        }
        pg_sys::heap_deform_tuple(tuple, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
        let oid = |i: usize| pg_sys::Oid::from(values[at[i]].value() as u32);
        let pubid = oid(0);
        if pubids.is_some_and(|p| !p.contains(&pubid)) {
            continue;
        }
        rows.push(Row {
            pubid,
            kind: values[at[1]].value() as u8,
            nspid: oid(2),
            relid: oid(3),
            objid: oid(4),
            enabled: values[at[5]].value() != 0,
            ddl: values[at[6]].value() as i32,
            extra: (!nulls[at[7]]).then(|| {
                let text = pg_sys::text_to_cstring(values[at[7]].cast_mut_ptr());
                CStr::from_ptr(text).to_string_lossy().into_owned()
            }),
        });
    }
    pg_sys::systable_endscan(scan);
    pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    rows
}
