//! The connection to a Kafka cluster that the source and the sink share: client settings,
//! one I/O runtime for every Kafka call of the process, and the few cluster operations they
//! need (partitions of a topic, a partition's client, offsets), each with a deadline so
//! that a broker that does not answer fails the task (and the job fails over per its
//! restart strategy) instead of hanging it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rskafka::BackoffConfig;
use rskafka::client::partition::{OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};

use crate::error::{HummerError, Result};

/// Settings of a Kafka client: the brokers to start from and client properties in Kafka's
/// names. Properties this client understands:
///
/// | property | default | meaning |
/// |---|---|---|
/// | `client.id` | `hummer` | the client id the brokers see |
/// | `request.timeout.ms` | `30000` | how long a request (retries included) may take before the task fails |
/// | `fetch.max.bytes` | `1048576` | bytes one fetch of one partition asks for |
/// | `fetch.max.wait.ms` | `100` | how long the broker may hold a fetch that has no records |
/// | `compression.type` | `none` | `none`, `gzip` or `snappy` for what the sink produces |
/// | `batch.size` | `262144` | bytes the sink gathers per partition before it produces |
/// | `group.id` | none | the consumer group the source commits its checkpointed offsets to (for lag monitoring), and starts from with `StartingOffsets::Committed` |
/// | `partition.discovery.interval.ms` | `10000` | how often an unbounded source looks for new partitions and topics |
///
/// Other properties are accepted and kept (a client of another library would use them) but
/// have no effect here; an unparsable value of a known one is a configuration error.
#[derive(Clone, Debug)]
pub struct KafkaConfig {
    /// `host:port` of brokers to bootstrap from.
    pub bootstrap_servers: Vec<String>,
    /// Client properties (see the table).
    pub properties: BTreeMap<String, String>,
}

impl KafkaConfig {
    /// The brokers of a comma-separated list (`"host:9092,other:9092"`).
    pub fn new(bootstrap_servers: &str) -> Self {
        KafkaConfig {
            bootstrap_servers: bootstrap_servers
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            properties: BTreeMap::new(),
        }
    }

    /// Sets a client property (see the table).
    pub fn set_property(&mut self, name: &str, value: &str) {
        self.properties.insert(name.to_string(), value.to_string());
    }

    /// The brokers as one string, for messages.
    pub fn brokers(&self) -> String {
        self.bootstrap_servers.join(",")
    }

    /// Checks the settings (before a job starts).
    pub fn validate(&self) -> Result<()> {
        if self.bootstrap_servers.is_empty() {
            return Err(HummerError::Config(
                "kafka: no bootstrap servers given".into(),
            ));
        }
        for server in &self.bootstrap_servers {
            let valid = server
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !valid {
                return Err(HummerError::Config(format!(
                    "kafka: bootstrap server '{server}' is not host:port"
                )));
            }
        }
        self.request_timeout()?;
        self.number("fetch.max.bytes", 1 << 20)?;
        self.number("fetch.max.wait.ms", 100)?;
        self.number("batch.size", 1 << 18)?;
        self.compression()?;
        Ok(())
    }

    /// A numeric property, or `default`.
    pub(crate) fn number(&self, name: &str, default: u64) -> Result<u64> {
        match self.properties.get(name) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| {
                HummerError::Config(format!(
                    "kafka property {name} = '{v}' is not a non-negative integer"
                ))
            }),
        }
    }

    pub(crate) fn request_timeout(&self) -> Result<Duration> {
        Ok(Duration::from_millis(
            self.number("request.timeout.ms", 30_000)?.max(1),
        ))
    }

    pub(crate) fn compression(&self) -> Result<rskafka::client::partition::Compression> {
        use rskafka::client::partition::Compression;
        match self.properties.get("compression.type").map(String::as_str) {
            None | Some("none") => Ok(Compression::NoCompression),
            Some("gzip") => Ok(Compression::Gzip),
            Some("snappy") => Ok(Compression::Snappy),
            Some(other) => Err(HummerError::Config(format!(
                "kafka property compression.type = '{other}': this client writes none, gzip or snappy"
            ))),
        }
    }
}

/// The runtime of every Kafka call of the process: one thread, whatever the number of
/// sources and sinks (their calls are I/O; the tasks block on their answers).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kafka-io")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the Kafka I/O runtime: {e}"))
    })
}

/// A client of one Kafka cluster.
#[derive(Clone)]
pub(crate) struct Cluster {
    client: Arc<Client>,
    config: KafkaConfig,
    timeout: Duration,
}

impl Cluster {
    /// Connects to the cluster (within `request.timeout.ms`).
    pub(crate) fn connect(config: &KafkaConfig) -> Result<Cluster> {
        config.validate()?;
        let timeout = config.request_timeout()?;
        let builder = ClientBuilder::new(config.bootstrap_servers.clone())
            .client_id(
                config
                    .properties
                    .get("client.id")
                    .cloned()
                    .unwrap_or_else(|| "hummer".into()),
            )
            .backoff_config(backoff(timeout));
        let target = format!("brokers {}", config.brokers());
        let client = block_on_within(timeout, &target, async move { builder.build().await })
            .map_err(|e| match e {
                HummerError::Kafka { target, reason } => HummerError::Kafka {
                    target,
                    reason: format!(
                        "cannot connect: {reason}; is the broker running, and are the bootstrap \
                         servers (--brokers, properties.bootstrap.servers) right?"
                    ),
                },
                other => other,
            })?;
        Ok(Cluster {
            client: Arc::new(client),
            config: config.clone(),
            timeout,
        })
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Every topic and its partitions.
    pub(crate) fn topics(&self) -> Result<BTreeMap<String, Vec<i32>>> {
        let client = self.client.clone();
        let topics = block_on_within(
            self.timeout,
            &format!("brokers {}", self.config.brokers()),
            async move { client.list_topics().await },
        )?;
        Ok(topics
            .into_iter()
            .map(|t| (t.name, t.partitions.into_iter().collect()))
            .collect())
    }

    /// The partitions of `topic`; an error naming it if the cluster has no such topic.
    pub(crate) fn partitions(&self, topic: &str) -> Result<Vec<i32>> {
        self.topics()?
            .remove(topic)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| HummerError::Kafka {
                target: format!("topic '{topic}' on {}", self.config.brokers()),
                reason: "no such topic".into(),
            })
    }

    /// A client of one partition (it follows the partition's leader).
    pub(crate) fn partition(&self, topic: &str, partition: i32) -> Result<Arc<PartitionClient>> {
        let client = self.client.clone();
        let name = topic.to_string();
        let target = partition_target(topic, partition);
        let p = block_on_within(self.timeout, &target, async move {
            client
                .partition_client(name, partition, UnknownTopicHandling::Error)
                .await
        })?;
        Ok(Arc::new(p))
    }

    /// Creates a topic (replication factor 1) unless it exists.
    pub fn create_topic(&self, topic: &str, partitions: i32) -> Result<()> {
        if self.topics()?.contains_key(topic) {
            return Ok(());
        }
        let controller = self
            .client
            .controller_client()
            .map_err(|e| kafka_error(&format!("brokers {}", self.config.brokers()), e))?;
        let name = topic.to_string();
        let deadline = self.timeout.as_millis().min(i32::MAX as u128) as i32;
        block_on_within(self.timeout, &format!("topic '{topic}'"), async move {
            controller.create_topic(name, partitions, 1, deadline).await
        })
    }
}

/// The offset of `at` in a partition.
pub(crate) fn offset_of(
    partition: &Arc<PartitionClient>,
    at: OffsetAt,
    timeout: Duration,
) -> Result<i64> {
    let target = partition_target(partition.topic(), partition.partition());
    let partition = partition.clone();
    block_on_within(
        timeout,
        &target,
        async move { partition.get_offset(at).await },
    )
}

/// Where a partition starts: the offset of its first record still kept. Checked with a
/// fetch from 0 too, as some brokers (tansu) answer `ListOffsets(earliest)` at times with a
/// later batch's start.
pub(crate) fn earliest_offset(partition: &Arc<PartitionClient>, timeout: Duration) -> Result<i64> {
    let listed = offset_of(partition, OffsetAt::Earliest, timeout)?;
    if listed <= 0 {
        return Ok(0);
    }
    let target = partition_target(partition.topic(), partition.partition());
    let client = partition.clone();
    // Below the log's start a broker refuses the fetch: then what it listed stands.
    match block_on_within(timeout, &target, async move {
        client.fetch_records(0, 1..2, 0).await
    }) {
        Ok((records, _)) => Ok(records.first().map_or(listed, |r| r.offset.min(listed))),
        Err(_) => Ok(listed),
    }
}

/// Where a partition ends: the offset its next record gets (its high watermark). Asked of a
/// fetch too, whose answer carries it, as some brokers answer `ListOffsets(latest)` with the
/// last batch's start rather than its end (tansu does for batches of several records).
pub(crate) fn end_offset(partition: &Arc<PartitionClient>, timeout: Duration) -> Result<i64> {
    let latest = offset_of(partition, OffsetAt::Latest, timeout)?;
    let target = partition_target(partition.topic(), partition.partition());
    let client = partition.clone();
    let (_, high_watermark) = block_on_within(timeout, &target, async move {
        client.fetch_records(latest.max(0), 1..2, 0).await
    })?;
    Ok(high_watermark.max(latest))
}

/// Fetches the records of a partition from `offset` on: `(records, high watermark, the offset
/// to fetch next)`.
///
/// Kafka answers a fetch with whole record batches, the first one being the batch that holds
/// `offset`. Some brokers (tansu) answer a fetch at an offset inside a batch from the next
/// batch on, which would lose the rest of that batch when a job resumes from a checkpointed
/// offset. So when the answer starts after `offset` (or is empty below the high watermark),
/// the fetch is repeated from further back (1, 2, 4, ... offsets) until the answer covers
/// `offset`, and what precedes `offset` is dropped. A real gap (a compacted topic) is found
/// the same way and kept.
pub(crate) async fn fetch_from(
    client: &PartitionClient,
    offset: i64,
    max_bytes: i32,
    max_wait_ms: i32,
) -> std::result::Result<
    (Vec<rskafka::record::RecordAndOffset>, i64, i64),
    rskafka::client::error::Error,
> {
    let (records, high_watermark) = client
        .fetch_records(offset, 1..max_bytes, max_wait_ms)
        .await?;
    let skipped = match records.first() {
        Some(first) => first.offset > offset,
        None => high_watermark > offset,
    };
    let next_of = |records: &[rskafka::record::RecordAndOffset], default: i64| {
        records
            .last()
            .map_or(default, |r| (r.offset + 1).max(default))
    };
    if !skipped || offset <= 0 {
        let next = next_of(&records, offset);
        return Ok((records, high_watermark, next));
    }
    let mut back = 1i64;
    loop {
        let at = (offset - back).max(0);
        let (earlier, hw) = client.fetch_records(at, 1..max_bytes, 0).await?;
        let covers = earlier.first().is_some_and(|f| f.offset <= offset);
        if covers || at == 0 || back >= 1 << 24 {
            if !covers {
                // A real gap: what the first answer gave stands.
                let next = next_of(&records, offset);
                return Ok((records, high_watermark, next));
            }
            let next = next_of(&earlier, offset);
            let kept = earlier.into_iter().filter(|r| r.offset >= offset).collect();
            return Ok((kept, hw.max(high_watermark), next));
        }
        back *= 2;
    }
}

/// Retries with backoff within the request timeout, then gives up (the task fails).
fn backoff(timeout: Duration) -> BackoffConfig {
    BackoffConfig {
        init_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_secs(1),
        base: 2.0,
        deadline: Some(timeout),
    }
}

pub(crate) fn partition_target(topic: &str, partition: i32) -> String {
    format!("topic '{topic}' partition {partition}")
}

pub(crate) fn kafka_error(target: &str, e: impl std::fmt::Display) -> HummerError {
    HummerError::Kafka {
        target: target.to_string(),
        reason: e.to_string(),
    }
}

/// Runs a Kafka call on the I/O runtime and waits for it, at most `timeout`.
pub(crate) fn block_on_within<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
    timeout: Duration,
    target: &str,
    call: impl Future<Output = std::result::Result<T, E>> + Send + 'static,
) -> Result<T> {
    let handle = runtime().spawn(async move { tokio::time::timeout(timeout, call).await });
    match futures::executor::block_on(handle) {
        Ok(Ok(Ok(v))) => Ok(v),
        Ok(Ok(Err(e))) => Err(kafka_error(target, e)),
        Ok(Err(_)) => Err(kafka_error(
            target,
            format!("no answer within {} ms", timeout.as_millis()),
        )),
        Err(e) => Err(kafka_error(target, format!("the call failed: {e}"))),
    }
}
