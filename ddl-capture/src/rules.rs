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

use crate::invalidation;
use ddl_filter::{DdlCandidate, DdlKinds, Decision, RuleSet, RuleSetBuilder};
use ddl_wire::DdlRecord;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::OnceCell;
use std::ffi::CString;
use std::rc::Rc;

/// One row of `ddl_sync.publication_sync`.
#[derive(Clone)]
pub(crate) struct Row {
    /// The row's own `oid`, which names it in the statistics of what it filtered.
    pub oid: pg_sys::Oid,
    pub pubid: pg_sys::Oid,
    /// `p`ublication, `n`amespace, `r`elation or `o`bject.
    pub kind: u8,
    pub nspid: pg_sys::Oid,
    /// The relation of an `r` row; the catalog of the object of an `o` row.
    pub relid: pg_sys::Oid,
    pub objid: pg_sys::Oid,
    pub enabled: bool,
    pub ddl: i32,
    pub extra: Option<String>,
    /// The row's kinds and rules, built once (regexes compiled) for as long as the row is
    /// kept: the capture keeps its rows between statements.
    built: OnceCell<Result<RuleSet, String>>,
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

/// The OIDs of the named publications that exist (in the current, or historic, snapshot). The
/// names are in the database encoding, as a client gives them.
///
/// # Safety
/// Runs in a backend inside a transaction.
pub unsafe fn publication_oids(names: &[CString]) -> Vec<pg_sys::Oid> {
    names
        .iter()
        // SAFETY: the caller's promise; a NUL-terminated name, missing_ok.
        .map(|name| unsafe { pg_sys::get_publication_oid(name.as_ptr(), true) })
        .filter(|oid| *oid != pg_sys::InvalidOid)
        .collect()
}

/// The DDL rules of some publications, as `publication_sync` holds them.
pub struct PublicationRules {
    rows: Rc<[Row]>,
    /// The publications asked about, in OID order.
    pubids: Vec<pg_sys::Oid>,
}

impl PublicationRules {
    /// The rules of the publications `pubids`, for the output plugin: every row of
    /// `publication_sync` as the historic snapshot shows it, read once and then kept in
    /// `cache` until an invalidation says the table changed. The reorder buffer executes the
    /// invalidations of the decoded transactions in the order they were made, at the point
    /// of the history where they were made (as pgoutput's own publication caches rely on), so
    /// kept rows are the rows of the point being decoded.
    ///
    /// # Safety
    /// Runs in a decoding callback, with the historic snapshot set up; `cache` is the decoding
    /// context's own (a new context may decode the same history again, from an earlier point).
    pub unsafe fn decoding(cache: &RulesCache, pubids: &[pg_sys::Oid]) -> PublicationRules {
        // SAFETY: the caller's promise.
        let rows = unsafe {
            cache.0.get(|| {
                let (relid, rows) = read_rows();
                (relid, rows.into())
            })
        };
        PublicationRules::of(rows, Some(pubids))
    }

    /// The rules of every publication, for the capture: read in the current snapshot once,
    /// then kept until an invalidation says `publication_sync` changed (see `invalidation`).
    /// A backend's capture reads the table once, not at every statement.
    ///
    /// # Safety
    /// Runs in a backend inside a transaction, with a current (not historic) snapshot.
    pub unsafe fn current() -> PublicationRules {
        thread_local! {
            static CACHED: invalidation::Cached<Rc<[Row]>> = const { invalidation::Cached::new() };
        }
        // SAFETY: the caller's promise.
        let rows = CACHED.with(|cached| unsafe {
            cached.get(|| {
                let (relid, rows) = read_rows();
                (relid, rows.into())
            })
        });
        PublicationRules::of(rows, None)
    }

    fn of(rows: Rc<[Row]>, pubids: Option<&[pg_sys::Oid]>) -> PublicationRules {
        let mut pubids: Vec<pg_sys::Oid> = match pubids {
            Some(p) => p.to_vec(),
            None => rows.iter().map(|r| r.pubid).collect(),
        };
        pubids.sort_unstable_by_key(|oid| u32::from(*oid));
        pubids.dedup();
        PublicationRules { rows, pubids }
    }

    /// The rows read.
    pub(crate) fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter()
    }

    /// Whether `publication_sync` has no row, enabled or not.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether no publication replicates any DDL (no enabled row with a kind): then nothing is
    /// captured, and the capture stops before it asks PostgreSQL about the statement.
    pub fn none_enabled(&self) -> bool {
        // Kinds come first: a row with no kind takes nothing, whatever its rules say.
        !self.rows.iter().any(|r| r.enabled && r.ddl != 0)
    }

    /// Whether one of the publications takes `record`.
    pub fn wanted(&self, record: &DdlRecord<'_>) -> bool {
        self.verdicts(record)
            .iter()
            .any(|(_, verdict)| *verdict == Verdict::Takes)
    }

    /// What each publication that has rows decides about `record`, in OID order. Publications
    /// without any row do not replicate DDL and are left out; a record whose kind is not one
    /// DDL kind is taken by none (after a WARNING).
    pub fn verdicts(&self, record: &DdlRecord<'_>) -> Vec<(pg_sys::Oid, Verdict)> {
        let Some(kind) = DdlKinds::parse(record.kind)
            .ok()
            .and_then(|k| k.token().and(k.kinds().next()))
        else {
            warning!(
                "ddl_sync: DDL record of xid {} has kind \"{}\", which is not one DDL kind; not sent",
                record.xid,
                record.kind
            );
            return Vec::new();
        };
        let candidate = DdlCandidate {
            kind,
            tag: record.command_tag,
            schema: (!record.schema.is_empty()).then_some(record.schema),
            identity: (!record.object_identity.is_empty()).then_some(record.object_identity),
            sql: record.sql,
        };
        self.pubids
            .iter()
            .filter(|pubid| self.rows.iter().any(|r| r.pubid == **pubid))
            .map(|pubid| (*pubid, self.verdict(*pubid, record, &candidate)))
            .collect()
    }

    fn verdict(
        &self,
        pubid: pg_sys::Oid,
        record: &DdlRecord<'_>,
        candidate: &DdlCandidate<'_>,
    ) -> Verdict {
        let decisive = self
            .rows
            .iter()
            .filter(|r| r.pubid == pubid && r.enabled)
            .filter_map(|r| r.rank(record).map(|rank| (rank, r)))
            .max_by_key(|(rank, _)| *rank);
        let Some((_, row)) = decisive else {
            return Verdict::Filtered {
                row: pg_sys::InvalidOid,
                rule: None,
            };
        };
        let filtered = |rule| Verdict::Filtered { row: row.oid, rule };
        let built = row.built.get_or_init(|| {
            let mut builder = RuleSetBuilder::new();
            builder.kinds(DdlKinds::from_bits_truncate(row.ddl));
            if let Some(extra) = &row.extra {
                builder.text(extra);
            }
            builder.build().map_err(|e| e.to_string())
        });
        match built.as_ref().map(|rules| rules.decide(candidate)) {
            Ok(decision) if decision.replicate() => Verdict::Takes,
            Ok(Decision::Matched { rule, .. }) => filtered(Some(rule)),
            Ok(_) => filtered(None),
            Err(e) => {
                // The functions that write the catalog validate rules; a row that still
                // fails was written by hand. Sending the DDL is the choice that loses
                // nothing: the subscriber applies its own rules again.
                warning!("ddl_sync: ignoring unreadable rules of publication_sync row: {e}");
                if DdlKinds::from_bits_truncate(row.ddl).contains(candidate.kind.kinds()) {
                    Verdict::Takes
                } else {
                    filtered(None)
                }
            }
        }
    }
}

/// The rows an output plugin's decoding context keeps between DDL events (see
/// [`PublicationRules::decoding`]).
pub struct RulesCache(invalidation::Cached<Rc<[Row]>>);

impl RulesCache {
    pub const fn new() -> RulesCache {
        RulesCache(invalidation::Cached::new())
    }
}

impl Default for RulesCache {
    fn default() -> RulesCache {
        RulesCache::new()
    }
}

/// What one publication decides about a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The publication replicates it.
    Takes,
    /// It does not, because of row `row` of `publication_sync` (`InvalidOid`: no enabled row
    /// applies): its rule number `rule` (from 0, in the row's rules), or its kinds (`None`).
    Filtered {
        row: pg_sys::Oid,
        rule: Option<usize>,
    },
}

/// The OID of `publication_sync`, and its rows; InvalidOid and no row when the extension is
/// not installed.
///
/// # Safety
/// Runs in a backend inside a transaction.
unsafe fn read_rows() -> (pg_sys::Oid, Vec<Row>) {
    let mut rows = Vec::new();
    // SAFETY: the caller's promise.
    let relid = unsafe { scan(pg_sys::AccessShareLock, |_, _, row| rows.push(row)) };
    (relid, rows)
}

/// Gives `each` every row of `publication_sync` with the table (locked in `lockmode`) and the
/// row's tuple (valid until the next row). Nothing when the extension is not installed.
/// Returns the table's OID (InvalidOid then).
///
/// # Safety
/// Runs in a backend inside a transaction.
pub(crate) unsafe fn scan(
    lockmode: u32,
    mut each: impl FnMut(pg_sys::Relation, pg_sys::HeapTuple, Row),
) -> pg_sys::Oid {
    let columns = ddl_server::contract::PUBLICATION_SYNC_COLUMNS;
    let read = |rel, tuple, v: &[Option<pg_sys::Datum>]| {
        let value = |i: usize| v[i].map_or(0, |d| d.value());
        let oid = |i: usize| pg_sys::Oid::from(value(i) as u32);
        let row = Row {
            oid: oid(0),
            pubid: oid(1),
            kind: value(2) as u8,
            nspid: oid(3),
            relid: oid(4),
            objid: oid(5),
            enabled: value(6) != 0,
            ddl: value(7) as i32,
            // SAFETY: a `text` datum of the current row, valid during this call.
            extra: v[8].map(|d| unsafe { ddl_server::text::utf8_text(d) }),
            built: OnceCell::new(),
        };
        each(rel, tuple, row);
    };
    // SAFETY: the caller's promise; the columns are of by-value types (`oid`, `"char"`,
    // `boolean`, `int4`) but for `pfsyncextra`, `text`, read as such above.
    unsafe { ddl_server::extension_tables::scan(c"publication_sync", &columns, lockmode, read) }
}
