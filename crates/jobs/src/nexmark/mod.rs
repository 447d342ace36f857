//! Nexmark, the streaming benchmark of auctions, persons and bids, as built-in jobs on the
//! public DataStream API: the generator and the harness's CSV files as sources (`input`), and
//! one file per query under `queries/`, each giving its result rows in the harness's canonical
//! line format (`format`), so they compare line by line with the harness's DuckDB reference
//! (`../shared/bench/nexmark`).

pub mod csv;
pub mod csv_source;
pub mod format;
pub mod generator;
pub mod input;
pub mod kafka;
pub mod model;
pub mod queries;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::error::{HummerError, Result};
pub use input::NexmarkInput;

/// Every query, in order.
pub const QUERIES: &[&str] = &[
    "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10", "q11", "q12", "q13", "q14",
    "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22",
];

/// The queries whose result depends on when the job runs (processing time), not only on the
/// events.
pub const PROCESSING_TIME_QUERIES: &[&str] = &["q12"];

/// The queries whose SQL result is an updating table: [`build`] gives its final table,
/// [`build_updates`] its update stream.
pub const UPDATING_QUERIES: &[&str] = &["q4", "q6", "q15", "q16", "q17", "q18", "q19"];

/// Adds query `query` over `input` to `env` as an update stream (see
/// [`queries::updates`]): the changes of an updating query's result as they happen, every row
/// of another query as an insertion.
pub fn build_updates(
    query: &str,
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
) -> Result<DataStream<String>> {
    use queries::updates::{Emit, inserts};
    let updates = Emit::Updates;
    Ok(match query {
        "q4" => queries::q4::build_as(env, input, updates),
        "q6" => queries::q6::build_as(env, input, updates),
        "q15" => queries::q15::build_as(env, input, updates),
        "q16" => queries::q16::build_as(env, input, updates),
        "q17" => queries::q17::build_as(env, input, updates),
        "q18" => queries::q18::build_as(env, input, updates),
        "q19" => queries::q19::build_as(env, input, updates),
        other => inserts(&build(other, env, input)?),
    })
}

/// Adds query `query` over `input` to `env`; its stream holds the result lines (for an
/// updating query, its final table).
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
        "q4" => queries::q4::build(env, input),
        "q5" => queries::q5::build(env, input),
        "q6" => queries::q6::build(env, input),
        "q7" => queries::q7::build(env, input),
        "q8" => queries::q8::build(env, input),
        "q9" => queries::q9::build(env, input),
        "q10" => queries::q10::build(env, input),
        "q11" => queries::q11::build(env, input),
        "q12" => queries::q12::build(env, input),
        "q13" => queries::q13::build(env, input)?,
        "q14" => queries::q14::build(env, input),
        "q15" => queries::q15::build(env, input),
        "q16" => queries::q16::build(env, input),
        "q17" => queries::q17::build(env, input),
        "q18" => queries::q18::build(env, input),
        "q19" => queries::q19::build(env, input),
        "q20" => queries::q20::build(env, input),
        "q21" => queries::q21::build(env, input),
        "q22" => queries::q22::build(env, input),
        other => {
            return Err(HummerError::Config(format!(
                "unknown Nexmark query '{other}': the queries are {}",
                QUERIES.join(", ")
            )));
        }
    })
}
