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
        } => {
            if partitions < 1 {
                bail!("--partitions must be at least 1");
            }
            hummer::jobs::kafka_count::produce_events(&brokers, &topic, events, partitions)?;
            println!("produced {events} events into {topic}");
        }
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
