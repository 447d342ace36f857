//! A per-subtask table from key to state, probed a batch at a time.
//!
//! Keyed operators look up the state of every record's key. Looking keys up one record at a
//! time leaves the CPU waiting on each table probe in turn; [`KeyedTable::fold_batch`] first
//! extracts and hashes every key of the batch, then probes, so consecutive probes are
//! independent and their cache misses overlap.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;

/// State per key, held by one subtask of a keyed operator.
pub struct KeyedTable<K, V> {
    table: HashTable<(K, V)>,
    hasher: foldhash::fast::RandomState,
    keys: Vec<K>,
    hashes: Vec<u64>,
}

impl<K: Hash + Eq, V> Default for KeyedTable<K, V> {
    fn default() -> Self {
        KeyedTable {
            table: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            keys: Vec::new(),
            hashes: Vec::new(),
        }
    }
}

impl<K: Hash + Eq, V> KeyedTable<K, V> {
    /// Number of keys with state.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no key has state.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Folds a batch into the table, draining it: for every record, calls
    /// `step(key, state, record)` with the key's state (`None` for a new key); a `Some` returned
    /// for a new key becomes its state.
    #[inline]
    pub fn fold_batch<T>(
        &mut self,
        batch: &mut Vec<T>,
        key_of: impl Fn(&T) -> K,
        mut step: impl FnMut(&K, Option<&mut V>, T) -> Option<V>,
    ) {
        let KeyedTable {
            table,
            hasher,
            keys,
            hashes,
        } = self;
        keys.clear();
        hashes.clear();
        for record in batch.iter() {
            let key = key_of(record);
            hashes.push(hasher.hash_one(&key));
            keys.push(key);
        }
        for ((record, key), &hash) in batch.drain(..).zip(keys.drain(..)).zip(hashes.iter()) {
            match table.find_mut(hash, |(k, _)| *k == key) {
                Some((k, v)) => {
                    step(k, Some(v), record);
                }
                None => {
                    if let Some(v) = step(&key, None, record) {
                        table.insert_unique(hash, (key, v), |(k, _)| hasher.hash_one(k));
                    }
                }
            }
        }
    }

    /// Removes and returns every entry.
    pub fn drain(&mut self) -> impl Iterator<Item = (K, V)> + '_ {
        self.table.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #[test]
        fn folds_like_a_hash_map(batches in proptest::collection::vec(
            proptest::collection::vec((0u8..40, any::<u16>()), 0..300), 0..6)) {
            let mut table = KeyedTable::<u8, u64>::default();
            let mut reference: HashMap<u8, u64> = HashMap::new();
            for batch in &batches {
                for (k, v) in batch {
                    *reference.entry(*k).or_default() += u64::from(*v);
                }
                let mut b = batch.clone();
                table.fold_batch(&mut b, |r| r.0, |_, state, r| match state {
                    Some(sum) => { *sum += u64::from(r.1); None }
                    None => Some(u64::from(r.1)),
                });
                prop_assert!(b.is_empty());
            }
            prop_assert_eq!(table.len(), reference.len());
            let got: HashMap<u8, u64> = table.drain().collect();
            prop_assert_eq!(got, reference);
        }
    }
}
