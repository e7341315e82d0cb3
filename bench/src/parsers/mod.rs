//! The parsers compared, each in its own module with the same shape: one pass over a capture,
//! decoding every message and reaching every column value of every Insert, Update and Delete, with
//! each value (and each decoded message) passed through `std::hint::black_box` so none of the work
//! can be optimised away.

mod elefant;
mod walstream;
mod wire;

pub use wire::framed_messages;

use crate::capture::{Capture, Protocol};
use crate::work::Work;

/// A parser under test.
pub struct Parser {
    /// The crate and version, as printed in tables.
    pub name: &'static str,
    /// The captures it can read.
    pub protocols: &'static [Protocol],
    /// One pass over a capture.
    pub parse: fn(&Capture) -> Result<Work, String>,
}

/// ddl-wire first: ratios are ddl-wire's speed over each of the others.
pub const PARSERS: [Parser; 3] = [
    Parser {
        name: "ddl-wire",
        protocols: &[Protocol::V1, Protocol::V2Streaming],
        parse: wire::parse,
    },
    Parser { name: "elefant-client 0.1.0", protocols: &[Protocol::V1], parse: elefant::parse },
    Parser {
        name: "pg_walstream 0.10.0",
        protocols: &[Protocol::V1, Protocol::V2Streaming],
        parse: walstream::parse,
    },
];
