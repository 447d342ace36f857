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

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hummer::operators::OperatorContext;
use hummer::prelude::*;

/// Nanoseconds since the first call: one clock for generator and sink (same process).
fn now_nanos() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

const WARM_UP_NANOS: u64 = 1_000_000_000;

#[derive(Clone)]
struct LatencySink(Arc<Mutex<Histogram<u64>>>);

struct LatencyWriter {
    shared: Arc<Mutex<Histogram<u64>>>,
    local: Histogram<u64>,
}

impl Sink<(u64, u64)> for LatencySink {
    fn name(&self) -> String {
        "LatencySink".into()
    }
    fn create_writer(&self, _: &OperatorContext) -> Result<Box<dyn SinkWriter<(u64, u64)>>> {
        let local = Histogram::new_with_bounds(1, 60_000_000_000, 3)
            .map_err(|e| HummerError::Config(format!("histogram: {e}")))?;
        Ok(Box::new(LatencyWriter {
            shared: self.0.clone(),
            local,
        }))
    }
}

impl SinkWriter<(u64, u64)> for LatencyWriter {
    fn write_batch(&mut self, batch: &mut Vec<(u64, u64)>) -> Result<()> {
        let now = now_nanos();
        for (_, created) in batch.drain(..) {
            if created >= WARM_UP_NANOS {
                let _ = self.local.record(now.saturating_sub(created).max(1));
            }
        }
        // Publish per batch: the job is cancelled at the end, so there is no final flush.
        if let Ok(mut shared) = self.shared.lock() {
            let _ = shared.add(&self.local);
        }
        self.local.reset();
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
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
    println!(
        "records {} at {rate:.0}/s, parallelism {parallelism}: p50 {:.3} ms, p99 {:.3} ms, \
         p99.9 {:.3} ms, max {:.3} ms",
        h.len(),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        h.max() as f64 / 1e6
    );
    Ok(())
}
