//! SPI queries: read-only ones that leave the transaction read-only, and plans kept for the
//! queries run at every replayed event.
//!
//! pgrx's `Spi::get_one*` and `Spi::run*` execute every query as one that writes, and mark the
//! transaction so by assigning it a transaction ID. Code that runs inside a user's statement
//! must not do that: a statement that must be the first action of its transaction (`DROP INDEX
//! CONCURRENTLY`) then fails with "must be first action in transaction", and a read-only
//! transaction pays for an ID it never needed. These run the query read-only.

use pgrx::datum::{DatumWithOid, FromDatum, IntoDatum};
use pgrx::spi::{OwnedPreparedStatement, Spi, SpiResult, SpiTupleTable};
use pgrx::PgOid;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The first column of the first row of the read-only query `sql` (`None`: no row, or NULL).
pub fn read_one<T: FromDatum + IntoDatum>(
    sql: &str,
    args: &[DatumWithOid],
) -> SpiResult<Option<T>> {
    Spi::connect(|client| client.select(sql, Some(1), args)?.first().get_one::<T>())
}

/// Runs `each` on the rows of query `sql` (arguments of the types `types`), prepared the first
/// time this process runs it and kept for the process's life (`SPI_keepplan`). For a query
/// run at every replayed event: later runs skip the parse, analysis and planning, and
/// PostgreSQL's plan cache plans again when a relation it reads changes. Read-only unless
/// `writes`.
pub fn run_kept<R>(
    sql: &'static str,
    types: &[PgOid],
    writes: bool,
    args: &[DatumWithOid],
    each: impl FnOnce(SpiTupleTable<'_>) -> R,
) -> SpiResult<R> {
    Spi::connect_mut(|client| {
        let kept = KEPT.with_borrow(|kept| kept.get(sql).cloned());
        let plan = match kept {
            Some(plan) => plan,
            None => {
                let prepared = if writes {
                    client.prepare_mut(sql, types)?
                } else {
                    client.prepare(sql, types)?
                };
                let plan = Rc::new(prepared.keep());
                KEPT.with_borrow_mut(|kept| kept.insert(sql, Rc::clone(&plan)));
                plan
            }
        };
        let rows = if writes {
            client.update(&*plan, None, args)?
        } else {
            client.select(&*plan, None, args)?
        };
        Ok(each(rows))
    })
}

thread_local! {
    /// The plans of [`run_kept`], by query.
    static KEPT: RefCell<HashMap<&'static str, Rc<OwnedPreparedStatement>>> =
        RefCell::new(HashMap::new());
}
