//! `hummer nexmark --query qN`: runs one Nexmark query on the generator or on the harness's
//! CSV files, writes its result lines (a part file per sink subtask) and prints a summary.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use hummer::checkpoint::coordinator::CheckpointConfig;
use hummer::jobs::nexmark::{self, NexmarkInput};
use hummer::operators::OperatorContext;
use hummer::prelude::*;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// The query: q0, q1, ... (`list`: the queries this build has).
    #[arg(long)]
    query: Option<String>,
    /// Events to generate (over all three tables), unless --input is given.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Read the harness's CSV files from this directory (persons/, auctions/, bids/).
    #[arg(long, conflicts_with = "events")]
    input: Option<PathBuf>,
    /// Read the events from Kafka (bootstrap servers), as `hummer nexmark produce` wrote
    /// them into --topic.
    #[arg(long, conflicts_with_all = ["events", "input"], requires = "topic")]
    kafka: Option<String>,
    /// The events' topic (with --kafka).
    #[arg(long)]
    topic: Option<String>,
    /// Events per second of the generator (default: as fast as it goes).
    #[arg(long)]
    rate: Option<f64>,
    /// Parallelism (default: the number of CPU cores).
    #[arg(long, short)]
    parallelism: Option<usize>,
    /// Write the result lines here (part files per sink subtask); else they are counted.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Emit the result as an update stream (`+I`/`-U`/`+U`/`-D`,row lines, as Flink's
    /// changelog) instead of, for q4, q6 and q15-q19, their final table.
    #[arg(long)]
    updates: bool,
    /// Milliseconds of processing time between the sources' periodic watermarks (Flink's
    /// `pipeline.auto-watermark-interval`). On a replay at full speed a watermark step covers
    /// many seconds of event time, which joins and windows hold as state: a short interval
    /// keeps that small (Flink's default is 200).
    #[arg(long, default_value_t = 5)]
    watermark_interval_ms: u64,
    /// Milliseconds between checkpoints (exactly-once; 0: no checkpoints).
    #[arg(long, default_value_t = 0)]
    checkpoint_interval_ms: u64,
    /// Where checkpoints are kept (with --checkpoint-interval-ms).
    #[arg(long, default_value = "hummer-checkpoints")]
    checkpoint_dir: PathBuf,
    /// Submit to this JobManager instead of running locally.
    #[arg(long, env = "HUMMER_JOBMANAGER")]
    jobmanager: Option<String>,
    #[command(flatten)]
    state: crate::state_args::StateArgs,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write the generator's events into a Kafka topic as JSON (one object per event:
    /// `event_type` and its person, auction or bid).
    Produce {
        /// Bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        brokers: String,
        /// The topic (created if missing).
        #[arg(long, default_value = "nexmark")]
        topic: String,
        /// Events.
        #[arg(long, default_value_t = 10_000_000)]
        events: u64,
        /// Partitions of the topic if it is created.
        #[arg(long, default_value_t = 4)]
        partitions: i32,
    },
}

/// Counts the result rows (when they are not written).
#[derive(Clone, Default)]
struct CountRows(Arc<AtomicU64>);

impl Sink<String> for CountRows {
    fn name(&self) -> String {
        "Count rows".into()
    }
    fn create_writer(&self, _: &OperatorContext) -> hummer::Result<Box<dyn SinkWriter<String>>> {
        Ok(Box::new(self.clone()))
    }
}

impl SinkWriter<String> for CountRows {
    fn write_batch(&mut self, batch: &mut Vec<String>) -> hummer::Result<()> {
        self.0.fetch_add(batch.len() as u64, Ordering::Relaxed);
        batch.clear();
        Ok(())
    }
}

pub fn run(args: Args) -> Result<()> {
    args.state.apply()?;
    if let Some(Action::Produce {
        brokers,
        topic,
        events,
        partitions,
    }) = &args.action
    {
        let started = std::time::Instant::now();
        nexmark::kafka::produce(brokers, topic, *events, *partitions)?;
        println!(
            "produced {events} Nexmark events into {topic} in {:.3} s",
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let Some(query) = args.query.clone() else {
        bail!("--query is required (or the subcommand `produce`)");
    };
    if query == "list" {
        println!("{}", nexmark::QUERIES.join(" "));
        return Ok(());
    }
    let env = StreamExecutionEnvironment::local();
    env.set_runtime_mode(RuntimeMode::Streaming);
    let parallelism = match args.parallelism {
        Some(0) => bail!("--parallelism must be at least 1"),
        Some(p) => p,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    env.set_parallelism(parallelism);
    env.set_jobmanager(args.jobmanager.clone());
    if args.watermark_interval_ms == 0 {
        bail!("--watermark-interval-ms must be at least 1");
    }
    env.set_auto_watermark_interval(Duration::from_millis(args.watermark_interval_ms));
    if args.checkpoint_interval_ms > 0 {
        env.set_checkpoint_config(CheckpointConfig::new(
            Duration::from_millis(args.checkpoint_interval_ms),
            &args.checkpoint_dir,
        ));
    }
    let input = match (&args.input, &args.kafka, &args.topic) {
        (None, Some(brokers), Some(topic)) => NexmarkInput::Kafka(std::sync::Arc::new(
            nexmark::kafka::KafkaTables::new(brokers, topic)?,
        )),
        _ => match &args.input {
            Some(dir) => {
                for table in ["persons", "auctions", "bids"] {
                    if !dir.join(table).is_dir() {
                        bail!(
                            "--input {}: no {table}/ directory (the harness's layout: persons/, auctions/, bids/)",
                            dir.display()
                        );
                    }
                }
                NexmarkInput::Csv(dir.clone())
            }
            None => NexmarkInput::Generator {
                events: args.events,
                rate: args.rate,
            },
        },
    };
    let rows = if args.updates {
        nexmark::build_updates(&query, &env, &input)?
    } else {
        nexmark::build(&query, &env, &input)?
    };
    let counter = CountRows::default();
    match &args.output {
        Some(dir) => {
            rows.write_text_file(dir);
        }
        None => {
            rows.add_sink(counter.clone());
        }
    }
    let name = format!("Nexmark {}", query);
    let result = env
        .execute(&name)
        .with_context(|| format!("{name} failed"))?;
    let secs = result.duration.as_secs_f64();
    let events = match input {
        NexmarkInput::Generator { events, .. } => events,
        NexmarkInput::Csv(_) | NexmarkInput::Kafka(_) => result.source_records,
    };
    // On a cluster the counting sinks run in the workers: this process saw no row.
    let rows = match (&args.output, &args.jobmanager) {
        (Some(_), _) => "written".to_string(),
        (None, Some(_)) => "counted in the workers, not here (--output keeps them)".to_string(),
        (None, None) => counter.0.load(Ordering::Relaxed).to_string(),
    };
    println!(
        "{name}: {events} events in {secs:.3} s = {:.0} events/s ({:.0} per core, parallelism {parallelism}); result rows: {rows}",
        events as f64 / secs,
        events as f64 / secs / parallelism as f64,
    );
    if args.checkpoint_interval_ms > 0 {
        let completed: Vec<_> = result
            .checkpoints
            .iter()
            .filter(|c| {
                matches!(
                    c.status,
                    hummer::checkpoint::coordinator::CheckpointStatus::Completed
                )
            })
            .collect();
        let most = |f: fn(&&hummer::checkpoint::coordinator::CheckpointStats) -> u64| {
            completed.iter().map(f).max().unwrap_or(0)
        };
        println!(
            "checkpoints completed: {}; the most of one: {} bytes written, {} shared, {} ms, \
             {} ms synchronous",
            completed.len(),
            most(|c| c.size_bytes),
            most(|c| c.shared_bytes),
            most(|c| c.duration_ms),
            most(|c| c.sync_ms),
        );
    }
    Ok(())
}
