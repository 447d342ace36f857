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

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use regex::Regex;
use rskafka::client::partition::{OffsetAt, PartitionClient};
use rskafka::record::RecordAndOffset;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::error::{HummerError, Result};
use crate::kafka::client::{
    Cluster, KafkaConfig, earliest_offset, end_offset, fetch_from, kafka_error, offset_of,
    partition_target, runtime,
};
use crate::kafka::deserializer::{KafkaDeserializer, KafkaRecord};
use crate::kafka::group_offsets;
use crate::operators::WatermarkStrategy;
use crate::operators::watermark_strategy::WatermarkTracker;
use crate::types::metrics::{PartitionMetrics, SubtaskMetrics};
use crate::types::{Data, MIN_WATERMARK, Timestamp};
use crate::{Source, SourceContext, SourceReader, SourceStatus};

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
    config: KafkaConfig,
    topics: Topics,
    starting: StartingOffsets,
    bounded: bool,
    bad_records: BadRecords,
    discovery_interval: Duration,
    rate: Option<f64>,
    deserializer: Arc<dyn KafkaDeserializer<T>>,
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

/// Builds a [`KafkaSource`].
pub struct KafkaSourceBuilder<T> {
    config: KafkaConfig,
    topics: Option<Topics>,
    pattern_error: Option<String>,
    starting: StartingOffsets,
    bounded: bool,
    bad_records: BadRecords,
    rate: Option<f64>,
    deserializer: Option<Arc<dyn KafkaDeserializer<T>>>,
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

fn group_id(config: &KafkaConfig) -> Option<&str> {
    config
        .properties
        .get("group.id")
        .map(String::as_str)
        .filter(|g| !g.is_empty())
}

/// Java's `String.hashCode`, for Flink's assignment rule.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// The subtask (of `parallelism`) that reads partition `partition` of `topic`.
pub fn owner_of(topic: &str, partition: i32, parallelism: usize) -> usize {
    let n = parallelism.max(1) as i64;
    let start = ((java_hash(topic).wrapping_mul(31) & 0x7fff_ffff) as i64) % n;
    ((start + partition as i64) % n) as usize
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

/// The checkpointed position of one partition.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct PartitionPosition {
    topic: String,
    partition: i32,
    /// The next offset to read.
    next: i64,
    /// Where a bounded source stops.
    stop: Option<i64>,
}

/// What a partition's background fetch hands over.
type Fetched = Result<(Vec<RecordAndOffset>, i64)>;

struct PartitionReader<T> {
    topic: Arc<str>,
    partition: i32,
    client: Arc<PartitionClient>,
    /// The next offset to hand on.
    next: i64,
    stop: Option<i64>,
    fetched: Option<mpsc::Receiver<Fetched>>,
    fetch_task: Option<tokio::task::JoinHandle<()>>,
    pending: VecDeque<RecordAndOffset>,
    tracker: Option<WatermarkTracker<T>>,
    /// The partition's end when last fetched.
    high_watermark: i64,
    /// Records handed on.
    consumed: u64,
}

impl<T> PartitionReader<T> {
    fn finished(&self) -> bool {
        self.stop.is_some_and(|s| self.next >= s)
    }

    /// Starts fetching from `next` in the background.
    fn start_fetching(&mut self, config: &KafkaConfig, timeout: Duration) -> Result<()> {
        let (tx, rx) = mpsc::channel(2);
        let client = self.client.clone();
        let max_bytes = config
            .number("fetch.max.bytes", 1 << 20)?
            .clamp(1, i32::MAX as u64) as i32;
        let max_wait = config
            .number("fetch.max.wait.ms", 100)?
            .min(i32::MAX as u64) as i32;
        let target = partition_target(&self.topic, self.partition);
        let mut offset = self.next;
        let task = runtime().spawn(async move {
            loop {
                let fetch = fetch_from(&client, offset, max_bytes, max_wait);
                let batch = match tokio::time::timeout(timeout, fetch).await {
                    Ok(Ok((records, high_watermark, next))) => {
                        offset = next;
                        Ok((records, high_watermark))
                    }
                    Ok(Err(e)) => Err(kafka_error(&format!("{target} offset {offset}"), e)),
                    Err(_) => Err(kafka_error(
                        &format!("{target} offset {offset}"),
                        format!("no answer to a fetch within {} ms", timeout.as_millis()),
                    )),
                };
                let failed = batch.is_err();
                let empty = batch.as_ref().is_ok_and(|(records, _)| records.is_empty());
                if tx.send(batch).await.is_err() || failed {
                    return;
                }
                if empty {
                    tokio::time::sleep(Duration::from_millis(max_wait.max(10) as u64)).await;
                }
            }
        });
        self.fetched = Some(rx);
        self.fetch_task = Some(task);
        Ok(())
    }

    fn stop_fetching(&mut self) {
        if let Some(task) = self.fetch_task.take() {
            task.abort();
        }
        self.fetched = None;
        self.pending.clear();
    }
}

impl<T> Drop for PartitionReader<T> {
    fn drop(&mut self) {
        self.stop_fetching();
    }
}

struct KafkaReader<T> {
    source: KafkaSource<T>,
    subtask: usize,
    parallelism: usize,
    /// Where the partitions' consumed records, offsets and lag are reported (REST,
    /// Prometheus), at most every [`REPORT_INTERVAL`].
    metrics: Arc<SubtaskMetrics>,
    reported_at: Option<Instant>,
    cluster: Option<Cluster>,
    partitions: Vec<PartitionReader<T>>,
    /// Positions of a checkpoint, applied when the partitions are opened.
    restored: Option<Vec<PartitionPosition>>,
    discovered_at: Option<Instant>,
    /// The partition the next poll starts at (round robin).
    next: usize,
    strategy: Option<WatermarkStrategy<T>>,
    skipped: u64,
    /// For the rate limit: when the reader started, records it has handed on.
    started: Instant,
    emitted: u64,
    /// The positions of the last snapshot, committed to the group when it completes.
    snapshotted: std::sync::Mutex<Vec<PartitionPosition>>,
}

/// How often a reader reports its partitions' metrics.
const REPORT_INTERVAL: Duration = Duration::from_millis(200);

impl<T: Data> KafkaReader<T> {
    /// Whether this reader has partition `partition` of `topic` open.
    fn has_partition(&self, topic: &str, partition: i32) -> bool {
        self.partitions
            .iter()
            .any(|r| *r.topic == *topic && r.partition == partition)
    }

    /// Reports the partitions' metrics (see `metrics`).
    fn report(&mut self) {
        if self
            .reported_at
            .is_some_and(|t| t.elapsed() < REPORT_INTERVAL)
        {
            return;
        }
        self.reported_at = Some(Instant::now());
        let Ok(mut all) = self.metrics.partitions.lock() else {
            return;
        };
        // Other splits of the subtask (after a rescale) report their own partitions.
        all.retain(|m| !self.has_partition(&m.topic, m.partition));
        all.extend(self.partitions.iter().map(|p| PartitionMetrics {
            topic: p.topic.to_string(),
            partition: p.partition,
            consumed: p.consumed,
            next_offset: p.next,
            end_offset: p.high_watermark.max(p.next),
        }));
    }

    fn cluster(&mut self) -> Result<Cluster> {
        if self.cluster.is_none() {
            self.cluster = Some(Cluster::connect(&self.source.config)?);
        }
        self.cluster
            .clone()
            .ok_or_else(|| crate::error::internal!("kafka cluster not connected"))
    }

    /// Opens the partitions of this subtask that are not open yet. The first time: at their
    /// restored positions, or where `starting` says; later (a partition added while the
    /// job runs): at their earliest offset.
    fn discover(&mut self) -> Result<()> {
        let first = self.discovered_at.is_none();
        if !first
            && (self.source.bounded
                || self
                    .discovered_at
                    .is_some_and(|t| t.elapsed() < self.source.discovery_interval))
        {
            return Ok(());
        }
        self.discovered_at = Some(Instant::now());
        let cluster = self.cluster()?;
        let timeout = cluster.timeout();
        let found = self.source.discover(&cluster)?;
        let restored = self.restored.take();
        let committed = match (&self.source.starting, group_id(&self.source.config)) {
            (StartingOffsets::Committed, Some(group)) if first => {
                let mine: std::collections::BTreeMap<String, Vec<i32>> = found
                    .iter()
                    .map(|(t, ps)| {
                        let own = ps
                            .iter()
                            .copied()
                            .filter(|&p| owner_of(t, p, self.parallelism) == self.subtask)
                            .collect();
                        (t.clone(), own)
                    })
                    .collect();
                group_offsets::fetch(&self.source.config, group, &mine)?
            }
            _ => Default::default(),
        };
        for (topic, partitions) in found {
            for p in partitions {
                if owner_of(&topic, p, self.parallelism) != self.subtask
                    || self.has_partition(&topic, p)
                {
                    continue;
                }
                let client = cluster.partition(&topic, p)?;
                let position = restored
                    .as_ref()
                    .and_then(|r| r.iter().find(|x| x.topic == topic && x.partition == p));
                let (next, stop) = match position {
                    Some(pos) => (pos.next, pos.stop),
                    None => {
                        let start = if first {
                            self.source.starting.clone()
                        } else {
                            StartingOffsets::Earliest
                        };
                        let next = match committed.get(&topic).and_then(|c| c.get(&p)) {
                            Some(&offset) => offset,
                            None => start_offset(&client, &start, timeout)?,
                        };
                        let stop = if self.source.bounded {
                            Some(end_offset(&client, timeout)?)
                        } else {
                            None
                        };
                        (next, stop)
                    }
                };
                let mut reader = PartitionReader {
                    topic: Arc::from(topic.as_str()),
                    partition: p,
                    client,
                    next,
                    stop,
                    fetched: None,
                    fetch_task: None,
                    pending: VecDeque::new(),
                    tracker: self.strategy.as_ref().map(WatermarkStrategy::tracker),
                    high_watermark: next,
                    consumed: 0,
                };
                if !reader.finished() {
                    reader.start_fetching(&self.source.config, timeout)?;
                }
                tracing::info!(
                    "kafka source subtask {}: reading topic '{topic}' partition {p} from offset {next}{}",
                    self.subtask,
                    stop.map(|s| format!(" to {s}")).unwrap_or_default()
                );
                self.partitions.push(reader);
            }
        }
        // A restored partition that no longer exists is kept as it was (in the position),
        // so that nothing of it is lost if it comes back.
        if let Some(restored) = restored {
            for pos in restored {
                if !self.has_partition(&pos.topic, pos.partition) {
                    tracing::warn!(
                        "kafka source: checkpointed topic '{}' partition {} is not in the cluster any more",
                        pos.topic,
                        pos.partition
                    );
                }
            }
        }
        Ok(())
    }

    /// Moves records of partition `i` into `out`; how many.
    fn drain(
        &mut self,
        i: usize,
        out: &mut Vec<T>,
        mut stamps: Option<&mut Vec<Timestamp>>,
        max: usize,
    ) -> Result<usize> {
        let deserializer = self.source.deserializer.clone();
        let bad_records = self.source.bad_records;
        let part = &mut self.partitions[i];
        let mut n = 0;
        while n < max && !part.finished() {
            if part.pending.is_empty() {
                let Some(rx) = part.fetched.as_mut() else {
                    break;
                };
                match rx.try_recv() {
                    Ok(Ok((records, high_watermark))) => {
                        part.high_watermark = high_watermark;
                        part.pending.extend(records);
                        continue;
                    }
                    Ok(Err(e)) => return Err(e),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        return Err(kafka_error(
                            &partition_target(&part.topic, part.partition),
                            "the background fetch stopped",
                        ));
                    }
                }
            }
            let Some(r) = part.pending.pop_front() else {
                break;
            };
            // (Fetches give no record before the offset asked for: see `fetch_from`.)
            if let Some(stop) = part.stop
                && r.offset >= stop
            {
                part.next = stop;
                break;
            }
            let timestamp = r.record.timestamp.timestamp_millis();
            let record = KafkaRecord {
                topic: &part.topic,
                partition: part.partition,
                offset: r.offset,
                timestamp,
                key: r.record.key.as_deref(),
                value: r.record.value.as_deref(),
                headers: &r.record.headers,
            };
            part.next = r.offset + 1;
            match deserializer.deserialize_optional(&record) {
                Ok(None) => {}
                Ok(Some(value)) => {
                    if let Some(stamps) = stamps.as_deref_mut() {
                        let ts = match &mut part.tracker {
                            Some(t) => t.on_record(&value, timestamp).0,
                            None => timestamp,
                        };
                        stamps.push(ts);
                    }
                    out.push(value);
                    part.consumed += 1;
                    n += 1;
                }
                Err(why) => match bad_records {
                    BadRecords::Fail => {
                        return Err(HummerError::BadInput {
                            input: format!(
                                "kafka topic '{}' partition {} offset {}",
                                part.topic, part.partition, r.offset
                            ),
                            reason: why,
                        });
                    }
                    BadRecords::Skip => {
                        self.skipped += 1;
                        tracing::warn!(
                            "kafka source: skipped the record at topic '{}' partition {} offset {} ({why}); {} skipped so far",
                            part.topic,
                            part.partition,
                            r.offset,
                            self.skipped
                        );
                    }
                },
            }
        }
        if part.finished() {
            part.stop_fetching();
        }
        Ok(n)
    }

    fn poll(
        &mut self,
        out: &mut Vec<T>,
        mut stamps: Option<&mut Vec<Timestamp>>,
        max: usize,
    ) -> Result<SourceStatus> {
        self.discover()?;
        let mut max = max;
        if let Some(rate) = self.source.rate {
            let own = rate / self.parallelism as f64;
            let due = (self.started.elapsed().as_secs_f64() * own) as u64;
            max = max.min(due.saturating_sub(self.emitted) as usize);
            if max == 0 {
                return Ok(SourceStatus::Idle(Duration::from_millis(1)));
            }
        }
        let n = self.partitions.len();
        let mut got = 0;
        for step in 0..n {
            if got >= max {
                break;
            }
            let i = (self.next + step) % n;
            got += self.drain(i, out, stamps.as_deref_mut(), max - got)?;
        }
        if n > 0 {
            self.next = (self.next + 1) % n;
        }
        self.emitted += got as u64;
        let finished = self.source.bounded && self.partitions.iter().all(PartitionReader::finished);
        if finished {
            // The last report is the final state.
            self.reported_at = None;
        }
        self.report();
        Ok(if finished {
            SourceStatus::Finished
        } else if got > 0 {
            SourceStatus::MoreAvailable
        } else {
            SourceStatus::Idle(Duration::from_millis(2))
        })
    }
}

/// The first offset to read of a partition without a checkpointed one.
fn start_offset(
    client: &Arc<PartitionClient>,
    start: &StartingOffsets,
    timeout: Duration,
) -> Result<i64> {
    match start {
        // Committed: for a partition the group has no offset for.
        StartingOffsets::Earliest | StartingOffsets::Committed => earliest_offset(client, timeout),
        StartingOffsets::Latest => end_offset(client, timeout),
        StartingOffsets::Timestamp(ms) => {
            let at = chrono::DateTime::from_timestamp_millis(*ms).ok_or_else(|| {
                HummerError::Config(format!(
                    "kafka source: starting timestamp {ms} is out of range"
                ))
            })?;
            let offset = offset_of(client, OffsetAt::Timestamp(at), timeout)?;
            if offset < 0 {
                // No record at or after the time: the end.
                end_offset(client, timeout)
            } else {
                Ok(offset)
            }
        }
    }
}

impl<T: Data> SourceReader<T> for KafkaReader<T> {
    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        self.poll(out, None, max)
    }

    fn poll_next_stamped(
        &mut self,
        out: &mut Vec<T>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        self.poll(out, Some(stamps), max)
    }

    fn use_watermark_strategy(&mut self, strategy: &WatermarkStrategy<T>) -> bool {
        self.strategy = Some(strategy.clone());
        for p in &mut self.partitions {
            p.tracker = Some(strategy.tracker());
        }
        true
    }

    fn on_periodic_watermark(&mut self, now: Timestamp) {
        for p in &mut self.partitions {
            if let Some(t) = &mut p.tracker {
                t.on_periodic(now);
            }
        }
    }

    /// The minimum over the partitions that are neither finished nor idle; `None` while one
    /// of them has none yet.
    fn current_watermark(&self) -> Option<Timestamp> {
        self.strategy.as_ref()?;
        let mut min: Option<Timestamp> = None;
        for p in self.partitions.iter().filter(|p| !p.finished()) {
            let Some(t) = &p.tracker else { continue };
            if t.is_idle() {
                continue;
            }
            let w = t.watermark().unwrap_or(MIN_WATERMARK);
            min = Some(min.map_or(w, |m| m.min(w)));
        }
        min
    }

    /// Idle when every partition it reads is (or it has none: more subtasks than
    /// partitions).
    fn is_idle(&self) -> bool {
        self.discovered_at.is_some()
            && self
                .partitions
                .iter()
                .filter(|p| !p.finished())
                .all(|p| p.tracker.as_ref().is_some_and(WatermarkTracker::is_idle))
    }

    /// Commits the offsets of the last snapshot to the consumer group (`group.id`), for
    /// lag monitoring; a failure is logged, not fatal (the job's position is its checkpoint).
    fn notify_checkpoint_complete(&mut self, id: crate::types::CheckpointId) {
        let Some(group) = group_id(&self.source.config) else {
            return;
        };
        let positions = match self.snapshotted.lock() {
            Ok(mut s) => std::mem::take(&mut *s),
            Err(_) => return,
        };
        if positions.is_empty() {
            return;
        }
        let mut offsets = group_offsets::Offsets::new();
        for p in positions {
            offsets
                .entry(p.topic)
                .or_default()
                .insert(p.partition, p.next);
        }
        if let Err(e) = group_offsets::commit(&self.source.config, group, &offsets) {
            tracing::warn!("kafka source: offsets of checkpoint {id} not committed: {e}");
        }
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        let mut positions: Vec<PartitionPosition> = self
            .partitions
            .iter()
            .map(|p| PartitionPosition {
                topic: p.topic.to_string(),
                partition: p.partition,
                next: p.next,
                stop: p.stop,
            })
            .collect();
        // Not opened yet: what was restored stands.
        if let Some(restored) = &self.restored {
            positions.extend(restored.iter().cloned());
        }
        if let Ok(mut s) = self.snapshotted.lock() {
            *s = positions.clone();
        }
        postcard::to_stdvec(&positions).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let positions: Vec<PartitionPosition> =
            postcard::from_bytes(position).map_err(|e| HummerError::BadInput {
                input: format!("checkpointed position of the {} source", self.source.name()),
                reason: e.to_string(),
            })?;
        self.partitions.clear();
        self.discovered_at = None;
        self.restored = Some(positions);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_matches_java() {
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("hello"), 99162322);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE in Java.
        assert_eq!(java_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn every_partition_has_one_owner_and_owners_are_balanced() {
        for parallelism in 1..6 {
            for partitions in 1..20 {
                let mut per_subtask = vec![0; parallelism];
                for p in 0..partitions {
                    per_subtask[owner_of("events", p, parallelism)] += 1;
                }
                let (min, max) = (
                    per_subtask.iter().min().copied().unwrap_or(0),
                    per_subtask.iter().max().copied().unwrap_or(0),
                );
                assert!(max - min <= 1, "{per_subtask:?}");
            }
        }
    }
}
