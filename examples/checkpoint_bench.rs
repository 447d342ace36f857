//! Checkpoint benchmarks (run by `bench/checkpoints.sh`, in release mode):
//!
//! - `overhead [EVENTS] [ROUNDS]`: EventCount (generator -> keyed count -> exactly-once file
//!   sink, parallelism 2) as fast as it goes, with a checkpoint every second against none,
//!   same input, runs alternating; prints each run and the median throughput ratio.
//! - `recovery [DELAY_MS]`: a rate-limited stream whose counter panics once; prints the time
//!   from the panic to the first record processed after the restart, with the restart
//!   strategy's delay set to DELAY_MS (Flink's default is 1000).
//! - `state [KEYS]`: a keyed count over KEYS keys (default 1 million), two events per key,
//!   checkpoints every 500 ms; prints the size and duration of the checkpoints taken.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hummer::checkpoint::coordinator::{CheckpointConfig, CheckpointStats, CheckpointStatus};
use hummer::execution::restart_strategy::RestartStrategy;
use hummer::jobs::event_count::EventCount;
use hummer::prelude::*;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| -> u64 {
        args.get(i)
            .map(|a| a.parse().expect("numeric argument"))
            .unwrap_or(default)
    };
    match args.first().map(String::as_str) {
        Some("overhead") => overhead(arg(1, 20_000_000), arg(2, 3) as usize),
        Some("recovery") => recovery(arg(1, 1000)),
        Some("state") => state(arg(1, 1_000_000)),
        _ => {
            eprintln!(
                "usage: checkpoint_bench overhead [EVENTS] [ROUNDS] | recovery [DELAY_MS] | state [KEYS]"
            );
            std::process::exit(2);
        }
    }
}

fn completed(stats: &[CheckpointStats]) -> Vec<&CheckpointStats> {
    stats
        .iter()
        .filter(|c| c.status == CheckpointStatus::Completed)
        .collect()
}

/// One EventCount run; returns events per second and the checkpoints completed.
fn event_count_run(events: u64, checkpoints: bool) -> Result<(f64, usize)> {
    let dir = tempfile::tempdir().map_err(|e| HummerError::io("tempdir", "/tmp", e))?;
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    if checkpoints {
        env.set_checkpoint_config(CheckpointConfig::new(
            Duration::from_secs(1),
            dir.path().join("checkpoints"),
        ));
    }
    EventCount {
        events,
        keys: 10_000,
        rate: None,
        out: dir.path().join("out"),
        fail_at: vec![],
        fail_marker: None,
    }
    .build(&env)?;
    let started = Instant::now();
    let result = env.execute("EventCount")?;
    let secs = started.elapsed().as_secs_f64();
    Ok((events as f64 / secs, completed(&result.checkpoints).len()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn overhead(events: u64, rounds: usize) -> Result<()> {
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (plain, _) = event_count_run(events, false)?;
        let (checked, n) = event_count_run(events, true)?;
        println!(
            "round {round}: no checkpoints {:.0} events/s; checkpoint every 1 s {:.0} events/s ({n} checkpoints)",
            plain, checked
        );
        without.push(plain);
        with.push(checked);
    }
    let (a, b) = (median(without), median(with));
    println!(
        "median: {a:.0} vs {b:.0} events/s: checkpoints cost {:.1} % of throughput",
        (1.0 - b / a) * 100.0
    );
    Ok(())
}

/// Microseconds since `EPOCH` of the panic and of the first record after the restart.
static PANICKED_AT: AtomicU64 = AtomicU64::new(0);
static RESUMED_AT: AtomicU64 = AtomicU64::new(0);

fn recovery(delay_ms: u64) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| HummerError::io("tempdir", "/tmp", e))?;
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(CheckpointConfig::new(
            Duration::from_millis(200),
            dir.path().join("checkpoints"),
        ))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 3,
            delay: Duration::from_millis(delay_ms),
        });
    let epoch = Instant::now();
    let fired = Arc::new(AtomicBool::new(false));
    let fail_at = 150_000u64;
    let mut started: Option<u64> = None;
    env.add_source(
        GeneratorSource::new(|i| i)
            .with_count(300_000)
            .with_rate(100_000.0),
    )
    .key_by(|e: &u64| e % 100)
    // Each operator instance (a clone of this closure) notes when it saw its first record: the
    // instances of the restarted attempt are those that started after the panic.
    .process(
        move |_key: &u64, e: u64, count: &mut ValueState<u64>, out: &mut Collector<u64>| {
            let now = epoch.elapsed().as_micros() as u64;
            let first = *started.get_or_insert(now);
            if e == fail_at && !fired.swap(true, Ordering::SeqCst) {
                PANICKED_AT.store(now, Ordering::SeqCst);
                panic!("injected failure");
            }
            let panicked = PANICKED_AT.load(Ordering::SeqCst);
            if panicked != 0 && first > panicked {
                let _ = RESUMED_AT.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
            }
            let n = count.get_or_insert_with(|| 0);
            *n += 1;
            out.collect(*n);
        },
    )
    .write_text_file(dir.path().join("out"));
    let result = env.execute("recovery")?;
    let (p, r) = (
        PANICKED_AT.load(Ordering::SeqCst),
        RESUMED_AT.load(Ordering::SeqCst),
    );
    println!(
        "restart delay {delay_ms} ms: failure to first record processed after the restart: {:.1} ms ({} restart)",
        r.saturating_sub(p) as f64 / 1000.0,
        result.restarts
    );
    Ok(())
}

fn state(keys: u64) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| HummerError::io("tempdir", "/tmp", e))?;
    let env = StreamExecutionEnvironment::local();
    let mut config = CheckpointConfig::new(Duration::from_millis(500), dir.path().join("chk"));
    config.retain = 1;
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(config);
    let events = keys * 2;
    // Spread over ~4 s so that several checkpoints see the state grow to all keys.
    env.add_source(
        GeneratorSource::new(move |i| i % keys)
            .with_count(events)
            .with_rate(events as f64 / 4.0),
    )
    .key_by(|k: &u64| *k)
    .count()
    .filter(|_| false)
    .print();
    let result = env.execute("state size")?;
    for c in completed(&result.checkpoints) {
        println!(
            "checkpoint {:>3}: {:>10} bytes ({:.1} MB), {:>5} ms{}",
            c.id,
            c.size_bytes,
            c.size_bytes as f64 / 1e6,
            c.duration_ms,
            if c.is_final { " (final, all keys)" } else { "" }
        );
    }
    Ok(())
}
