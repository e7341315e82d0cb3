//! The subscription whose apply worker runs the replay, and its DDL configuration.

use ddl_filter::{DdlKinds, RuleSet, RuleSetBuilder};
use ddl_server::errors;
use ddl_server::subscription_rel;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

/// A row version of `ddl_sync.subscription_ddl`: (subscription, block, block, offset, xmin).
type RowVersion = (pg_sys::Oid, u16, u16, u16, pg_sys::TransactionId);

thread_local! {
    /// The last configuration [`Subscription::config`] built, and the row version it read.
    static LAST_CONFIG: RefCell<Option<(RowVersion, Rc<Config>)>> = const { RefCell::new(None) };
}

/// `ddl_sync.applying_subscription()`: the subscription whose apply worker runs this session,
/// from the session's replication origin, which the apply worker names `pg_<subscription
/// oid>`; NULL elsewhere. The apply log records it with each event.
#[pg_extern(stable, parallel_restricted)]
pub fn applying_subscription() -> Option<pg_sys::Oid> {
    // SAFETY: reads a backend-local global and the origin catalog (missing_ok); the name is
    // NULL or a palloc'd NUL-terminated copy.
    let origin_name = unsafe {
        let origin = ddl_server::versions::session_origin();
        if origin == 0 {
            return None;
        }
        let mut name: *mut std::ffi::c_char = std::ptr::null_mut();
        if !pg_sys::replorigin_by_oid(origin, true, &mut name) || name.is_null() {
            return None;
        }
        ddl_server::text::utf8_ptr(name)
    };
    let oid: u32 = origin_name.strip_prefix("pg_")?.parse().ok()?;
    Some(pg_sys::Oid::from(oid))
}

/// What a failing replay does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// The apply worker errors and retries.
    Error,
    /// Rolled back in a subtransaction; recorded; replication goes on.
    Skip,
}

/// What a statement that made something else here than on the publisher does
/// (`ddl_divergence`, see `replay/verify.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divergence {
    /// The event is `diverged`, with a WARNING; replication goes on.
    Warn,
    /// The apply worker errors and retries.
    Error,
}

/// A subscription's row of `ddl_sync.subscription_ddl`.
pub struct Config {
    pub kinds: DdlKinds,
    pub conflict: Conflict,
    pub rules: RuleSet,
    /// The role that replays the statements of roles missing here (`ddl_fallback_role`).
    pub fallback_role: Option<String>,
    pub divergence: Divergence,
}

pub struct Subscription {
    pub oid: pg_sys::Oid,
    pub name: String,
}

impl Subscription {
    /// The subscription being applied, from the session's replication origin, which the apply
    /// worker names `pg_<subscription oid>`.
    pub fn of_this_worker() -> Option<Subscription> {
        let oid = applying_subscription()?;
        let name = ddl_server::subscription_rel::subscription_name(oid)?;
        Some(Subscription { oid, name })
    }

    /// Its DDL configuration; `None` when it does not replay DDL.
    ///
    /// Read at every replayed event (a configuration changed meanwhile holds from the next
    /// event on), so from the table directly, and built again (its rules compiled) only when
    /// the row is another version than the last one read: a row version, named by its place
    /// and inserting transaction, never changes.
    #[inline(never)] // a phase of `cargo xtask bench apply-instructions`
    pub fn config(&self) -> Option<Rc<Config>> {
        let mut found = None;
        // SAFETY: in the apply transaction; the columns read are an oid, then text (or name,
        // read by name below) of rows valid in the callback.
        unsafe {
            ddl_server::extension_tables::scan(
                c"subscription_ddl",
                &[c"subid"],
                pg_sys::AccessShareLock,
                |rel, tuple, values| {
                    if found.is_none() && values[0] == Some(pg_sys::Datum::from(self.oid)) {
                        found = Some(self.cached_or_read(rel, tuple));
                    }
                },
            )
        };
        found.flatten()
    }

    /// The configuration of row `tuple` of `ddl_sync.subscription_ddl` (`rel`), from the
    /// cache when it holds this row version.
    ///
    /// # Safety
    /// `tuple` is a row of `rel`, both valid for the call.
    unsafe fn cached_or_read(
        &self,
        rel: pg_sys::Relation,
        tuple: pg_sys::HeapTuple,
    ) -> Option<Rc<Config>> {
        // SAFETY: the caller's promise: a formed row with its header.
        let version = unsafe {
            let t = &*tuple;
            let xmin = (*t.t_data).t_choice.t_heap.t_xmin;
            (
                self.oid,
                t.t_self.ip_blkid.bi_hi,
                t.t_self.ip_blkid.bi_lo,
                t.t_self.ip_posid,
                xmin,
            )
        };
        if let Some((at, config)) = LAST_CONFIG.with_borrow(|last| last.clone()) {
            if at == version {
                return Some(config);
            }
        }
        // SAFETY: the caller's promise.
        let config = Rc::new(unsafe { self.read(rel, tuple) }?);
        LAST_CONFIG.set(Some((version, Rc::clone(&config))));
        Some(config)
    }

    /// The configuration row `tuple` of `rel` holds. The fallback role and the divergence
    /// policy are read by name: a database still at an older version's SQL objects (before
    /// ALTER EXTENSION UPDATE) has no such column, and must go on replaying meanwhile.
    ///
    /// # Safety
    /// As [`Self::cached_or_read`].
    unsafe fn read(&self, rel: pg_sys::Relation, tuple: pg_sys::HeapTuple) -> Option<Config> {
        // SAFETY: the caller's promise; each column is found by name in the row's descriptor
        // and read as its type: int4 `ddl`, text `conflict`, `rules`, `divergence`, name
        // `fallback_role`.
        let column = |name| unsafe {
            ddl_server::extension_tables::column_value(tuple, (*rel).rd_att, name)
        };
        // SAFETY: a text datum of the row.
        let text = |name| column(name).map(|d| unsafe { ddl_server::text::utf8_text(d) });
        let ddl = column(c"ddl")?.value() as i32;
        let conflict = text(c"conflict")?;
        let rules = text(c"rules");
        // SAFETY: a name datum points at a NUL-terminated NameData.
        let fallback_role = column(c"fallback_role")
            .map(|d| unsafe { ddl_server::text::utf8_ptr(d.cast_mut_ptr()) });
        let divergence = text(c"divergence");
        let mut builder = RuleSetBuilder::new();
        // The subscription's kinds, `foreign` too when it names it (the builder's own are those
        // of `all`).
        builder.kinds(DdlKinds::from_bits_truncate(ddl));
        if let Some(rules) = &rules {
            builder.text(rules);
        }
        let rules = builder.build().unwrap_or_else(|e| {
            errors::raise(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format_args!(
                    "rules of subscription \"{}\" are not readable: {e}",
                    self.name
                ),
            )
        });
        Some(Config {
            kinds: DdlKinds::from_bits_truncate(ddl),
            conflict: if conflict == "skip" {
                Conflict::Skip
            } else {
                Conflict::Error
            },
            rules,
            fallback_role,
            divergence: if divergence.as_deref() == Some("error") {
                Divergence::Error
            } else {
                Divergence::Warn
            },
        })
    }

    /// Registers a table that replayed DDL created as ready in `pg_subscription_rel`, in the
    /// same transaction: it was created empty at this exact point of the stream, so there is
    /// nothing to copy, and every later row for it must be applied (without this, rows arrive
    /// only after a REFRESH PUBLICATION and the ones before it are lost). A table whose rows
    /// cannot be applied here stays out; the note for the row says why.
    ///
    /// Every replayed CREATE TABLE comes here, so it asks the catalog caches, not SPI.
    pub fn register_ready(&self, identity: &str) -> Option<String> {
        self.register_relation(ddl_server::relcache::relation_named(identity)?)
    }

    /// [`Self::register_ready`] of relation `relid` (nothing for one that is not a table, or is
    /// gone again).
    pub fn register_relation(&self, relid: pg_sys::Oid) -> Option<String> {
        // SAFETY: a syscache lookup ('\0' for a relation that is gone).
        let relkind = unsafe { pg_sys::get_rel_relkind(relid) } as u8;
        let is_table =
            relkind == pg_sys::RELKIND_RELATION || relkind == pg_sys::RELKIND_PARTITIONED_TABLE;
        if !is_table || subscription_rel::contains(self.oid, relid) {
            return None;
        }
        if let Some(columns) = uncarriable_columns(relid) {
            return Some(not_applied_note(&display_name(relid), &columns));
        }
        subscription_rel::add_ready(self.oid, relid);
        None
    }

    /// After a replayed ALTER TABLE changed table `relid`: when the table now has a column
    /// whose values cannot be applied here, takes it out of the subscription, and says so.
    pub fn recheck_columns(&self, relid: pg_sys::Oid) -> Option<String> {
        // The columns first: almost always there is none, and the lookup is the cheaper one.
        let columns = uncarriable_columns(relid)?;
        if !subscription_rel::contains(self.oid, relid) {
            return None;
        }
        let name = display_name(relid);
        subscription_rel::remove(self.oid, relid);
        Some(not_applied_note(&name, &columns))
    }
}

/// Relation `relid`'s name as `::regclass::text` gives it (schema-qualified when the
/// search_path does not find it).
fn display_name(relid: pg_sys::Oid) -> String {
    // SAFETY: catalog cache lookups of an existing relation, a new string.
    unsafe {
        let relname = pg_sys::get_rel_name(relid);
        let quoted = if pg_sys::RelationIsVisible(relid) {
            pg_sys::quote_identifier(relname)
        } else {
            let schema = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
            pg_sys::quote_qualified_identifier(schema, relname)
        };
        ddl_server::text::utf8_ptr(quoted)
    }
}

/// The input functions of the types whose every value the subscriber refuses (they raise
/// `cannot accept a value of type ...`): PostgreSQL's internal trees and statistics. A row of a
/// table with such a column would stop the apply worker on every retry; the table is kept out
/// of the subscription instead, where the apply worker skips its rows.
const UNCARRIABLE_INPUT: [u32; 6] = [
    pg_sys::F_PG_NODE_TREE_IN,
    pg_sys::F_PG_NDISTINCT_IN,
    pg_sys::F_PG_DEPENDENCIES_IN,
    pg_sys::F_PG_MCV_LIST_IN,
    pg_sys::F_BRIN_BLOOM_SUMMARY_IN,
    pg_sys::F_BRIN_MINMAX_MULTI_SUMMARY_IN,
];

/// The columns of `relid` of an [`UNCARRIABLE_INPUT`] type (or of an array or domain of one),
/// as `name type, ...`; `None` when there are none or no such relation. From the relcache and
/// the type cache: every replayed CREATE and ALTER TABLE asks (a catalog query planned each
/// time cost more than the statement itself).
fn uncarriable_columns(relid: pg_sys::Oid) -> Option<String> {
    let found = ddl_server::relcache::with_relation(relid, |rel| {
        // SAFETY: the open relation's descriptor.
        let attrs = unsafe { ddl_server::versions::attributes((*rel).rd_att) };
        attrs
            .iter()
            .filter(|a| !a.attisdropped && uncarriable(a.atttypid))
            .map(|a| {
                // SAFETY: a NameData is NUL-terminated; format_type_with_typemod returns a new
                // string (the column's type as `format_type` shows it).
                unsafe {
                    format!(
                        "{} {}",
                        ddl_server::text::utf8_ptr(pg_sys::quote_identifier(
                            a.attname.data.as_ptr()
                        )),
                        ddl_server::text::utf8_ptr(pg_sys::format_type_with_typemod(
                            a.atttypid,
                            a.atttypmod
                        ))
                    )
                }
            })
            .collect::<Vec<String>>()
    })?;
    (!found.is_empty()).then(|| found.join(", "))
}

/// Whether values of type `type_id` (a domain's base type, an array's element type) come in
/// through one of the [`UNCARRIABLE_INPUT`] functions.
fn uncarriable(type_id: pg_sys::Oid) -> bool {
    // SAFETY: type cache lookups of an existing column's type, in the current transaction.
    let input = unsafe {
        let base = pg_sys::getBaseType(type_id);
        let element = pg_sys::get_element_type(base);
        let scalar = if element == pg_sys::InvalidOid {
            base
        } else {
            element
        };
        let (mut input, mut ioparam) = (pg_sys::InvalidOid, pg_sys::InvalidOid);
        pg_sys::getTypeInputInfo(scalar, &mut input, &mut ioparam);
        input
    };
    UNCARRIABLE_INPUT.contains(&u32::from(input))
}

fn not_applied_note(identity: &str, columns: &str) -> String {
    format!(
        "rows of {identity} are not applied on this subscriber: logical replication cannot \
         carry the values of column(s) {columns}; the table is not in the subscription"
    )
}
