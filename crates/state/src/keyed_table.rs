//! A per-subtask table from key to state, folded a batch at a time.
//!
//! Keyed operators look up the state of every record's key. [`KeyedTable::fold_batch`] runs
//! the whole batch through one tight loop (extract key, hash, probe, update) over a
//! `hashbrown` table that stores key and state side by side, so a lookup touches one slot.
//! (A two-pass variant that hashed the whole batch before probing was measured slower: the
//! extra pass over a key buffer cost more than the overlap of probes it bought.)
//!
//! The table also knows which entries changed since a checkpoint, so that a checkpoint can
//! write only those ([`KeyedTable::snapshot_for`], incremental checkpoints): every slot carries
//! the *epoch* of its last change, and the epoch moves on at every snapshot. An entry changed
//! after snapshot C has an epoch above the one C was taken in. Marking is one store into the
//! slot the update touches anyway. Values change only through the table's own calls
//! ([`KeyedTable::fold_batch`], [`KeyedTable::insert`], [`KeyedTable::get_mut`],
//! [`KeyedTable::upsert`]), so no change goes unmarked; a removed key is remembered with its
//! epoch (a tombstone) for as long as a delta may need to say it is gone.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::disk_tier::{Cold, changed_in, is_unused, or_fail};

/// State per key, held by one subtask of a keyed operator.
pub struct KeyedTable<K, V> {
    /// Key, state and the epoch of the state's last change.
    slots: Slots<(K, V, Epoch)>,
    /// What changed since the last checkpoints, for incremental snapshots.
    pub changes: ChangeLog,
    /// Keys removed, with the epoch they were removed in, while a delta may need them.
    pub(crate) tombstones: Vec<(K, Epoch)>,
    /// The entries moved to disk, with a budget for state (see [`crate::disk_tier`]).
    pub(crate) cold: Option<Box<Cold<K, V>>>,
}

/// A table from key to value without change tracking, for state that never reaches a
/// snapshot: a combiner's, emptied downstream before the input ends. Its slots are key and
/// value only (no epoch), and its fold does no marking: the batch WordCount combiner folds
/// every word of the input through it.
pub struct ScratchTable<K, V> {
    slots: Slots<(K, V)>,
}

impl<K, V> Default for ScratchTable<K, V> {
    fn default() -> Self {
        ScratchTable {
            slots: Slots::default(),
        }
    }
}

impl<K: Hash + Eq, V> ScratchTable<K, V> {
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.slots.table.len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.slots.table.is_empty()
    }

    /// Folds a batch in one loop, as [`KeyedTable::fold_batch`]: `step` gets the record's
    /// value if its key has one (and updates it), else returns the new value, if any.
    #[inline]
    pub fn fold_batch<T>(
        &mut self,
        batch: &mut Vec<T>,
        key_of: impl Fn(&T) -> K,
        mut step: impl FnMut(Option<&mut V>, T) -> Option<V>,
    ) {
        self.slots.fold(
            batch,
            key_of,
            |(k, _)| k,
            |slot, record| match slot {
                Ok((_, v)) => {
                    step(Some(v), record);
                    None
                }
                Err(key) => step(None, record).map(|v| (key, v)),
            },
        );
    }

    /// Takes every entry out.
    pub fn drain(&mut self) -> impl Iterator<Item = (K, V)> + '_ {
        self.slots.table.drain()
    }
}

/// The slots of a table (key and value, and whatever else a table keeps per key) with the
/// hasher that places them: what both tables are built on.
struct Slots<S> {
    table: HashTable<S>,
    hasher: foldhash::fast::RandomState,
}

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Slots {
            table: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl<S> Slots<S> {
    /// The hash of `key`, as the slots are placed by.
    #[inline(always)]
    fn hash<K: Hash>(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The one loop of every batch fold: per record its key, hash and probe, then `visit` with
    /// the key's slot (`Ok`) or, for a new key, the key itself (`Err`); a slot `visit` returns
    /// for a new key is inserted.
    #[inline(always)]
    fn fold<K: Hash + Eq, T>(
        &mut self,
        batch: &mut Vec<T>,
        key_of: impl Fn(&T) -> K,
        slot_key: impl Fn(&S) -> &K,
        mut visit: impl FnMut(Result<&mut S, K>, T) -> Option<S>,
    ) {
        let Slots { table, hasher } = self;
        for record in batch.drain(..) {
            let key = key_of(&record);
            let hash = hasher.hash_one(&key);
            match table.find_mut(hash, |slot| *slot_key(slot) == key) {
                Some(slot) => {
                    visit(Ok(slot), record);
                }
                None => {
                    if let Some(slot) = visit(Err(key), record) {
                        table.insert_unique(hash, slot, |s| hasher.hash_one(slot_key(s)));
                    }
                }
            }
        }
    }
}

/// A snapshot counter: the epoch in force at a snapshot, and that of a slot's last change.
pub type Epoch = u32;

/// Which snapshot is being taken and which one it is a delta on, for state that writes its
/// own changes within a value (a [`GrowSet`](crate::GrowSet), an accumulator through
/// [`AggregateFunction::write_acc_changes`](crate::operators::window::AggregateFunction)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotEpochs {
    /// The snapshot a delta builds on; `None` for a whole snapshot.
    pub base: Option<Epoch>,
    /// The snapshot being taken.
    pub(crate) at: Epoch,
}

impl SnapshotEpochs {
    /// Whether the snapshot is whole (a value must then be written whole).
    pub fn is_whole(&self) -> bool {
        self.base.is_none()
    }
}

/// Marks a slot (its epoch `slot`) changed in `epoch`; 1 if this is its first change in it.
#[inline(always)]
fn mark(slot: &mut Epoch, epoch: Epoch) -> u64 {
    let first = changed_in(*slot) != epoch;
    *slot = epoch;
    u64::from(first)
}

/// Which snapshots a table took and which one a delta may build on.
#[derive(Debug, Default)]
pub struct ChangeLog {
    /// The epoch changes are marked with now.
    pub epoch: Epoch,
    /// Entries first changed in the current epoch (an entry counts once per epoch).
    touched: u64,
    /// Of those, entries a delta must write whole, where the table's owner counts them
    /// apart ([`ChangeLog::rewritten`]): an operator whose values write their own changes.
    rewritten: u64,
    /// Snapshots taken since the base, oldest first.
    taken: std::collections::VecDeque<Taken>,
    /// The newest completed snapshot this table took, if it may serve as a delta's base.
    pub(crate) base: Option<Taken>,
}

/// One snapshot a table took.
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    /// Its checkpoint.
    pub(crate) checkpoint: crate::types::CheckpointId,
    /// The epoch in force when it was taken: entries changed after it have a greater one.
    pub(crate) epoch: Epoch,
    /// Entries changed in its epoch (at most, counted once per epoch each).
    touched: u64,
    /// Entries its delta wrote whole, where counted.
    pub rewritten: u64,
    /// Deltas between it and the last full snapshot (0: it was full).
    pub(crate) chain: u32,
}

impl ChangeLog {
    /// Records that a snapshot of `checkpoint` was taken (`chain` deltas on a full one) and
    /// starts a new epoch.
    pub(crate) fn taken(&mut self, checkpoint: crate::types::CheckpointId, chain: u32) {
        self.taken.push_back(Taken {
            checkpoint,
            epoch: self.epoch,
            touched: self.touched,
            rewritten: self.rewritten,
            chain,
        });
        self.epoch = changed_in(self.epoch.wrapping_add(1));
        self.touched = 0;
        self.rewritten = 0;
    }

    /// Counts `n` entries changed in the current epoch that a delta must write whole (the
    /// rest of the changed entries it writes as small patches).
    pub fn rewritten(&mut self, n: u64) {
        self.rewritten += n;
    }

    /// At most how many entries a delta would write whole since the base, as counted by
    /// [`ChangeLog::rewritten`].
    pub fn rewritten_since_base(&self) -> u64 {
        self.taken.iter().map(|t| t.rewritten).sum::<u64>() + self.rewritten
    }

    /// Checkpoint `id` completed: the newest snapshot at or before it becomes the base.
    pub(crate) fn completed(&mut self, id: crate::types::CheckpointId) {
        while let Some(t) = self.taken.front().copied() {
            if t.checkpoint > id {
                break;
            }
            self.taken.pop_front();
            self.base = Some(t);
        }
    }

    /// Marks a slot (its epoch `slot`) changed in the current epoch.
    #[inline(always)]
    fn mark(&mut self, slot: &mut Epoch) {
        self.touched += mark(slot, self.epoch);
    }

    /// Notes an entry created now; returns the epoch to mark it with.
    fn created(&mut self) -> Epoch {
        self.touched += 1;
        self.epoch
    }

    /// Notes that `key` was removed now: a delta writes its removal (while changes are
    /// tracked at all).
    fn removed<K>(&mut self, tombstones: &mut Vec<(K, Epoch)>, key: K) {
        if self.tracking() {
            tombstones.push((key, self.epoch));
            self.touched += 1;
        }
    }

    /// Forgets every snapshot: the next one is full (after a restore or a drain).
    pub(crate) fn reset(&mut self) {
        self.taken.clear();
        self.base = None;
    }

    /// At most how many entries changed since the base (entries counted once per epoch).
    pub fn changed_since_base(&self) -> u64 {
        self.taken.iter().map(|t| t.touched).sum::<u64>() + self.touched
    }

    /// Snapshots taken since the base that have not completed (failed or still in flight).
    pub(crate) fn pending(&self) -> usize {
        self.taken.len()
    }

    /// Whether a later delta may build on a snapshot taken before now (so removals must be
    /// remembered).
    pub(crate) fn tracking(&self) -> bool {
        self.base.is_some() || !self.taken.is_empty()
    }
}

impl<K: Hash + Eq, V> Default for KeyedTable<K, V> {
    fn default() -> Self {
        KeyedTable {
            slots: Slots::default(),
            changes: ChangeLog::default(),
            tombstones: Vec::new(),
            cold: None,
        }
    }
}

impl<K: Hash + Eq, V> KeyedTable<K, V> {
    /// Number of keys with state (in memory and on disk).
    pub fn len(&self) -> usize {
        self.slots.table.len() + self.cold.as_ref().map_or(0, |c| c.len())
    }

    /// True when no key has state.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys whose state is in memory.
    pub fn len_in_memory(&self) -> usize {
        self.slots.table.len()
    }

    /// Moves entries to disk if the table is over its budget (see
    /// [`Cold::spill_count`]); called after the table grew.
    fn relieve(&mut self) {
        let Some(cold) = &mut self.cold else {
            return;
        };
        let hot = self.slots.table.len();
        let count = cold.spill_count(hot);
        if count == 0 {
            cold.report_hot(hot);
            return;
        }
        let Slots { table, hasher } = &mut self.slots;
        let unused = table.iter().filter(|(_, _, e)| is_unused(*e)).count();
        let victims = cold.next_victims(count, hot, unused);
        let victims: Vec<(K, V, Epoch)> = table
            .extract_if(|(k, _, e)| victims.pick(hasher.hash_one(&*k), e))
            .collect();
        or_fail(cold.spill(victims));
        cold.report_hot(self.slots.table.len());
    }

    /// Takes `key`'s entry off the disk, if the table has a disk part and the key is there.
    fn take_from_disk(&mut self, key: &K) -> Option<(V, Epoch)> {
        let cold = self.cold.as_mut()?;
        or_fail(cold.take(key))
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
            slots,
            changes,
            cold,
            ..
        } = self;
        // Counted in a local, kept in a register across the loop.
        let (epoch, mut touched) = (changes.epoch, 0);
        slots.fold(
            batch,
            key_of,
            |(k, _, _)| k,
            |slot, record| match slot {
                Ok((k, v, e)) => {
                    touched += mark(e, epoch);
                    step(k, Some(v), record);
                    None
                }
                Err(key) => match cold.as_mut().and_then(|c| or_fail(c.take(&key))) {
                    Some((mut v, mut e)) => {
                        touched += mark(&mut e, epoch);
                        step(&key, Some(&mut v), record);
                        Some((key, v, e))
                    }
                    None => step(&key, None, record).map(|v| {
                        touched += 1;
                        (key, v, epoch)
                    }),
                },
            },
        );
        changes.touched += touched;
        self.relieve();
    }

    /// Every entry in memory: all of them, unless the table has moved some to disk (see
    /// [`KeyedTable::for_each_entry`]).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.slots.table.iter().map(|(k, v, _)| (k, v))
    }

    /// Shows every entry to `f`, those in memory and those on disk (read back for the call,
    /// and left there).
    pub fn for_each_entry(&self, mut f: impl FnMut(&K, &V)) {
        for (k, v, _) in self.slots.table.iter() {
            f(k, v);
        }
        if let Some(cold) = &self.cold {
            for entry in cold.entries() {
                let (k, v, _) = or_fail(entry);
                f(&k, &v);
            }
        }
    }

    /// Every entry with the epoch of its last change, its state open to a snapshot that
    /// records what it took (not a change: nothing is marked).
    pub(crate) fn slots_for_snapshot(&mut self) -> impl Iterator<Item = (&K, &mut V, Epoch)> + '_ {
        self.slots
            .table
            .iter_mut()
            .map(|(k, v, e)| (&*k, v, changed_in(*e)))
    }

    /// The slot of `key`: an existing one is marked changed; a vacant one is counted as a
    /// change, to be filled by the caller with the epoch returned.
    fn marked_entry(&mut self, key: &K) -> (Entry<'_, (K, V, Epoch)>, Epoch) {
        let KeyedTable {
            slots: Slots { table, hasher },
            changes,
            ..
        } = self;
        let hash = hasher.hash_one(key);
        let mut entry = table.entry(hash, |(k, _, _)| k == key, |(k, _, _)| hasher.hash_one(k));
        match &mut entry {
            Entry::Occupied(e) => changes.mark(&mut e.get_mut().2),
            Entry::Vacant(_) => {
                changes.created();
            }
        }
        (entry, changes.epoch)
    }

    /// Makes sure `key`'s entry is in memory if the table has one: with a disk part, it is
    /// read back from disk (if there), after making room. Without one, nothing.
    #[inline]
    fn load(&mut self, key: &K)
    where
        K: Clone,
    {
        if self.cold.is_some() {
            self.load_from_disk(key);
        }
    }

    /// [`KeyedTable::load`] with a disk part.
    #[cold]
    fn load_from_disk(&mut self, key: &K)
    where
        K: Clone,
    {
        let hash = self.slots.hash(key);
        if let Some((_, _, e)) = self.slots.table.find_mut(hash, |(k, _, _)| k == key) {
            // A read is a use, as a change is.
            *e = changed_in(*e);
            return;
        }
        self.relieve();
        if let Some((v, epoch)) = self.take_from_disk(key) {
            let Slots { table, hasher } = &mut self.slots;
            let hash = hasher.hash_one(key);
            table.insert_unique(hash, (key.clone(), v, epoch), |(k, _, _)| {
                hasher.hash_one(k)
            });
            let hot = table.len();
            if let Some(cold) = &mut self.cold {
                cold.report_hot(hot);
            }
        }
    }

    fn get_in_memory(&self, key: &K) -> Option<&V> {
        let hash = self.slots.hash(key);
        self.slots
            .table
            .find(hash, |(k, _, _)| k == key)
            .map(|(_, v, _)| v)
    }

    /// Sets the state of a key (replacing what it had).
    pub fn insert(&mut self, key: K, value: V)
    where
        K: Clone,
    {
        self.load(&key);
        match self.marked_entry(&key) {
            (Entry::Occupied(e), _) => e.into_mut().1 = value,
            (Entry::Vacant(e), epoch) => {
                e.insert((key, value, epoch));
            }
        }
    }

    /// The state of `key` (read back from disk if it was moved there).
    pub fn get(&mut self, key: &K) -> Option<&V>
    where
        K: Clone,
    {
        self.load(key);
        self.get_in_memory(key)
    }

    /// The state of `key`, to change.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V>
    where
        K: Clone,
    {
        self.load(key);
        let hash = self.slots.hash(key);
        let (_, v, e) = self.slots.table.find_mut(hash, |(k, _, _)| k == key)?;
        self.changes.mark(e);
        Some(v)
    }

    /// The state of `key` to change, made by `make` if the key has none.
    pub fn upsert(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V
    where
        K: Clone,
    {
        self.load(&key);
        match self.marked_entry(&key) {
            (Entry::Occupied(e), _) => &mut e.into_mut().1,
            (Entry::Vacant(e), epoch) => &mut e.insert((key, make(), epoch)).into_mut().1,
        }
    }

    /// Runs `f` on the state of `key` as an `Option` it may fill, change or clear (Flink's
    /// `ValueState`), in one probe: a value left is the key's state, `None` removes it.
    pub fn update<R>(&mut self, key: K, f: impl FnOnce(&K, &mut Option<V>) -> R) -> R
    where
        K: Clone,
    {
        self.load(&key);
        let KeyedTable {
            slots: Slots { table, hasher },
            changes,
            tombstones,
            ..
        } = self;
        let hash = hasher.hash_one(&key);
        match table.entry(hash, |(k, _, _)| *k == key, |(k, _, _)| hasher.hash_one(k)) {
            Entry::Occupied(e) => {
                let ((k, v, mut epoch), vacant) = e.remove();
                let mut slot = Some(v);
                let r = f(&k, &mut slot);
                match slot {
                    Some(v) => {
                        changes.mark(&mut epoch);
                        vacant.insert((k, v, epoch));
                    }
                    None => changes.removed(tombstones, k),
                }
                r
            }
            Entry::Vacant(vacant) => {
                let mut slot = None;
                let r = f(&key, &mut slot);
                if let Some(v) = slot {
                    vacant.insert((key, v, changes.created()));
                }
                r
            }
        }
    }

    /// Removes the state of `key` and returns it.
    pub fn remove(&mut self, key: &K) -> Option<V>
    where
        K: Clone,
    {
        self.load(key);
        let hash = self.slots.hash(key);
        let entry = self
            .slots
            .table
            .find_entry(hash, |(k, _, _)| k == key)
            .ok()?;
        let ((k, v, _), _) = entry.remove();
        self.changes.removed(&mut self.tombstones, k);
        Some(v)
    }

    /// Keys removed after epoch `after` (for a delta on a snapshot taken in it).
    pub(crate) fn removed_after(&self, after: Epoch) -> impl Iterator<Item = &K> + '_ {
        self.tombstones
            .iter()
            .filter(move |(_, e)| *e > after)
            .map(|(k, _)| k)
    }

    /// Runs `f` on every entry, to change it, and keeps those it returns true for (Flink's
    /// `applyToAllKeys`): those in memory in place, those on disk a run at a time, read a
    /// block at a time and written back (see `Cold::rewrite_each`). For work that visits
    /// every key at once, such as firing every window at the end of input: visiting keys on
    /// disk one by one would read the disk in random order and push other keys out, to be
    /// read back in turn. Every entry kept counts as changed. The first error of `f` stops
    /// the visit (the entries not yet seen stay as they were) and is returned.
    pub fn retain_each(
        &mut self,
        mut f: impl FnMut(&K, &mut V) -> crate::error::Result<bool>,
    ) -> crate::error::Result<()>
    where
        K: Clone,
    {
        let KeyedTable {
            slots,
            changes,
            tombstones,
            cold,
        } = self;
        let mut failed = None;
        slots.table.retain(|(k, v, e)| {
            if failed.is_some() {
                return true;
            }
            match f(k, v) {
                Ok(true) => {
                    changes.mark(e);
                    true
                }
                Ok(false) => {
                    changes.removed(tombstones, k.clone());
                    false
                }
                Err(error) => {
                    failed = Some(error);
                    true
                }
            }
        });
        if let Some(error) = failed {
            return Err(error);
        }
        if let Some(cold) = cold {
            cold.rewrite_each(changes.epoch, &mut |k, v| {
                let keep = f(k, v)?;
                if keep {
                    changes.touched += 1;
                } else {
                    changes.removed(tombstones, k.clone());
                }
                Ok(keep)
            })?;
            cold.report_hot(slots.table.len());
        }
        Ok(())
    }

    /// Removes and returns every entry (those on disk after those in memory). The next
    /// snapshot is a full one.
    pub fn drain(&mut self) -> impl Iterator<Item = (K, V)> + '_ {
        self.changes.reset();
        self.tombstones.clear();
        let cold = self.cold.as_mut().map(|c| {
            c.report_hot(0);
            c.drain()
        });
        let hot = self.slots.table.drain().map(|(k, v, _)| (k, v));
        hot.chain(cold.into_iter().flatten())
    }

    /// Checkpoint `id` completed: a later snapshot may be a delta on the newest snapshot this
    /// table took at or before it. (The runtime calls this through
    /// [`crate::declared::StateTable::checkpoint_complete`].)
    pub fn checkpoint_complete(&mut self, id: crate::types::CheckpointId) {
        self.changes.completed(id);
        // Removals before the base are in it already.
        if let Some(base) = self.changes.base {
            self.tombstones.retain(|(_, e)| *e > base.epoch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Batches of (key, amount) records.
    fn batches() -> impl Strategy<Value = Vec<Vec<(u8, u16)>>> {
        proptest::collection::vec(
            proptest::collection::vec((0u8..40, any::<u16>()), 0..300),
            0..6,
        )
    }

    /// The step of a fold summing the amounts per key.
    fn add(sum: Option<&mut u64>, r: (u8, u16)) -> Option<u64> {
        match sum {
            Some(sum) => {
                *sum += u64::from(r.1);
                None
            }
            None => Some(u64::from(r.1)),
        }
    }

    /// Runs a copy of every batch through `fold` (which must drain it) and returns the sums
    /// per key a `HashMap` gets.
    fn fold_all(
        batches: &[Vec<(u8, u16)>],
        mut fold: impl FnMut(&mut Vec<(u8, u16)>),
    ) -> HashMap<u8, u64> {
        let mut reference: HashMap<u8, u64> = HashMap::new();
        for batch in batches {
            for (k, v) in batch {
                *reference.entry(*k).or_default() += u64::from(*v);
            }
            let mut b = batch.clone();
            fold(&mut b);
            assert!(b.is_empty());
        }
        reference
    }

    proptest! {
        #[test]
        fn folds_like_a_hash_map(batches in batches()) {
            let mut table = KeyedTable::<u8, u64>::default();
            let reference = fold_all(&batches, |b| {
                table.fold_batch(b, |r| r.0, |_, sum, r| add(sum, r))
            });
            prop_assert_eq!(table.len(), reference.len());
            let got: HashMap<u8, u64> = table.drain().collect();
            prop_assert_eq!(got, reference);
        }

        #[test]
        fn a_scratch_table_folds_like_a_hash_map(batches in batches()) {
            let mut table = ScratchTable::<u8, u64>::default();
            let reference = fold_all(&batches, |b| table.fold_batch(b, |r| r.0, add));
            prop_assert_eq!(table.len(), reference.len());
            prop_assert_eq!(table.is_empty(), reference.is_empty());
            let got: HashMap<u8, u64> = table.drain().collect();
            prop_assert_eq!(got, reference);
            prop_assert!(table.is_empty());
        }
    }
}
