//! The Kafka sink: a stream's records into the partitions of a topic.
//!
//! Three guarantees, as Flink's `DeliveryGuarantee`:
//!
//! - **none**: records are produced as they come, never waited for;
//! - **at-least-once**: the same, and at each checkpoint barrier the writer flushes and waits
//!   until every record is acknowledged (by all in-sync replicas) before it acknowledges the
//!   checkpoint, so a restore never loses a record (a replay may write some twice);
//! - **exactly-once, without broker transactions** (which the test broker, like some
//!   Kafka-compatible services, does not have): the records of a checkpoint are held by the
//!   writer and are its checkpointed state; they are published only when the checkpoint has
//!   completed everywhere. Each record carries a header `hummer.txn` =
//!   `PREFIX/SUBTASK/CHECKPOINT/SEQ` (the sink's transactional-id prefix, the writing subtask,
//!   the checkpoint, the record's sequence number in it). A writer restored from a checkpoint
//!   publishes what that checkpoint held, but first reads the partitions from where they
//!   ended when the checkpoint was taken (recorded in the state) and skips every record
//!   whose header shows it was published before the failure, so a failure in the middle of
//!   publishing writes nothing twice. Consumers need no `read_committed`: nothing
//!   uncommitted is ever in the topic. The cost is latency: a record is visible one
//!   checkpoint after it was written.
//!
//! Without checkpoints an exactly-once writer publishes everything at the end of its input.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rskafka::client::partition::{Compression, PartitionClient};
use rskafka::record::Record;
use serde::{Deserialize, Serialize};

use crate::error::{HummerError, Result};
use crate::kafka::client::{
    Cluster, KafkaConfig, block_on_within, end_offset, fetch_from, kafka_error, partition_target,
    runtime,
};
use crate::kafka::serializer::{KafkaSerializer, Partitioner, ProducerRecord};
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};
use crate::types::CheckpointId;

/// The header that marks a record of the exactly-once sink.
pub const TXN_HEADER: &str = "hummer.txn";

/// What the sink guarantees after a failure (Flink's `DeliveryGuarantee`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// Records may be lost or repeated.
    None,
    /// No record lost; a replay may repeat some (the default).
    #[default]
    AtLeastOnce,
    /// Every record exactly once (see the module).
    ExactlyOnce,
}

/// A Kafka sink (build it with [`KafkaSink::builder`]).
///
/// ```no_run
/// use hummer::connectors::kafka::{DeliveryGuarantee, KafkaSink, StringSerializer};
/// let sink = KafkaSink::builder()
///     .bootstrap_servers("127.0.0.1:9092")
///     .topic("counts")
///     .serializer(StringSerializer)
///     .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
///     .transactional_id_prefix("word-count")
///     .build::<String>()
///     .unwrap();
/// ```
pub struct KafkaSink<T> {
    config: KafkaConfig,
    topic: String,
    serializer: Arc<dyn KafkaSerializer<T>>,
    partitioner: Partitioner,
    guarantee: DeliveryGuarantee,
    prefix: String,
}

/// Builds a [`KafkaSink`].
pub struct KafkaSinkBuilder<S> {
    config: KafkaConfig,
    topic: Option<String>,
    serializer: Option<S>,
    partitioner: Partitioner,
    guarantee: DeliveryGuarantee,
    prefix: Option<String>,
}

impl KafkaSink<()> {
    /// A builder; it needs the bootstrap servers, the topic and a serializer.
    pub fn builder() -> KafkaSinkBuilder<()> {
        KafkaSinkBuilder {
            config: KafkaConfig::new(""),
            topic: None,
            serializer: None,
            partitioner: Partitioner::default(),
            guarantee: DeliveryGuarantee::default(),
            prefix: None,
        }
    }
}

impl<S> KafkaSinkBuilder<S> {
    /// The brokers to bootstrap from, comma-separated `host:port`.
    pub fn bootstrap_servers(mut self, servers: &str) -> Self {
        self.config.bootstrap_servers = KafkaConfig::new(servers).bootstrap_servers;
        self
    }

    /// The topic to write (it must exist).
    pub fn topic(mut self, topic: &str) -> Self {
        self.topic = Some(topic.to_string());
        self
    }

    /// Which partition a record goes to (by its key's hash by default).
    pub fn partitioner(mut self, partitioner: Partitioner) -> Self {
        self.partitioner = partitioner;
        self
    }

    /// The guarantee (at-least-once by default).
    pub fn delivery_guarantee(mut self, guarantee: DeliveryGuarantee) -> Self {
        self.guarantee = guarantee;
        self
    }

    /// Names this sink's records in their exactly-once header: unique per job and sink, and
    /// the same across restarts of the job (by default the topic's name).
    pub fn transactional_id_prefix(mut self, prefix: &str) -> Self {
        self.prefix = Some(prefix.to_string());
        self
    }

    /// A client property (see [`KafkaConfig`]), e.g. `compression.type`.
    pub fn property(mut self, name: &str, value: &str) -> Self {
        self.config.set_property(name, value);
        self
    }

    /// How Kafka records are made of records.
    pub fn serializer<S2>(self, serializer: S2) -> KafkaSinkBuilder<S2> {
        KafkaSinkBuilder {
            config: self.config,
            topic: self.topic,
            serializer: Some(serializer),
            partitioner: self.partitioner,
            guarantee: self.guarantee,
            prefix: self.prefix,
        }
    }

    /// The sink of `T` records; an error says which setting is missing or wrong.
    pub fn build<T>(self) -> Result<KafkaSink<T>>
    where
        S: KafkaSerializer<T>,
    {
        self.config.validate()?;
        let topic = self
            .topic
            .filter(|t| !t.is_empty())
            .ok_or_else(|| HummerError::Config("kafka sink: no topic given".into()))?;
        let serializer = self
            .serializer
            .ok_or_else(|| HummerError::Config("kafka sink: no serializer given".into()))?;
        let prefix = self.prefix.unwrap_or_else(|| topic.clone());
        if prefix.is_empty() {
            return Err(HummerError::Config(
                "kafka sink: the transactional id prefix is empty".into(),
            ));
        }
        Ok(KafkaSink {
            config: self.config,
            topic,
            serializer: Arc::new(serializer),
            partitioner: self.partitioner,
            guarantee: self.guarantee,
            prefix,
        })
    }
}

impl<T: Send + 'static> Sink<T> for KafkaSink<T> {
    fn name(&self) -> String {
        format!("Kafka sink {}", self.topic)
    }

    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        let cluster = Cluster::connect(&self.config)?;
        let partitions = cluster
            .partitions(&self.topic)?
            .into_iter()
            .map(|p| cluster.partition(&self.topic, p))
            .collect::<Result<Vec<_>>>()?;
        let n = partitions.len();
        Ok(Box::new(KafkaWriter {
            serializer: self.serializer.clone(),
            partitioner: self.partitioner,
            guarantee: self.guarantee,
            prefix: self.prefix.clone(),
            subtask: ctx.subtask,
            parallelism: ctx.parallelism.max(1),
            checkpointing: ctx.checkpointing,
            timeout: cluster.timeout(),
            compression: self.config.compression()?,
            batch_bytes: self.config.number("batch.size", 1 << 18)?.max(1) as usize,
            partitions,
            buffers: vec![Vec::new(); n],
            buffered: vec![0; n],
            in_flight: Vec::new(),
            open: Vec::new(),
            pending: BTreeMap::new(),
            counter: 0,
        }))
    }
}

/// The records of one checkpoint of one exactly-once writer, until published.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Transaction {
    /// The subtask that wrote them (their header names it, whoever publishes them).
    subtask: usize,
    checkpoint: CheckpointId,
    /// `(partition, key, value)` in sequence order.
    records: Vec<HeldRecord>,
    /// Where each partition the records go to ended when the checkpoint was taken: nothing
    /// of this transaction is before that.
    ends: Vec<(u32, i64)>,
}

impl Transaction {
    /// The start of its records' `hummer.txn` header (the sequence number follows): what
    /// publishing writes and recovery looks for.
    fn tag(&self, prefix: &str) -> String {
        format!("{prefix}/{}/{}/", self.subtask, self.checkpoint)
    }
}

/// About the bytes a record takes in a produce request (for the batch size).
fn record_size(key: &Option<Vec<u8>>, value: &Option<Vec<u8>>) -> usize {
    key.as_ref().map_or(0, Vec::len) + value.as_ref().map_or(0, Vec::len) + 32
}

type Produced = tokio::task::JoinHandle<Result<()>>;

/// A record held by the exactly-once writer: `(partition, key, value)`.
type HeldRecord = (u32, Option<Vec<u8>>, Option<Vec<u8>>);

struct KafkaWriter<T> {
    serializer: Arc<dyn KafkaSerializer<T>>,
    partitioner: Partitioner,
    guarantee: DeliveryGuarantee,
    prefix: String,
    subtask: usize,
    parallelism: usize,
    checkpointing: bool,
    timeout: Duration,
    compression: Compression,
    batch_bytes: usize,
    partitions: Vec<Arc<PartitionClient>>,
    /// At-least-once: records per partition not yet produced, and their bytes.
    buffers: Vec<Vec<Record>>,
    buffered: Vec<usize>,
    in_flight: Vec<Produced>,
    /// Exactly-once: records since the last barrier.
    open: Vec<HeldRecord>,
    /// Exactly-once: pre-committed transactions not yet published.
    pending: BTreeMap<CheckpointId, Transaction>,
    counter: u64,
}

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

impl<T> KafkaWriter<T> {
    fn partition_of(&mut self, record: &ProducerRecord) -> u32 {
        self.counter += 1;
        self.partitioner.partition(
            record.key.as_deref(),
            self.partitions.len(),
            self.subtask,
            self.counter,
        ) as u32
    }

    /// Produces one partition's buffered records in the background.
    fn send(&mut self, p: usize) {
        let records = std::mem::take(&mut self.buffers[p]);
        self.buffered[p] = 0;
        if records.is_empty() {
            return;
        }
        self.in_flight.push(produce(
            &self.partitions[p],
            records,
            self.compression,
            self.timeout,
        ));
    }

    /// Waits for every record produced so far to be acknowledged.
    fn flush(&mut self) -> Result<()> {
        for p in 0..self.buffers.len() {
            self.send(p);
        }
        for task in std::mem::take(&mut self.in_flight) {
            wait(task)?;
        }
        Ok(())
    }

    /// Publishes a transaction's records, skipping those whose sequence number is in `done`
    /// per partition (published before a failure), and waits for them to be acknowledged.
    fn publish(&mut self, txn: Transaction, done: &BTreeMap<u32, u64>) -> Result<()> {
        // Per partition: the records not yet produced and their bytes.
        let mut per_partition: BTreeMap<u32, (Vec<Record>, usize)> = BTreeMap::new();
        let tag = txn.tag(&self.prefix);
        for (seq, (p, key, value)) in txn.records.into_iter().enumerate() {
            let seq = seq as u64;
            if done.get(&p).is_some_and(|&last| seq <= last) {
                continue;
            }
            let mut headers = BTreeMap::new();
            headers.insert(TXN_HEADER.to_string(), format!("{tag}{seq}").into_bytes());
            let (batch, bytes) = per_partition.entry(p).or_default();
            *bytes += record_size(&key, &value);
            batch.push(Record {
                key,
                value,
                headers,
                timestamp: now(),
            });
            if *bytes >= self.batch_bytes {
                // In order within a partition: each batch acknowledged before the next, so
                // what a failure leaves published is a prefix of the partition's records.
                let records = std::mem::take(batch);
                *bytes = 0;
                wait(produce(
                    self.partition(p)?,
                    records,
                    self.compression,
                    self.timeout,
                ))?;
            }
        }
        let tasks: Vec<Produced> = per_partition
            .into_iter()
            .filter(|(_, (r, _))| !r.is_empty())
            .map(|(p, (records, _))| {
                Ok(produce(
                    self.partition(p)?,
                    records,
                    self.compression,
                    self.timeout,
                ))
            })
            .collect::<Result<_>>()?;
        for task in tasks {
            wait(task)?;
        }
        Ok(())
    }

    fn partition(&self, p: u32) -> Result<&Arc<PartitionClient>> {
        self.partitions
            .get(p as usize)
            .ok_or_else(|| HummerError::Kafka {
                target: format!(
                    "topic '{}'",
                    self.partitions
                        .first()
                        .map(|c| c.topic().to_string())
                        .unwrap_or_default()
                ),
                reason: format!(
                    "a checkpointed record is for partition {p}, the topic has {} now",
                    self.partitions.len()
                ),
            })
    }

    /// The largest sequence number per partition of `txn`'s records already in the topic.
    fn published(&self, txn: &Transaction) -> Result<BTreeMap<u32, u64>> {
        let tag = txn.tag(&self.prefix);
        let mut done = BTreeMap::new();
        for &(p, from) in &txn.ends {
            let client = self.partition(p)?.clone();
            let end = end_offset(&client, self.timeout)?;
            let mut offset = from;
            while offset < end {
                let c = client.clone();
                let target = format!(
                    "{} offset {offset}",
                    partition_target(c.topic(), c.partition())
                );
                let (records, _, next) = block_on_within(self.timeout, &target, async move {
                    fetch_from(&c, offset, 4 << 20, 100).await
                })?;
                if next <= offset {
                    break;
                }
                offset = next;
                for r in records {
                    let Some(h) = r.record.headers.get(TXN_HEADER) else {
                        continue;
                    };
                    let Some(seq) = std::str::from_utf8(h)
                        .ok()
                        .and_then(|h| h.strip_prefix(&tag))
                        .and_then(|s| s.parse::<u64>().ok())
                    else {
                        continue;
                    };
                    let e = done.entry(p).or_insert(seq);
                    *e = (*e).max(seq);
                }
            }
        }
        Ok(done)
    }

    /// Publishes every pending transaction up to `upto`.
    fn commit_upto(&mut self, upto: CheckpointId) -> Result<()> {
        let ids: Vec<CheckpointId> = self.pending.range(..=upto).map(|(id, _)| *id).collect();
        for id in ids {
            if let Some(txn) = self.pending.remove(&id) {
                self.publish(txn, &BTreeMap::new())?;
            }
        }
        Ok(())
    }

    /// Where the partitions of the open records end now.
    fn ends(&self, records: &[HeldRecord]) -> Result<Vec<(u32, i64)>> {
        let mut touched: Vec<u32> = records.iter().map(|r| r.0).collect();
        touched.sort_unstable();
        touched.dedup();
        touched
            .into_iter()
            .map(|p| Ok((p, end_offset(self.partition(p)?, self.timeout)?)))
            .collect()
    }
}

fn produce(
    partition: &Arc<PartitionClient>,
    records: Vec<Record>,
    compression: Compression,
    timeout: Duration,
) -> Produced {
    let client = partition.clone();
    runtime().spawn(async move {
        let target = partition_target(client.topic(), client.partition());
        match tokio::time::timeout(timeout, client.produce(records, compression)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(kafka_error(&target, e)),
            Err(_) => Err(kafka_error(
                &target,
                format!("no acknowledgement within {} ms", timeout.as_millis()),
            )),
        }
    })
}

fn wait(task: Produced) -> Result<()> {
    futures::executor::block_on(task)
        .map_err(|e| kafka_error("producer", format!("the produce call failed: {e}")))?
}

impl<T: Send + 'static> SinkWriter<T> for KafkaWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        for record in batch.drain(..) {
            let r = self.serializer.serialize(&record);
            let p = self.partition_of(&r);
            match self.guarantee {
                DeliveryGuarantee::ExactlyOnce => self.open.push((p, r.key, r.value)),
                _ => {
                    let p = p as usize;
                    self.buffered[p] += record_size(&r.key, &r.value);
                    self.buffers[p].push(Record {
                        key: r.key,
                        value: r.value,
                        headers: BTreeMap::new(),
                        timestamp: now(),
                    });
                    if self.buffered[p] >= self.batch_bytes {
                        self.send(p);
                    }
                }
            }
        }
        // Bounded memory: at most a few batches per partition in flight.
        while self.in_flight.len() > 4 * self.partitions.len().max(1) {
            wait(self.in_flight.remove(0))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        match self.guarantee {
            DeliveryGuarantee::ExactlyOnce => {
                if self.checkpointing {
                    // The final checkpoint's barrier precedes the end of input: its commit
                    // publishes everything.
                    if !self.open.is_empty() {
                        return Err(crate::error::internal!(
                            "records reached the exactly-once Kafka sink after the final checkpoint"
                        ));
                    }
                    Ok(())
                } else {
                    let txn = Transaction {
                        subtask: self.subtask,
                        checkpoint: 0,
                        records: std::mem::take(&mut self.open),
                        ends: Vec::new(),
                    };
                    self.publish(txn, &BTreeMap::new())
                }
            }
            _ => self.flush(),
        }
    }

    fn pre_commit(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>> {
        match self.guarantee {
            DeliveryGuarantee::ExactlyOnce => {
                let records = std::mem::take(&mut self.open);
                let ends = self.ends(&records)?;
                self.pending.insert(
                    checkpoint,
                    Transaction {
                        subtask: self.subtask,
                        checkpoint,
                        records,
                        ends,
                    },
                );
                let all: Vec<&Transaction> = self.pending.values().collect();
                postcard::to_stdvec(&all).map(Some).map_err(|e| {
                    crate::error::internal!("cannot encode the Kafka sink's transactions: {e}")
                })
            }
            DeliveryGuarantee::AtLeastOnce => {
                self.flush()?;
                Ok(None)
            }
            DeliveryGuarantee::None => Ok(None),
        }
    }

    fn commit(&mut self, checkpoint: CheckpointId) -> Result<()> {
        if self.guarantee == DeliveryGuarantee::ExactlyOnce {
            self.commit_upto(checkpoint)?;
        }
        Ok(())
    }

    fn restore(&mut self, state: &[u8]) -> Result<()> {
        if self.guarantee != DeliveryGuarantee::ExactlyOnce {
            return Ok(());
        }
        let txns: Vec<Transaction> =
            postcard::from_bytes(state).map_err(|e| HummerError::BadInput {
                input: "checkpointed transactions of the exactly-once Kafka sink".into(),
                reason: e.to_string(),
            })?;
        // The restored checkpoint completed, so its transactions must be published; some
        // may have been, in part, before the failure. Every new writer is handed every old
        // writer's state: each publishes those of the old subtasks it stands for.
        let (me, parallelism) = (self.subtask, self.parallelism);
        for txn in txns.into_iter().filter(|t| t.subtask % parallelism == me) {
            let done = self.published(&txn)?;
            self.publish(txn, &done)?;
        }
        Ok(())
    }
}
