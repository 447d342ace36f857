//! Window benchmark: a tumbling-window count (10 s windows, 10,000 keys, 4 s out of
//! orderness) at parallelism 2.
//!
//! ```sh
//! cargo run --release --example window_bench -- throughput [EVENTS]
//! cargo run --release --example window_bench -- latency [RATE_PER_S] [SECONDS] [WATERMARK_INTERVAL_MS]
//! ```
//!
//! `throughput` (default 20,000,000 events) generates events as fast as the job takes them,
//! event time advancing 1 ms per 10 events with up to 4 s of disorder, and prints events per
//! second and the process's peak RSS. `latency` (default 100,000 events/s for 60 s) stamps
//! events with the wall clock (minus up to 4 s of disorder), so the watermark passes a
//! window's end `e` when the clock reaches `e + 4 s`; the sink measures, for every result,
//! `now - (e + 4 s)`: the time from the watermark passing the window end to the result, which
//! includes waiting for the next periodic watermark (`WATERMARK_INTERVAL_MS`, default 200 ms
//! as Flink's). Prints p50 / p99 / max over the results of the full windows that closed while the input
//! ran (each window close emits 10,000 results, one per key).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hummer::operators::OperatorContext;
use hummer::prelude::*;

const WINDOW: Duration = Duration::from_secs(10);
const DISORDER_MS: i64 = 4_000;
const KEYS: u64 = 10_000;

/// Event `i`'s key and a pseudo-random delay in `0..DISORDER_MS`.
fn key_and_delay(i: u64) -> (u64, i64) {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h % KEYS, ((h >> 32) % DISORDER_MS as u64) as i64)
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn windowed(events: DataStream<(u64, i64)>) -> DataStream<WindowResult<u64, u64>> {
    events
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(
                DISORDER_MS as u64,
            ))
            .with_timestamp_assigner(|e: &(u64, i64), _| e.1),
        )
        .key_by(|e: &(u64, i64)| e.0)
        .window(TumblingEventTimeWindows::of(WINDOW))
        .aggregate(CountAggregate)
}

fn throughput(events: u64) -> Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    let source = env.add_source(
        GeneratorSource::new(|i| {
            let (key, delay) = key_and_delay(i);
            (key, (i / 10) as i64 - delay)
        })
        .with_count(events),
    );
    let sink = CountSink::default();
    windowed(source).add_sink(sink.clone());
    let started = Instant::now();
    env.execute("window throughput")?;
    let secs = started.elapsed().as_secs_f64();
    let counted = sink.0.load(std::sync::atomic::Ordering::Relaxed);
    if counted != events {
        return Err(HummerError::Panic(format!(
            "the windows counted {counted} events of {events}"
        )));
    }
    println!(
        "throughput: {events} events in {secs:.3} s = {:.0} events/s ({:.0} per core), peak RSS {} MB",
        events as f64 / secs,
        events as f64 / secs / 2.0,
        peak_rss_kb() / 1024
    );
    Ok(())
}

/// Sums the counts of the window results (every event is counted once).
#[derive(Clone, Default)]
struct CountSink(Arc<std::sync::atomic::AtomicU64>);

impl Sink<WindowResult<u64, u64>> for CountSink {
    fn name(&self) -> String {
        "CountSink".into()
    }
    fn create_writer(
        &self,
        _: &OperatorContext,
    ) -> Result<Box<dyn SinkWriter<WindowResult<u64, u64>>>> {
        Ok(Box::new(self.clone()))
    }
}

impl SinkWriter<WindowResult<u64, u64>> for CountSink {
    fn write_batch(&mut self, batch: &mut Vec<WindowResult<u64, u64>>) -> Result<()> {
        let n: u64 = batch.drain(..).map(|r| r.value).sum();
        self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Records `now - (window end + disorder)` for every result after the warm-up.
#[derive(Clone)]
struct LatencySink {
    latencies: Arc<Mutex<Vec<i64>>>,
    warm_up_until: i64,
}

impl Sink<WindowResult<u64, u64>> for LatencySink {
    fn name(&self) -> String {
        "LatencySink".into()
    }
    fn create_writer(
        &self,
        _: &OperatorContext,
    ) -> Result<Box<dyn SinkWriter<WindowResult<u64, u64>>>> {
        Ok(Box::new(self.clone()))
    }
}

impl SinkWriter<WindowResult<u64, u64>> for LatencySink {
    fn write_batch(&mut self, batch: &mut Vec<WindowResult<u64, u64>>) -> Result<()> {
        let now = wall_ms();
        let mut l = self
            .latencies
            .lock()
            .map_err(|_| HummerError::Panic("poisoned".into()))?;
        for WindowResult { window: w, .. } in batch.drain(..) {
            if w.start >= self.warm_up_until {
                l.push(now - (w.end + DISORDER_MS));
            }
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

fn latency(rate: f64, seconds: u64, interval_ms: u64) -> Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_auto_watermark_interval(Duration::from_millis(interval_ms));
    let events = (rate * seconds as f64) as u64;
    let source = env.add_source(
        GeneratorSource::new(|i| {
            let (key, delay) = key_and_delay(i);
            (key, wall_ms() - delay)
        })
        .with_count(events)
        .with_rate(rate),
    );
    let sink = LatencySink {
        latencies: Arc::new(Mutex::new(Vec::new())),
        // Full windows only: those that start after the job did.
        warm_up_until: wall_ms(),
    };
    // Keep the job running past the last window's close so it fires in streaming, not at the
    // end of input: the last events are older than now by the time the input ends.
    windowed(source).add_sink(sink.clone());
    env.execute("window latency")?;
    let mut l = sink
        .latencies
        .lock()
        .map_err(|_| HummerError::Panic("poisoned".into()))?
        .clone();
    // Results fired by the end of input (the final watermark) are not watermark latencies.
    l.retain(|x| *x >= 0);
    l.sort_unstable();
    if l.is_empty() {
        println!("latency: no window closed after the warm-up; run longer");
        return Ok(());
    }
    let p = |q: f64| l[((l.len() as f64 * q) as usize).min(l.len() - 1)];
    println!(
        "latency (watermark past window end -> result), {rate} events/s, watermark interval {interval_ms} ms, {} results: p50 {} ms, p99 {} ms, max {} ms",
        l.len(),
        p(0.5),
        p(0.99),
        l[l.len() - 1]
    );
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: f64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    match args.first().map(String::as_str) {
        Some("latency") => latency(num(1, 100_000.0), num(2, 60.0) as u64, num(3, 200.0) as u64),
        _ => throughput(num(1, 20_000_000.0) as u64),
    }
}
