//! `process_function` on a keyed stream: a user function with per-key state and timers
//! (Flink's `KeyedProcessFunction`).
//!
//! Timers are keyed state: each key has at most one timer per time domain and timestamp,
//! they are checkpointed with the key's value (so they move with their key group on a
//! rescale), event-time timers fire when the watermark reaches them, processing-time timers
//! when the clock does (those that fell due while a job was down fire right after its
//! restore). `on_timer` runs on the task's thread between records, never during
//! `process_element`.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::keyed_timers::{KeyedTimers, TimeDomain, TimerChange, TimerList};
use crate::state::ValueState;
use crate::state::declared::DeclaredState;
use crate::state::keyed_table::KeyedTable;
use crate::state::snapshot::OperatorWatermark;
use crate::types::{Data, Key, KeySelector, NO_TIMESTAMP, Timestamp};
use crate::{Batch, Collector, Operator, OperatorContext};

/// A function over a keyed stream with a value per key and timers (Flink's
/// `KeyedProcessFunction`).
///
/// ```
/// use hummer::prelude::*;
/// use hummer::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
/// /// Emits a key when it has been silent for 10 s of event time.
/// #[derive(Clone)]
/// struct Silence;
/// impl KeyedProcessFunction<String, (String, i64)> for Silence {
///     type State = i64; // the last time the key was seen
///     type Out = String;
///     fn process_element(&mut self, r: (String, i64), ctx: &mut ProcessContext<'_, '_, String, i64, String>) {
///         if let Some(old) = ctx.state().value().copied() {
///             ctx.timer_service().delete_event_time_timer(old + 10_000);
///         }
///         ctx.state().update(r.1);
///         ctx.timer_service().register_event_time_timer(r.1 + 10_000);
///     }
///     fn on_timer(&mut self, _t: Timestamp, ctx: &mut ProcessContext<'_, '_, String, i64, String>) {
///         let key = ctx.key().clone();
///         ctx.collect(key);
///         ctx.state().clear();
///     }
/// }
/// ```
pub trait KeyedProcessFunction<K, T>: Clone + Send + Sync + 'static {
    /// The value kept per key (checkpointed).
    type State: Data;
    /// The output records.
    type Out: Data;
    /// Called for every record.
    fn process_element(
        &mut self,
        record: T,
        ctx: &mut ProcessContext<'_, '_, K, Self::State, Self::Out>,
    );
    /// Called when a timer of the context's key fires at `timestamp`.
    fn on_timer(
        &mut self,
        timestamp: Timestamp,
        ctx: &mut ProcessContext<'_, '_, K, Self::State, Self::Out>,
    ) {
        let _ = (timestamp, ctx);
    }
}

/// The clocks, and the timers of what is being processed: the current key of a keyed process
/// function (a timer calls its `on_timer`), or a window (through a trigger's
/// [`TriggerContext`](crate::window::TriggerContext), a timer calls the trigger's
/// `on_timer`). One timer per time domain and time.
pub struct TimerService<'a> {
    pub(crate) watermark: Timestamp,
    pub(crate) now: Timestamp,
    pub(crate) changes: &'a mut Vec<TimerChange>,
}

impl TimerService<'_> {
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> Timestamp {
        self.watermark
    }

    /// The current processing time.
    pub fn current_processing_time(&self) -> Timestamp {
        self.now
    }

    /// Registers a timer for when the watermark reaches `time`.
    pub fn register_event_time_timer(&mut self, time: Timestamp) {
        self.register(TimeDomain::EventTime, time);
    }

    /// Registers a timer for when the clock reaches `time`.
    pub fn register_processing_time_timer(&mut self, time: Timestamp) {
        self.register(TimeDomain::ProcessingTime, time);
    }

    /// Deletes the event-time timer at `time`, if any.
    pub fn delete_event_time_timer(&mut self, time: Timestamp) {
        self.delete(TimeDomain::EventTime, time);
    }

    /// Deletes the processing-time timer at `time`, if any.
    pub fn delete_processing_time_timer(&mut self, time: Timestamp) {
        self.delete(TimeDomain::ProcessingTime, time);
    }

    /// The current time of `domain`: the watermark, or the processing time.
    pub(crate) fn current_time(&self, domain: TimeDomain) -> Timestamp {
        match domain {
            TimeDomain::EventTime => self.watermark,
            TimeDomain::ProcessingTime => self.now,
        }
    }

    /// Registers a timer of `domain` at `time`.
    pub(crate) fn register(&mut self, domain: TimeDomain, time: Timestamp) {
        self.changes.push(TimerChange::Register(domain, time));
    }

    /// Deletes the timer of `domain` at `time`, if any.
    pub(crate) fn delete(&mut self, domain: TimeDomain, time: Timestamp) {
        self.changes.push(TimerChange::Delete(domain, time));
    }
}

/// What a [`KeyedProcessFunction`] sees during a call: the key, the record's timestamp (or the
/// timer's), the key's state, its timers and the output.
pub struct ProcessContext<'a, 'b, K, S, O> {
    key: &'a K,
    timestamp: Option<Timestamp>,
    domain: Option<TimeDomain>,
    state: ValueState<'a, S>,
    timers: TimerService<'a>,
    out: &'a mut Collector<'b, O>,
}

impl<'a, K, S, O> ProcessContext<'a, '_, K, S, O> {
    /// The key of the record or timer.
    pub fn key(&self) -> &K {
        self.key
    }

    /// The record's timestamp (`None` if it has none); in `on_timer`, the timer's time.
    pub fn timestamp(&self) -> Option<Timestamp> {
        self.timestamp
    }

    /// In `on_timer`, which kind of timer fired.
    pub fn time_domain(&self) -> Option<TimeDomain> {
        self.domain
    }

    /// The operator's current watermark.
    pub fn current_watermark(&self) -> Timestamp {
        self.timers.watermark
    }

    /// The key's value.
    pub fn state(&mut self) -> &mut ValueState<'a, S> {
        &mut self.state
    }

    /// The key's timers.
    pub fn timer_service(&mut self) -> &mut TimerService<'a> {
        &mut self.timers
    }

    /// Emits a record (with the record's timestamp, or an event-time timer's).
    pub fn collect(&mut self, record: O) {
        self.out.collect(record);
    }
}

/// One key's value and timers.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct KeyState<S> {
    value: Option<S>,
    timers: TimerList,
}

/// One key's entry, open to a call of the function.
struct Keyed<'k, K, S> {
    key: &'k K,
    entry: &'k mut KeyState<S>,
    watermark: Timestamp,
    now: Timestamp,
}

impl<K: Clone, S> Keyed<'_, K, S> {
    /// Calls the function on the key (a record, or a timer when `domain` is set) and applies
    /// the timer changes it asked for; false if the key is left with neither value nor timer
    /// (it goes).
    #[allow(clippy::too_many_arguments)]
    fn call<T, F: KeyedProcessFunction<K, T, State = S>>(
        self,
        f: &mut F,
        timers: &mut KeyedTimers<K>,
        changes: &mut Vec<TimerChange>,
        timestamp: Option<Timestamp>,
        domain: Option<TimeDomain>,
        out: &mut Collector<'_, F::Out>,
        body: impl FnOnce(&mut F, &mut ProcessContext<'_, '_, K, S, F::Out>),
    ) -> bool {
        let Keyed {
            key,
            entry,
            watermark,
            now,
        } = self;
        let mut ctx = ProcessContext {
            key,
            timestamp,
            domain,
            state: ValueState::new(&mut entry.value),
            timers: TimerService {
                watermark,
                now,
                changes,
            },
            out,
        };
        body(f, &mut ctx);
        for change in changes.drain(..) {
            timers.apply(&mut entry.timers, change, || key.clone());
        }
        entry.value.is_some() || !entry.timers.is_empty()
    }

    /// Fires the key's timer of `domain` at `time` if it is still set (not deleted since it
    /// was queued): [`Keyed::call`]'s answer, or `None` if it was not.
    fn fire_timer<T, F: KeyedProcessFunction<K, T, State = S>>(
        self,
        f: &mut F,
        timers: &mut KeyedTimers<K>,
        changes: &mut Vec<TimerChange>,
        domain: TimeDomain,
        time: Timestamp,
        out: &mut Collector<'_, F::Out>,
    ) -> Option<bool> {
        if !KeyedTimers::<K>::take_if_live(&mut self.entry.timers, domain, time) {
            return None;
        }
        if domain == TimeDomain::EventTime {
            out.set_timestamp(time);
        }
        let keep = self.call(
            f,
            timers,
            changes,
            Some(time),
            Some(domain),
            out,
            |f, ctx| f.on_timer(time, ctx),
        );
        out.clear_timestamp();
        Some(keep)
    }
}

/// Runs a [`KeyedProcessFunction`].
pub struct KeyedProcessOperator<T, K, KS, F: KeyedProcessFunction<K, T>> {
    key_of: KS,
    f: F,
    keys: KeyedTable<K, KeyState<F::State>>,
    timers: KeyedTimers<K>,
    watermark: OperatorWatermark,
    changes: Vec<TimerChange>,
    _types: std::marker::PhantomData<fn(T)>,
}

impl<T: 'static, K: Key, KS: KeySelector<T, K>, F: KeyedProcessFunction<K, T>>
    KeyedProcessOperator<T, K, KS, F>
{
    /// The operator of the subtask `ctx` describes.
    pub fn new(key_of: KS, f: F, ctx: &OperatorContext) -> Self {
        KeyedProcessOperator {
            key_of,
            f,
            keys: KeyedTable::default(),
            timers: KeyedTimers::new(ctx.time.clone()),
            watermark: OperatorWatermark::default(),
            changes: Vec::new(),
            _types: std::marker::PhantomData,
        }
    }

    /// Opens `key`'s entry to `act` in one probe of the table (an empty one made for it if
    /// `create`; else a key without an entry is left alone); the entry goes if `act` says
    /// so (see [`Keyed::call`]).
    fn visit(
        &mut self,
        key: K,
        create: bool,
        act: impl FnOnce(
            Keyed<'_, K, F::State>,
            &mut F,
            &mut KeyedTimers<K>,
            &mut Vec<TimerChange>,
        ) -> bool,
    ) {
        let Self {
            f,
            keys,
            timers,
            watermark,
            changes,
            ..
        } = self;
        let now = timers.now();
        keys.update(key, |key, slot| {
            if slot.is_none() && !create {
                return;
            }
            let entry = slot.get_or_insert_with(|| KeyState {
                value: None,
                timers: TimerList::new(),
            });
            let keyed = Keyed {
                key,
                entry,
                watermark: watermark.get(),
                now,
            };
            if !act(keyed, f, timers, changes) {
                *slot = None;
            }
        });
    }

    /// Fires every timer of `domain` at once (the final watermark, or the end of input)
    /// while keys are on disk: key by key in the table's order, as the window operator
    /// does (see `WindowOperator::fire_every_timer`).
    fn fire_every_timer(
        &mut self,
        domain: TimeDomain,
        out: &mut Collector<'_, F::Out>,
    ) -> Result<()> {
        let mut due = self.timers.take_all_by_owner(domain, |key| (key, ()));
        if due.is_empty() {
            return Ok(());
        }
        let (watermark, now) = (self.watermark.get(), self.timers.now());
        // The table is taken out while it is visited, the rest of the operator used inside.
        let mut keys = std::mem::take(&mut self.keys);
        let fired = keys.retain_each(|key, entry| {
            let mut keep = true;
            for (time, ()) in due.remove(key).into_iter().flatten() {
                let keyed = Keyed {
                    key,
                    entry: &mut *entry,
                    watermark,
                    now,
                };
                let (f, timers, changes) = (&mut self.f, &mut self.timers, &mut self.changes);
                keep = keyed
                    .fire_timer(f, timers, changes, domain, time, out)
                    .unwrap_or(keep);
            }
            Ok(keep)
        });
        self.keys = keys;
        fired
    }

    fn process_record(&mut self, record: T, timestamp: Timestamp, out: &mut Collector<'_, F::Out>) {
        let key = (self.key_of)(&record);
        let ts = (timestamp != NO_TIMESTAMP).then_some(timestamp);
        if let Some(t) = ts {
            out.set_timestamp(t);
        }
        self.visit(key, true, |keyed, f, timers, changes| {
            keyed.call(f, timers, changes, ts, None, out, |f, ctx| {
                f.process_element(record, ctx)
            })
        });
        out.clear_timestamp();
    }

    fn fire(
        &mut self,
        domain: TimeDomain,
        upto: Timestamp,
        out: &mut Collector<'_, F::Out>,
    ) -> Result<()> {
        if upto == Timestamp::MAX && self.keys.len() > self.keys.len_in_memory() {
            self.fire_every_timer(domain, out)?;
        }
        loop {
            let Some((time, key)) = self.timers.pop_due(domain, upto) else {
                return Ok(());
            };
            // One probe: a key gone, or a timer deleted since it was queued, fires nothing.
            self.visit(key, false, |keyed, f, timers, changes| {
                keyed
                    .fire_timer(f, timers, changes, domain, time, out)
                    .unwrap_or(true)
            });
        }
    }
}

impl<T: 'static, K: Key, KS: KeySelector<T, K>, F: KeyedProcessFunction<K, T>> Operator
    for KeyedProcessOperator<T, K, KS, F>
{
    type In = (T,);
    type Out = F::Out;

    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, F::Out>) -> Result<()> {
        for (record, t) in batch.drain() {
            self.process_record(record, t, out);
        }
        Ok(())
    }

    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, F::Out>) -> Result<()> {
        self.watermark.advance(time);
        self.fire(TimeDomain::EventTime, self.watermark.get(), out)
    }

    fn on_processing_time(
        &mut self,
        now: Timestamp,
        out: &mut Collector<'_, F::Out>,
    ) -> Result<()> {
        self.fire(TimeDomain::ProcessingTime, now, out)?;
        self.timers.request_processing_time();
        Ok(())
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new()
            .table("value and timers per key", &mut self.keys)
            .watermark(&mut self.watermark)
    }

    fn restored(&mut self) -> Result<()> {
        let timers = &mut self.timers;
        self.keys
            .for_each_entry(|key, state| timers.restore(&state.timers, || key.clone()));
        // Processing-time timers that fell due while the job was down fire right away.
        self.timers.request_processing_time();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{VecOutput, test_context, test_tier};

    /// Sums a key's values, and emits the key and sum at an event-time timer 100 ms after
    /// the key's first record.
    #[derive(Clone)]
    struct SumThenEmit;

    impl KeyedProcessFunction<u32, (u32, i64)> for SumThenEmit {
        type State = i64;
        type Out = (u32, i64);
        fn process_element(
            &mut self,
            r: (u32, i64),
            ctx: &mut ProcessContext<'_, '_, u32, i64, (u32, i64)>,
        ) {
            if ctx.state().value().is_none() {
                ctx.timer_service().register_event_time_timer(r.1 + 100);
            }
            let sum = ctx.state().value().copied().unwrap_or(0) + r.1;
            ctx.state().update(sum);
        }
        fn on_timer(
            &mut self,
            _t: Timestamp,
            ctx: &mut ProcessContext<'_, '_, u32, i64, (u32, i64)>,
        ) {
            let (key, sum) = (*ctx.key(), ctx.state().value().copied().unwrap_or(0));
            ctx.collect((key, sum));
            ctx.state().clear();
        }
    }

    type Op = KeyedProcessOperator<(u32, i64), u32, fn(&(u32, i64)) -> u32, SumThenEmit>;

    fn feed(op: &mut Op, batch: &[(u32, i64)], watermark: Timestamp) -> Vec<(u32, i64)> {
        let mut sink = VecOutput(Vec::new());
        let (mut buf, mut stamps) = (Vec::new(), Vec::new());
        let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
        let mut b = batch.to_vec();
        let mut ts: Vec<i64> = b.iter().map(|r| r.1).collect();
        op.process(Batch::with_timestamps(&mut b, &mut ts), &mut out)
            .expect("processed");
        op.on_watermark(watermark, &mut out).expect("timers fired");
        out.done().expect("flushed");
        sink.0.sort_unstable();
        sink.0
    }

    /// With room for 16 keys in memory, timers of 1,000 keys fire as they do in memory,
    /// and those left at the final watermark fire without reading any key back one by one.
    #[test]
    fn timers_of_keys_on_disk_fire_as_in_memory() {
        let ctx = test_context("sum");
        let key_of: fn(&(u32, i64)) -> u32 = |r| r.0;
        let (tier, counters) = test_tier(16);
        let mut on_disk = KeyedProcessOperator::new(key_of, SumThenEmit, &ctx);
        on_disk.state().use_disk_tier(&tier);
        let mut in_memory = KeyedProcessOperator::new(key_of, SumThenEmit, &ctx);
        let records: Vec<(u32, i64)> = (0..1000u32)
            .flat_map(|k| (0..4).map(move |t| (k, i64::from(k % 9) * 10 + t * 30)))
            .collect();
        let mut fired = 0;
        for (batch, watermark) in records.chunks(500).zip((0..).map(|w| w * 10)) {
            let got = feed(&mut on_disk, batch, watermark);
            assert_eq!(got, feed(&mut in_memory, batch, watermark));
            fired += got.len();
        }
        crate::assert_mostly_on_disk(on_disk.keys.len(), on_disk.keys.len_in_memory());
        let last =
            crate::fires_without_read_backs(&counters, || feed(&mut on_disk, &[], Timestamp::MAX));
        assert_eq!(last, feed(&mut in_memory, &[], Timestamp::MAX));
        assert!(fired + last.len() >= 1000, "{fired} then {}", last.len());
        assert_eq!(on_disk.keys.len(), 0);
    }
}
