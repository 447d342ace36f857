//! `Multiset`: rows with their multiplicity, as a regular join keeps one side's rows of a key
//! (Flink's join state without a unique key: a map from row to count).
//!
//! A key can hold millions of rows (q7 joins every bid on its price), so adding or retracting
//! one must not scan them: past a few rows the set keeps a hash index of its entries, and it
//! keeps the total count. A snapshot holds the entries only (the layout of a plain list of
//! `(row, count)`); the index is rebuilt when the set is read back.

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::hash::BuildHasher;

use crate::value::Row;

/// From this many entries on, a set keeps a hash index (below, a scan is cheaper).
const INDEXED_FROM: usize = 16;

/// Rows with their multiplicity (each at least 1).
#[derive(Clone, Debug, Default)]
pub struct Multiset {
    entries: Vec<(Row, i64)>,
    total: i64,
    /// Positions in `entries`, by the hash of their row; only from [`INDEXED_FROM`] entries.
    index: Option<HashTable<usize>>,
}

fn hash(row: &Row) -> u64 {
    FixedState::default().hash_one(row)
}

impl Multiset {
    /// True when it holds no row.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The rows, counting multiplicity.
    pub fn total(&self) -> i64 {
        self.total
    }

    /// The distinct rows and their multiplicity.
    pub fn iter(&self) -> impl Iterator<Item = (&Row, i64)> {
        self.entries.iter().map(|(r, n)| (r, *n))
    }

    /// Adds `row` (`sign` +1) or takes one of it away (-1); taking away a row it does not
    /// hold (one filtered out upstream) does nothing.
    pub fn add(&mut self, row: Row, sign: i64) {
        match self.position(&row) {
            Some(i) => {
                self.total += sign;
                self.entries[i].1 += sign;
                if self.entries[i].1 <= 0 {
                    self.total -= self.entries[i].1;
                    self.remove(i);
                }
            }
            None if sign < 0 => {}
            None => {
                self.total += sign;
                let h = hash(&row);
                self.entries.push((row, sign));
                let at = self.entries.len() - 1;
                match &mut self.index {
                    Some(index) => {
                        let entries = &self.entries;
                        index.insert_unique(h, at, |&i| hash(&entries[i].0));
                    }
                    None if self.entries.len() >= INDEXED_FROM => self.index = Some(self.build()),
                    None => {}
                }
            }
        }
    }

    fn build(&self) -> HashTable<usize> {
        let mut index = HashTable::with_capacity(self.entries.len());
        for (i, (row, _)) in self.entries.iter().enumerate() {
            index.insert_unique(hash(row), i, |&j| hash(&self.entries[j].0));
        }
        index
    }

    fn position(&self, row: &Row) -> Option<usize> {
        match &self.index {
            Some(index) => index
                .find(hash(row), |&i| self.entries[i].0 == *row)
                .copied(),
            None => self.entries.iter().position(|(r, _)| r == row),
        }
    }

    /// Removes entry `i`, the last entry taking its place.
    fn remove(&mut self, i: usize) {
        let last = self.entries.len() - 1;
        if let Some(index) = &mut self.index {
            let h = hash(&self.entries[i].0);
            if let Ok(entry) = index.find_entry(h, |&j| j == i) {
                entry.remove();
            }
            if i != last {
                let h = hash(&self.entries[last].0);
                if let Some(slot) = index.find_mut(h, |&j| j == last) {
                    *slot = i;
                }
            }
        }
        self.entries.swap_remove(i);
    }
}

impl Serialize for Multiset {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.entries.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Multiset {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = Vec::<(Row, i64)>::deserialize(deserializer)?;
        let mut set = Multiset {
            total: entries.iter().map(|(_, n)| n).sum(),
            entries,
            index: None,
        };
        if set.entries.len() >= INDEXED_FROM {
            set.index = Some(set.build());
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Any sequence of additions and retractions leaves the counts a map of counts
        /// gives (a retraction of a row not held does nothing), before and after a round
        /// trip through a snapshot.
        #[test]
        fn a_multiset_counts_as_a_map_of_counts(
            steps in prop::collection::vec((0i64..40, prop::bool::weighted(0.7)), 0..400),
        ) {
            let mut set = Multiset::default();
            let mut model: BTreeMap<i64, i64> = BTreeMap::new();
            for (v, add) in steps {
                let row = vec![Value::BigInt(v), Value::String(format!("r{v}"))];
                set.add(row, if add { 1 } else { -1 });
                if add {
                    *model.entry(v).or_default() += 1;
                } else if let Some(n) = model.get_mut(&v) {
                    *n -= 1;
                    if *n == 0 {
                        model.remove(&v);
                    }
                }
                prop_assert_eq!(set.total(), model.values().sum::<i64>());
                let bytes = postcard::to_allocvec(&set).expect("serializes");
                let back: Multiset = postcard::from_bytes(&bytes).expect("deserializes");
                for s in [&set, &back] {
                    let mut got: Vec<(i64, i64)> = s
                        .iter()
                        .map(|(r, n)| match r[0] {
                            Value::BigInt(v) => (v, n),
                            _ => (-1, n),
                        })
                        .collect();
                    got.sort_unstable();
                    prop_assert_eq!(&got, &model.iter().map(|(k, n)| (*k, *n)).collect::<Vec<_>>());
                }
            }
        }
    }
}
