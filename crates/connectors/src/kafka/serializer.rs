//! Turning a stream's records into Kafka records: the [`KafkaSerializer`] interface, the
//! string and JSON serializers, and how a record's partition is chosen.

use serde::Serialize;

/// A Kafka record to write: its key and value (the sink adds the timestamp, and its headers
/// when exactly-once).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerRecord {
    /// The key (its hash picks the partition unless the sink has a partitioner).
    pub key: Option<Vec<u8>>,
    /// The value (`None`: a tombstone, which deletes the key from a compacted topic).
    pub value: Option<Vec<u8>>,
}

/// Makes a Kafka record of a stream record (Flink's `KafkaRecordSerializationSchema`).
pub trait KafkaSerializer<T>: Send + Sync + 'static {
    /// The Kafka record of `record`.
    fn serialize(&self, record: &T) -> ProducerRecord;
}

impl<T, F> KafkaSerializer<T> for F
where
    F: Fn(&T) -> ProducerRecord + Send + Sync + 'static,
{
    fn serialize(&self, record: &T) -> ProducerRecord {
        self(record)
    }
}

/// A string as the value, without a key.
#[derive(Clone, Copy, Debug, Default)]
pub struct StringSerializer;

impl<T: AsRef<str>> KafkaSerializer<T> for StringSerializer
where
    T: Send + Sync + 'static,
{
    fn serialize(&self, record: &T) -> ProducerRecord {
        ProducerRecord {
            key: None,
            value: Some(record.as_ref().as_bytes().to_vec()),
        }
    }
}

/// The record as JSON (serde) as the value, without a key.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonSerializer;

impl<T: Serialize + Send + Sync + 'static> KafkaSerializer<T> for JsonSerializer {
    fn serialize(&self, record: &T) -> ProducerRecord {
        ProducerRecord {
            key: None,
            // Serializing plain data into a Vec cannot fail (serde_json fails only on maps
            // with non-string keys, which then come out as an error text the reader sees).
            value: Some(
                serde_json::to_vec(record)
                    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}").into_bytes()),
            ),
        }
    }
}

/// Which partition a record goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Partitioner {
    /// By the hash of the key (murmur2, as Kafka's default partitioner, so that the same
    /// key lands where a Java producer would put it); a record without a key goes to the
    /// writer's own partition (subtask modulo partitions), as Flink's fixed partitioner.
    #[default]
    KeyHash,
    /// Every record of subtask `s` to partition `s % partitions` (Flink's `FlinkFixedPartitioner`).
    Fixed,
    /// Records spread over all partitions in turn.
    RoundRobin,
}

impl Partitioner {
    /// The partition of a record (`n` partitions; `subtask` the writer's; `counter` how
    /// many records the writer has written).
    pub fn partition(self, key: Option<&[u8]>, n: usize, subtask: usize, counter: u64) -> usize {
        let n = n.max(1);
        match (self, key) {
            (Partitioner::KeyHash, Some(k)) => (murmur2(k) & 0x7fff_ffff) as usize % n,
            (Partitioner::KeyHash, None) | (Partitioner::Fixed, _) => subtask % n,
            (Partitioner::RoundRobin, _) => (counter % n as u64) as usize,
        }
    }
}

/// Kafka's murmur2 hash (its `Utils.murmur2`, seed 0x9747b28c).
pub fn murmur2(data: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = 0x9747_b28c ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= (rest[2] as u32) << 16;
    }
    if rest.len() >= 2 {
        h ^= (rest[1] as u32) << 8;
    }
    if !rest.is_empty() {
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafka() {
        // Values of Kafka's own UtilsTest.testMurmur2.
        assert_eq!(murmur2(b"21") as i32, -973932308);
        assert_eq!(murmur2(b"foobar") as i32, -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string") as i32, -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string") as i32, -1486304829);
        assert_eq!(
            murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") as i32,
            -58897971
        );
        assert_eq!(murmur2(b"abc") as i32, 479470107);
    }

    #[test]
    fn partitions_stay_in_range() {
        for n in 1..9 {
            for s in 0..5 {
                for p in [
                    Partitioner::KeyHash,
                    Partitioner::Fixed,
                    Partitioner::RoundRobin,
                ] {
                    assert!(p.partition(Some(b"k"), n, s, 3) < n);
                    assert!(p.partition(None, n, s, 3) < n);
                }
            }
        }
    }
}
