//! Nexmark through Kafka, as the Nexmark Kafka setups run it: the generator's events as JSON
//! in one topic (`hummer nexmark produce`), and the three tables read from it, each by its
//! own source that keeps only its kind of event (`hummer nexmark --kafka B --topic T`).
//!
//! An event is one JSON object with its type and its row, the row's columns in the Nexmark
//! names and `dateTime` in epoch milliseconds:
//! `{"event_type":2,"bid":{"auction":1000,"bidder":1001,"price":42,"channel":"Google",
//! "url":"https://…","dateTime":1672531200000,"extra":"…"}}` (`event_type` 0 is a person,
//! 1 an auction, 2 a bid). One writer deals the events out over the partitions in the
//! generator's order, so each partition is in event order, and the sources have per-partition
//! watermarks.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::api::StreamExecutionEnvironment;
use crate::connectors::kafka::{
    KafkaConfig, KafkaDeserializer, KafkaRecord, KafkaSink, KafkaSource, Partitioner,
    ProducerRecord, create_topic,
};
use crate::error::{HummerError, Result};
use crate::nexmark::generator::{NexmarkSource, Table};
use crate::nexmark::model::{Auction, Bid, Person};

/// One event as JSON: its type and its row.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct JsonEvent {
    /// 0 person, 1 auction, 2 bid.
    pub event_type: u8,
    /// The person, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<Person>,
    /// The auction, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auction: Option<Auction>,
    /// The bid, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bid: Option<Bid>,
}

/// All events, in the generator's order (what `produce` writes).
impl Table for JsonEvent {
    const TYPE: Option<nexmark::event::EventType> = None;
    const NAME: &'static str = "events";
    fn from_event(event: nexmark::event::Event) -> Option<Self> {
        Some(match event {
            nexmark::event::Event::Person(p) => Person::from(p).event(),
            nexmark::event::Event::Auction(a) => Auction::from(a).event(),
            nexmark::event::Event::Bid(b) => Bid::from(b).event(),
        })
    }
    fn rows_in(events: u64) -> u64 {
        events
    }
    fn time(&self) -> crate::types::Timestamp {
        self.person
            .as_ref()
            .map(|p| p.date_time)
            .or(self.auction.as_ref().map(|a| a.date_time))
            .or(self.bid.as_ref().map(|b| b.date_time))
            .unwrap_or(crate::types::NO_TIMESTAMP)
    }
    type Columns = ();
    const ALL_COLUMNS: () = ();
    fn prune(&mut self, _: ()) {}
}

/// A table whose rows travel as [`JsonEvent`]s.
pub trait JsonTable: Table {
    /// Its `event_type`.
    const EVENT_TYPE: u8;
    /// The event of a row.
    fn event(self) -> JsonEvent;
    /// The row of an event of this table.
    fn row(event: JsonEvent) -> Option<Self>;
}

impl JsonTable for Person {
    const EVENT_TYPE: u8 = 0;
    fn event(self) -> JsonEvent {
        JsonEvent {
            event_type: 0,
            person: Some(self),
            auction: None,
            bid: None,
        }
    }
    fn row(event: JsonEvent) -> Option<Self> {
        event.person
    }
}

impl JsonTable for Auction {
    const EVENT_TYPE: u8 = 1;
    fn event(self) -> JsonEvent {
        JsonEvent {
            event_type: 1,
            person: None,
            auction: Some(self),
            bid: None,
        }
    }
    fn row(event: JsonEvent) -> Option<Self> {
        event.auction
    }
}

impl JsonTable for Bid {
    const EVENT_TYPE: u8 = 2;
    fn event(self) -> JsonEvent {
        JsonEvent {
            event_type: 2,
            person: None,
            auction: None,
            bid: Some(self),
        }
    }
    fn row(event: JsonEvent) -> Option<Self> {
        event.bid
    }
}

/// Reads the rows of table `T` from the events' topic; other events are not for it.
pub struct EventDeserializer<T>(PhantomData<fn() -> T>);

impl<T> Default for EventDeserializer<T> {
    fn default() -> Self {
        EventDeserializer(PhantomData)
    }
}

/// The event type, read without parsing the row (most events are for another table).
fn event_type(value: &[u8]) -> Option<u8> {
    const KEY: &[u8] = b"\"event_type\":";
    let at = value.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let digit = value[at..].iter().find(|b| !b.is_ascii_whitespace())?;
    digit.is_ascii_digit().then(|| digit - b'0')
}

impl<T: JsonTable> KafkaDeserializer<T> for EventDeserializer<T> {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> std::result::Result<T, String> {
        self.deserialize_optional(record)?
            .ok_or_else(|| format!("not a {} event", T::NAME))
    }

    fn deserialize_optional(
        &self,
        record: &KafkaRecord<'_>,
    ) -> std::result::Result<Option<T>, String> {
        let value = record
            .value
            .ok_or_else(|| "the record has no value".to_string())?;
        match event_type(value) {
            Some(t) if t == T::EVENT_TYPE => {}
            Some(0..=2) => return Ok(None),
            _ => return Err("not a Nexmark event: no event_type 0, 1 or 2".into()),
        }
        let event: JsonEvent = serde_json::from_slice(value)
            .map_err(|e| format!("not a Nexmark event as JSON: {e}"))?;
        T::row(event)
            .map(Some)
            .ok_or_else(|| format!("event_type {} without its {} row", T::EVENT_TYPE, T::NAME))
    }
}

/// The three tables' sources on the events' topic (each reads the topic to its end as it is
/// when the job starts).
pub struct KafkaTables {
    /// Where the events are: `brokers` and `topic`.
    pub brokers: String,
    /// The events' topic.
    pub topic: String,
    pub(crate) persons: Arc<KafkaSource<Person>>,
    pub(crate) auctions: Arc<KafkaSource<Auction>>,
    pub(crate) bids: Arc<KafkaSource<Bid>>,
}

impl std::fmt::Debug for KafkaTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KafkaTables({} {})", self.brokers, self.topic)
    }
}

impl KafkaTables {
    /// The tables of the events in `topic`; an error names a bad setting.
    pub fn new(brokers: &str, topic: &str) -> Result<KafkaTables> {
        fn source<T: JsonTable>(brokers: &str, topic: &str) -> Result<Arc<KafkaSource<T>>> {
            KafkaSource::builder()
                .bootstrap_servers(brokers)
                .topics([topic])
                .bounded()
                .deserializer(EventDeserializer::<T>::default())
                .build()
                .map(Arc::new)
        }
        Ok(KafkaTables {
            brokers: brokers.to_string(),
            topic: topic.to_string(),
            persons: source(brokers, topic)?,
            auctions: source(brokers, topic)?,
            bids: source(brokers, topic)?,
        })
    }
}

/// The source of one table.
pub(crate) trait KafkaTable: JsonTable {
    fn source(tables: &KafkaTables) -> Arc<KafkaSource<Self>>;
}

impl KafkaTable for Person {
    fn source(tables: &KafkaTables) -> Arc<KafkaSource<Self>> {
        tables.persons.clone()
    }
}

impl KafkaTable for Auction {
    fn source(tables: &KafkaTables) -> Arc<KafkaSource<Self>> {
        tables.auctions.clone()
    }
}

impl KafkaTable for Bid {
    fn source(tables: &KafkaTables) -> Arc<KafkaSource<Self>> {
        tables.bids.clone()
    }
}

/// Writes the first `events` events of the generator into `topic` as JSON (created with
/// `partitions` partitions if missing), spread over the partitions in turn.
pub fn produce(brokers: &str, topic: &str, events: u64, partitions: i32) -> Result<()> {
    if partitions < 1 {
        return Err(HummerError::Config(
            "a topic needs at least one partition".into(),
        ));
    }
    create_topic(&KafkaConfig::new(brokers), topic, partitions)?;
    // One generator in event order, one writer: each partition gets its events in event
    // order (the writer deals them out in turn).
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1).run_locally();
    env.add_source(NexmarkSource::<JsonEvent>::new(events, None))
        .add_sink(
            KafkaSink::builder()
                .bootstrap_servers(brokers)
                .topic(topic)
                .serializer(|e: &JsonEvent| ProducerRecord {
                    key: None,
                    value: Some(serde_json::to_vec(e).unwrap_or_default()),
                })
                .partitioner(Partitioner::RoundRobin)
                .build::<JsonEvent>()?,
        );
    env.execute("Nexmark produce")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_are_told_apart_without_parsing_rows() {
        let bid = Bid {
            auction: 1,
            bidder: 2,
            price: 3,
            channel: "Google".into(),
            url: "https://x".into(),
            date_time: 4,
            extra: "e".into(),
        };
        let json = serde_json::to_vec(&bid.clone().event()).unwrap();
        assert!(String::from_utf8_lossy(&json).contains("\"dateTime\":4"));
        assert_eq!(event_type(&json), Some(2));
        let headers = Default::default();
        let record = KafkaRecord {
            topic: "t",
            partition: 0,
            offset: 0,
            timestamp: 0,
            key: None,
            value: Some(&json),
            headers: &headers,
        };
        assert_eq!(
            EventDeserializer::<Bid>::default()
                .deserialize_optional(&record)
                .unwrap(),
            Some(bid)
        );
        assert_eq!(
            EventDeserializer::<Person>::default()
                .deserialize_optional(&record)
                .unwrap(),
            None
        );
        let bad = KafkaRecord {
            value: Some(b"{\"x\":1}"),
            ..record
        };
        assert!(
            EventDeserializer::<Bid>::default()
                .deserialize_optional(&bad)
                .is_err()
        );
    }
}
