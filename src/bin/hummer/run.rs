//! `hummer run JOB`: runs a built-in job, locally or on a cluster: `event-count` (the
//! exactly-once reference job, with checkpoints, restarts and savepoints), `window-count` and
//! `timer-count` (the same with event time: tumbling windows counted by the window operator or
//! by timers), `kafka-count` (EventCount from a Kafka topic into another through the
//! exactly-once Kafka sink), or `latency` (the per-record latency job, which prints
//! percentiles).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use hummer::checkpoint::coordinator::CheckpointConfig;
use hummer::execution::restart_strategy::RestartStrategy;
use hummer::jobs::event_count::EventCount;
use hummer::jobs::window_count::{Variant, WindowCount};
use hummer::prelude::*;

#[derive(clap::Args)]
pub struct Args {
    /// The job to run.
    #[arg(value_parser = ["event-count", "window-count", "timer-count", "kafka-count", "latency"])]
    job: String,
    /// Events to generate.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Distinct keys.
    #[arg(long, default_value_t = 1000)]
    keys: u64,
    /// Events per second (default: as fast as it goes; latency: 100,000).
    #[arg(long)]
    rate: Option<f64>,
    /// Seconds measured after a 1 s warm-up (latency).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Output directory (exactly-once file sink).
    #[arg(long, default_value = "event-count-out")]
    out: PathBuf,
    /// Parallelism (default: the number of CPU cores).
    #[arg(long, short)]
    parallelism: Option<usize>,
    /// Milliseconds between checkpoints (0: no checkpoints).
    #[arg(long, default_value_t = 1000)]
    checkpoint_interval_ms: u64,
    /// Where checkpoints are kept (a directory per run or job below it).
    #[arg(long, default_value = "hummer-checkpoints")]
    checkpoint_dir: PathBuf,
    /// Restart strategy: none, fixed-delay:ATTEMPTS:DELAY, failure-rate:MAX/INTERVAL:DELAY or
    /// exponential-delay:INITIAL:MAX[:MULTIPLIER[:RESET[:ATTEMPTS]]].
    #[arg(long)]
    restart: Option<String>,
    /// Start from this savepoint or checkpoint directory.
    #[arg(long)]
    from_savepoint: Option<PathBuf>,
    /// Panic in the counter at this event (repeatable), once per --fail-marker.
    #[arg(long)]
    fail_at: Vec<u64>,
    /// Files `<marker>.<event>` remember that a failure was injected (across processes).
    #[arg(long)]
    fail_marker: Option<PathBuf>,
    /// Kafka bootstrap servers (kafka-count).
    #[arg(long, default_value = "127.0.0.1:9092")]
    brokers: String,
    /// Topic of the events (kafka-count; fill it with `hummer kafka produce`).
    #[arg(long, default_value = "events")]
    input_topic: String,
    /// Topic of the counts (kafka-count).
    #[arg(long, default_value = "counts")]
    output_topic: String,
    /// Stop at the end of the input topic as it is when the job starts (kafka-count).
    #[arg(long)]
    bounded: bool,
    /// Submit to this JobManager instead of running locally.
    #[arg(long, env = "HUMMER_JOBMANAGER")]
    jobmanager: Option<String>,
    /// In cluster mode, wait for the job to end instead of returning its id.
    #[arg(long)]
    wait: bool,
    /// After the job, check that the output holds every event exactly once.
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    state: crate::state_args::StateArgs,
}

pub fn run(args: Args) -> Result<()> {
    args.state.apply()?;
    if args.job == "latency" {
        return latency(&args);
    }
    let env = StreamExecutionEnvironment::local();
    env.set_runtime_mode(RuntimeMode::Streaming);
    if let Some(p) = args.parallelism {
        if p == 0 {
            bail!("--parallelism must be at least 1");
        }
        env.set_parallelism(p);
    }
    env.set_jobmanager(args.jobmanager.clone());
    if args.checkpoint_interval_ms > 0 {
        env.set_checkpoint_config(CheckpointConfig::new(
            Duration::from_millis(args.checkpoint_interval_ms),
            &args.checkpoint_dir,
        ));
    }
    if let Some(text) = &args.restart {
        let strategy: RestartStrategy = text
            .parse()
            .map_err(|e| anyhow::anyhow!("--restart {text:?}: {e}"))?;
        env.set_restart_strategy(strategy);
    }
    env.set_restore_from(args.from_savepoint.clone());
    let name = match args.job.as_str() {
        "event-count" => {
            EventCount {
                events: args.events,
                keys: args.keys,
                rate: args.rate,
                out: args.out.clone(),
                fail_at: args.fail_at.clone(),
                fail_marker: args.fail_marker.clone(),
            }
            .build(&env)?;
            "EventCount"
        }
        "kafka-count" => {
            hummer::connectors::kafka::create_topic_like(
                &hummer::connectors::kafka::KafkaConfig::new(&args.brokers),
                &args.output_topic,
                &args.input_topic,
            )?;
            hummer::jobs::kafka_count::KafkaCount {
                brokers: args.brokers.clone(),
                input: args.input_topic.clone(),
                output: args.output_topic.clone(),
                keys: args.keys,
                bounded: args.bounded,
                rate: args.rate,
                fail_at: args.fail_at.clone(),
                fail_marker: args.fail_marker.clone(),
            }
            .build(&env)?;
            "KafkaCount"
        }
        job => {
            let variant = if job == "timer-count" {
                Variant::Timers
            } else {
                Variant::Windows
            };
            WindowCount {
                events: args.events,
                keys: args.keys,
                rate: args.rate,
                out: args.out.clone(),
                variant,
                fail_at: args.fail_at.clone(),
                fail_marker: args.fail_marker.clone(),
            }
            .build(&env)?;
            if variant == Variant::Timers {
                "TimerCount"
            } else {
                "WindowCount"
            }
        }
    };
    let client = env
        .execute_async(name)
        .with_context(|| format!("cannot start {name}"))?;
    if let Some(id) = client.job_id() {
        println!("submitted job {id}");
        if !args.wait {
            return Ok(());
        }
    }
    let result = client.wait().with_context(|| format!("{name} failed"))?;
    let completed = result
        .checkpoints
        .iter()
        .filter(|c| c.status == hummer::checkpoint::coordinator::CheckpointStatus::Completed)
        .count();
    println!(
        "{name}: {} events over {} keys in {:.3} s; {} checkpoints completed, {} restarts",
        args.events,
        args.keys,
        result.duration.as_secs_f64(),
        completed,
        result.restarts
    );
    if args.verify {
        let (exactly_once, lines, report) = if args.job == "event-count" {
            let v = hummer::jobs::event_count::verify(&args.out, args.events, args.keys)?;
            (v.is_exactly_once(), v.lines, format!("{v:?}"))
        } else if args.job == "kafka-count" {
            let v = hummer::jobs::kafka_count::verify(
                &args.brokers,
                &args.output_topic,
                args.events,
                args.keys,
            )?;
            (v.is_exactly_once(), v.lines, format!("{v:?}"))
        } else {
            let v = hummer::jobs::window_count::verify(&args.out, args.events, args.keys)?;
            (v.is_exactly_once(), v.lines, format!("{v:?}"))
        };
        if !exactly_once {
            bail!("output is not exactly-once: {report}");
        }
        println!("verified: {lines} lines, every event exactly once");
    }
    Ok(())
}

/// `hummer run latency`: prints p50 / p99 / p99.9 / max of the per-record latency.
fn latency(args: &Args) -> Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_runtime_mode(RuntimeMode::Streaming);
    let parallelism = args.parallelism.unwrap_or(2);
    if parallelism == 0 {
        bail!("--parallelism must be at least 1");
    }
    env.set_parallelism(parallelism);
    env.set_jobmanager(args.jobmanager.clone());
    let rate = args.rate.unwrap_or(100_000.0);
    let handle = hummer::jobs::latency::build(&env, rate, args.seconds, parallelism);
    let mut result = env.execute("Latency").context("the latency job failed")?;
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    for l in result.collected(&handle)? {
        h.record(l)?;
    }
    println!(
        "latency: {}",
        hummer::jobs::latency::describe(&h, rate, parallelism)
    );
    Ok(())
}
