//! The window operator: keeps, per key, the windows records fall into, asks the trigger when
//! to emit, and emits each result with its window's last timestamp (Flink's `WindowOperator`).
//!
//! Rules, as Flink's: an event-time window is late once the watermark has passed its end plus
//! the allowed lateness (its cleanup time); a record is late when every window it belongs to is
//! late, and then goes to the late-data output (counted in the subtask's `late_records`)
//! instead of vanishing. A window's contents are dropped at its cleanup time. Session windows
//! merge when they overlap or touch. Window contents, trigger state and timers are keyed state
//! (checkpointed per key group, so they move with their keys on a rescale), and the operator's
//! watermark is checkpointed with them.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::collector::CollectBuffer;
use crate::error::{HummerError, Result, internal};
use crate::keyed_process_function::TimerService;
use crate::keyed_timers::{KeyedTimers, TimeDomain, TimerChange, TimerList};
use crate::state::SnapshotEpochs;
use crate::state::declared::{DeclaredState, SnapshotAt, StateTable, TablePiece};
use crate::state::disk_tier::{ColdPart, TierUse};
use crate::state::keyed_table::{Epoch, KeyedTable};
use crate::state::snapshot::OperatorWatermark;
use crate::state::snapshot::incremental::ChangeSummary;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{CheckpointId, Key, KeySelector, NO_TIMESTAMP, Timestamp};
use crate::window::functions::{WindowFunction, WindowOutput};
use crate::window::triggers::{Trigger, TriggerContext, TriggerResult};
use crate::window::{TimeWindow, WindowAssigner};
use crate::{Batch, Collector, Operator, OperatorContext};

/// One window of one key: its state, its trigger's number, its timers.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct WindowEntry<A> {
    window: TimeWindow,
    acc: A,
    /// Records added since the window was created or last purged (an empty window does not
    /// emit).
    elements: u64,
    trigger_state: u64,
    timers: TimerList,
    /// The epoch of the accumulator's last change (see [`KeyedTable`]): a delta writes an
    /// entry whose accumulator has not changed since its base as a patch of the rest. Not
    /// encoded: an entry decoded (read back from the disk tier, or restored) does not know
    /// it, and counts as changed ([`ACC_EPOCH_UNKNOWN`]) so that a delta writes it whole.
    #[serde(skip, default = "acc_epoch_unknown")]
    acc_epoch: Epoch,
}

/// The `acc_epoch` of a decoded window: later than any base. (Read back from disk, an entry
/// whose accumulator changed after the base, then left memory, must not be written as an
/// unchanged patch: the base does not have what it holds.)
const ACC_EPOCH_UNKNOWN: Epoch = Epoch::MAX;

fn acc_epoch_unknown() -> Epoch {
    ACC_EPOCH_UNKNOWN
}

/// A key's windows. Most keys have one window at a time (tumbling and global windows, and
/// sessions between merges), held in the table's slot itself: a record and a snapshot reach
/// its window without a second cache miss. More spill to the heap. Encoded as a sequence,
/// like a `Vec`.
type Windows<A> = smallvec::SmallVec<[WindowEntry<A>; 1]>;

/// A record to add to its key's windows, with what the trigger is asked with.
struct Placement<'p, K, T, Acc> {
    key: &'p K,
    /// The key's windows.
    entries: &'p mut Windows<Acc>,
    /// The windows the assigner gave the record.
    windows: &'p [TimeWindow],
    record: T,
    timestamp: Timestamp,
    /// The processing time of the record's batch.
    now: Timestamp,
}

/// How a delta writes one window of a changed key: whole, or as a patch of the entry the
/// restore has (its window found in the key's earlier entries) with the accumulator
/// unchanged or changed as the window function wrote it. A window the base had and the
/// key's list of changes does not name is gone.
#[derive(Serialize)]
enum EntryChangeRef<'a, A> {
    Whole(&'a WindowEntry<A>),
    Patch {
        window: TimeWindow,
        elements: u64,
        trigger_state: u64,
        timers: &'a TimerList,
        acc: AccChangeRef<'a>,
    },
}

/// [`EntryChangeRef`] as a restore reads it.
#[derive(Deserialize)]
enum EntryChange<A> {
    Whole(WindowEntry<A>),
    Patch {
        window: TimeWindow,
        elements: u64,
        trigger_state: u64,
        timers: TimerList,
        acc: AccChange,
    },
}

#[derive(Serialize)]
enum AccChangeRef<'a> {
    Unchanged,
    Changes(#[serde(with = "serde_bytes")] &'a [u8]),
}

#[derive(Deserialize)]
enum AccChange {
    Unchanged,
    Changes(#[serde(with = "serde_bytes")] Vec<u8>),
}

/// How the window operator is set up (by the API).
pub struct WindowSettings<T, A> {
    /// Which windows a record belongs to.
    pub assigner: A,
    /// When windows fire.
    pub trigger: Arc<dyn Trigger<T>>,
    /// How long after its end (in event time) a window still takes late records.
    pub allowed_lateness: i64,
    /// Whether late records are emitted (as [`WindowOutput::Late`]) rather than only counted.
    pub emit_late: bool,
}

impl<T, A: Clone> Clone for WindowSettings<T, A> {
    fn clone(&self) -> Self {
        WindowSettings {
            assigner: self.assigner.clone(),
            trigger: self.trigger.clone(),
            allowed_lateness: self.allowed_lateness,
            emit_late: self.emit_late,
        }
    }
}

/// Everything of the operator but the per-key windows, so both can be borrowed at once.
struct Core<T, K, A, F: WindowFunction<K, T>> {
    settings: WindowSettings<T, A>,
    function: F,
    name: String,
    timers: KeyedTimers<(K, TimeWindow)>,
    watermark: OperatorWatermark,
    metrics: Arc<SubtaskMetrics>,
    requests: Vec<TimerChange>,
    /// What the window function emits when a window fires, before it is wrapped.
    fired: CollectBuffer<F::Out>,
    /// The epoch changes are marked with now (the windows table's).
    epoch: Epoch,
    /// Entries created or with accumulators changed in this epoch that a delta writes whole.
    rewrites: u64,
}

/// Windows per key, a trigger, and a window function.
pub struct WindowOperator<T, K, KS, A, F: WindowFunction<K, T>> {
    key_of: KS,
    core: Core<T, K, A, F>,
    /// Checkpointed incrementally: only keys whose windows changed (see [`KeyedTable`]).
    windows: KeyedTable<K, Windows<F::Acc>>,
    assigned: Vec<TimeWindow>,
}

impl<T, K, KS, A, F> WindowOperator<T, K, KS, A, F>
where
    T: Clone + 'static,
    K: Key,
    KS: KeySelector<T, K>,
    A: WindowAssigner,
    F: WindowFunction<K, T>,
{
    /// A window operator for the subtask `ctx` describes.
    pub fn new(
        key_of: KS,
        settings: WindowSettings<T, A>,
        function: F,
        ctx: &OperatorContext,
    ) -> Self {
        WindowOperator {
            key_of,
            core: Core {
                settings,
                function,
                name: ctx.name.clone(),
                timers: KeyedTimers::new(ctx.time.clone()),
                watermark: OperatorWatermark::default(),
                metrics: ctx.metrics.clone(),
                requests: Vec::new(),
                fired: CollectBuffer::new(),
                epoch: 0,
                rewrites: 0,
            },
            windows: KeyedTable::default(),
            assigned: Vec::new(),
        }
    }

    /// Places one record; `now` is the processing time of its batch (read once per batch).
    fn process_record(
        &mut self,
        record: T,
        timestamp: Timestamp,
        now: Timestamp,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<()> {
        let core = &mut self.core;
        let event_time = core.settings.assigner.is_event_time();
        let time = if event_time {
            if timestamp == NO_TIMESTAMP {
                return Err(HummerError::BadInput {
                    input: format!("a record of event-time window '{}'", core.name),
                    reason: "it has no timestamp: assign timestamps with \
                             assign_timestamps_and_watermarks, or read the source with a \
                             WatermarkStrategy"
                        .into(),
                });
            }
            timestamp
        } else {
            now
        };
        let key = (self.key_of)(&record);
        self.assigned.clear();
        core.settings.assigner.assign(time, &mut self.assigned);
        // One probe for a key that has windows; a new key's state is inserted only if the
        // record opened one.
        let mut opened = Windows::new();
        let existing = self.windows.get_mut(&key);
        let had_windows = existing.is_some();
        let entries = existing.unwrap_or(&mut opened);
        let placement = Placement {
            key: &key,
            entries: &mut *entries,
            windows: &self.assigned,
            record,
            timestamp,
            now,
        };
        let unplaced = core.place(placement, out)?;
        if had_windows {
            if entries.is_empty() {
                self.windows.remove(&key);
            }
        } else if !opened.is_empty() {
            self.windows.insert(key, opened);
        }
        if let Some(record) = unplaced {
            core.late(record, timestamp, out);
        }
        Ok(())
    }

    /// Fires every timer of `domain` at once (the final watermark, or the end of input),
    /// while keys are on disk: key by key in the table's order, those on disk read in file
    /// order (see [`KeyedTable::retain_each`]), rather than in time order, which would read
    /// each key back at random and push others out to be read back in turn (q19 read back
    /// every auction at the end of its input, and wrote 6 GB doing so). A key's timers fire
    /// in time order; timers set meanwhile fire after, in time order.
    fn fire_every_timer(
        &mut self,
        domain: TimeDomain,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<()> {
        let mut due = self.core.timers.take_all_by_owner(domain, |owner| owner);
        if due.is_empty() {
            return Ok(());
        }
        let core = &mut self.core;
        self.windows.retain_each(|key, entries| {
            for (time, window) in due.remove(key).into_iter().flatten() {
                core.on_timer(key, entries, window, domain, time, out)?;
            }
            Ok(!entries.is_empty())
        })
    }

    /// Fires every timer of `domain` due at `upto`.
    fn fire_timers(
        &mut self,
        domain: TimeDomain,
        upto: Timestamp,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<()> {
        if upto == Timestamp::MAX && self.windows.len() > self.windows.len_in_memory() {
            self.fire_every_timer(domain, out)?;
        }
        loop {
            let Some((time, (key, window))) = self.core.timers.pop_due(domain, upto) else {
                return Ok(());
            };
            let Some(entries) = self.windows.get_mut(&key) else {
                continue;
            };
            self.core
                .on_timer(&key, entries, window, domain, time, out)?;
            if entries.is_empty() {
                self.windows.remove(&key);
            }
        }
    }
}

impl<T, K: Key, A: WindowAssigner, F: WindowFunction<K, T>> Core<T, K, A, F>
where
    T: Clone + 'static,
{
    fn cleanup_time(&self, window: &TimeWindow) -> Timestamp {
        if self.settings.assigner.is_event_time() {
            window
                .max_timestamp()
                .saturating_add(self.settings.allowed_lateness)
        } else {
            window.max_timestamp()
        }
    }

    /// A new window's entry, its accumulator fresh.
    fn new_entry(&mut self, window: TimeWindow) -> WindowEntry<F::Acc> {
        self.rewrites += 1;
        WindowEntry {
            window,
            acc: self.function.create(),
            elements: 0,
            trigger_state: 0,
            timers: TimerList::new(),
            acc_epoch: self.epoch,
        }
    }

    /// Notes that an entry's accumulator changed (once per epoch).
    #[inline]
    fn acc_changed(&mut self, entry: &mut WindowEntry<F::Acc>) {
        if entry.acc_epoch != self.epoch {
            entry.acc_epoch = self.epoch;
            if self.function.acc_changes().is_none() {
                self.rewrites += 1;
            }
        }
    }

    fn is_window_late(&self, window: &TimeWindow) -> bool {
        self.settings.assigner.is_event_time() && self.cleanup_time(window) <= self.watermark.get()
    }

    /// A record too late for all its windows: counted, and emitted if asked for.
    fn late(
        &mut self,
        record: T,
        timestamp: Timestamp,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) {
        self.metrics.late_records.fetch_add(1, Ordering::Relaxed);
        if self.settings.emit_late {
            out.collect_with_timestamp(WindowOutput::Late(record), timestamp);
        }
    }

    fn domain(&self) -> TimeDomain {
        if self.settings.assigner.is_event_time() {
            TimeDomain::EventTime
        } else {
            TimeDomain::ProcessingTime
        }
    }

    fn register(
        &mut self,
        key: &K,
        entry: &mut WindowEntry<F::Acc>,
        domain: TimeDomain,
        t: Timestamp,
    ) {
        let window = entry.window;
        self.timers
            .register(&mut entry.timers, domain, t, || (key.clone(), window));
    }

    /// Applies the timer changes the trigger asked for.
    fn apply_requests(&mut self, key: &K, entry: &mut WindowEntry<F::Acc>) {
        let requests = std::mem::take(&mut self.requests);
        let window = entry.window;
        for &change in &requests {
            self.timers
                .apply(&mut entry.timers, change, || (key.clone(), window));
        }
        self.requests = requests;
        self.requests.clear();
    }

    /// Runs a trigger call with its context, then applies its timer requests.
    fn ask_trigger(
        &mut self,
        key: &K,
        entry: &mut WindowEntry<F::Acc>,
        now: Timestamp,
        ask: impl FnOnce(&dyn Trigger<T>, &TimeWindow, &mut TriggerContext<'_>) -> TriggerResult,
    ) -> TriggerResult {
        let mut ctx = TriggerContext {
            timers: TimerService {
                watermark: self.watermark.get(),
                now,
                changes: &mut self.requests,
            },
            state: &mut entry.trigger_state,
        };
        let result = ask(&*self.settings.trigger, &entry.window, &mut ctx);
        self.apply_requests(key, entry);
        result
    }

    /// Emits and/or purges a window as the trigger said.
    fn act(
        &mut self,
        key: &K,
        entry: &mut WindowEntry<F::Acc>,
        result: TriggerResult,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<()> {
        if result.fires() && entry.elements > 0 {
            let function = &mut self.function;
            self.fired
                .run(|c| function.emit(key, &entry.window, &entry.acc, c))?;
            let at = entry.window.max_timestamp();
            for r in self.fired.records().drain(..) {
                out.collect_with_timestamp(WindowOutput::Result(r), at);
            }
        }
        if result.purges() {
            entry.acc = self.function.create();
            entry.elements = 0;
            self.acc_changed(entry);
        }
        Ok(())
    }

    /// Adds a record to its windows; gives it back if every one was late.
    fn place(
        &mut self,
        p: Placement<'_, K, T, F::Acc>,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<Option<T>> {
        if self.settings.assigner.is_merging() {
            self.add_merging(p, out)
        } else {
            self.add(p, out)
        }
    }

    /// Adds a record to its (non-merging) windows; gives it back if every one was late.
    fn add(
        &mut self,
        p: Placement<'_, K, T, F::Acc>,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<Option<T>> {
        let last_open = p.windows.iter().rposition(|w| !self.is_window_late(w));
        let Some(last_open) = last_open else {
            return Ok(Some(p.record));
        };
        let mut record = Some(p.record);
        for (i, window) in p.windows.iter().enumerate() {
            if self.is_window_late(window) {
                continue;
            }
            let idx = match p.entries.iter().position(|e| e.window == *window) {
                Some(i) => i,
                None => {
                    p.entries.push(self.new_entry(*window));
                    p.entries.len() - 1
                }
            };
            let entry = &mut p.entries[idx];
            let Some(r) = &record else {
                return Err(internal!("a window record was used up early"));
            };
            let result = self.ask_trigger(p.key, entry, p.now, |t, w, ctx| {
                t.on_element(r, p.timestamp, w, ctx)
            });
            // The last open window takes the record itself, the others a copy.
            let value = if i == last_open {
                record.take()
            } else {
                record.clone()
            };
            if let Some(v) = value {
                self.function.add(&mut entry.acc, v);
            }
            self.acc_changed(entry);
            entry.elements += 1;
            let cleanup = self.cleanup_time(window);
            self.register(p.key, entry, self.domain(), cleanup);
            self.act(p.key, entry, result, out)?;
        }
        Ok(None)
    }

    /// Adds a record to a session window, merging the windows it overlaps or touches; gives
    /// it back if the merged window would be late.
    fn add_merging(
        &mut self,
        p: Placement<'_, K, T, F::Acc>,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<Option<T>> {
        let Some(&new) = p.windows.first() else {
            return Ok(None);
        };
        let overlapping: Vec<usize> = (0..p.entries.len())
            .filter(|&i| p.entries[i].window.intersects(&new))
            .collect();
        let merged = overlapping
            .iter()
            .fold(new, |w, &i| w.cover(&p.entries[i].window));
        if self.is_window_late(&merged) {
            return Ok(Some(p.record));
        }
        let mut entry = self.new_entry(merged);
        for &i in overlapping.iter().rev() {
            // The old window's queued timers go stale with it (skipped when they come up).
            let old = p.entries.swap_remove(i);
            self.function.merge(&mut entry.acc, old.acc);
            entry.elements += old.elements;
            entry.trigger_state += old.trigger_state;
        }
        if !overlapping.is_empty() && (overlapping.len() > 1 || merged != new) {
            self.ask_trigger(p.key, &mut entry, p.now, |t, w, ctx| {
                t.on_merge(w, ctx);
                TriggerResult::Continue
            });
        }
        let result = self.ask_trigger(p.key, &mut entry, p.now, |t, w, ctx| {
            t.on_element(&p.record, p.timestamp, w, ctx)
        });
        self.function.add(&mut entry.acc, p.record);
        entry.elements += 1;
        let cleanup = self.cleanup_time(&merged);
        self.register(p.key, &mut entry, self.domain(), cleanup);
        self.act(p.key, &mut entry, result, out)?;
        p.entries.push(entry);
        Ok(None)
    }

    /// A timer of a key's window fired.
    fn on_timer(
        &mut self,
        key: &K,
        entries: &mut Windows<F::Acc>,
        window: TimeWindow,
        domain: TimeDomain,
        time: Timestamp,
        out: &mut Collector<'_, WindowOutput<F::Out, T>>,
    ) -> Result<()> {
        let Some(idx) = entries.iter().position(|e| e.window == window) else {
            return Ok(());
        };
        let now = self.timers.now();
        let entry = &mut entries[idx];
        if !KeyedTimers::<(K, TimeWindow)>::take_if_live(&mut entry.timers, domain, time) {
            // Deleted since it was queued.
            return Ok(());
        }
        let result = self.ask_trigger(key, entry, now, |t, w, ctx| {
            t.on_timer(domain, time, w, ctx)
        });
        self.act(key, entry, result, out)?;
        if domain == self.domain() && time == self.cleanup_time(&window) {
            self.ask_trigger(key, entry, now, |t, w, ctx| {
                t.clear(w, ctx);
                TriggerResult::Continue
            });
            // The window's other queued timers go stale with it.
            entries.swap_remove(idx);
        }
        Ok(())
    }
}

impl<
    T: Clone + Send + 'static,
    K: Key,
    KS: KeySelector<T, K>,
    A: WindowAssigner,
    F: WindowFunction<K, T>,
> Operator for WindowOperator<T, K, KS, A, F>
{
    type In = (T,);
    type Out = WindowOutput<F::Out, T>;

    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        let now = self.core.timers.now();
        batch
            .drain()
            .try_for_each(|(record, t)| self.process_record(record, t, now, out))
    }

    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        self.core.watermark.advance(time);
        let w = self.core.watermark.get();
        self.fire_timers(TimeDomain::EventTime, w, out)
    }

    fn on_processing_time(
        &mut self,
        now: Timestamp,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        self.fire_timers(TimeDomain::ProcessingTime, now, out)?;
        self.core.timers.request_processing_time();
        Ok(())
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        // Nothing follows: processing-time windows still open fire now rather than being
        // lost (event-time ones fired at the final watermark).
        self.fire_timers(TimeDomain::ProcessingTime, Timestamp::MAX, out)
    }

    fn state(&mut self) -> DeclaredState<'_> {
        let Self { core, windows, .. } = self;
        let table = WindowTable {
            windows,
            function: &core.function,
            rewrites: &mut core.rewrites,
            epoch: &mut core.epoch,
            _records: PhantomData,
        };
        DeclaredState::new()
            .table("windows", table)
            .watermark(&mut core.watermark)
    }

    fn restored(&mut self) -> Result<()> {
        let Self { core, windows, .. } = self;
        let timers = &mut core.timers;
        windows.for_each_entry(|key, entries| {
            for e in entries {
                timers.restore(&e.timers, || (key.clone(), e.window));
            }
        });
        // Processing-time timers that fell due while the job was down fire right away.
        core.timers.request_processing_time();
        Ok(())
    }
}

/// The per-key windows as the runtime checkpoints them: a delta writes a changed key's
/// windows as patches on its base ([`write_patch`]) unless their accumulators were rewritten,
/// so its size goes by the rewrites counted since the base, not by the keys touched.
struct WindowTable<'a, K, T, F: WindowFunction<K, T>> {
    windows: &'a mut KeyedTable<K, Windows<F::Acc>>,
    function: &'a F,
    rewrites: &'a mut u64,
    epoch: &'a mut Epoch,
    _records: PhantomData<fn(T)>,
}

impl<K, T, F> StateTable for WindowTable<'_, K, T, F>
where
    K: Key,
    F: WindowFunction<K, T>,
{
    fn change_summary(&mut self) -> Option<ChangeSummary> {
        let live = self.windows.len();
        let changes = &mut self.windows.changes;
        changes.rewritten(std::mem::take(self.rewrites));
        Some(changes.summary(live, changes.rewritten_since_base()))
    }

    fn estimated_snapshot_bytes(&self) -> usize {
        self.windows.estimated_snapshot_bytes()
    }

    fn append_snapshot(&mut self, out: &mut Vec<u8>, at: &SnapshotAt) -> Result<Option<ColdPart>> {
        let function = self.function;
        let (mut scratch, mut patch_scratch) = (Vec::new(), Vec::new());
        let cold = self.windows.append_patched(
            out,
            at.checkpoint,
            at.max_parallelism,
            at.watermark,
            at.delta,
            |entries, epochs| {
                if let Some(changes) = function.acc_changes() {
                    for e in entries {
                        scratch.clear();
                        changes.write_changes(&mut e.acc, epochs, &mut scratch)?;
                    }
                }
                Ok(())
            },
            |entries, epochs, out| write_patch(function, entries, epochs, &mut patch_scratch, out),
        )?;
        *self.epoch = self.windows.changes.epoch;
        Ok(cold)
    }

    fn restore(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        let (table, groups, what) = (&piece.table, piece.key_groups.clone(), &piece.what);
        let function = self.function;
        if table.is_delta() {
            let apply = |_: &K, before: Option<Windows<F::Acc>>, changes| {
                apply_patch(function, before.unwrap_or_default(), changes)
            };
            self.windows.restore_patched(table, groups, what, apply)?;
        } else {
            self.windows.restore_table(table, groups, what)?;
        }
        *self.epoch = self.windows.changes.epoch;
        Ok(())
    }

    fn restore_cold(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        self.windows.restore_cold(piece)?;
        *self.epoch = self.windows.changes.epoch;
        Ok(())
    }

    fn checkpoint_complete(&mut self, id: CheckpointId) {
        self.windows.checkpoint_complete(id);
    }

    /// A key's windows may go to disk, unless the accumulators write their own changes: a
    /// whole snapshot notes in such an accumulator what it took, which an entry on disk
    /// could not keep.
    fn use_disk_tier(&mut self, tier: &TierUse) {
        if self.function.acc_changes().is_none() {
            StateTable::use_disk_tier(self.windows, tier);
        }
    }
}

/// Writes a changed key's windows into a delta on `epochs`' base: each window whole if it is
/// new or its accumulator changed (and the function does not write its changes), else as a
/// patch ([`EntryChangeRef`]).
fn write_patch<K, T, F: WindowFunction<K, T>>(
    function: &F,
    entries: &mut [WindowEntry<F::Acc>],
    epochs: SnapshotEpochs,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let base = epochs
        .base
        .ok_or_else(|| internal!("a window patch without a base"))?;
    append(out, &entries.len())?;
    for e in entries.iter_mut() {
        let acc = if e.acc_epoch <= base {
            Some(AccChangeRef::Unchanged)
        } else {
            scratch.clear();
            let written = match function.acc_changes() {
                Some(changes) => changes.write_changes(&mut e.acc, epochs, scratch)?,
                None => false,
            };
            written.then_some(AccChangeRef::Changes(scratch))
        };
        match acc {
            Some(acc) => {
                let patch: EntryChangeRef<'_, F::Acc> = EntryChangeRef::Patch {
                    window: e.window,
                    elements: e.elements,
                    trigger_state: e.trigger_state,
                    timers: &e.timers,
                    acc,
                };
                append(out, &patch)?
            }
            None => append(out, &EntryChangeRef::Whole(&*e))?,
        }
    }
    Ok(())
}

/// A key's windows after a delta's `changes` on its windows before (`old`); an error names
/// what does not fit.
fn apply_patch<K, T, F: WindowFunction<K, T>>(
    function: &F,
    mut old: Windows<F::Acc>,
    changes: Vec<EntryChange<F::Acc>>,
) -> std::result::Result<Windows<F::Acc>, String> {
    let mut entries = Windows::with_capacity(changes.len());
    for change in changes {
        match change {
            EntryChange::Whole(e) => entries.push(e),
            EntryChange::Patch {
                window,
                elements,
                trigger_state,
                timers,
                acc,
            } => {
                let Some(i) = old.iter().position(|e| e.window == window) else {
                    return Err(format!(
                        "a delta patches window {window:?}, which its base does not have"
                    ));
                };
                let mut e = old.swap_remove(i);
                if let AccChange::Changes(bytes) = acc {
                    function
                        .acc_changes()
                        .ok_or("accumulator changes in a checkpoint, for a window function that writes none")?
                        .apply_changes(&mut e.acc, &bytes)
                        .map_err(|err| err.to_string())?;
                }
                e.elements = elements;
                e.trigger_state = trigger_state;
                e.timers = timers;
                entries.push(e);
            }
        }
    }
    Ok(entries)
}

/// Appends one postcard value to a snapshot being written.
fn append(out: &mut Vec<u8>, value: &impl Serialize) -> Result<()> {
    postcard::to_io(value, out)
        .map(|_| ())
        .map_err(|e| internal!("cannot encode a window snapshot: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::{
        AccChanges, AggregateFunction, AggregateWindow, CountAggregate, TumblingEventTimeWindows,
        WindowResult,
    };
    use crate::{Checkpointed, VecOutput, test_context};

    type CountOp = WindowOperator<
        (u32, i64),
        u32,
        fn(&(u32, i64)) -> u32,
        TumblingEventTimeWindows,
        AggregateWindow<(u32, i64), CountAggregate>,
    >;

    type Op<A> = WindowOperator<
        (u32, i64),
        u32,
        fn(&(u32, i64)) -> u32,
        TumblingEventTimeWindows,
        AggregateWindow<(u32, i64), A>,
    >;

    /// An operator of `agg` over tumbling windows of `size` ms.
    fn op_of<A: AggregateFunction<(u32, i64)>>(agg: A, size: u64, lateness: i64) -> Op<A> {
        let ctx = test_context("count");
        let assigner = TumblingEventTimeWindows::of(std::time::Duration::from_millis(size));
        let settings = WindowSettings {
            assigner,
            trigger: assigner.default_trigger::<(u32, i64)>(),
            allowed_lateness: lateness,
            emit_late: true,
        };
        let function = AggregateWindow {
            agg,
            _types: std::marker::PhantomData,
        };
        WindowOperator::new(|r: &(u32, i64)| r.0, settings, function, &ctx)
    }

    fn count_op(lateness: i64) -> CountOp {
        op_of(CountAggregate, 50, lateness)
    }

    /// The distinct timestamps of a window, in a [`GrowSet`](crate::state::GrowSet) that
    /// checkpoints the ones added since the base.
    #[derive(Clone)]
    struct Distinct;

    impl AggregateFunction<(u32, i64)> for Distinct {
        type Acc = crate::state::GrowSet<i64>;
        type Out = usize;
        fn create_accumulator(&self) -> Self::Acc {
            Default::default()
        }
        fn add(&self, r: &(u32, i64), acc: &mut Self::Acc) {
            acc.insert(r.1);
        }
        fn get_result(&self, acc: &Self::Acc) -> usize {
            acc.len()
        }
        fn merge(&self, mut a: Self::Acc, b: Self::Acc) -> Self::Acc {
            a.extend(b.iter());
            a
        }
        fn acc_changes(&self) -> Option<&dyn AccChanges<Self::Acc>> {
            Some(self)
        }
    }

    impl AccChanges<crate::state::GrowSet<i64>> for Distinct {
        fn write_changes(
            &self,
            acc: &mut crate::state::GrowSet<i64>,
            epochs: SnapshotEpochs,
            out: &mut Vec<u8>,
        ) -> Result<bool> {
            match acc.changes(epochs) {
                Some(added) => {
                    out.extend(postcard::to_allocvec(added).unwrap());
                    Ok(true)
                }
                None => Ok(false),
            }
        }
        fn apply_changes(
            &self,
            acc: &mut crate::state::GrowSet<i64>,
            changes: &[u8],
        ) -> Result<()> {
            let added: Vec<i64> = postcard::from_bytes(changes).unwrap();
            acc.extend(&added);
            Ok(())
        }
    }

    /// Feeds `batch` then `watermark`; returns what came out, as sorted text.
    fn feed<A: AggregateFunction<(u32, i64)>>(
        op: &mut Op<A>,
        batch: &[(u32, i64)],
        watermark: Timestamp,
    ) -> Vec<String>
    where
        A::Out: std::fmt::Debug,
    {
        let mut sink = VecOutput(Vec::new());
        let (mut buf, mut stamps) = (Vec::new(), Vec::new());
        let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
        let mut b = batch.to_vec();
        let mut ts: Vec<i64> = b.iter().map(|r| r.1).collect();
        op.process(Batch::with_timestamps(&mut b, &mut ts), &mut out)
            .unwrap();
        op.on_watermark(watermark, &mut out).unwrap();
        out.done().unwrap();
        let mut got: Vec<String> = sink.0.iter().map(|r| format!("{r:?}")).collect();
        got.sort();
        got
    }

    #[test]
    fn a_restored_delta_brings_back_the_watermark_it_was_taken_at() {
        let mut op = count_op(0);
        feed(&mut op, &(0..1000).map(|k| (k, 55)).collect::<Vec<_>>(), 10);
        let full = op.snapshot_state(1, 128).unwrap().unwrap();
        op.checkpoint_complete(1).unwrap();
        // One key's window [0, 50) opens and fires; the thousand windows [50, 100) stay.
        let fired = feed(&mut op, &[(1, 5)], 60);
        assert_eq!(fired.len(), 1);
        let delta = op.snapshot_state(2, 128).unwrap().unwrap();
        assert_eq!(crate::state::snapshot::delta_base(&delta), Some(1));
        let mut restored = count_op(0);
        (restored.restore_pieces([&full[..], &delta[..]], 0..128)).unwrap();
        assert_eq!(restored.core.watermark.get(), 60);
        // A record for [0, 50) is late, as it was before the restore; [50, 100) still counts.
        let after = feed(&mut restored, &[(2, 20), (2, 70)], 200);
        let expected = feed(&mut op, &[(2, 20), (2, 70)], 200);
        assert_eq!(after, expected);
        assert!(after.iter().any(|r| r.starts_with("Late")), "{after:?}");
        assert_eq!(
            after.len(),
            1001,
            "every [50, 100) window fires once, and the late record"
        );
    }

    proptest::proptest! {
        /// A window operator restored from any of its checkpoints (a full snapshot, or a chain
        /// of deltas on one, whichever checkpoints completed) then fed the rest of the stream
        /// emits exactly what the operator that never stopped emitted after that checkpoint:
        /// the same windows, contents, timers and watermark (so the same late records).
        /// The same with accumulators that write their changes (distinct sets): windows are
        /// patched, their sets completed from the ids a delta lists.
        #[test]
        fn a_window_operator_restored_from_any_chain_goes_on_as_if_never_stopped(
            steps in proptest::collection::vec(
                (proptest::collection::vec((0u32..300, 0i64..120), 0..30), proptest::bool::ANY),
                1..14),
            lateness in 0i64..30,
            distinct in proptest::bool::ANY,
            on_disk in proptest::option::of(1usize..20),
        ) {
            if distinct {
                restored_chains_go_on(|| tiered(op_of(Distinct, 50, lateness), on_disk), &steps)?;
            } else {
                restored_chains_go_on(|| tiered(count_op(lateness), on_disk), &steps)?;
            }
        }
    }

    /// `op` with room for `room` keys in memory, if given: most go to disk (before a restore
    /// too, as the runtime attaches the tier), unless the accumulators write their changes.
    fn tiered<A: AggregateFunction<(u32, i64)>>(mut op: Op<A>, room: Option<usize>) -> Op<A> {
        if let Some(room) = room {
            op.state().use_disk_tier(&crate::test_tier(room).0);
        }
        op
    }

    /// Runs `steps` through an operator from `make` with a snapshot after each (completed
    /// if the step says so); then, from every snapshot's chain, a restored operator fed the
    /// rest must emit what the first one emitted after it.
    fn restored_chains_go_on<A: AggregateFunction<(u32, i64)>>(
        make: impl Fn() -> Op<A>,
        steps: &[(Vec<(u32, i64)>, bool)],
    ) -> std::result::Result<(), proptest::test_runner::TestCaseError>
    where
        A::Out: std::fmt::Debug,
    {
        {
            // Step i: records stamped 20 * i - 80 to 20 * i + 40 (some late), then the
            // watermark 20 * i - 10.
            let inputs: Vec<(Vec<(u32, i64)>, Timestamp)> = steps
                .iter()
                .enumerate()
                .map(|(i, (records, _))| {
                    let base = 20 * i as i64;
                    (
                        records.iter().map(|(k, dt)| (*k, base + dt - 80)).collect(),
                        base - 10,
                    )
                })
                .collect();
            let mut op = make();
            let mut emitted = Vec::new();
            let mut stored = std::collections::HashMap::new();
            for (i, ((batch, watermark), (_, complete))) in inputs.iter().zip(steps).enumerate() {
                emitted.push(feed(&mut op, batch, *watermark));
                let id = i as u64 + 1;
                stored.insert(id, op.snapshot_state(id, 128).unwrap().unwrap());
                if *complete {
                    op.checkpoint_complete(id).unwrap();
                }
            }
            emitted.push(feed(&mut op, &[], Timestamp::MAX));
            for id in 1..=steps.len() as u64 {
                let mut chain = vec![stored[&id].clone()];
                while let Some(base) = crate::state::snapshot::delta_base(&chain[chain.len() - 1]) {
                    chain.push(stored[&base].clone());
                }
                let mut restored = make();
                let pieces = chain.iter().rev().map(Vec::as_slice);
                restored.restore_pieces(pieces, 0..128).unwrap();
                let mut rest = Vec::new();
                for (batch, watermark) in &inputs[id as usize..] {
                    rest.push(feed(&mut restored, batch, *watermark));
                }
                rest.push(feed(&mut restored, &[], Timestamp::MAX));
                proptest::prop_assert_eq!(&rest[..], &emitted[id as usize..], "checkpoint {}", id);
            }
        }
        Ok(())
    }

    /// A thousand keys with large windows: once every window has fired (but stays, for its
    /// allowed lateness), and once each gained one id, the delta holds patches, not the
    /// windows' contents again; restored from the chain, the operator goes on the same.
    #[test]
    fn deltas_patch_windows_that_fired_or_grew_instead_of_writing_them_again() {
        let mut op = op_of(Distinct, 1_000, 10_000);
        let records: Vec<(u32, i64)> = (0..1000u32)
            .flat_map(|k| (0..400).map(move |t| (k, t)))
            .collect();
        feed(&mut op, &records, 10);
        let full = op.snapshot_state(1, 128).unwrap().unwrap();
        op.checkpoint_complete(1).unwrap();
        // Every window [0, 1000) fires and stays (lateness), a change of its timers alone.
        let fired = feed(&mut op, &[], 1_000);
        assert_eq!(fired.len(), 1000);
        let after_firing = op.snapshot_state(2, 128).unwrap().unwrap();
        op.checkpoint_complete(2).unwrap();
        // Then every window gains one timestamp, a late record within the lateness.
        let grown: Vec<(u32, i64)> = (0..1000u32).map(|k| (k, 450)).collect();
        let refired = feed(&mut op, &grown, 1_000);
        let after_growing = op.snapshot_state(3, 128).unwrap().unwrap();
        for (id, delta) in [(1, &after_firing), (2, &after_growing)] {
            assert_eq!(crate::state::snapshot::delta_base(delta), Some(id));
            assert!(
                delta.len() * 20 < full.len(),
                "a delta of {} bytes beside {} whole",
                delta.len(),
                full.len()
            );
        }
        let mut restored = op_of(Distinct, 1_000, 10_000);
        let pieces = [&full[..], &after_firing[..], &after_growing[..]];
        restored.restore_pieces(pieces, 0..128).unwrap();
        let more: Vec<(u32, i64)> = (0..1000u32).map(|k| (k, 460)).collect();
        assert_eq!(
            feed(&mut restored, &more, 1_000),
            feed(&mut op, &more, 1_000)
        );
        assert!(
            refired.len() == 1000 && refired.iter().all(|r| r.ends_with("value: 401 })")),
            "{:?}",
            &refired[..2]
        );
    }

    /// With room for 16 keys in memory, windows of 1,000 keys fire as they do in memory,
    /// those due at a watermark one key at a time, and all that are left at the final
    /// watermark in the table's order, without reading any key back.
    #[test]
    fn windows_on_disk_fire_as_in_memory() {
        let (tier, counters) = crate::test_tier(16);
        let mut on_disk = count_op(60);
        on_disk.state().use_disk_tier(&tier);
        let mut in_memory = count_op(60);
        let records: Vec<(u32, i64)> = (0..1000u32)
            .flat_map(|k| (0..6).map(move |t| (k, i64::from(k % 7) * 10 + t * 25)))
            .collect();
        for (batch, watermark) in records.chunks(700).zip((0..).map(|w| w * 8)) {
            assert_eq!(
                feed(&mut on_disk, batch, watermark),
                feed(&mut in_memory, batch, watermark)
            );
        }
        crate::assert_mostly_on_disk(on_disk.windows.len(), on_disk.windows.len_in_memory());
        let fired =
            crate::fires_without_read_backs(&counters, || feed(&mut on_disk, &[], Timestamp::MAX));
        assert_eq!(fired, feed(&mut in_memory, &[], Timestamp::MAX));
        assert!(fired.len() > 1000, "{} results", fired.len());
        assert_eq!(on_disk.windows.len(), 0);
    }

    /// An endless stream over 10,000 keys: windows and their timers are dropped once the
    /// watermark passes them, so state holds only the windows still open.
    #[test]
    fn windows_are_cleaned_up_on_a_long_stream() {
        let ctx = test_context("count");
        let assigner = TumblingEventTimeWindows::of(std::time::Duration::from_millis(100));
        let settings = WindowSettings {
            assigner,
            trigger: assigner.default_trigger::<(u32, i64)>(),
            allowed_lateness: 20,
            emit_late: false,
        };
        let function = AggregateWindow {
            agg: CountAggregate,
            _types: std::marker::PhantomData,
        };
        let mut op = WindowOperator::new(|r: &(u32, i64)| r.0, settings, function, &ctx);
        let mut sink = VecOutput(Vec::new());
        let (mut buf, mut stamps) = (Vec::new(), Vec::new());
        let (mut peak_keys, mut peak_timers, mut fired) = (0, 0, 0u64);
        for chunk in 0..1_000i64 {
            let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
            let mut batch: Vec<(u32, i64)> = (0..200)
                .map(|i| (((chunk * 200 + i) % 10_000) as u32, chunk * 10 + i % 10))
                .collect();
            let mut ts: Vec<i64> = batch.iter().map(|r| r.1).collect();
            op.process(Batch::with_timestamps(&mut batch, &mut ts), &mut out)
                .unwrap();
            op.on_watermark(chunk * 10 - 1, &mut out).unwrap();
            out.done().unwrap();
            for r in sink.0.drain(..) {
                if let WindowOutput::Result(WindowResult { value: n, .. }) = r {
                    fired += n;
                }
            }
            peak_keys = peak_keys.max(op.windows.len());
            peak_timers = peak_timers.max(op.core.timers.event_len());
        }
        let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
        op.on_watermark(Timestamp::MAX, &mut out).unwrap();
        out.done().unwrap();
        for r in sink.0.drain(..) {
            if let WindowOutput::Result(WindowResult { value: n, .. }) = r {
                fired += n;
            }
        }
        assert_eq!(fired, 200_000, "every record counted once");
        assert!(op.windows.is_empty() && op.core.timers.event_len() == 0);
        // Keys seen within the open windows (a few hundred ms of the stream), not all 10,000
        // keys times the 100 windows that passed.
        assert!(
            peak_keys <= 10_000 && peak_timers <= 3 * 10_000,
            "{peak_keys} {peak_timers}"
        );
        assert!(
            peak_timers < 100 * 200,
            "timers of closed windows are gone: {peak_timers}"
        );
    }
}
