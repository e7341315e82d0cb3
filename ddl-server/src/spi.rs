//! Read-only SPI queries that leave the transaction read-only.
//!
//! pgrx's `Spi::get_one*` and `Spi::run*` execute every query as one that writes, and mark the
//! transaction so by assigning it a transaction ID. Code that runs inside a user's statement
//! must not do that: a statement that must be the first action of its transaction (`DROP INDEX
//! CONCURRENTLY`) then fails with "must be first action in transaction", and a read-only
//! transaction pays for an ID it never needed. These run the query read-only.

use pgrx::datum::{DatumWithOid, FromDatum, IntoDatum};
use pgrx::spi::{Spi, SpiResult};

/// The first column of the first row of the read-only query `sql` (`None`: no row, or NULL).
pub fn read_one<T: FromDatum + IntoDatum>(
    sql: &str,
    args: &[DatumWithOid],
) -> SpiResult<Option<T>> {
    Spi::connect(|client| client.select(sql, Some(1), args)?.first().get_one::<T>())
}
