//! Kafka: a source ([`KafkaSource`]) and a sink ([`KafkaSink`]), exactly-once with the rest
//! of the engine.
//!
//! The client is [`rskafka`], a pure-Rust Kafka client, rather than `rdkafka` (librdkafka):
//! the engine assigns partitions itself and keeps offsets in its checkpoints, so it needs a
//! client of partitions (fetch from an offset, produce, list offsets), which is exactly what
//! rskafka is, without librdkafka's consumer-group machinery; it has no C build, so
//! `hummer image build` keeps making a small static binary; and it runs on the tokio the
//! engine already has. What it lacks (consumer groups, transactions) the engine does not
//! use: the exactly-once sink works without broker transactions (see [`sink`]).
//!
//! In the `connectors` layer (5 of 11), with the other connectors.

pub mod client;
pub mod deserializer;
mod group_offsets;
pub mod serializer;
pub mod sink;
pub mod source;

pub use client::KafkaConfig;
pub use deserializer::{
    BytesDeserializer, JsonDeserializer, KafkaDeserializer, KafkaRecord, StringDeserializer,
};
pub use serializer::{
    JsonSerializer, KafkaSerializer, Partitioner, ProducerRecord, StringSerializer,
};
pub use sink::{DeliveryGuarantee, KafkaSink, KafkaSinkBuilder};
pub use source::{BadRecords, KafkaSource, KafkaSourceBuilder, StartingOffsets, Topics};

/// Creates a topic (replication factor 1) unless it exists: the set-up a job may need.
pub fn create_topic(
    config: &KafkaConfig,
    topic: &str,
    partitions: i32,
) -> crate::error::Result<()> {
    client::Cluster::connect(config)?.create_topic(topic, partitions)
}

/// Creates `topic` with as many partitions as `like` unless it exists (a job's output beside
/// its input); an error names `like` if there is no such topic.
pub fn create_topic_like(
    config: &KafkaConfig,
    topic: &str,
    like: &str,
) -> crate::error::Result<()> {
    let cluster = client::Cluster::connect(config)?;
    let partitions = cluster.partitions(like)?.len();
    cluster.create_topic(topic, partitions as i32)
}
