//! Turning Kafka records into a stream's records: the [`KafkaDeserializer`] interface and
//! the string, bytes and JSON deserializers.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use crate::types::{Data, Timestamp};

/// A record as read from a partition.
#[derive(Clone, Debug)]
pub struct KafkaRecord<'a> {
    /// Its topic.
    pub topic: &'a str,
    /// Its partition.
    pub partition: i32,
    /// Its offset in the partition.
    pub offset: i64,
    /// Its timestamp (epoch milliseconds).
    pub timestamp: Timestamp,
    /// Its key, if it has one.
    pub key: Option<&'a [u8]>,
    /// Its value (`None`: a tombstone).
    pub value: Option<&'a [u8]>,
    /// Its headers.
    pub headers: &'a BTreeMap<String, Vec<u8>>,
}

/// Makes a stream record of a Kafka record (Flink's `KafkaRecordDeserializationSchema`).
/// `Err` says what is wrong with it; the source then fails the job naming the topic,
/// partition and offset, or skips and counts the record if it was built with
/// `skip_bad_records`.
pub trait KafkaDeserializer<T>: Send + Sync + 'static {
    /// The stream record of `record`.
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<T, String>;

    /// The stream record of `record`, or `None` for a record that is not for this stream at
    /// all (a topic that holds several kinds of records, each read by its own source):
    /// skipped without being counted as bad. By default every record is.
    fn deserialize_optional(&self, record: &KafkaRecord<'_>) -> Result<Option<T>, String> {
        self.deserialize(record).map(Some)
    }
}

impl<T, F> KafkaDeserializer<T> for F
where
    F: Fn(&KafkaRecord<'_>) -> Result<T, String> + Send + Sync + 'static,
{
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<T, String> {
        self(record)
    }
}

fn value<'a>(record: &KafkaRecord<'a>) -> Result<&'a [u8], String> {
    record
        .value
        .ok_or_else(|| "the record has no value (a tombstone)".to_string())
}

/// The value as UTF-8 text.
#[derive(Clone, Copy, Debug, Default)]
pub struct StringDeserializer;

impl KafkaDeserializer<String> for StringDeserializer {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<String, String> {
        let bytes = value(record)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|e| format!("the value is not UTF-8: {e}"))
    }
}

/// The value's bytes as they are.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytesDeserializer;

impl KafkaDeserializer<Vec<u8>> for BytesDeserializer {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<Vec<u8>, String> {
        Ok(value(record)?.to_vec())
    }
}

/// The value as JSON, read into `T` with serde.
///
/// ```
/// use hummer::connectors::kafka::{JsonDeserializer, KafkaDeserializer, KafkaRecord};
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
/// struct Bid { auction: u64, price: u64 }
/// let headers = Default::default();
/// let record = KafkaRecord { topic: "bids", partition: 0, offset: 7, timestamp: 0, key: None,
///     value: Some(br#"{"auction": 1, "price": 20}"#), headers: &headers };
/// let bid: Bid = JsonDeserializer::new().deserialize(&record).unwrap();
/// assert_eq!(bid, Bid { auction: 1, price: 20 });
/// ```
pub struct JsonDeserializer<T>(PhantomData<fn() -> T>);

impl<T> JsonDeserializer<T> {
    /// A JSON deserializer into `T`.
    pub fn new() -> Self {
        JsonDeserializer(PhantomData)
    }
}

impl<T> Default for JsonDeserializer<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for JsonDeserializer<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T: Data + DeserializeOwned> KafkaDeserializer<T> for JsonDeserializer<T> {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<T, String> {
        serde_json::from_slice(value(record)?)
            .map_err(|e| format!("the value is not the JSON expected: {e}"))
    }
}
