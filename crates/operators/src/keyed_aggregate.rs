//! Keyed aggregations (`count`, `sum`, `min`, `max`, `reduce`) and their map-side combiner.
//!
//! An [`Aggregation`] folds the records of one key into an accumulator. It runs in one of two
//! shapes, chosen by the graph translation:
//!
//! * **Streaming mode**: the records are shuffled by key to [`KeyedAggregate`], which folds
//!   each record into its key's accumulator and emits the updated result at once (as Flink's
//!   keyed `sum`/`reduce` do).
//! * **Batch mode**: a [`PartialAggregate`] is fused into the chain *before* the shuffle (a
//!   combiner): it folds records into a local table and emits `(key, accumulator)` pairs at end
//!   of input (or when the table grows past [`COMBINER_MAX_KEYS`]). After the shuffle,
//!   [`MergeAggregate`] merges the partial accumulators and emits one final result per key.
//!   Aggregations are associative, so both shapes give the same final values; the combiner
//!   sends one record per distinct key and subtask through the shuffle instead of one per input
//!   record.

use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::AddAssign;

use crate::error::Result;
use crate::state::declared::DeclaredState;
use crate::state::keyed_table::{KeyedTable, ScratchTable};
use crate::types::RuntimeMode;
use crate::types::{Data, Key, KeySelector};
use crate::{Batch, Collector, Operator};

/// A combiner flushes its partial results when it holds more distinct keys than this, which
/// bounds its memory on high-cardinality keys.
pub const COMBINER_MAX_KEYS: usize = 1 << 18;

/// An associative fold of the records of one key.
pub trait Aggregation<T, K>: Clone + Send + Sync + 'static {
    /// Running state of one key.
    type Acc: Data;
    /// What is emitted for a key.
    type Out: Data;
    /// Short name shown in plans ("count", "sum", ...).
    fn name(&self) -> &'static str;
    /// The accumulator of a key's first record.
    fn create(&self, record: T) -> Self::Acc;
    /// Folds a record into an accumulator.
    fn add(&self, acc: &mut Self::Acc, record: T);
    /// Folds another accumulator of the same key into `acc`.
    fn merge(&self, acc: &mut Self::Acc, other: Self::Acc);
    /// The result for a key.
    fn result(&self, key: &K, acc: &Self::Acc) -> Self::Out;
}

/// Number of records per key: emits `(key, count)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Count;

impl<T, K: Key> Aggregation<T, K> for Count {
    type Acc = u64;
    type Out = (K, u64);
    fn name(&self) -> &'static str {
        "count"
    }
    #[inline]
    fn create(&self, _record: T) -> u64 {
        1
    }
    #[inline]
    fn add(&self, acc: &mut u64, _record: T) {
        *acc += 1;
    }
    #[inline]
    fn merge(&self, acc: &mut u64, other: u64) {
        *acc += other;
    }
    #[inline]
    fn result(&self, key: &K, acc: &u64) -> (K, u64) {
        (key.clone(), *acc)
    }
}

/// One field of a record per key, folded by `combine` (`sum`, `min`, `max`): emits
/// `(key, value)`.
#[derive(Clone)]
pub struct FieldAggregate<F, C> {
    /// Extracts the folded field of a record.
    pub field: F,
    /// Folds a value into the accumulator.
    pub combine: C,
    /// The name shown in plans.
    pub name: &'static str,
}

impl<F> FieldAggregate<F, ()> {
    /// The sum of `field`.
    pub fn sum<T, N: AddAssign>(
        field: F,
    ) -> FieldAggregate<F, impl Fn(&mut N, N) + Clone + Send + Sync + 'static>
    where
        F: Fn(&T) -> N,
    {
        FieldAggregate {
            field,
            combine: |acc: &mut N, v: N| *acc += v,
            name: "sum",
        }
    }

    /// The smallest (`largest` false) or largest value of `field`.
    pub fn extreme<T, V: Ord>(
        field: F,
        largest: bool,
    ) -> FieldAggregate<F, impl Fn(&mut V, V) + Clone + Send + Sync + 'static>
    where
        F: Fn(&T) -> V,
    {
        FieldAggregate {
            field,
            combine: move |acc: &mut V, v: V| {
                if (largest && v > *acc) || (!largest && v < *acc) {
                    *acc = v;
                }
            },
            name: if largest { "max" } else { "min" },
        }
    }
}

impl<T, K: Key, V, F, C> Aggregation<T, K> for FieldAggregate<F, C>
where
    V: Data,
    F: Fn(&T) -> V + Clone + Send + Sync + 'static,
    C: Fn(&mut V, V) + Clone + Send + Sync + 'static,
{
    type Acc = V;
    type Out = (K, V);
    fn name(&self) -> &'static str {
        self.name
    }
    #[inline]
    fn create(&self, record: T) -> V {
        (self.field)(&record)
    }
    #[inline]
    fn add(&self, acc: &mut V, record: T) {
        (self.combine)(acc, (self.field)(&record));
    }
    #[inline]
    fn merge(&self, acc: &mut V, other: V) {
        (self.combine)(acc, other);
    }
    fn result(&self, key: &K, acc: &V) -> (K, V) {
        (key.clone(), acc.clone())
    }
}

/// A user reduce function per key: emits the reduced record. The function must be associative
/// (as Flink assumes when it combines reduce inputs in batch mode).
#[derive(Clone)]
pub struct Reduce<F> {
    /// Combines two records into one.
    pub f: F,
}

impl<T, K: Key, F> Aggregation<T, K> for Reduce<F>
where
    T: Data,
    F: Fn(T, T) -> T + Clone + Send + Sync + 'static,
{
    type Acc = T;
    type Out = T;
    fn name(&self) -> &'static str {
        "reduce"
    }
    fn create(&self, record: T) -> T {
        record
    }
    fn add(&self, acc: &mut T, record: T) {
        let current = acc.clone();
        *acc = (self.f)(current, record);
    }
    fn merge(&self, acc: &mut T, other: T) {
        let current = acc.clone();
        *acc = (self.f)(current, other);
    }
    fn result(&self, _key: &K, acc: &T) -> T {
        acc.clone()
    }
}

/// The state hook of a final aggregation operator: its `acc`'s table, checkpointed
/// incrementally (see [`KeyedTable`]).
macro_rules! accumulator_state {
    () => {
        fn state(&mut self) -> DeclaredState<'_> {
            DeclaredState::new().table("accumulators", &mut self.acc.state)
        }
    };
}

/// Per-key accumulators and the emission policy of the final aggregation operators
/// ([`KeyedAggregate`], [`MergeAggregate`]): an update per input in streaming mode, the final
/// values at end of input in batch mode.
struct Accumulators<T, K, A: Aggregation<T, K>> {
    agg: A,
    emit_updates: bool,
    state: KeyedTable<K, A::Acc>,
    _types: PhantomData<fn(T)>,
}

impl<T, K: Key, A: Aggregation<T, K>> Accumulators<T, K, A> {
    fn new(agg: A, mode: RuntimeMode) -> Self {
        Accumulators {
            agg,
            emit_updates: mode != RuntimeMode::Batch,
            state: KeyedTable::default(),
            _types: PhantomData,
        }
    }

    /// Folds a batch: `fold` into an existing accumulator, `create` a new one.
    #[inline]
    fn fold_batch<R>(
        &mut self,
        batch: &mut Vec<R>,
        key_of: impl Fn(&R) -> K,
        out: &mut Collector<'_, A::Out>,
        fold: impl Fn(&A, &mut A::Acc, R),
        create: impl Fn(&A, R) -> A::Acc,
    ) {
        let (agg, emit) = (&self.agg, self.emit_updates);
        self.state.fold_batch(batch, key_of, |key, acc, record| {
            let fresh = match acc {
                Some(acc) => {
                    fold(agg, acc, record);
                    if emit {
                        out.collect(agg.result(key, acc));
                    }
                    return None;
                }
                None => create(agg, record),
            };
            if emit {
                out.collect(agg.result(key, &fresh));
            }
            Some(fresh)
        });
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, A::Out>) {
        if !self.emit_updates {
            for (key, acc) in self.state.drain() {
                out.collect(self.agg.result(&key, &acc));
            }
        }
    }
}

/// Folds records into per-key accumulators after a shuffle by key; emits an update per record
/// in streaming mode, the final results at end of input in batch mode.
pub struct KeyedAggregate<T, K, KS, A: Aggregation<T, K>> {
    key_of: KS,
    acc: Accumulators<T, K, A>,
}

impl<T, K: Key, KS, A: Aggregation<T, K>> KeyedAggregate<T, K, KS, A> {
    /// An aggregation keyed by `key_of`, emitting according to `mode`.
    pub fn new(key_of: KS, agg: A, mode: RuntimeMode) -> Self {
        KeyedAggregate {
            key_of,
            acc: Accumulators::new(agg, mode),
        }
    }
}

impl<T: Send + 'static, K: Key, KS: KeySelector<T, K>, A: Aggregation<T, K>> Operator
    for KeyedAggregate<T, K, KS, A>
{
    type In = (T,);
    type Out = A::Out;

    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, A::Out>) -> Result<()> {
        batch.by_timestamp(out, |records, out| {
            self.acc.fold_batch(
                records,
                &self.key_of,
                out,
                |a, acc, r| a.add(acc, r),
                |a, r| a.create(r),
            );
            Ok(())
        })
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, A::Out>) -> Result<()> {
        self.acc.end_of_input(out);
        Ok(())
    }

    accumulator_state!();
}

/// The combiner: folds records into a local table before the shuffle and emits
/// `(key, accumulator)` pairs at end of input.
pub struct PartialAggregate<T, K, KS, A: Aggregation<T, K>> {
    key_of: KS,
    agg: A,
    state: ScratchTable<K, A::Acc>,
    _types: PhantomData<fn(T)>,
}

impl<T, K: Hash + Eq, KS, A: Aggregation<T, K>> PartialAggregate<T, K, KS, A> {
    /// A combiner keyed by `key_of`.
    pub fn new(key_of: KS, agg: A) -> Self {
        PartialAggregate {
            key_of,
            agg,
            state: ScratchTable::default(),
            _types: PhantomData,
        }
    }

    fn emit_all(&mut self, out: &mut Collector<'_, (K, A::Acc)>) {
        for entry in self.state.drain() {
            out.collect(entry);
        }
    }
}

impl<T: Send + 'static, K: Key, KS: KeySelector<T, K>, A: Aggregation<T, K>> Operator
    for PartialAggregate<T, K, KS, A>
{
    type In = (T,);
    type Out = (K, A::Acc);

    #[inline]
    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, (K, A::Acc)>) -> Result<()> {
        batch.by_timestamp(out, |records, out| {
            let agg = &self.agg;
            self.state
                .fold_batch(records, &self.key_of, |acc, record| match acc {
                    Some(acc) => {
                        agg.add(acc, record);
                        None
                    }
                    None => Some(agg.create(record)),
                });
            if self.state.len() > COMBINER_MAX_KEYS {
                self.emit_all(out);
            }
            Ok(())
        })
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, (K, A::Acc)>) -> Result<()> {
        self.emit_all(out);
        Ok(())
    }
}

/// Merges the combiners' partial accumulators after the shuffle.
pub struct MergeAggregate<T, K, A: Aggregation<T, K>> {
    acc: Accumulators<T, K, A>,
}

impl<T, K: Key, A: Aggregation<T, K>> MergeAggregate<T, K, A> {
    /// Merges partial results of `agg`, emitting according to `mode`.
    pub fn new(agg: A, mode: RuntimeMode) -> Self {
        MergeAggregate {
            acc: Accumulators::new(agg, mode),
        }
    }
}

impl<T: 'static, K: Key, A: Aggregation<T, K>> Operator for MergeAggregate<T, K, A> {
    type In = ((K, A::Acc),);
    type Out = A::Out;

    fn process(
        &mut self,
        batch: Batch<'_, (K, A::Acc)>,
        out: &mut Collector<'_, A::Out>,
    ) -> Result<()> {
        batch.by_timestamp(out, |records, out| {
            self.acc.fold_batch(
                records,
                |(k, _)| k.clone(),
                out,
                |a, acc, (_, partial)| a.merge(acc, partial),
                |_, (_, partial)| partial,
            );
            Ok(())
        })
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, A::Out>) -> Result<()> {
        self.acc.end_of_input(out);
        Ok(())
    }

    accumulator_state!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::key_groups::{
        DEFAULT_MAX_PARALLELISM, key_groups_of_subtask, subtask_of_key,
    };
    use crate::{Checkpointed, VecOutput};
    use std::collections::HashMap;

    type CountOp = KeyedAggregate<u32, u32, fn(&u32) -> u32, Count>;

    fn feed(op: &mut CountOp, records: &[u32], out: &mut VecOutput<(u32, u64)>) {
        let mut buf = Vec::new();
        let mut stamps = Vec::new();
        let mut c = Collector::new(&mut buf, &mut stamps, out, 1024);
        let mut batch = records.to_vec();
        op.process((&mut batch).into(), &mut c).unwrap();
        c.done().unwrap();
    }

    /// Count state checkpointed by one subtask and restored into two (by key group) goes on
    /// counting exactly where it stopped.
    #[test]
    fn counts_survive_a_snapshot_and_a_rescale() {
        let key: fn(&u32) -> u32 = |x| *x % 50;
        let records: Vec<u32> = (0..5_000).collect();
        let (before, after) = records.split_at(2_000);
        let mut one: CountOp = KeyedAggregate::new(key, Count, RuntimeMode::Streaming);
        let mut sink = VecOutput(Vec::new());
        feed(&mut one, before, &mut sink);
        let snapshot = one
            .snapshot_state(1, DEFAULT_MAX_PARALLELISM)
            .unwrap()
            .unwrap();

        let mut latest: HashMap<u32, u64> = HashMap::new();
        for s in 0..2 {
            let mut op: CountOp = KeyedAggregate::new(key, Count, RuntimeMode::Streaming);
            op.restore_state(
                &snapshot,
                key_groups_of_subtask(s, DEFAULT_MAX_PARALLELISM, 2),
            )
            .unwrap();
            let mine: Vec<u32> = after
                .iter()
                .copied()
                .filter(|r| subtask_of_key(&key(r), DEFAULT_MAX_PARALLELISM, 2) == s)
                .collect();
            let mut out = VecOutput(Vec::new());
            feed(&mut op, &mine, &mut out);
            for (k, c) in out.0 {
                latest.insert(k, c);
            }
        }
        // Each of the 50 keys ends at 100: counted once, before or after the rescale.
        assert_eq!(latest.len(), 50);
        assert!(latest.values().all(|&c| c == 100), "{latest:?}");
        // A damaged snapshot is refused.
        let mut op: CountOp = KeyedAggregate::new(key, Count, RuntimeMode::Streaming);
        assert!(
            op.restore_state(&snapshot[..snapshot.len() - 1], 0..128)
                .is_err()
        );
    }
}
