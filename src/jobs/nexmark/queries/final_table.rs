//! The final table of a per-key "keep the best row" query (q18's latest bid per bidder and
//! auction): one probe of a hash table per record, rows moved rather than copied, and the
//! table emitted when the final watermark arrives (the end of a bounded input). Keyed state,
//! checkpointed by key group.

use std::marker::PhantomData;

use crate::error::Result;
use crate::operators::{Collector, OneInputOperator};
use crate::state::keyed_table::KeyedTable;
use crate::types::{CheckpointId, Data, Key, MAX_WATERMARK, Timestamp};

/// Keeps, per key, the row that `better(new, kept)` prefers.
pub struct BestPerKey<T, K, KS, B> {
    key_of: KS,
    better: B,
    table: KeyedTable<K, T>,
    _types: PhantomData<fn(T)>,
}

impl<T, K: Key, KS, B> BestPerKey<T, K, KS, B> {
    /// Keys rows with `key_of`; `better(new, kept)` says whether `new` replaces `kept`.
    pub fn new(key_of: KS, better: B) -> Self {
        BestPerKey {
            key_of,
            better,
            table: KeyedTable::default(),
            _types: PhantomData,
        }
    }
}

impl<T, K, KS, B> OneInputOperator for BestPerKey<T, K, KS, B>
where
    T: Data,
    K: Key,
    KS: Fn(&T) -> K + Send + 'static,
    B: Fn(&T, &T) -> bool + Send + 'static,
{
    type In = T;
    type Out = T;

    fn process_batch(&mut self, batch: &mut Vec<T>, _out: &mut Collector<'_, T>) -> Result<()> {
        let better = &self.better;
        self.table
            .fold_batch(batch, &self.key_of, |_, kept, row| match kept {
                Some(kept) => {
                    if better(&row, kept) {
                        *kept = row;
                    }
                    None
                }
                None => Some(row),
            });
        Ok(())
    }

    fn process_stamped_batch(
        &mut self,
        batch: &mut Vec<T>,
        timestamps: &mut Vec<Timestamp>,
        out: &mut Collector<'_, T>,
    ) -> Result<()> {
        timestamps.clear();
        self.process_batch(batch, out)
    }

    fn process_watermark(
        &mut self,
        watermark: Timestamp,
        out: &mut Collector<'_, T>,
    ) -> Result<()> {
        if watermark == MAX_WATERMARK {
            out.collect_all(self.table.drain().map(|(_, row)| row));
        }
        Ok(())
    }

    fn snapshot_state(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
    ) -> Result<Option<Vec<u8>>> {
        self.table
            .snapshot_for(checkpoint, max_parallelism)
            .map(Some)
    }

    fn notify_checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        self.table.checkpoint_complete(id);
        Ok(())
    }

    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        self.table.restore(snapshot, key_groups, "best row per key")
    }
}
