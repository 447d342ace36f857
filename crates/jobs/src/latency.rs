//! Latency: the per-record end-to-end latency job, as a built-in (`hummer run latency`), so that
//! it runs wherever the `hummer` binary runs, VM images included.
//!
//! A rate-limited generator stamps every record with the wall clock; each record is keyed so
//! that the keyed shuffle sends it to the *next* subtask (across workers when the subtasks are
//! spread over TaskManagers); a reduce emits an update per record; the latency is measured
//! against the wall clock where the update is made and collected back to the client. The first
//! second is a warm-up. Wall clocks are compared, so generator and reduce of a record must run
//! on one host (or hosts with synchronised clocks).

use crate::api::StreamExecutionEnvironment;
use crate::connectors::collect::CollectHandle;
use crate::connectors::generator::GeneratorSource;
use crate::state::key_groups::{DEFAULT_MAX_PARALLELISM, subtask_of_key};

/// The warm-up not counted, nanoseconds.
pub const WARM_UP_NANOS: u64 = 1_000_000_000;

/// Wall-clock nanoseconds.
pub fn wall_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A key that the keyed shuffle sends to `subtask` of `parallelism`.
pub fn key_for_subtask(subtask: usize, parallelism: usize) -> u64 {
    (0u64..)
        .find(|k| subtask_of_key(k, DEFAULT_MAX_PARALLELISM, parallelism) == subtask)
        .unwrap_or(0)
}

/// One line of percentiles of latencies in nanoseconds: `records N at R/s, parallelism P:
/// p50 .. ms, p99 .. ms, p99.9 .. ms, max .. ms`.
pub fn describe(h: &hdrhistogram::Histogram<u64>, rate: f64, parallelism: usize) -> String {
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
    format!(
        "records {} at {rate:.0}/s, parallelism {parallelism}: p50 {:.3} ms, p99 {:.3} ms, \
         p99.9 {:.3} ms, max {:.3} ms",
        h.len(),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        h.max() as f64 / 1e6
    )
}

/// Adds the job to `env` (`rate` records per second for `seconds` plus the warm-up); returns
/// the handle of the collected latencies (nanoseconds).
pub fn build(
    env: &StreamExecutionEnvironment,
    rate: f64,
    seconds: u64,
    parallelism: usize,
) -> CollectHandle<u64> {
    let p = parallelism.max(1);
    let keys: Vec<u64> = (0..p).map(|s| key_for_subtask((s + 1) % p, p)).collect();
    let count = (rate * (seconds + 1) as f64) as u64;
    let start = wall_nanos();
    env.add_source(
        GeneratorSource::new(|i| (i, wall_nanos()))
            .with_rate(rate)
            .with_count(count),
    )
    // Generator subtask s makes ids s, s + p, ...: route each to the next subtask.
    .map(move |(id, created): (u64, u64)| (keys[(id as usize) % keys.len()], created))
    .key_by(|r: &(u64, u64)| r.0)
    .reduce(|_, latest| latest)
    .filter(move |r: &(u64, u64)| r.1 >= start + WARM_UP_NANOS)
    .map(|(_, created): (u64, u64)| wall_nanos().saturating_sub(created).max(1))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_is_measured_after_the_warm_up() {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(2)
            .set_runtime_mode(crate::types::RuntimeMode::Streaming);
        let handle = build(&env, 2_000.0, 1, 2);
        let mut result = env.execute("latency").unwrap();
        let latencies = result.collected(&handle).unwrap();
        // About one second of records after the warm-up, each with a positive latency.
        assert!(
            latencies.len() > 1_000 && latencies.len() <= 2_200,
            "{}",
            latencies.len()
        );
        assert!(latencies.iter().all(|l| *l > 0 && *l < 10_000_000_000));
    }
}
