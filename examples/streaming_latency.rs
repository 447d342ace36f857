//! Streaming latency benchmark: generator -> map -> key_by -> reduce -> sink at a fixed rate,
//! per-record end-to-end latency as p50 / p99 / p99.9.
//!
//! ```sh
//! cargo run --release --example streaming_latency -- [RATE_PER_S] [SECONDS] [PARALLELISM]
//! ```
//!
//! Defaults: 100,000 records/s for 10 s at parallelism 2 with the default buffer timeout. Each
//! record carries the time it was generated; the sink measures `now - generated` for every
//! record it receives (the reduce emits one update per record in streaming mode). The first
//! second is a warm-up and is not counted.
//!
//! With `HUMMER_JOBMANAGER` set the job runs on that cluster instead (give it TaskManagers with
//! one slot each, so the subtasks land in different workers): the generator stops after
//! `RATE x SECONDS` records, every record is keyed so that it crosses to the other worker
//! (across a network edge), latencies are computed in the workers against the wall clock and
//! collected back to this process.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hummer::jobs::latency::{WARM_UP_NANOS, describe};
use hummer::operators::OperatorContext;
use hummer::prelude::*;

/// Nanoseconds since the first call: one clock for generator and sink (same process).
fn now_nanos() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[derive(Clone)]
struct LatencySink(Arc<Mutex<Histogram<u64>>>);

/// Records each latency straight into the shared histogram: one lock per batch, one bucket
/// increment per record. (Merging a per-writer histogram into it per batch costs a pass over
/// every bucket and a reset, whatever the batch's size: that used to be a quarter to a third
/// of the process's CPU, and it grew with the number of batches, so it hid the engine.)
struct LatencyWriter {
    shared: Arc<Mutex<Histogram<u64>>>,
}

impl Sink<(u64, u64)> for LatencySink {
    fn name(&self) -> String {
        "LatencySink".into()
    }
    fn create_writer(&self, _: &OperatorContext) -> Result<Box<dyn SinkWriter<(u64, u64)>>> {
        Ok(Box::new(LatencyWriter {
            shared: self.0.clone(),
        }))
    }
}

impl SinkWriter<(u64, u64)> for LatencyWriter {
    fn write_batch(&mut self, batch: &mut Vec<(u64, u64)>) -> Result<()> {
        let now = now_nanos();
        match self.shared.lock() {
            Ok(mut shared) => {
                for (_, created) in batch.drain(..) {
                    if created >= WARM_UP_NANOS {
                        let _ = shared.record(now.saturating_sub(created).max(1));
                    }
                }
            }
            Err(_) => batch.clear(),
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let rate: f64 = args.next().map_or(Ok(100_000.0), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(10), |a| a.parse())?;
    let parallelism: usize = args.next().map_or(Ok(2), |a| a.parse())?;
    if std::env::var(hummer::cluster::JOBMANAGER_ENV).is_ok_and(|a| !a.is_empty()) {
        return across_workers(rate, seconds, parallelism);
    }

    let histogram = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(
        1,
        60_000_000_000,
        3,
    )?));
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_runtime_mode(RuntimeMode::Streaming);
    now_nanos();
    env.add_source(GeneratorSource::new(|i| (i, now_nanos())).with_rate(rate))
        .map(|(id, created): (u64, u64)| (id % 10_000, created))
        .key_by(|r: &(u64, u64)| r.0)
        .reduce(|_, latest| latest)
        .add_sink(LatencySink(histogram.clone()));

    let job = env.execute_async("Streaming latency")?;
    std::thread::sleep(Duration::from_secs(seconds + 1));
    job.cancel();
    match job.wait() {
        Err(HummerError::Cancelled) => {}
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    let h = histogram
        .lock()
        .map_err(|_| anyhow::anyhow!("histogram lock poisoned"))?;
    report("in one process", &h, rate, parallelism);
    Ok(())
}

/// Prints the percentiles of a latency histogram (nanoseconds).
fn report(label: &str, h: &Histogram<u64>, rate: f64, parallelism: usize) {
    println!("{label}: {}", describe(h, rate, parallelism));
}

/// The cluster variant: every record crosses a network edge to another worker (the built-in
/// latency job, `hummer::jobs::latency`).
fn across_workers(rate: f64, seconds: u64, parallelism: usize) -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_runtime_mode(RuntimeMode::Streaming);
    let latencies = hummer::jobs::latency::build(&env, rate, seconds, parallelism);
    let mut result = env.execute("Streaming latency across workers")?;
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    for l in result.collected(&latencies)? {
        h.record(l)?;
    }
    report("across workers", &h, rate, parallelism);
    Ok(())
}
