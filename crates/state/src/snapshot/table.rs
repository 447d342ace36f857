//! How a [`KeyedTable`] writes itself into snapshots (whole or as a delta on its last completed
//! one) and restores the key groups a subtask owns.

use std::hash::Hash;
use std::ops::Range;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::declared::{SnapshotAt, StateTable, TablePiece};
use crate::disk_tier::{Cold, ColdPart, TierUse};
use crate::error::Result;
use crate::key_groups::{key_group_of_hash, key_hash};
use crate::keyed_table::{KeyedTable, SnapshotEpochs};
use crate::prefetch::in_order_with_prefetch;
use crate::types::{CheckpointId, Timestamp};

use super::format::*;
use super::incremental::ChangeSummary;

impl<K: Hash + Eq + Clone + Serialize + DeserializeOwned, V: Serialize + DeserializeOwned>
    KeyedTable<K, V>
{
    /// The table's snapshot for checkpoint `checkpoint`, as the only table of an operator
    /// (see [`crate::declared`]): a delta holding only what changed since the newest
    /// completed snapshot it took, or every entry when [`super::incremental::delta_possible`] says
    /// no.
    pub fn snapshot_for(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
    ) -> Result<Vec<u8>> {
        let mut buffer = crate::snapshot::SnapshotBuffer::default();
        let bytes = crate::declared::DeclaredState::new()
            .table("table", &mut *self)
            .snapshot(checkpoint, max_parallelism, &mut buffer)?;
        bytes.ok_or_else(|| crate::error::internal!("a declared table wrote no snapshot"))
    }

    /// A guess at the length of a whole snapshot of the table, for a first snapshot's buffer:
    /// the encoded length of a sample of its entries (spread over the table in table order:
    /// the first ones alone may share a run of hashes, and with them a run of keys that are
    /// alike) times their number.
    pub fn estimated_snapshot_bytes(&self) -> usize {
        const SAMPLE: usize = 64;
        let mut scratch = Vec::new();
        let mut sampled = 0usize;
        let step = (self.len_in_memory() / SAMPLE).max(1);
        for (k, v) in self.iter().step_by(step).take(SAMPLE) {
            if append_entry(&mut scratch, &(0u32, k, v)).is_err() {
                return 0;
            }
            sampled += 1;
        }
        (scratch.len() / sampled.max(1)).saturating_mul(self.len())
    }

    /// Appends the table's snapshot for checkpoint `checkpoint`, with the operator's
    /// `watermark`, to `out`: a delta on its base if `delta` (which
    /// [`super::incremental::delta_possible`] must have allowed for all of the operator's
    /// tables), else whole; for values that may write their changes themselves: a whole
    /// snapshot shows every value to `whole` (so that it can note that this snapshot took it)
    /// and writes it as it is; a delta (version 3: the keys removed since the base, then the
    /// entries changed since, so that a key removed and added again ends present) writes
    /// each changed value as `patch` encodes it, a restore reading it as `Some(P)` for the
    /// patch type `P` of the operator (`V` itself for a plain table). That is the entries in
    /// memory; those on disk are returned as a [`ColdPart`] to be written after the barrier.
    #[allow(clippy::too_many_arguments)]
    pub fn append_patched(
        &mut self,
        out: &mut Vec<u8>,
        checkpoint: CheckpointId,
        max_parallelism: usize,
        watermark: Timestamp,
        delta: bool,
        mut whole: impl FnMut(&mut V, SnapshotEpochs) -> Result<()>,
        mut patch: impl FnMut(&mut V, SnapshotEpochs, &mut Vec<u8>) -> Result<()>,
    ) -> Result<Option<ColdPart>> {
        let base = self.changes.base.filter(|_| delta);
        let epochs = SnapshotEpochs {
            base: base.map(|b| b.epoch),
            at: self.changes.epoch,
        };
        let open = open_table(out, max_parallelism, watermark, base.map(|b| b.checkpoint));
        let (started, start) = (std::time::Instant::now(), out.len());
        let group = |k: &K| key_group_of_hash(key_hash(k), max_parallelism) as u32;
        match base {
            Some(base) => {
                for k in self.removed_after(base.epoch) {
                    append_entry(out, &(group(k), k, None::<()>))?;
                }
                let changed = self
                    .slots_for_snapshot()
                    .filter(|(_, _, e)| *e > base.epoch);
                in_order_with_prefetch(
                    changed,
                    |(_, v, _)| &**v,
                    |(k, v, _)| {
                        append_entry(out, &(group(k), k, Some(())))?;
                        patch(v, epochs, out)
                    },
                )?;
            }
            None => {
                in_order_with_prefetch(
                    self.slots_for_snapshot(),
                    |(_, v, _)| &**v,
                    |(k, v, _)| {
                        whole(v, epochs)?;
                        append_entry(out, &(group(k), k, &*v))
                    },
                )?;
            }
        }
        tracing::debug!(
            checkpoint,
            delta = base.is_some(),
            bytes = out.len() - start,
            ms = started.elapsed().as_millis() as u64,
            "table snapshot"
        );
        // The entries on disk: all of them in a whole snapshot, in a delta those changed
        // since its base; read after the barrier, from copies of the runs as they are now.
        let cold = match &self.cold {
            Some(cold) => cold.snapshot_part(base.map(|b| b.epoch), watermark)?,
            None => None,
        };
        close_table(out, open);
        self.changes
            .taken(checkpoint, base.map_or(0, |b| b.chain + 1));
        Ok(cold)
    }

    /// Loads the entries of the key groups in `key_groups` from a snapshot (whole state, or a
    /// delta applied on what was restored before it); `what` names the snapshot in errors. A
    /// bad snapshot is refused whole.
    pub fn restore(&mut self, snapshot: &[u8], key_groups: Range<usize>, what: &str) -> Result<()> {
        let [table] = read_tables(snapshot, what)?;
        self.restore_table(&table, key_groups, what)
    }

    /// Loads one verified table of a snapshot, as [`KeyedTable::restore`].
    pub fn restore_table(
        &mut self,
        table: &TableSnapshot<'_>,
        key_groups: Range<usize>,
        what: &str,
    ) -> Result<()> {
        self.restore_table_with(table, key_groups, what, |_, _| {})
    }

    /// Loads one verified table of a snapshot, as [`KeyedTable::restore`], showing every
    /// entry to `seen` as it is loaded.
    pub fn restore_table_with(
        &mut self,
        table: &TableSnapshot<'_>,
        key_groups: Range<usize>,
        what: &str,
        mut seen: impl FnMut(&K, &V),
    ) -> Result<()> {
        self.restore_patched(table, key_groups, what, |k, _, v: V| {
            seen(k, &v);
            Ok(v)
        })
    }

    /// Loads one verified table written by [`KeyedTable::append_patched`]: every entry of
    /// `key_groups` is read as a `P` (a whole value, or in a delta the operator's patch) and
    /// `apply(key, state restored before, P)` gives the key's state; a key a delta removes is
    /// removed. An error of `apply` names what does not fit, and the snapshot is refused.
    pub fn restore_patched<P: DeserializeOwned>(
        &mut self,
        table: &TableSnapshot<'_>,
        key_groups: Range<usize>,
        what: &str,
        mut apply: impl FnMut(&K, Option<V>, P) -> std::result::Result<V, String>,
    ) -> Result<()> {
        self.changes.reset();
        self.tombstones.clear();
        let mut failed = None;
        table.changes(&key_groups, what, |k, change: Option<P>| {
            let before = self.remove(&k);
            if let (Some(p), None) = (change, &failed) {
                match apply(&k, before, p) {
                    Ok(v) => self.insert(k, v),
                    Err(reason) => failed = Some(reason),
                }
            }
        })?;
        failed.map_or(Ok(()), |reason| Err(corrupt(what, reason)))
    }

    /// Loads the entries of the piece's key groups from the part of a snapshot that was on
    /// disk ([`ColdPart`]), after the table's own piece of the same snapshot: each replaces
    /// what its key had.
    pub fn restore_cold(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        let what = &piece.what;
        piece
            .table
            .cold_entries(&piece.key_groups, what, |key, value| {
                let (k, v, _) = crate::disk_tier::decode::<K, V>(key, value)
                    .map_err(|e| corrupt(what, e.to_string()))?;
                self.insert(k, v);
                Ok(())
            })
    }
}

/// A keyed table as the runtime manages it: incremental, by key group.
impl<K, V> StateTable for KeyedTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
    V: Serialize + DeserializeOwned,
{
    fn change_summary(&mut self) -> Option<ChangeSummary> {
        tracing::trace!(
            changed = self.changes.changed_since_base(),
            live = self.len(),
            base = ?self.changes.base.map(|b| b.checkpoint),
            pending = self.changes.pending(),
            "keyed table changes"
        );
        Some(
            self.changes
                .summary(self.len(), self.changes.changed_since_base()),
        )
    }

    fn estimated_snapshot_bytes(&self) -> usize {
        KeyedTable::estimated_snapshot_bytes(self)
    }

    fn append_snapshot(&mut self, out: &mut Vec<u8>, at: &SnapshotAt) -> Result<Option<ColdPart>> {
        self.append_patched(
            out,
            at.checkpoint,
            at.max_parallelism,
            at.watermark,
            at.delta,
            |_, _| Ok(()),
            |v, _, out| append_entry(out, &*v),
        )
    }

    fn restore(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        self.restore_table(&piece.table, piece.key_groups.clone(), &piece.what)
    }

    fn restore_cold(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        KeyedTable::restore_cold(self, piece)
    }

    fn checkpoint_complete(&mut self, id: CheckpointId) {
        KeyedTable::checkpoint_complete(self, id)
    }

    fn use_disk_tier(&mut self, tier: &TierUse) {
        if self.cold.is_none() {
            self.cold = Some(Box::new(Cold::new(tier.clone())));
        }
    }
}
