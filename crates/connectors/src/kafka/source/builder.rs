//! Building a [`KafkaSource`]: where it reads, from which offsets, what it does with a record
//! it cannot read, and checking all of that before a job starts.

use std::sync::Arc;
use std::time::Duration;

use regex::Regex;

use crate::error::{HummerError, Result};
use crate::kafka::client::KafkaConfig;
use crate::kafka::deserializer::KafkaDeserializer;
use crate::types::Timestamp;

use super::KafkaSource;

/// Where reading a partition starts when the job has no checkpointed offset for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartingOffsets {
    /// The earliest offset still kept.
    Earliest,
    /// The end: only records written after the job started.
    Latest,
    /// The first record whose timestamp is at or after this (epoch milliseconds); the end
    /// if there is none.
    Timestamp(Timestamp),
    /// The offset the consumer group (`group.id`) committed; the earliest where it has
    /// none.
    Committed,
}

/// Which topics a source reads.
#[derive(Clone, Debug)]
pub enum Topics {
    /// These topics; each must exist when the job starts.
    Names(Vec<String>),
    /// Every topic whose whole name matches this regular expression, found again at every
    /// partition discovery.
    Pattern(Regex),
}

/// What the source does with a record its deserializer rejects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRecords {
    /// Fail the job with an error naming the topic, partition and offset (the default).
    Fail,
    /// Skip the record and count it (logged with its position).
    Skip,
}

/// Builds a [`KafkaSource`].
pub struct KafkaSourceBuilder<T> {
    pub(super) config: KafkaConfig,
    pub(super) topics: Option<Topics>,
    pub(super) pattern_error: Option<String>,
    pub(super) starting: StartingOffsets,
    pub(super) bounded: bool,
    pub(super) bad_records: BadRecords,
    pub(super) rate: Option<f64>,
    pub(super) deserializer: Option<Arc<dyn KafkaDeserializer<T>>>,
}

impl KafkaSource<()> {
    /// A builder; it needs the bootstrap servers, the topics and a deserializer.
    pub fn builder() -> KafkaSourceBuilder<()> {
        KafkaSourceBuilder {
            config: KafkaConfig::new(""),
            topics: None,
            pattern_error: None,
            starting: StartingOffsets::Earliest,
            bounded: false,
            bad_records: BadRecords::Fail,
            rate: None,
            deserializer: None,
        }
    }
}

impl<T> KafkaSourceBuilder<T> {
    /// The brokers to bootstrap from, comma-separated `host:port`.
    pub fn bootstrap_servers(mut self, servers: &str) -> Self {
        self.config.bootstrap_servers = KafkaConfig::new(servers).bootstrap_servers;
        self
    }

    /// The topics to read.
    pub fn topics<S: Into<String>>(mut self, topics: impl IntoIterator<Item = S>) -> Self {
        self.topics = Some(Topics::Names(topics.into_iter().map(Into::into).collect()));
        self
    }

    /// Every topic whose name matches `pattern` (a regular expression over the whole name).
    pub fn topic_pattern(mut self, pattern: &str) -> Self {
        match Regex::new(&format!("^(?:{pattern})$")) {
            Ok(re) => self.topics = Some(Topics::Pattern(re)),
            Err(e) => self.pattern_error = Some(format!("topic pattern '{pattern}': {e}")),
        }
        self
    }

    /// Where partitions without a checkpointed offset start (earliest by default).
    pub fn starting_offsets(mut self, starting: StartingOffsets) -> Self {
        self.starting = starting;
        self
    }

    /// Stops at the latest offsets of the partitions when they are first read: a bounded
    /// job that ends once it has read them.
    pub fn bounded(mut self) -> Self {
        self.bounded = true;
        self
    }

    /// Skips (and counts) records the deserializer rejects instead of failing the job.
    pub fn skip_bad_records(mut self) -> Self {
        self.bad_records = BadRecords::Skip;
        self
    }

    /// A client property (see [`KafkaConfig`]), e.g. `request.timeout.ms`.
    pub fn property(mut self, name: &str, value: &str) -> Self {
        self.config.set_property(name, value);
        self
    }

    /// Reads at most `records_per_second` in all (split over the subtasks): a backfill that
    /// must not swamp what it feeds.
    pub fn rate_limit(mut self, records_per_second: f64) -> Self {
        self.rate = Some(records_per_second);
        self
    }

    /// How records are made of Kafka records.
    pub fn deserializer<U, D: KafkaDeserializer<U>>(
        self,
        deserializer: D,
    ) -> KafkaSourceBuilder<U> {
        KafkaSourceBuilder {
            config: self.config,
            topics: self.topics,
            pattern_error: self.pattern_error,
            starting: self.starting,
            bounded: self.bounded,
            bad_records: self.bad_records,
            rate: self.rate,
            deserializer: Some(Arc::new(deserializer)),
        }
    }

    /// The source; an error says which setting is missing or wrong.
    pub fn build(self) -> Result<KafkaSource<T>> {
        if let Some(e) = self.pattern_error {
            return Err(HummerError::Config(format!("kafka source: {e}")));
        }
        self.config.validate()?;
        let topics = self.topics.ok_or_else(|| {
            HummerError::Config("kafka source: no topics or topic pattern given".into())
        })?;
        if let Topics::Names(names) = &topics
            && (names.is_empty() || names.iter().any(|n| n.is_empty()))
        {
            return Err(HummerError::Config(
                "kafka source: a topic name is empty".into(),
            ));
        }
        if self.starting == StartingOffsets::Committed && group_id(&self.config).is_none() {
            return Err(HummerError::Config(
                "kafka source: starting from committed offsets needs the group.id property".into(),
            ));
        }
        let deserializer = self
            .deserializer
            .ok_or_else(|| HummerError::Config("kafka source: no deserializer given".into()))?;
        if let Some(r) = self.rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(HummerError::Config(format!(
                "kafka source: the rate limit must be a positive number of records per second, got {r}"
            )));
        }
        let discovery_interval = Duration::from_millis(
            self.config
                .number("partition.discovery.interval.ms", 10_000)?,
        );
        Ok(KafkaSource {
            config: self.config,
            topics,
            starting: self.starting,
            bounded: self.bounded,
            bad_records: self.bad_records,
            discovery_interval,
            rate: self.rate,
            deserializer,
        })
    }
}

pub(super) fn group_id(config: &KafkaConfig) -> Option<&str> {
    config
        .properties
        .get("group.id")
        .map(String::as_str)
        .filter(|g| !g.is_empty())
}
