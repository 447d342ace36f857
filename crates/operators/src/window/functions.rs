//! What a window computes: incrementally (`reduce`, an [`AggregateFunction`]), over all its
//! records (`process`), or incrementally with a process function given the result and the
//! window (`reduce_with`, `aggregate_with`).

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::Collector;
use crate::error::Result;
use crate::state::SnapshotEpochs;
use crate::types::{Data, Key};
use crate::window::TimeWindow;

/// An incremental aggregation with an accumulator (Flink's `AggregateFunction`).
///
/// ```
/// use hummer::operators::window::AggregateFunction;
/// /// The average of the values.
/// #[derive(Clone)]
/// struct Average;
/// impl AggregateFunction<f64> for Average {
///     type Acc = (f64, u64);
///     type Out = f64;
///     fn create_accumulator(&self) -> (f64, u64) { (0.0, 0) }
///     fn add(&self, value: &f64, acc: &mut (f64, u64)) { acc.0 += value; acc.1 += 1; }
///     fn get_result(&self, acc: &(f64, u64)) -> f64 { acc.0 / acc.1 as f64 }
///     fn merge(&self, a: (f64, u64), b: (f64, u64)) -> (f64, u64) { (a.0 + b.0, a.1 + b.1) }
/// }
/// let avg = Average;
/// let mut acc = avg.create_accumulator();
/// avg.add(&1.0, &mut acc);
/// avg.add(&3.0, &mut acc);
/// assert_eq!(avg.get_result(&acc), 2.0);
/// ```
pub trait AggregateFunction<T>: Clone + Send + Sync + 'static {
    /// The accumulator: the aggregation's state per key and window (checkpointed).
    type Acc: Data;
    /// The result.
    type Out: Data;
    /// A fresh accumulator.
    fn create_accumulator(&self) -> Self::Acc;
    /// Adds a record.
    fn add(&self, value: &T, acc: &mut Self::Acc);
    /// The result of what was added.
    fn get_result(&self, acc: &Self::Acc) -> Self::Out;
    /// Combines two accumulators (session windows that merge).
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;

    /// How accumulators are checkpointed as their changes rather than whole, if they are
    /// ([`AccChanges`]). Default: whole.
    fn acc_changes(&self) -> Option<&dyn AccChanges<Self::Acc>> {
        None
    }
}

/// An accumulator checkpointed as its changes rather than whole: worth it for one that is
/// large and grows a little per checkpoint interval, such as a set of distinct values (a
/// [`GrowSet`](crate::state::GrowSet)). An aggregation returns it from
/// [`AggregateFunction::acc_changes`].
pub trait AccChanges<A> {
    /// A snapshot takes `acc`: writes to `out` what changed since `epochs`' base snapshot and
    /// returns true, or returns false to have the accumulator written whole. Called for every
    /// accumulator of every snapshot, whole ones too (their result is not used), so that the
    /// accumulator can note what each snapshot took.
    fn write_changes(&self, acc: &mut A, epochs: SnapshotEpochs, out: &mut Vec<u8>)
    -> Result<bool>;

    /// On a restore, applies changes written by [`AccChanges::write_changes`] to the
    /// accumulator restored from the snapshots before them.
    fn apply_changes(&self, acc: &mut A, changes: &[u8]) -> Result<()>;
}

/// Counts the records of a window.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountAggregate;

impl<T> AggregateFunction<T> for CountAggregate {
    type Acc = u64;
    type Out = u64;
    fn create_accumulator(&self) -> u64 {
        0
    }
    fn add(&self, _value: &T, acc: &mut u64) {
        *acc += 1;
    }
    fn get_result(&self, acc: &u64) -> u64 {
        *acc
    }
    fn merge(&self, a: u64, b: u64) -> u64 {
        a + b
    }
}

/// One window's result for one key: what `reduce` and `aggregate` emit (for a
/// `window_all`, whose windows have no key, `key` is `()`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WindowResult<K, V> {
    /// The key.
    pub key: K,
    /// The window.
    pub window: TimeWindow,
    /// The reduced value or the aggregate's result.
    pub value: V,
}

/// What the window operator emits: a result, or a record too late for every window (kept
/// apart so the API can route it to the late-data side output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WindowOutput<O, T> {
    /// A window's result.
    Result(O),
    /// A record later than the watermark plus the allowed lateness.
    Late(T),
}

/// What a window keeps and how it turns that into results: the one interface the window
/// operator calls, whatever the user gave (reduce, aggregate, process, or a combination).
pub trait WindowFunction<K, T>: Send + 'static {
    /// The state of one key and window.
    type Acc: Data;
    /// The results.
    type Out: Data;
    /// The state of a new window.
    fn create(&self) -> Self::Acc;
    /// Adds a record to a window's state.
    fn add(&self, acc: &mut Self::Acc, record: T);
    /// Merges the state of a window into another's (session windows).
    fn merge(&self, into: &mut Self::Acc, other: Self::Acc);
    /// Emits the results of a window that fires.
    fn emit(
        &mut self,
        key: &K,
        window: &TimeWindow,
        acc: &Self::Acc,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()>;

    /// As [`AggregateFunction::acc_changes`].
    fn acc_changes(&self) -> Option<&dyn AccChanges<Self::Acc>> {
        None
    }
}

/// `reduce`: one running value per window; results [`WindowResult`]s.
pub struct ReduceWindow<T, F> {
    /// Combines two records into one.
    pub f: F,
    /// The record type.
    pub _types: PhantomData<fn(T)>,
}

impl<K: Key, T: Data, F> WindowFunction<K, T> for ReduceWindow<T, F>
where
    F: Fn(T, T) -> T + Send + 'static,
{
    type Acc = Option<T>;
    type Out = WindowResult<K, T>;
    fn create(&self) -> Option<T> {
        None
    }
    fn add(&self, acc: &mut Option<T>, record: T) {
        *acc = Some(match acc.take() {
            Some(a) => (self.f)(a, record),
            None => record,
        });
    }
    fn merge(&self, into: &mut Option<T>, other: Option<T>) {
        if let Some(o) = other {
            <Self as WindowFunction<K, T>>::add(self, into, o);
        }
    }
    fn emit(
        &mut self,
        key: &K,
        window: &TimeWindow,
        acc: &Option<T>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        if let Some(v) = acc {
            out.collect(WindowResult {
                key: key.clone(),
                window: *window,
                value: v.clone(),
            });
        }
        Ok(())
    }
}

/// `aggregate`: an accumulator per window; results [`WindowResult`]s.
pub struct AggregateWindow<T, A> {
    /// The aggregate function.
    pub agg: A,
    /// The record type.
    pub _types: PhantomData<fn(T)>,
}

impl<K: Key, T: 'static, A: AggregateFunction<T>> WindowFunction<K, T> for AggregateWindow<T, A> {
    type Acc = A::Acc;
    type Out = WindowResult<K, A::Out>;
    fn create(&self) -> A::Acc {
        self.agg.create_accumulator()
    }
    fn add(&self, acc: &mut A::Acc, record: T) {
        self.agg.add(&record, acc);
    }
    fn merge(&self, into: &mut A::Acc, other: A::Acc) {
        let a = std::mem::replace(into, self.agg.create_accumulator());
        *into = self.agg.merge(a, other);
    }
    fn emit(
        &mut self,
        key: &K,
        window: &TimeWindow,
        acc: &A::Acc,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        out.collect(WindowResult {
            key: key.clone(),
            window: *window,
            value: self.agg.get_result(acc),
        });
        Ok(())
    }
    fn acc_changes(&self) -> Option<&dyn AccChanges<A::Acc>> {
        self.agg.acc_changes()
    }
}

/// `process`: all records of a window, given to a function with the key and the window.
pub struct ProcessWindow<T, O, P> {
    /// The user's process-window function.
    pub f: P,
    /// The record and output types.
    pub _types: PhantomData<fn(T) -> O>,
}

impl<K: Key, T: Data, O: Data, P> WindowFunction<K, T> for ProcessWindow<T, O, P>
where
    P: FnMut(&K, &TimeWindow, &[T], &mut Collector<'_, O>) + Send + 'static,
{
    type Acc = Vec<T>;
    type Out = O;
    fn create(&self) -> Vec<T> {
        Vec::new()
    }
    fn add(&self, acc: &mut Vec<T>, record: T) {
        acc.push(record);
    }
    fn merge(&self, into: &mut Vec<T>, mut other: Vec<T>) {
        into.append(&mut other);
    }
    fn emit(
        &mut self,
        key: &K,
        window: &TimeWindow,
        acc: &Vec<T>,
        out: &mut Collector<'_, O>,
    ) -> Result<()> {
        (self.f)(key, window, acc, out);
        Ok(())
    }
}

/// `reduce_with` / `aggregate_with`: incremental aggregation, and a process function given
/// the result, the key and the window.
pub struct IncrementalProcess<W, O, P> {
    /// The incremental window function that folds the records.
    pub inner: W,
    /// The user's function called with the folded result when the window fires.
    pub f: P,
    /// The output type.
    pub _types: PhantomData<fn() -> O>,
}

impl<K, T, V, W, O, P> WindowFunction<K, T> for IncrementalProcess<W, O, P>
where
    K: Key,
    V: Data,
    O: Data,
    W: WindowFunction<K, T, Out = WindowResult<K, V>>,
    P: FnMut(&K, &TimeWindow, V, &mut Collector<'_, O>) + Send + 'static,
{
    type Acc = W::Acc;
    type Out = O;
    fn create(&self) -> W::Acc {
        self.inner.create()
    }
    fn add(&self, acc: &mut W::Acc, record: T) {
        self.inner.add(acc, record)
    }
    fn merge(&self, into: &mut W::Acc, other: W::Acc) {
        self.inner.merge(into, other)
    }
    fn emit(
        &mut self,
        key: &K,
        window: &TimeWindow,
        acc: &W::Acc,
        out: &mut Collector<'_, O>,
    ) -> Result<()> {
        let mut results = Vec::new();
        crate::collector::collect_into(&mut results, |c| self.inner.emit(key, window, acc, c))?;
        for r in results {
            (self.f)(key, window, r.value, out);
        }
        Ok(())
    }
    fn acc_changes(&self) -> Option<&dyn AccChanges<W::Acc>> {
        self.inner.acc_changes()
    }
}
