//! KafkaCount: EventCount through Kafka, the example of a Kafka → keyed count → Kafka job.
//!
//! Numbered events (their decimal text) are read from an input topic; the counter of
//! [`crate::event_count`] keeps a count per key `event % keys` in keyed state and
//! writes `event key count` through the exactly-once Kafka sink into an output topic. After
//! any number of failures and restarts the output topic holds every event exactly once, and
//! per key the counts `1..=n`: [`verify`] reads the topic back and checks that.
//! [`produce_events`] fills the input topic.

use crate::api::StreamExecutionEnvironment;
use crate::connectors::kafka::{
    DeliveryGuarantee, KafkaConfig, KafkaSink, KafkaSource, Partitioner, StringDeserializer,
    StringSerializer, create_topic,
};
use crate::error::{HummerError, Result};
use crate::event_count::{InjectedFailures, Tally, Verdict, count_events};
use std::path::PathBuf;

/// The job's settings.
#[derive(Clone, Debug)]
pub struct KafkaCount {
    /// Bootstrap servers.
    pub brokers: String,
    /// Topic of the events.
    pub input: String,
    /// Topic of the `event key count` lines (exactly-once).
    pub output: String,
    /// Distinct keys (`event % keys`).
    pub keys: u64,
    /// Stop at the input's end as it is when the job starts (otherwise run until cancelled).
    pub bounded: bool,
    /// Events read per second in all (`None`: as fast as it goes).
    pub rate: Option<f64>,
    /// Events at which the counter panics (each once).
    pub fail_at: Vec<u64>,
    /// Marks an injected failure as done (`<file>.<event>`), across processes.
    pub fail_marker: Option<PathBuf>,
}

impl KafkaCount {
    /// Adds the job to `env`.
    pub fn build(&self, env: &StreamExecutionEnvironment) -> Result<()> {
        if self.keys == 0 {
            return Err(HummerError::Config("keys must be at least 1".into()));
        }
        let mut source = KafkaSource::builder()
            .bootstrap_servers(&self.brokers)
            .topics([self.input.as_str()]);
        if self.bounded {
            source = source.bounded();
        }
        if let Some(rate) = self.rate {
            source = source.rate_limit(rate);
        }
        let input = self.input.clone();
        let source = source
            .deserializer(move |r: &crate::connectors::kafka::KafkaRecord<'_>| {
                let text = std::str::from_utf8(r.value.unwrap_or_default())
                    .map_err(|_| "the value is not UTF-8".to_string())?;
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("'{text}' is not an event number (topic {input})"))
            })
            .build()?;
        let sink = KafkaSink::builder()
            .bootstrap_servers(&self.brokers)
            .topic(&self.output)
            .serializer(StringSerializer)
            .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
            .transactional_id_prefix(&format!("kafka-count-{}", self.output))
            .build::<String>()?;
        let failures = InjectedFailures::new(self.fail_at.clone(), self.fail_marker.clone());
        let events = env.add_source(source).name("Kafka events");
        count_events(&events, self.keys, failures)
            .name("Count")
            .add_sink(sink)
            .name("Exactly-once Kafka sink");
        Ok(())
    }
}

/// Writes the events `0..events` (decimal text, zero-padded to `record_bytes` if that is
/// longer) into `topic`, created with `partitions` partitions if it does not exist, spread
/// over them in turn.
pub fn produce_events(
    brokers: &str,
    topic: &str,
    events: u64,
    partitions: i32,
    record_bytes: usize,
) -> Result<()> {
    create_topic(&KafkaConfig::new(brokers), topic, partitions)?;
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2).run_locally();
    env.from_iter(0..events)
        .map(move |e: u64| format!("{e:0>record_bytes$}"))
        .add_sink(
            KafkaSink::builder()
                .bootstrap_servers(brokers)
                .topic(topic)
                .serializer(StringSerializer)
                .partitioner(Partitioner::RoundRobin)
                .build::<String>()?,
        );
    env.execute("Produce events")?;
    Ok(())
}

/// Reads `topic` back (to its end now) and checks it holds the output of `events` events
/// over `keys` keys exactly once.
pub fn verify(brokers: &str, topic: &str, events: u64, keys: u64) -> Result<Verdict> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2).run_locally();
    let lines = env
        .add_source(
            KafkaSource::builder()
                .bootstrap_servers(brokers)
                .topics([topic])
                .bounded()
                .deserializer(StringDeserializer)
                .build()?,
        )
        .collect();
    let mut result = env.execute("Read back")?;
    let mut tally = Tally::new(events, keys);
    for line in result.collected(&lines)? {
        let bad = || HummerError::BadInput {
            input: format!("kafka topic '{topic}'"),
            reason: format!("a record is not 'event key count': {line:?}"),
        };
        let f: Vec<&str> = line.split(' ').collect();
        let [e, key, count] = f[..] else {
            return Err(bad());
        };
        if !tally.add(e, key, count) {
            return Err(bad());
        }
    }
    Ok(tally.verdict())
}
