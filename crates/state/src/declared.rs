//! State the runtime owns: an operator declares its state as typed tables, and the runtime
//! snapshots, restores, redistributes by key group and makes incremental what it declared.
//!
//! An operator that wrote its own snapshot bytes kept state nothing else could see: each one
//! chose when a snapshot may be a delta, sized its buffers, wrote its watermark and read
//! the pieces of a rescaled restore its own way. Here an operator only says what its state
//! is ([`DeclaredState`]: its [`StateTable`]s by name, and the watermark it keeps, as
//! Arroyo's `tables()`); the rules are written once:
//!
//! * a checkpoint of the operator is a delta for all of its tables or for none
//!   ([`incremental::delta_possible`] over every table's [`ChangeSummary`]);
//! * the tables are written one after the other into one buffer sized from the operator's
//!   last snapshot ([`SnapshotBuffer`], which the runtime keeps per operator), each with the
//!   operator's watermark in its header;
//! * a restore hands each table its piece of every old subtask's snapshot, with the key
//!   groups the subtask owns now ([`Redistribution::ByKeyGroup`]) or all of it
//!   ([`Redistribution::Union`], operator state such as a sink's transactions), and restores
//!   the watermark as the minimum over the old subtasks ([`OperatorWatermark`]).
//!
//! This is the seam the disk tier plugs into ([`crate::disk_tier`]): with a budget for state,
//! the runtime hands the tier to every declared table ([`DeclaredState::use_disk_tier`]) and a
//! keyed table moves its cold entries there; no operator changes.

use crate::disk_tier::{ColdPart, TierUse};
use std::ops::Range;

use crate::error::{HummerError, Result};
use crate::snapshot::incremental::{self, ChangeSummary};
use crate::snapshot::{OperatorWatermark, SnapshotBuffer, TableSnapshot, is_snapshot};
use crate::types::{CheckpointId, MIN_WATERMARK, Timestamp};

/// How a restored subtask takes a table's pieces of the old subtasks' snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redistribution {
    /// Keyed state: the entries of the key groups the subtask owns now, whichever old
    /// subtask held them (so a job may restart at another parallelism).
    ByKeyGroup,
    /// Operator state that belongs to no key: every restored subtask sees every old
    /// subtask's piece (Flink's union redistribution).
    Union,
}

/// What a table is told when it is written into a snapshot.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotAt {
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// Key groups of the job: an entry is tagged with the key group of its key.
    pub max_parallelism: usize,
    /// The operator's watermark, written in the table's header.
    pub watermark: Timestamp,
    /// Whether this snapshot is a delta on the table's last completed one (decided for all
    /// of the operator's tables at once, only if every one of them allowed it).
    pub delta: bool,
}

/// One old subtask's piece of a table, as a restore hands it to the table.
#[derive(Debug, Clone)]
pub struct TablePiece<'a> {
    /// The verified table: whole, or a delta on what the earlier pieces of the same old
    /// subtask restored.
    pub table: TableSnapshot<'a>,
    /// The key groups to load (every one for a [`Redistribution::Union`] table).
    pub key_groups: Range<usize>,
    /// Names the piece in errors.
    pub what: String,
}

/// One table of an operator's state, as the runtime manages it.
pub trait StateTable {
    /// What decides whether the next snapshot may be a delta (`None`: the table keeps no
    /// change log and is always written whole, which makes the operator's snapshot whole).
    fn change_summary(&mut self) -> Option<ChangeSummary>;
    /// A guess at the length of a whole snapshot, for sizing the operator's first buffer.
    fn estimated_snapshot_bytes(&self) -> usize {
        0
    }
    /// Appends the table (one snapshot table of the format of [`crate::snapshot`]) to `out`;
    /// returns the part of it that is on disk, if any, to be written after the barrier.
    fn append_snapshot(&mut self, out: &mut Vec<u8>, at: &SnapshotAt) -> Result<Option<ColdPart>>;
    /// Loads the entries of the piece's key groups from one old subtask's piece.
    fn restore(&mut self, piece: &TablePiece<'_>) -> Result<()>;
    /// Loads the entries of the piece's key groups from the part of one old subtask's
    /// snapshot that was on disk (after [`StateTable::restore`] of the same snapshot). A
    /// table that never moves entries to disk has none.
    fn restore_cold(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        Err(HummerError::BadInput {
            input: piece.what.clone(),
            reason: "entries from disk for a table that keeps none there".into(),
        })
    }
    /// Checkpoint `id` completed everywhere: a later delta may build on it.
    fn checkpoint_complete(&mut self, id: CheckpointId) {
        let _ = id;
    }
    /// How a restore deals its pieces out.
    fn redistribution(&self) -> Redistribution {
        Redistribution::ByKeyGroup
    }
    /// The job has a budget for state: the table may move cold entries to `tier` (by
    /// default it keeps them all in memory). Called before any restore.
    fn use_disk_tier(&mut self, tier: &TierUse) {
        let _ = tier;
    }
}

impl<T: StateTable + ?Sized> StateTable for &mut T {
    fn change_summary(&mut self) -> Option<ChangeSummary> {
        (**self).change_summary()
    }
    fn estimated_snapshot_bytes(&self) -> usize {
        (**self).estimated_snapshot_bytes()
    }
    fn append_snapshot(&mut self, out: &mut Vec<u8>, at: &SnapshotAt) -> Result<Option<ColdPart>> {
        (**self).append_snapshot(out, at)
    }
    fn restore(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        (**self).restore(piece)
    }
    fn restore_cold(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        (**self).restore_cold(piece)
    }
    fn checkpoint_complete(&mut self, id: CheckpointId) {
        (**self).checkpoint_complete(id)
    }
    fn redistribution(&self) -> Redistribution {
        (**self).redistribution()
    }
    fn use_disk_tier(&mut self, tier: &TierUse) {
        (**self).use_disk_tier(tier)
    }
}

/// An operator's snapshot as taken at the barrier: its bytes, and the parts of its tables
/// that were on disk, still to be written after them.
#[derive(Debug)]
pub struct OperatorSnapshot {
    /// The snapshot of what was in memory.
    pub bytes: Vec<u8>,
    /// The parts on disk (see [`ColdPart`]).
    pub cold_parts: Vec<ColdPart>,
}

impl OperatorSnapshot {
    /// The whole snapshot, its parts on disk written now, after its bytes.
    pub fn into_bytes(self) -> Result<Vec<u8>> {
        let OperatorSnapshot {
            mut bytes,
            cold_parts,
        } = self;
        for part in cold_parts {
            part.write(&mut bytes)?;
        }
        Ok(bytes)
    }
}

/// The state an operator declares: its tables by name, in a fixed order, and the watermark
/// it keeps (if it keeps one). Made afresh at every snapshot, restore and completed
/// checkpoint from borrows of the operator's fields, so the hot path reaches its tables
/// directly.
///
/// ```
/// use hummer::state::declared::DeclaredState;
/// use hummer::state::keyed_table::KeyedTable;
/// use hummer::state::snapshot::SnapshotBuffer;
///
/// let mut counts = KeyedTable::<String, u64>::default();
/// counts.insert("a".into(), 3);
/// let mut buffer = SnapshotBuffer::default();
/// let bytes = DeclaredState::new().table("counts", &mut counts)
///     .snapshot(1, 128, &mut buffer).unwrap().unwrap();
///
/// let mut restored = KeyedTable::<String, u64>::default();
/// DeclaredState::new().table("counts", &mut restored)
///     .restore(&bytes, 0..128, "counts of subtask 0").unwrap();
/// assert_eq!(restored.get(&"a".to_string()), Some(&3));
/// ```
#[derive(Default)]
pub struct DeclaredState<'a> {
    tables: Vec<(&'static str, Box<dyn StateTable + 'a>)>,
    watermark: Option<&'a mut OperatorWatermark>,
}

impl<'a> DeclaredState<'a> {
    /// No state (an operator that keeps none declares this).
    pub fn new() -> Self {
        DeclaredState::default()
    }

    /// Adds a table named `name` (names appear in errors; the order of the tables is the
    /// order of their pieces in a snapshot, so it must stay the same across builds).
    pub fn table(mut self, name: &'static str, table: impl StateTable + 'a) -> Self {
        self.tables.push((name, Box::new(table)));
        self
    }

    /// The operator's watermark, checkpointed with its tables.
    pub fn watermark(mut self, watermark: &'a mut OperatorWatermark) -> Self {
        self.watermark = Some(watermark);
        self
    }

    /// Lets every declared table move cold entries to `tier` (see
    /// [`StateTable::use_disk_tier`]).
    pub fn use_disk_tier(mut self, tier: &TierUse) {
        for (_, table) in &mut self.tables {
            table.use_disk_tier(tier);
        }
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.watermark.is_none()
    }

    /// The snapshot of the declared state for `checkpoint` (`None` if nothing is declared),
    /// written into a buffer sized by `buffer`: a delta of every table, or every table whole.
    pub fn snapshot(
        self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
        buffer: &mut SnapshotBuffer,
    ) -> Result<Option<Vec<u8>>> {
        self.snapshot_deferring(checkpoint, max_parallelism, buffer)?
            .map(OperatorSnapshot::into_bytes)
            .transpose()
    }

    /// [`DeclaredState::snapshot`] with the parts of the tables that are on disk left to be
    /// written later ([`ColdPart::write`]), after the barrier: the task goes on meanwhile.
    pub fn snapshot_deferring(
        mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
        buffer: &mut SnapshotBuffer,
    ) -> Result<Option<OperatorSnapshot>> {
        if self.is_empty() {
            return Ok(None);
        }
        let summaries: Option<Vec<ChangeSummary>> = (self.tables.iter_mut())
            .map(|(_, t)| t.change_summary())
            .collect();
        let at = SnapshotAt {
            checkpoint,
            max_parallelism,
            watermark: self.watermark.as_ref().map_or(MIN_WATERMARK, |w| w.get()),
            delta: summaries.is_some_and(|s| incremental::delta_possible(&s)),
        };
        let tables = &mut self.tables;
        let estimate = buffer.guess_if_first(at.delta, || {
            tables
                .iter()
                .map(|(_, t)| t.estimated_snapshot_bytes())
                .sum()
        });
        let mut cold_parts = Vec::new();
        let bytes = buffer.write_for(at.delta, estimate, |out| {
            if tables.is_empty() {
                // A watermark alone: an empty table carries it.
                return crate::snapshot::append_snapshot(
                    out,
                    std::iter::empty::<(&(), &())>(),
                    max_parallelism,
                    at.watermark,
                );
            }
            for (i, (_, t)) in tables.iter_mut().enumerate() {
                if let Some(mut part) = t.append_snapshot(out, &at)? {
                    part.table = i as u32;
                    cold_parts.push(part);
                }
            }
            Ok(())
        })?;
        Ok(Some(OperatorSnapshot { bytes, cold_parts }))
    }

    /// Loads one old subtask's snapshot: each table its piece (the entries of `key_groups`,
    /// or all of a [`Redistribution::Union`] table's), and the watermark. `what` names the
    /// snapshot in errors; a snapshot with a bad piece is refused before any table loads.
    /// (Earlier builds wrote a postcard tuple of the watermark, if kept, and each table's
    /// bytes; that is read too.)
    pub fn restore(&mut self, snapshot: &[u8], key_groups: Range<usize>, what: &str) -> Result<()> {
        if !is_snapshot(snapshot) {
            return self.restore_tuple(snapshot, key_groups, what);
        }
        // The tables, then the parts on disk, each with the index of its table.
        let (mut pieces, mut cold) = (Vec::new(), Vec::new());
        for piece in crate::snapshot::read_snapshots(snapshot, what)? {
            match piece.cold_part_of() {
                Some(table) => cold.push((table, piece)),
                None => pieces.push(piece),
            }
        }
        let declared = self.tables.len().max(1);
        let misplaced = cold.iter().any(|(table, _)| *table >= self.tables.len());
        if pieces.len() != declared || misplaced {
            return Err(HummerError::BadInput {
                input: what.to_string(),
                reason: format!(
                    "it holds {} tables where the operator declares {declared} (and {} parts \
                     on disk, of tables {:?})",
                    pieces.len(),
                    cold.len(),
                    cold.iter().map(|(table, _)| table).collect::<Vec<_>>()
                ),
            });
        }
        let key_groups_of = |table: &dyn StateTable| match table.redistribution() {
            Redistribution::ByKeyGroup => key_groups.clone(),
            Redistribution::Union => 0..usize::MAX,
        };
        let piece_of = |table: &dyn StateTable, piece, name: &str| TablePiece {
            table: piece,
            key_groups: key_groups_of(table),
            what: format!("{what}, table '{name}'"),
        };
        for ((name, table), piece) in self.tables.iter_mut().zip(&pieces) {
            table.restore(&piece_of(&**table, *piece, name))?;
        }
        // After the tables: a key on disk at the barrier was not in memory, so its entry
        // here replaces what the tables' chain held for it.
        for (i, piece) in cold {
            let (name, table) = &mut self.tables[i];
            table.restore_cold(&piece_of(&**table, piece, name))?;
        }
        if let Some(w) = self.watermark.as_mut() {
            w.restore_piece(pieces[0].watermark, pieces[0].is_delta());
        }
        Ok(())
    }

    /// Reads the tuple earlier builds wrote: the watermark (if the operator keeps one), then
    /// each table's bytes.
    fn restore_tuple(&mut self, bytes: &[u8], key_groups: Range<usize>, what: &str) -> Result<()> {
        let undecodable = |e: postcard::Error| HummerError::BadInput {
            input: what.to_string(),
            reason: format!("neither a snapshot nor the tuple of an earlier build: {e}"),
        };
        let mut rest = bytes;
        let mut watermark = None;
        if self.watermark.is_some() {
            let (w, tail): (Timestamp, &[u8]) =
                postcard::take_from_bytes(rest).map_err(undecodable)?;
            (watermark, rest) = (Some(w), tail);
        }
        let mut pieces = Vec::with_capacity(self.tables.len());
        for _ in &self.tables {
            let (piece, tail): (Vec<u8>, &[u8]) =
                postcard::take_from_bytes(rest).map_err(undecodable)?;
            pieces.push(piece);
            rest = tail;
        }
        for ((name, table), piece) in self.tables.iter_mut().zip(&pieces) {
            let what = format!("{what}, table '{name}'");
            let [piece] = crate::snapshot::read_tables(piece, &what)?;
            table.restore(&TablePiece {
                table: piece,
                key_groups: key_groups.clone(),
                what,
            })?;
        }
        if let (Some(w), Some(t)) = (self.watermark.as_mut(), watermark) {
            w.restore(t);
        }
        Ok(())
    }

    /// Checkpoint `id` completed everywhere: every table may build its next delta on it.
    pub fn checkpoint_complete(mut self, id: CheckpointId) {
        for (_, table) in &mut self.tables {
            table.checkpoint_complete(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;

    use super::*;
    use crate::UnionList;
    use crate::key_groups::{key_group_of_hash, key_groups_of_subtask, key_hash, subtask_of_key};
    use crate::keyed_table::KeyedTable;
    use crate::snapshot::delta_base;

    const MAX: usize = 128;

    /// An operator's state: two keyed tables and its watermark.
    #[derive(Default)]
    struct Two {
        counts: KeyedTable<u16, u64>,
        names: KeyedTable<u16, String>,
        watermark: OperatorWatermark,
    }

    impl Two {
        fn state(&mut self) -> DeclaredState<'_> {
            DeclaredState::new()
                .table("counts", &mut self.counts)
                .table("names", &mut self.names)
                .watermark(&mut self.watermark)
        }

        fn contents(&self) -> (BTreeMap<u16, u64>, BTreeMap<u16, String>) {
            let counts = self.counts.iter().map(|(k, v)| (*k, *v)).collect();
            let names = self.names.iter().map(|(k, v)| (*k, v.clone())).collect();
            (counts, names)
        }
    }

    /// One change to an old subtask's state: a count added to (0: removed), a name set
    /// (empty: removed).
    fn change() -> impl Strategy<Value = (u16, u64, String)> {
        (0u16..200, 0u64..4, "[a-c]{0,2}")
    }

    proptest! {
        /// Two subtasks take checkpoints (whole or deltas, some completed, some not); from
        /// any of them, three subtasks restore exactly the entries of the key groups each
        /// owns now, and the smallest watermark of the old ones.
        #[test]
        fn declared_tables_restore_at_another_parallelism(
            rounds in proptest::collection::vec(
                (proptest::collection::vec(change(), 0..40), 0i64..100, any::<bool>()),
                1..8,
            ),
            pick in any::<prop::sample::Index>(),
        ) {
            let mut old = [Two::default(), Two::default()];
            // Per checkpoint: each old subtask's snapshot, and the reference state.
            let mut stored: HashMap<u64, [Vec<u8>; 2]> = HashMap::new();
            let mut reference = Vec::new();
            let (mut counts, mut names) = (BTreeMap::new(), BTreeMap::new());
            let mut watermarks = [MIN_WATERMARK; 2];
            let mut buffers = [SnapshotBuffer::default(), SnapshotBuffer::default()];
            for (round, (changes, step, complete)) in rounds.iter().enumerate() {
                for (key, add, name) in changes {
                    let s = &mut old[subtask_of_key(key, MAX, 2)];
                    if *add == 0 {
                        s.counts.remove(key);
                        counts.remove(key);
                    } else {
                        *s.counts.upsert(*key, || 0) += add;
                        *counts.entry(*key).or_insert(0) += add;
                    }
                    if name.is_empty() {
                        s.names.remove(key);
                        names.remove(key);
                    } else {
                        s.names.insert(*key, name.clone());
                        names.insert(*key, name.clone());
                    }
                }
                let id = round as u64 + 1;
                let mut pieces = [Vec::new(), Vec::new()];
                for (i, s) in old.iter_mut().enumerate() {
                    watermarks[i] += step * (i as i64 + 1);
                    s.watermark.advance(watermarks[i]);
                    pieces[i] = s.state().snapshot(id, MAX, &mut buffers[i]).unwrap().unwrap();
                    if *complete {
                        s.state().checkpoint_complete(id);
                    }
                }
                stored.insert(id, pieces);
                reference.push((counts.clone(), names.clone(), watermarks[0].min(watermarks[1])));
            }
            let at = pick.index(rounds.len());
            let id = at as u64 + 1;
            let (counts, names, watermark) = &reference[at];
            for new in 0..3 {
                let groups = key_groups_of_subtask(new, MAX, 3);
                let mut restored = Two::default();
                for old in [0, 1] {
                    let piece_of = |id: u64| &stored[&id][old];
                    let mut chain = vec![piece_of(id)];
                    while let Some(base) = delta_base(chain[chain.len() - 1]) {
                        chain.push(piece_of(base));
                    }
                    for piece in chain.iter().rev() {
                        restored.state().restore(piece, groups.clone(), "piece").unwrap();
                    }
                }
                let owned = |k: &u16| groups.contains(&key_group_of_hash(key_hash(k), MAX));
                let want_counts = counts.iter().filter(|(k, _)| owned(k));
                let want_names = names.iter().filter(|(k, _)| owned(k));
                prop_assert_eq!(
                    restored.contents(),
                    (
                        want_counts.map(|(k, v)| (*k, *v)).collect(),
                        want_names.map(|(k, v)| (*k, v.clone())).collect(),
                    ),
                    "subtask {} of 3 from checkpoint {}", new, id
                );
                prop_assert_eq!(restored.watermark.get(), *watermark);
            }
        }
    }

    /// After a completed checkpoint, a few changes make the next snapshot a delta of both
    /// tables, much smaller than whole state; a table that keeps no change log makes every
    /// snapshot whole.
    #[test]
    fn a_snapshot_is_a_delta_of_every_table_or_of_none() {
        let mut two = Two::default();
        for k in 0..1000 {
            two.counts.insert(k, 1);
            two.names.insert(k, format!("name {k}"));
        }
        let mut buffer = SnapshotBuffer::default();
        let full = two.state().snapshot(1, MAX, &mut buffer).unwrap().unwrap();
        two.state().checkpoint_complete(1);
        two.counts.insert(7, 2);
        let delta = two.state().snapshot(2, MAX, &mut buffer).unwrap().unwrap();
        assert_eq!(delta_base(&delta), Some(1));
        assert!(
            delta.len() * 50 < full.len(),
            "{} beside {}",
            delta.len(),
            full.len()
        );

        let mut offsets = UnionList::from(vec![1u32]);
        let mut with_list = |id| {
            DeclaredState::new()
                .table("counts", &mut two.counts)
                .table("offsets", &mut offsets)
                .snapshot(id, MAX, &mut buffer)
                .unwrap()
                .unwrap()
        };
        let whole = with_list(3);
        assert_eq!(delta_base(&whole), None, "the list keeps no change log");
    }

    /// Operator state (a union list) reaches every restored subtask whole, beside keyed
    /// state that is split by key group.
    #[test]
    fn a_union_table_reaches_every_subtask_whole() {
        let snapshot = |subtask: usize| {
            let mut counts = KeyedTable::<u16, u64>::default();
            for k in (0..100).filter(|k| subtask_of_key(k, MAX, 2) == subtask) {
                counts.insert(k, 1);
            }
            let mut offsets = UnionList::from(vec![subtask as u32 * 10, subtask as u32 * 10 + 1]);
            DeclaredState::new()
                .table("counts", &mut counts)
                .table("offsets", &mut offsets)
                .snapshot(1, MAX, &mut SnapshotBuffer::default())
                .unwrap()
                .unwrap()
        };
        let pieces = [snapshot(0), snapshot(1)];
        let mut keys = 0;
        for new in 0..3 {
            let mut counts = KeyedTable::<u16, u64>::default();
            let mut offsets = UnionList::<u32>::default();
            let mut state = DeclaredState::new()
                .table("counts", &mut counts)
                .table("offsets", &mut offsets);
            for piece in &pieces {
                state
                    .restore(piece, key_groups_of_subtask(new, MAX, 3), "piece")
                    .unwrap();
            }
            drop(state);
            keys += counts.len();
            assert_eq!(offsets.items(), &[0, 1, 10, 11], "subtask {new}");
        }
        assert_eq!(keys, 100, "every key restored once");
    }

    /// A snapshot whose tables do not match the declaration is refused, naming it, and
    /// loads nothing.
    #[test]
    fn a_snapshot_of_other_tables_is_refused_by_name() {
        let mut counts = KeyedTable::<u16, u64>::default();
        counts.insert(1, 1);
        let one = DeclaredState::new()
            .table("counts", &mut counts)
            .snapshot(1, MAX, &mut SnapshotBuffer::default())
            .unwrap()
            .unwrap();
        let mut two = Two::default();
        let err = two
            .state()
            .restore(&one, 0..MAX, "the window's snapshot")
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("the window's snapshot"), "{text}");
        assert!(
            text.contains("1 tables where the operator declares 2"),
            "{text}"
        );
        assert!(two.counts.is_empty());
    }
}
