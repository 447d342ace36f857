//! Which subtask reads which partition: Flink's `KafkaSourceEnumerator` rule, so that every
//! subtask works out its own partitions from the topic metadata, without a coordinator.

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
