//! A set that only grows, checkpointed as the elements added since a checkpoint.
//!
//! Distinct counts (q16's distinct bidders and auctions per channel and day) keep sets that
//! every record may grow and nothing shrinks. A key-level delta ([`KeyedTable`]) writes such a
//! set whole whenever one element was added, and when every key gains elements in every
//! interval that is the whole state at every checkpoint. A [`GrowSet`] remembers the elements
//! added since the snapshots that took it, so that a delta holds only those.
//!
//! The journal: once a snapshot has taken the set, every element added is also appended to a
//! journal, and each snapshot marks how far the journal had come. A delta on base snapshot B
//! is the journal from the newest mark at or before B: the set was not changed between that
//! mark and B (a changed set is part of every snapshot taken after the change, and each such
//! snapshot marks it), so what follows the mark is exactly what was added after B. Marks
//! before it and their elements are in B already and are dropped at the same time, so the
//! journal holds about one checkpoint interval of additions. A set never snapshotted (no
//! checkpoints) keeps no journal.
//!
//! [`KeyedTable`]: crate::keyed_table::KeyedTable
//!
//! ```
//! use hummer::state::GrowSet;
//! let mut seen = GrowSet::<u64>::default();
//! assert!(seen.insert(7));
//! assert!(!seen.insert(7));
//! assert_eq!(seen.len(), 1);
//! assert!(seen.contains(&7));
//! ```

use std::collections::HashSet;
use std::hash::Hash;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::keyed_table::{Epoch, SnapshotEpochs};

/// A set of `T` that only grows (see the module).
#[derive(Clone, Debug)]
pub struct GrowSet<T> {
    set: HashSet<T, foldhash::fast::RandomState>,
    /// Elements added since the oldest mark (empty until a snapshot takes the set).
    journal: Vec<T>,
    /// `(epoch of a snapshot that took the set, journal length then)`, oldest first.
    marks: Vec<(Epoch, usize)>,
}

impl<T> Default for GrowSet<T> {
    fn default() -> Self {
        GrowSet {
            set: HashSet::default(),
            journal: Vec::new(),
            marks: Vec::new(),
        }
    }
}

impl<T: Hash + Eq + Clone> GrowSet<T> {
    /// Adds `value`; true if it was not in the set.
    #[inline]
    pub fn insert(&mut self, value: T) -> bool {
        if self.marks.is_empty() {
            return self.set.insert(value);
        }
        // One probe: the copy for the journal is made first (ids cost nothing to copy).
        let fresh = self.set.insert(value.clone());
        if fresh {
            self.journal.push(value);
        }
        fresh
    }

    /// Adds every element of `values`.
    pub fn extend<'a>(&mut self, values: impl IntoIterator<Item = &'a T>)
    where
        T: 'a,
    {
        for v in values {
            self.insert(v.clone());
        }
    }

    /// Whether `value` is in the set.
    pub fn contains(&self, value: &T) -> bool {
        self.set.contains(value)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// True for the empty set.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Every element, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.set.iter()
    }

    /// A snapshot takes the set: the elements added since `epochs`' base snapshot, or `None`
    /// when the set must be written whole (a whole snapshot, or a set the base did not hold
    /// in a way this set can tell). Either way the snapshot is marked, so a later delta on it
    /// holds only what is added after it. Called once per snapshot that takes the set.
    pub fn changes(&mut self, epochs: SnapshotEpochs) -> Option<&[T]> {
        let since = epochs
            .base
            .and_then(|b| self.marks.iter().rposition(|(e, _)| *e <= b));
        match since {
            Some(i) => {
                let start = self.marks[i].1;
                self.journal.drain(..start);
                self.marks.drain(..i);
                for m in &mut self.marks {
                    m.1 -= start;
                }
                self.marks.push((epochs.at, self.journal.len()));
                Some(&self.journal)
            }
            None => {
                self.journal.clear();
                self.marks.clear();
                self.marks.push((epochs.at, 0));
                None
            }
        }
    }
}

impl<T: Serialize> Serialize for GrowSet<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.set.iter())
    }
}

impl<'de, T: Deserialize<'de> + Hash + Eq> Deserialize<'de> for GrowSet<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let set = HashSet::<T, foldhash::fast::RandomState>::deserialize(d)?;
        Ok(GrowSet {
            set,
            journal: Vec::new(),
            marks: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap};

    proptest! {
        /// Random additions, snapshots (whole or a delta on the newest completed one; a delta
        /// may leave out a set unchanged since its base, as a key-level delta leaves out a
        /// clean key) and completions: every snapshot's chain (its whole base, then its
        /// deltas in order) restores exactly the set at that snapshot.
        #[test]
        fn every_chain_restores_the_set_at_its_snapshot(
            steps in proptest::collection::vec(
                (proptest::collection::vec(0u16..500, 0..40), any::<bool>(), any::<bool>(),
                 any::<bool>()),
                1..20),
        ) {
            let mut set = GrowSet::<u16>::default();
            // Per snapshot: its base (None: whole) and what it wrote.
            let mut stored: HashMap<Epoch, (Option<Epoch>, Vec<u16>)> = HashMap::new();
            let mut truth: HashMap<Epoch, BTreeSet<u16>> = HashMap::new();
            let (mut base, mut all, mut last_add) = (None, BTreeSet::new(), None);
            for (at, (adds, whole, complete, skip)) in steps.iter().enumerate() {
                let at = at as Epoch;
                for v in adds {
                    prop_assert_eq!(set.insert(*v), all.insert(*v));
                }
                if !adds.is_empty() {
                    last_add = Some(at);
                }
                let epochs = SnapshotEpochs { base: base.filter(|_| !whole), at };
                let clean = epochs.base.is_some_and(|b| last_add.is_none_or(|e| e <= b));
                let written = if clean && *skip {
                    (epochs.base, Vec::new())
                } else {
                    match set.changes(epochs) {
                        Some(d) => (epochs.base, d.to_vec()),
                        None => (None, set.iter().copied().collect()),
                    }
                };
                stored.insert(at, written);
                truth.insert(at, all.clone());
                if *complete {
                    base = Some(at);
                }
            }
            for (at, expected) in &truth {
                let mut chain = vec![*at];
                while let Some(b) = stored[chain.last().unwrap()].0 {
                    chain.push(b);
                }
                let mut restored = GrowSet::<u16>::default();
                for piece in chain.iter().rev() {
                    restored.extend(&stored[piece].1);
                }
                let got: BTreeSet<u16> = restored.iter().copied().collect();
                prop_assert_eq!(&got, expected, "snapshot {}", at);
            }
            prop_assert!(set.journal.len() <= all.len());
        }
    }

    #[test]
    fn a_set_without_snapshots_keeps_no_journal() {
        let mut set = GrowSet::<u64>::default();
        for v in 0..1000 {
            set.insert(v);
        }
        assert!(set.journal.is_empty());
        assert!(set.changes(SnapshotEpochs { base: None, at: 0 }).is_none());
        set.insert(5000);
        assert_eq!(
            set.changes(SnapshotEpochs {
                base: Some(0),
                at: 1
            }),
            Some(&[5000][..])
        );
    }

    #[test]
    fn encodes_as_its_elements() {
        let mut set = GrowSet::<u64>::default();
        set.changes(SnapshotEpochs { base: None, at: 0 });
        set.insert(3);
        let bytes = postcard::to_allocvec(&set).unwrap();
        let back: GrowSet<u64> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), vec![&3]);
        assert!(back.journal.is_empty() && back.marks.is_empty());
    }
}
