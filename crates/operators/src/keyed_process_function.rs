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
use crate::types::{Data, Key, NO_TIMESTAMP, Timestamp};
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

impl<T: 'static, K: Key, KS: Fn(&T) -> K + Send + 'static, F: KeyedProcessFunction<K, T>>
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

    /// Calls the function for `key` (a record, or a timer when `domain` is set).
    fn call(
        &mut self,
        key: K,
        timestamp: Option<Timestamp>,
        domain: Option<TimeDomain>,
        out: &mut Collector<'_, F::Out>,
        body: impl FnOnce(&mut F, &mut ProcessContext<'_, '_, K, F::State, F::Out>),
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
            let entry = slot.get_or_insert_with(|| KeyState {
                value: None,
                timers: TimerList::new(),
            });
            let mut ctx = ProcessContext {
                key,
                timestamp,
                domain,
                state: ValueState::new(&mut entry.value),
                timers: TimerService {
                    watermark: watermark.get(),
                    now,
                    changes,
                },
                out,
            };
            body(f, &mut ctx);
            for change in changes.drain(..) {
                timers.apply(&mut entry.timers, change, || key.clone());
            }
            if entry.value.is_none() && entry.timers.is_empty() {
                *slot = None;
            }
        });
    }

    fn process_record(&mut self, record: T, timestamp: Timestamp, out: &mut Collector<'_, F::Out>) {
        let key = (self.key_of)(&record);
        let ts = (timestamp != NO_TIMESTAMP).then_some(timestamp);
        if let Some(t) = ts {
            out.set_timestamp(t);
        }
        self.call(key, ts, None, out, |f, ctx| f.process_element(record, ctx));
        out.clear_timestamp();
    }

    fn fire(&mut self, domain: TimeDomain, upto: Timestamp, out: &mut Collector<'_, F::Out>) {
        loop {
            let Some((time, key)) = self.timers.pop_due(domain, upto) else {
                return;
            };
            let live = self.keys.get_mut(&key).is_some_and(|entry| {
                KeyedTimers::<K>::take_if_live(&mut entry.timers, domain, time)
            });
            if !live {
                // Deleted since it was queued.
                continue;
            }
            if domain == TimeDomain::EventTime {
                out.set_timestamp(time);
            }
            self.call(key, Some(time), Some(domain), out, |f, ctx| {
                f.on_timer(time, ctx)
            });
            out.clear_timestamp();
        }
    }
}

impl<T, K, KS, F> Operator for KeyedProcessOperator<T, K, KS, F>
where
    T: 'static,
    K: Key,
    KS: Fn(&T) -> K + Send + 'static,
    F: KeyedProcessFunction<K, T>,
{
    type In = (T,);
    type Out = F::Out;

    fn process_batch(
        &mut self,
        batch: Batch<'_, T>,
        out: &mut Collector<'_, F::Out>,
    ) -> Result<()> {
        for (record, t) in batch.drain() {
            self.process_record(record, t, out);
        }
        Ok(())
    }

    fn on_time(
        &mut self,
        domain: TimeDomain,
        time: Timestamp,
        out: &mut Collector<'_, F::Out>,
    ) -> Result<()> {
        match domain {
            TimeDomain::EventTime => {
                self.watermark.advance(time);
                self.fire(domain, self.watermark.get(), out);
            }
            TimeDomain::ProcessingTime => {
                self.fire(domain, time, out);
                self.timers.request_processing_time();
            }
        }
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
