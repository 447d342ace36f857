//! The Kafka source: the partitions of some topics, read by the job's source subtasks.
//!
//! As in Flink and Arroyo, partitions are assigned by the engine, not by a consumer group:
//! partition `p` of topic `t` goes to subtask `(start(t) + p) % parallelism`, where
//! `start(t)` spreads the topics' first partitions over the subtasks (Flink's
//! `KafkaSourceEnumerator` rule), so every subtask works out its own partitions from the
//! topic metadata, and a partition added while the job runs is found by the subtask it
//! belongs to at its next discovery (every `partition.discovery.interval.ms`, 10 s by
//! default; it is read from its earliest offset).
//!
//! The next offset of each partition is the reader's checkpointed position: after a failure
//! the job replays exactly from the restored offsets, which with the rest of the engine's
//! snapshots gives exactly-once results. A bounded source (`bounded()`) stops at the latest
//! offsets of the partitions when it first read them (kept in the position, so a restored
//! job stops at the same offsets).
//!
//! Each partition is fetched in the background (one fetch in flight and two batches
//! buffered per partition), so the task rarely waits for the broker. With a watermark
//! strategy (`from_source`) each partition has its own: its records are stamped (with the
//! Kafka record's timestamp unless the strategy has an assigner), it has its own watermark
//! and idleness, and the subtask's watermark is the minimum over its partitions that are not
//! idle, as in Flink's per-split watermarks.

mod assignment;
mod builder;
mod partition_reader;
mod reader;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::kafka::client::{Cluster, KafkaConfig};
use crate::kafka::deserializer::KafkaDeserializer;
use crate::types::Data;
use crate::{Source, SourceContext, SourceReader};

use reader::KafkaReader;

pub use assignment::owner_of;
pub use builder::{BadRecords, KafkaSourceBuilder, StartingOffsets, Topics};

/// A Kafka source (build it with [`KafkaSource::builder`]).
///
/// ```no_run
/// use hummer::connectors::kafka::{KafkaSource, StartingOffsets, StringDeserializer};
/// let source = KafkaSource::builder()
///     .bootstrap_servers("127.0.0.1:9092")
///     .topics(["words"])
///     .starting_offsets(StartingOffsets::Earliest)
///     .deserializer(StringDeserializer)
///     .build()
///     .unwrap();
/// ```
pub struct KafkaSource<T> {
    pub(super) config: KafkaConfig,
    pub(super) topics: Topics,
    pub(super) starting: StartingOffsets,
    pub(super) bounded: bool,
    pub(super) bad_records: BadRecords,
    pub(super) discovery_interval: Duration,
    pub(super) rate: Option<f64>,
    pub(super) deserializer: Arc<dyn KafkaDeserializer<T>>,
}

// Not derived: `T` itself need not be `Clone`.
impl<T> Clone for KafkaSource<T> {
    fn clone(&self) -> Self {
        KafkaSource {
            config: self.config.clone(),
            topics: self.topics.clone(),
            starting: self.starting.clone(),
            bounded: self.bounded,
            bad_records: self.bad_records,
            discovery_interval: self.discovery_interval,
            rate: self.rate,
            deserializer: self.deserializer.clone(),
        }
    }
}

impl<T> KafkaSource<T> {
    /// The topics and partitions the source reads now.
    fn discover(&self, cluster: &Cluster) -> Result<Vec<(String, Vec<i32>)>> {
        match &self.topics {
            Topics::Names(names) => names
                .iter()
                .map(|t| Ok((t.clone(), cluster.partitions(t)?)))
                .collect(),
            Topics::Pattern(re) => Ok(cluster
                .topics()?
                .into_iter()
                .filter(|(t, _)| re.is_match(t))
                .collect()),
        }
    }
}

impl<T: Data> Source<T> for KafkaSource<T> {
    fn name(&self) -> String {
        match &self.topics {
            Topics::Names(names) => format!("Kafka {}", names.join(",")),
            Topics::Pattern(re) => format!("Kafka /{}/", re.as_str()),
        }
    }
    fn is_bounded(&self) -> bool {
        self.bounded
    }
    fn is_replayable(&self) -> bool {
        true
    }
    fn validate(&self) -> Result<()> {
        let cluster = Cluster::connect(&self.config)?;
        self.discover(&cluster).map(|_| ())
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        Ok(Box::new(KafkaReader {
            source: self.clone(),
            subtask: ctx.subtask,
            parallelism: ctx.parallelism.max(1),
            metrics: ctx.metrics.clone(),
            reported_at: None,
            cluster: None,
            partitions: Vec::new(),
            restored: None,
            discovered_at: None,
            next: 0,
            strategy: None,
            skipped: 0,
            started: Instant::now(),
            emitted: 0,
            snapshotted: std::sync::Mutex::new(Vec::new()),
        }))
    }
}
