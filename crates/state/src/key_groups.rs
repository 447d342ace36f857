//! Keys to key groups, key groups to subtasks.
//!
//! A key is hashed (with a fixed seed, so every process running the same binary agrees) to one
//! of `max_parallelism` *key groups*; a contiguous range of key groups belongs to each subtask.
//! Keyed state is organised by key group, so when the parallelism of an operator changes, whole
//! key groups move between subtasks and no key is ever split. This is Flink's scheme:
//! `subtask = key_group * parallelism / max_parallelism`.

use std::hash::{BuildHasher, Hash};

use foldhash::fast::FixedState;

/// Default number of key groups (Flink's default lower bound is 128 too).
pub const DEFAULT_MAX_PARALLELISM: usize = 128;

const KEY_HASH_SEED: u64 = 0x6875_6d6d_6572_2d6b; // "hummer-k"

/// The stable 64-bit hash of a key used for partitioning.
#[inline]
pub fn key_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    FixedState::with_seed(KEY_HASH_SEED).hash_one(key)
}

/// The key group of a key hash.
#[inline]
pub fn key_group_of_hash(hash: u64, max_parallelism: usize) -> usize {
    // The high bits are the best mixed; fold them in before the modulo.
    ((hash ^ (hash >> 32)) % max_parallelism as u64) as usize
}

/// The subtask that owns a key group.
///
/// # Panics
/// Never for `key_group < max_parallelism` and `0 < parallelism <= max_parallelism`, which
/// the graph translation guarantees.
#[inline]
pub fn subtask_of_key_group(key_group: usize, max_parallelism: usize, parallelism: usize) -> usize {
    key_group * parallelism / max_parallelism
}

/// The key groups owned by `subtask`: a contiguous, non-empty range when
/// `parallelism <= max_parallelism`.
pub fn key_groups_of_subtask(
    subtask: usize,
    max_parallelism: usize,
    parallelism: usize,
) -> std::ops::Range<usize> {
    // Smallest key group g with g * p / m >= subtask, i.e. ceil(subtask * m / p).
    let start = (subtask * max_parallelism).div_ceil(parallelism);
    let end = ((subtask + 1) * max_parallelism).div_ceil(parallelism);
    start..end.min(max_parallelism)
}

/// The subtask that owns `key`.
#[inline]
pub fn subtask_of_key<K: Hash + ?Sized>(
    key: &K,
    max_parallelism: usize,
    parallelism: usize,
) -> usize {
    subtask_of_key_group(
        key_group_of_hash(key_hash(key), max_parallelism),
        max_parallelism,
        parallelism,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ranges_partition_the_key_groups(max in 1usize..512, p_seed in 0usize..512) {
            let p = 1 + p_seed % max;
            let mut next = 0;
            for s in 0..p {
                let r = key_groups_of_subtask(s, max, p);
                prop_assert_eq!(r.start, next);
                prop_assert!(!r.is_empty(), "subtask {} of {} owns no key group of {}", s, p, max);
                for g in r.clone() {
                    prop_assert_eq!(subtask_of_key_group(g, max, p), s);
                }
                next = r.end;
            }
            prop_assert_eq!(next, max);
        }

        #[test]
        fn every_key_lands_in_range(key in any::<String>(), max in 1usize..512, p_seed in 0usize..512) {
            let p = 1 + p_seed % max;
            let g = key_group_of_hash(key_hash(&key), max);
            prop_assert!(g < max);
            let s = subtask_of_key(&key, max, p);
            prop_assert!(s < p);
            prop_assert!(key_groups_of_subtask(s, max, p).contains(&g));
        }

        #[test]
        fn hash_is_stable_for_equal_keys(key in any::<Vec<u8>>()) {
            prop_assert_eq!(key_hash(&key), key_hash(&key.clone()));
        }
    }

    #[test]
    fn keys_spread_over_key_groups() {
        let mut counts = vec![0usize; DEFAULT_MAX_PARALLELISM];
        for i in 0..128_000u32 {
            counts[key_group_of_hash(key_hash(&format!("word{i}")), DEFAULT_MAX_PARALLELISM)] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(
            *min > 800 && *max < 1200,
            "uneven spread: min {min}, max {max}"
        );
    }
}
