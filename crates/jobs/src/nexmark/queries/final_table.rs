//! The final table of a per-key "keep the best row" query (q18's latest bid per bidder and
//! auction): one probe of a hash table per record, rows moved rather than copied, and the
//! table emitted when the final watermark arrives (the end of a bounded input). Keyed state,
//! checkpointed by key group.

use std::marker::PhantomData;

use crate::error::Result;
use crate::operators::{Batch, Collector, Operator};
use crate::state::declared::DeclaredState;
use crate::state::keyed_table::KeyedTable;
use crate::types::{Data, Key, KeySelector, MAX_WATERMARK, Timestamp};

/// Keeps, per key, the row that `better(new, kept)` prefers, as `keep` stores it (`S`: a
/// form that costs less memory, or the row itself).
pub struct BestPerKey<T, S, K, KS, C, B> {
    key_of: KS,
    keep: C,
    better: B,
    table: KeyedTable<K, S>,
    _types: PhantomData<fn(T) -> S>,
}

impl<T, S, K: Key, KS, C, B> BestPerKey<T, S, K, KS, C, B> {
    /// Keys rows with `key_of`; `better(new, kept)` says whether `new` replaces `kept`, and
    /// `keep` makes what the table stores of a row that is kept.
    pub fn new(key_of: KS, keep: C, better: B) -> Self {
        BestPerKey {
            key_of,
            keep,
            better,
            table: KeyedTable::default(),
            _types: PhantomData,
        }
    }
}

impl<T, S, K, KS, C, B> Operator for BestPerKey<T, S, K, KS, C, B>
where
    T: Data,
    S: Data,
    K: Key,
    KS: KeySelector<T, K>,
    C: Fn(T) -> S + Send + 'static,
    B: Fn(&T, &S) -> bool + Send + 'static,
{
    type In = (T,);
    type Out = S;

    fn process(&mut self, batch: Batch<'_, T>, _out: &mut Collector<'_, S>) -> Result<()> {
        let (better, keep) = (&self.better, &self.keep);
        self.table.fold_batch(
            batch.into_records(),
            &self.key_of,
            |_, kept, row| match kept {
                Some(kept) => {
                    if better(&row, kept) {
                        *kept = keep(row);
                    }
                    None
                }
                None => Some(keep(row)),
            },
        );
        Ok(())
    }

    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, S>) -> Result<()> {
        if time == MAX_WATERMARK {
            out.collect_all(self.table.drain().map(|(_, row)| row));
        }
        Ok(())
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new().table("best row per key", &mut self.table)
    }
}
