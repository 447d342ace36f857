//! `hummer kafka ...`: filling and reading topics for the Kafka jobs: `create-topic`,
//! `produce` (numbered events for `hummer run kafka-count`) and `verify` (checks a
//! kafka-count output topic).

use anyhow::{Result, bail};
use hummer::connectors::kafka::{KafkaConfig, create_topic};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Create a topic (replication factor 1) unless it exists.
    CreateTopic {
        /// Bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        brokers: String,
        /// The topic.
        #[arg(long)]
        topic: String,
        /// Its partitions.
        #[arg(long, default_value_t = 4)]
        partitions: i32,
    },
    /// Write the events 0..N (decimal text) into a topic, created if missing.
    Produce {
        /// Bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        brokers: String,
        /// The topic.
        #[arg(long, default_value = "events")]
        topic: String,
        /// Events.
        #[arg(long, default_value_t = 1_000_000)]
        events: u64,
        /// Partitions of the topic if it is created.
        #[arg(long, default_value_t = 4)]
        partitions: i32,
        /// Pad each record with leading zeros to this many bytes.
        #[arg(long, default_value_t = 0)]
        record_bytes: usize,
    },
    /// Copy a topic into another through a map (Kafka -> map -> Kafka, bounded at the
    /// input's end): the job `bench/kafka.sh` measures. Prints records/s.
    Copy {
        /// Bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        brokers: String,
        /// The topic read.
        #[arg(long)]
        input: String,
        /// The topic written (created like the input if missing).
        #[arg(long)]
        output: String,
        /// The sink's guarantee: none, at-least-once or exactly-once.
        #[arg(long, default_value = "at-least-once")]
        guarantee: String,
        /// Parallelism.
        #[arg(long, short, default_value_t = 2)]
        parallelism: usize,
        /// Milliseconds between checkpoints (0: none).
        #[arg(long, default_value_t = 1000)]
        checkpoint_interval_ms: u64,
        /// Where checkpoints are kept.
        #[arg(long, default_value = "hummer-checkpoints")]
        checkpoint_dir: std::path::PathBuf,
    },
    /// Check that a kafka-count output topic holds every event exactly once.
    Verify {
        /// Bootstrap servers.
        #[arg(long, default_value = "127.0.0.1:9092")]
        brokers: String,
        /// The output topic.
        #[arg(long, default_value = "counts")]
        topic: String,
        /// Events of the input.
        #[arg(long)]
        events: u64,
        /// Keys of the job.
        #[arg(long)]
        keys: u64,
    },
}

fn copy(
    brokers: &str,
    input: &str,
    output: &str,
    guarantee: &str,
    parallelism: usize,
    checkpoint_interval_ms: u64,
    checkpoint_dir: &std::path::Path,
) -> Result<()> {
    use hummer::checkpoint::coordinator::CheckpointConfig;
    use hummer::connectors::kafka::{
        BytesDeserializer, DeliveryGuarantee, KafkaSink, KafkaSource, ProducerRecord,
        create_topic_like,
    };
    use hummer::prelude::*;
    let guarantee = match guarantee {
        "none" => DeliveryGuarantee::None,
        "at-least-once" => DeliveryGuarantee::AtLeastOnce,
        "exactly-once" => DeliveryGuarantee::ExactlyOnce,
        other => bail!("--guarantee {other:?}: none, at-least-once or exactly-once"),
    };
    if parallelism == 0 {
        bail!("--parallelism must be at least 1");
    }
    create_topic_like(&KafkaConfig::new(brokers), output, input)?;
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_runtime_mode(RuntimeMode::Streaming);
    if checkpoint_interval_ms > 0 {
        env.set_checkpoint_config(CheckpointConfig::new(
            std::time::Duration::from_millis(checkpoint_interval_ms),
            checkpoint_dir,
        ));
    }
    env.add_source(
        KafkaSource::builder()
            .bootstrap_servers(brokers)
            .topics([input])
            .bounded()
            .deserializer(BytesDeserializer)
            .build()?,
    )
    .map(|v: Vec<u8>| v)
    .name("Map")
    .add_sink(
        KafkaSink::builder()
            .bootstrap_servers(brokers)
            .topic(output)
            .serializer(|v: &Vec<u8>| ProducerRecord {
                key: None,
                value: Some(v.clone()),
            })
            .delivery_guarantee(guarantee)
            .transactional_id_prefix(&format!("copy-{output}"))
            .build::<Vec<u8>>()?,
    );
    let result = env.execute("Kafka copy")?;
    let secs = result.duration.as_secs_f64();
    println!(
        "copied {} records in {secs:.3} s = {:.0} records/s ({guarantee:?})",
        result.source_records,
        result.source_records as f64 / secs
    );
    Ok(())
}

pub fn run(args: Args) -> Result<()> {
    match args.action {
        Action::CreateTopic {
            brokers,
            topic,
            partitions,
        } => {
            if partitions < 1 {
                bail!("--partitions must be at least 1");
            }
            create_topic(&KafkaConfig::new(&brokers), &topic, partitions)?;
            println!("topic {topic} exists");
        }
        Action::Produce {
            brokers,
            topic,
            events,
            partitions,
            record_bytes,
        } => {
            if partitions < 1 {
                bail!("--partitions must be at least 1");
            }
            hummer::jobs::kafka_count::produce_events(
                &brokers,
                &topic,
                events,
                partitions,
                record_bytes,
            )?;
            println!("produced {events} events into {topic}");
        }
        Action::Copy {
            brokers,
            input,
            output,
            guarantee,
            parallelism,
            checkpoint_interval_ms,
            checkpoint_dir,
        } => copy(
            &brokers,
            &input,
            &output,
            &guarantee,
            parallelism,
            checkpoint_interval_ms,
            &checkpoint_dir,
        )?,
        Action::Verify {
            brokers,
            topic,
            events,
            keys,
        } => {
            let v = hummer::jobs::kafka_count::verify(&brokers, &topic, events, keys)?;
            if !v.is_exactly_once() {
                bail!("topic {topic} is not exactly-once: {v:?}");
            }
            println!("verified: {} records, every event exactly once", v.lines);
        }
    }
    Ok(())
}
