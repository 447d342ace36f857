//! Nexmark, the streaming benchmark of auctions, persons and bids, as built-in jobs on the
//! public DataStream API: the generator and the harness's CSV files as sources (`input`), and
//! one file per query under `queries/`, each giving its result rows in the harness's canonical
//! line format (`format`), so they compare line by line with the harness's DuckDB reference
//! (`../shared/bench/nexmark`).

pub mod csv;
pub mod format;
pub mod generator;
pub mod input;
pub mod model;
pub mod queries;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::error::{HummerError, Result};
pub use input::NexmarkInput;

/// The queries built so far, in order.
pub const QUERIES: &[&str] = &["q0", "q1", "q2", "q3"];

/// Adds query `query` over `input` to `env`; its stream holds the result lines.
pub fn build(
    query: &str,
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
) -> Result<DataStream<String>> {
    Ok(match query {
        "q0" => queries::q0::build(env, input),
        "q1" => queries::q1::build(env, input),
        "q2" => queries::q2::build(env, input),
        "q3" => queries::q3::build(env, input),
        other => {
            return Err(HummerError::Config(format!(
                "unknown Nexmark query '{other}': this build has {}",
                QUERIES.join(", ")
            )));
        }
    })
}
