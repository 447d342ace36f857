//! The loop of one subtask thread.
//!
//! A task is a chain head driven by its inputs: a source reader, or one or two input gates.
//! It hands each batch to the fused chain, flushes the chain's output buffers when its input
//! runs dry or the buffer timeout has passed, and parks (never spins) while there is nothing
//! to do. End of input arrives per channel; when every channel has ended, the chain is
//! finished, which emits batch-mode results and ends the downstream channels in turn.
//!
//! With checkpoints, a source task injects a barrier when the coordinator triggers one; a task
//! with inputs hands every barrier to its [`BarrierAligner`], stops reading an input that has
//! delivered the barrier until all have, then snapshots its chain (which forwards the barrier)
//! and acknowledges. Completions reach the chain (and its sinks) on the next turn of the loop.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::chain::{Link, guarded};
use crate::channels::NetworkTask;
use crate::channels::local::ChannelReceiver;
use crate::checkpoint::barrier_aligner::{BarrierAction, BarrierAligner};
use crate::checkpoint::hub::{CheckpointHub, HubEvent};
use crate::connectors::SourceStatus;
use crate::error::{HummerError, Result};
use crate::operators::{Control, Operator, OperatorContext, Output};
use crate::source_splits::SourceSplits;
use crate::state::task_state::{SourceSplit, TaskAck, TaskSnapshot};
use crate::types::CancelToken;
use crate::types::CheckpointId;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{
    PARK_SAFETY_TIMEOUT, ProcessingTimeService, StreamEvent, Timestamp, WatermarkStatus,
};
use crate::watermark_valve::{ValveChange, WatermarkValve};

/// What a task needs from its surroundings while it runs.
pub struct TaskRuntime {
    /// Cancels the task.
    pub cancel: CancelToken,
    /// How long records may wait in an output buffer before it is flushed.
    pub buffer_timeout: Option<Duration>,
    /// The subtask's counters.
    pub metrics: Arc<SubtaskMetrics>,
    /// Global index of the subtask (for acknowledgements).
    pub task: usize,
    /// Key groups of the job.
    pub max_parallelism: usize,
    /// The checkpoint coordinator's hub, when the job takes checkpoints.
    pub checkpoints: Option<Arc<CheckpointHub>>,
    /// Processing time, and the deadlines the chain's operators asked to be called at.
    pub time: ProcessingTimeService,
}

impl TaskRuntime {
    /// `Err(Cancelled)` once the task has been cancelled.
    #[inline]
    pub fn check_cancelled(&self) -> Result<()> {
        if self.cancel.is_cancelled() {
            return Err(HummerError::Cancelled);
        }
        Ok(())
    }

    /// Calls the chain's processing-time hooks if a deadline they asked for has passed.
    #[inline]
    pub fn fire_processing_time(&self, fire: impl FnOnce(Timestamp) -> Result<()>) -> Result<()> {
        match self.time.take_due() {
            Some(now) => fire(now),
            None => Ok(()),
        }
    }

    /// How long a task with nothing to do may park: until the next processing-time deadline,
    /// at most `wait`.
    pub fn park_time(&self, wait: Duration) -> Duration {
        let next = self.time.next_deadline();
        if next == Timestamp::MAX {
            return wait;
        }
        let until = next.saturating_sub(self.time.now()).max(0) as u64;
        wait.min(Duration::from_millis(until))
    }
}

/// A task's checkpoint bookkeeping: barrier alignment, acknowledgements, completions.
pub struct Checkpointing<'a> {
    rt: &'a TaskRuntime,
    aligner: BarrierAligner,
    /// Newest completion passed to the chain.
    notified: CheckpointId,
}

impl<'a> Checkpointing<'a> {
    /// Barrier alignment over `inputs` input channels.
    pub fn new(rt: &'a TaskRuntime, inputs: usize) -> Self {
        Checkpointing {
            rt,
            aligner: BarrierAligner::new(inputs),
            notified: rt.checkpoints.as_ref().map_or(0, |h| h.restored()),
        }
    }

    /// Takes the chain's snapshot (`barrier` forwards the barrier through it) and acknowledges;
    /// a source task adds its split positions first (`sources`: its node and the positions,
    /// `None` if the source cannot be replayed).
    pub fn snapshot(
        &mut self,
        id: CheckpointId,
        alignment: Duration,
        barrier: impl FnOnce(&mut TaskSnapshot) -> Result<()>,
        sources: Option<(usize, Vec<SourceSplit>)>,
    ) -> Result<()> {
        let started = Instant::now();
        let mut snapshot = TaskSnapshot::new(id, self.rt.max_parallelism);
        snapshot.sources.extend(sources);
        snapshot.is_final =
            (self.rt.checkpoints.as_ref()).is_some_and(|h| h.is_final_barrier(id, &self.rt.cancel));
        barrier(&mut snapshot)?;
        let written: usize = snapshot.operators.iter().map(|(_, b)| b.len()).sum();
        (self.rt.metrics.checkpointed_bytes).store(written as u64, Ordering::Relaxed);
        if let Some(hub) = &self.rt.checkpoints {
            hub.report(HubEvent::Ack(TaskAck {
                task: self.rt.task,
                snapshot,
                alignment,
                sync: started.elapsed(),
                state_in_files: false,
            }));
        }
        Ok(())
    }

    /// Carries out what the aligner decided.
    pub fn perform(
        &mut self,
        action: BarrierAction,
        barrier: impl FnOnce(&mut TaskSnapshot) -> Result<()>,
    ) -> Result<()> {
        match action {
            BarrierAction::Snapshot { id, alignment } => {
                self.snapshot(id, alignment, barrier, None)
            }
            BarrierAction::Abort { aborted, then } => {
                if let Some(hub) = &self.rt.checkpoints {
                    hub.report(HubEvent::Decline {
                        task: self.rt.task,
                        checkpoint: aborted,
                        reason: None,
                    });
                }
                self.perform(*then, barrier)
            }
            BarrierAction::Wait | BarrierAction::Ignore => Ok(()),
        }
    }

    /// Hands a barrier or an ended input (numbered across all inputs) to the aligner.
    pub fn on_control(
        &mut self,
        control: InputControl,
        barrier: impl FnOnce(&mut TaskSnapshot) -> Result<()>,
    ) -> Result<()> {
        let now = Instant::now();
        let action = match control {
            InputControl::Barrier { channel, id } => self.aligner.on_barrier(channel, id, now)?,
            InputControl::Ended { channel } => self.aligner.on_end_of_input(channel, now)?,
        };
        self.perform(action, barrier)
    }

    /// Passes a newly completed checkpoint to the chain.
    #[inline]
    pub fn notify(&mut self, complete: impl FnOnce(CheckpointId) -> Result<()>) -> Result<()> {
        if let Some(hub) = &self.rt.checkpoints {
            let done = hub.completed();
            if done > self.notified {
                self.notified = done;
                complete(done)?;
            }
        }
        Ok(())
    }

    /// After the end of input: waits for the final checkpoint and commits it.
    pub fn finish(&mut self, complete: impl FnOnce(CheckpointId) -> Result<()>) -> Result<()> {
        if let Some(hub) = &self.rt.checkpoints {
            let last = hub.wait_for_final(&self.rt.cancel)?;
            if last > self.notified {
                self.notified = last;
                complete(last)?;
            }
        }
        Ok(())
    }
}

/// A runnable subtask.
pub trait TaskBody: Send {
    /// Runs until end of input, failure or cancellation.
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()>;
}

/// A network task of the data plane, run like any other task.
pub struct NetworkTaskBody(Box<dyn NetworkTask>);

impl TaskBody for NetworkTaskBody {
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()> {
        self.0.run(&rt.cancel, &rt.metrics)
    }
}

/// The task body that runs a network task.
pub fn network_task_body(task: Box<dyn NetworkTask>) -> Box<dyn TaskBody> {
    Box::new(NetworkTaskBody(task))
}

/// Decides when a busy task flushes its output buffers.
pub struct FlushTimer {
    timeout: Option<Duration>,
    last: Instant,
    /// Records went into the chain since the last flush.
    pending: bool,
}

impl FlushTimer {
    /// A timer that fires `timeout` after the last flush (never, with `None`).
    pub fn new(timeout: Option<Duration>) -> Self {
        FlushTimer {
            timeout,
            last: Instant::now(),
            pending: false,
        }
    }

    /// True when the buffer timeout has passed since the last flush.
    #[inline]
    pub fn due(&self) -> bool {
        self.timeout.is_some_and(|t| self.last.elapsed() >= t)
    }

    /// Restarts the timer: what was buffered has been flushed.
    pub fn flushed(&mut self) {
        self.last = Instant::now();
        self.pending = false;
    }
}

/// Most events taken from one channel before the gate looks at the next (fairness).
pub const EVENTS_PER_CHANNEL_VISIT: usize = 4;

/// The receiving side of all channels feeding one input of a task.
pub struct InputGate<T> {
    channels: Vec<ChannelReceiver<T>>,
    live: Vec<bool>,
    open: usize,
    next: usize,
}

/// What one poll of a gate found.
#[derive(Default)]
pub struct GatePoll {
    progressed: bool,
    /// A barrier or an end of input, which the task hands to its aligner before it polls
    /// again.
    control: Option<InputControl>,
    /// What the watermarks, statuses and ends taken changed about the task's output.
    change: ValveChange,
}

impl GatePoll {
    /// Hands on what this poll of one input of a two-input task brought: a changed watermark
    /// or status, then a barrier or end of input to the aligner, after any checkpoint
    /// completed (a completion comes before the next snapshot; see the source loop).
    fn hand_on_input(
        &self,
        rt: &TaskRuntime,
        checkpoints: &mut Checkpointing<'_>,
        mut control: impl FnMut(Control<'_>) -> Result<()>,
    ) -> Result<()> {
        hand_on(self.change, rt, &mut control)?;
        if let Some(input) = self.control {
            checkpoints.notify(|c| control(Control::CheckpointComplete(c)))?;
            checkpoints.on_control(input, |s| control(Control::Barrier(s)))?;
        }
        Ok(())
    }
}

/// An event on one channel that the barrier aligner must see. Channels are numbered across
/// all inputs of the task.
#[derive(Debug, Clone, Copy)]
pub enum InputControl {
    /// A barrier of checkpoint `id` arrived on input channel `channel`.
    Barrier {
        /// The input channel.
        channel: usize,
        /// The checkpoint.
        id: CheckpointId,
    },
    /// Input channel `channel` ended.
    Ended {
        /// The input channel.
        channel: usize,
    },
}

impl<T> InputGate<T> {
    /// A gate over the input channels of one subtask.
    pub fn new(channels: Vec<ChannelReceiver<T>>) -> Self {
        let n = channels.len();
        InputGate {
            channels,
            live: vec![true; n],
            open: n,
            next: 0,
        }
    }

    /// Whether every input channel has ended.
    pub fn finished(&self) -> bool {
        self.open == 0
    }

    /// Hands every available batch (a few per channel, round-robin) to `f`, skipping the
    /// channels `aligner` blocks (numbered from `base`), and every watermark to `valve`. Stops
    /// at the first barrier or end of input, which it returns for the aligner, and at the
    /// first watermark or status that changes the task's, which the task hands on before it
    /// polls again: a record is processed under the watermark that preceded it, never one
    /// that followed it.
    pub fn poll(
        &mut self,
        aligner: &BarrierAligner,
        valve: &mut WatermarkValve,
        base: usize,
        mut f: impl FnMut(Vec<T>, Option<Vec<Timestamp>>) -> Result<()>,
    ) -> Result<GatePoll> {
        let mut result = GatePoll::default();
        let n = self.channels.len();
        if n > 0 {
            self.next = (self.next + 1) % n;
        }
        for i in 0..n {
            let idx = (self.next + i) % n;
            if !self.live[idx] || aligner.is_blocked(base + idx) {
                continue;
            }
            for _ in 0..EVENTS_PER_CHANNEL_VISIT {
                let Some(event) = self.channels[idx].try_recv() else {
                    break;
                };
                result.progressed = true;
                let change = match event {
                    StreamEvent::Batch(batch) => {
                        f(batch, None)?;
                        continue;
                    }
                    StreamEvent::Stamped(batch, stamps) => {
                        f(batch, Some(stamps))?;
                        continue;
                    }
                    StreamEvent::Watermark(w) => valve.on_watermark(base + idx, w),
                    StreamEvent::Status(status) => valve.on_status(base + idx, status),
                    StreamEvent::Barrier(id) => {
                        result.control = Some(InputControl::Barrier {
                            channel: base + idx,
                            id,
                        });
                        return Ok(result);
                    }
                    StreamEvent::EndOfInput => {
                        self.live[idx] = false;
                        self.open -= 1;
                        result.change = result.change.then(valve.on_end(base + idx));
                        result.control = Some(InputControl::Ended {
                            channel: base + idx,
                        });
                        return Ok(result);
                    }
                };
                result.change = result.change.then(change);
                if change != ValveChange::default() {
                    // A changed watermark or status is handed on before any later record, as
                    // it came.
                    return Ok(result);
                }
            }
        }
        Ok(result)
    }

    /// [`InputGate::poll`] for a task of `rt`: counts every batch into the task's metrics and
    /// hands it to `push` with its timestamps (empty for a batch that has none).
    #[inline]
    pub fn poll_counted(
        &mut self,
        rt: &TaskRuntime,
        aligner: &BarrierAligner,
        valve: &mut WatermarkValve,
        base: usize,
        mut push: impl FnMut(&mut Vec<T>, &mut Vec<Timestamp>) -> Result<()>,
    ) -> Result<GatePoll> {
        self.poll(aligner, valve, base, |mut batch, stamps| {
            rt.metrics.add_in(batch.len());
            push(&mut batch, &mut stamps.unwrap_or_default())
        })
    }
}

/// Hands on what a poll changed about the task's watermark and status: becoming active
/// before the watermark that follows, becoming idle after the watermark before it.
pub fn hand_on(
    change: ValveChange,
    rt: &TaskRuntime,
    mut control: impl FnMut(Control<'_>) -> Result<()>,
) -> Result<()> {
    if change.status == Some(WatermarkStatus::Active) {
        control(Control::WatermarkStatus(WatermarkStatus::Active))?;
    }
    if let Some(w) = change.watermark {
        rt.metrics.set_watermark(w);
        control(Control::Watermark(w))?;
    }
    if change.status == Some(WatermarkStatus::Idle) {
        control(Control::WatermarkStatus(WatermarkStatus::Idle))?;
    }
    Ok(())
}

/// Called when no input is available: flushes what is buffered, or parks if nothing is.
///
/// Flushing and parking are never done in one go: a flush may itself wait on a full
/// downstream channel and use up the wake-up an upstream producer sent meanwhile, so after a
/// flush the task polls its input once more before it parks.
pub fn idle(
    rt: &TaskRuntime,
    flush: impl FnOnce() -> Result<()>,
    timer: &mut FlushTimer,
    wait: Duration,
) -> Result<()> {
    if timer.pending {
        flush()?;
        timer.flushed();
        return Ok(());
    }
    rt.check_cancelled()?;
    let parked = std::time::Instant::now();
    std::thread::park_timeout(rt.park_time(wait.min(PARK_SAFETY_TIMEOUT)));
    rt.metrics.add_idle(parked.elapsed());
    Ok(())
}

/// After a task polled its inputs: if nothing came, flush and park; if it is busy, flush
/// when the buffer timeout has passed.
pub fn after_poll(
    progressed: bool,
    rt: &TaskRuntime,
    timer: &mut FlushTimer,
    flush: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if !progressed {
        return idle(rt, flush, timer, PARK_SAFETY_TIMEOUT);
    }
    timer.pending = true;
    if timer.due() {
        flush()?;
        timer.flushed();
    }
    Ok(())
}

/// How long a source paused by watermark alignment parks before it looks again.
pub const ALIGNMENT_PAUSE: Duration = Duration::from_millis(2);

/// A chain headed by a source.
pub struct SourceTask<T> {
    pub(crate) ctx: OperatorContext,
    pub(crate) splits: SourceSplits<T>,
    pub(crate) head: Box<dyn Output<T>>,
}

impl<T: Send + 'static> TaskBody for SourceTask<T> {
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()> {
        let SourceTask {
            ctx,
            mut splits,
            mut head,
        } = *self;
        let mut timer = FlushTimer::new(rt.buffer_timeout);
        let mut buf: Vec<T> = Vec::with_capacity(ctx.batch_size);
        let mut stamps: Vec<Timestamp> = Vec::new();
        // Splits with a watermark strategy emit periodic watermarks.
        let interval = (ctx.auto_watermark_interval.as_millis() as Timestamp).max(1);
        if splits.has_strategy() {
            rt.time.request_at(rt.time.now().saturating_add(interval));
        }
        let mut checkpoints = Checkpointing::new(rt, 1);
        let mut injected = checkpoints.notified;
        // With checkpoints, a source that has read everything waits for the final checkpoint.
        let mut exhausted = false;
        // The minimum over the splits' watermarks, and whether they are all idle.
        let mut valve = WatermarkValve::new(1);
        loop {
            rt.check_cancelled()?;
            if let Some(hub) = &rt.checkpoints {
                // A completion is delivered before the next snapshot, so that state
                // snapshotted incrementally builds on the newest completed checkpoint.
                checkpoints.notify(|c| {
                    splits.checkpoint_complete(c);
                    head.control(Control::CheckpointComplete(c))
                })?;
                if let Some(id) = hub.pending_trigger(injected) {
                    injected = id;
                    checkpoints.snapshot(
                        id,
                        Duration::ZERO,
                        |s| head.control(Control::Barrier(s)),
                        splits.snapshot().map(|positions| (ctx.node, positions)),
                    )?;
                    timer.flushed();
                    if exhausted && hub.is_final(id) {
                        head.control(Control::EndOfInput)?;
                        return checkpoints.finish(|c| {
                            splits.checkpoint_complete(c);
                            head.control(Control::CheckpointComplete(c))
                        });
                    }
                }
                if exhausted {
                    idle(
                        rt,
                        || head.control(Control::Flush),
                        &mut timer,
                        PARK_SAFETY_TIMEOUT,
                    )?;
                    continue;
                }
            }
            rt.fire_processing_time(|now| {
                if splits.has_strategy() {
                    guarded(&ctx, || {
                        splits.on_periodic(now);
                        Ok(())
                    })?;
                    rt.time.request_at(now.saturating_add(interval));
                }
                head.control(Control::ProcessingTime(now))
            })?;
            if splits.must_pause() {
                // Its own watermark may have advanced since it paused (periodic emission).
                let (watermark, idle) =
                    guarded(&ctx, || Ok((splits.watermark(), splits.is_idle())))?;
                splits.publish_alignment(watermark.filter(|_| !idle), false);
            }
            if splits.must_pause() {
                // Ahead of its watermark alignment group: wait for the slowest to catch up
                // (woken when the group advances; the pause bounds the wait).
                splits.wake_when_aligned();
                if splits.must_pause() {
                    idle(
                        rt,
                        || head.control(Control::Flush),
                        &mut timer,
                        ALIGNMENT_PAUSE,
                    )?;
                }
                continue;
            }
            let status = guarded(&ctx, || {
                splits.poll_next(&mut buf, &mut stamps, ctx.batch_size)
            })?;
            if !buf.is_empty() {
                rt.metrics.add_in(buf.len());
                head.push(&mut buf, &mut stamps)?;
                timer.pending = true;
            }
            // The source's watermark and status go through a valve of one channel, like a
            // task's from its inputs; the end of a bounded input is the final watermark.
            let change = match status {
                SourceStatus::Finished => {
                    splits.publish_alignment(None, true);
                    valve.on_end(0)
                }
                _ => {
                    let (watermark, idle) =
                        guarded(&ctx, || Ok((splits.watermark(), splits.is_idle())))?;
                    splits.publish_alignment(watermark.filter(|_| !idle), false);
                    let status = if idle {
                        WatermarkStatus::Idle
                    } else {
                        WatermarkStatus::Active
                    };
                    let change = valve.on_status(0, status);
                    watermark.map_or(change, |w| change.then(valve.on_watermark(0, w)))
                }
            };
            hand_on(change, rt, |e| head.control(e))?;
            match status {
                SourceStatus::Finished => match &rt.checkpoints {
                    None => return head.control(Control::EndOfInput),
                    Some(hub) => {
                        exhausted = true;
                        hub.report(HubEvent::SourceFinished { task: rt.task });
                    }
                },
                SourceStatus::Idle(wait) => {
                    idle(rt, || head.control(Control::Flush), &mut timer, wait)?
                }
                SourceStatus::MoreAvailable => {
                    if timer.due() {
                        head.control(Control::Flush)?;
                        timer.flushed();
                    }
                }
            }
        }
    }
}

/// A chain headed by a one-input operator reading from channels.
pub struct OneInputTask<T> {
    pub(crate) input: InputGate<T>,
    pub(crate) head: Box<dyn Output<T>>,
}

impl<T: Send + 'static> TaskBody for OneInputTask<T> {
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()> {
        let OneInputTask {
            mut input,
            mut head,
        } = *self;
        let mut timer = FlushTimer::new(rt.buffer_timeout);
        let mut checkpoints = Checkpointing::new(rt, input.channels.len());
        let mut valve = WatermarkValve::new(input.channels.len());
        loop {
            rt.check_cancelled()?;
            let poll = input.poll_counted(rt, &checkpoints.aligner, &mut valve, 0, |b, s| {
                head.push(b, s)
            })?;
            hand_on(poll.change, rt, |e| head.control(e))?;
            // A completion before the next snapshot (see the source loop).
            checkpoints.notify(|c| head.control(Control::CheckpointComplete(c)))?;
            if let Some(control) = poll.control {
                checkpoints.on_control(control, |s| head.control(Control::Barrier(s)))?;
            }
            rt.fire_processing_time(|now| head.control(Control::ProcessingTime(now)))?;
            if input.finished() {
                head.control(Control::EndOfInput)?;
                return checkpoints.finish(|c| head.control(Control::CheckpointComplete(c)));
            }
            after_poll(poll.progressed, rt, &mut timer, || {
                head.control(Control::Flush)
            })?;
        }
    }
}

/// A chain headed by a two-input operator.
pub struct TwoInputTask<L, R, Op: Operator<In = (L, R)>> {
    pub(crate) input1: InputGate<L>,
    pub(crate) input2: InputGate<R>,
    pub(crate) head: Link<Op>,
}

impl<L, R, Op> TaskBody for TwoInputTask<L, R, Op>
where
    Op: Operator<In = (L, R)>,
    L: Send + 'static,
    R: Send + 'static,
    Op::Out: Send,
{
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()> {
        let TwoInputTask {
            mut input1,
            mut input2,
            mut head,
        } = *self;
        let mut timer = FlushTimer::new(rt.buffer_timeout);
        let first = input1.channels.len();
        let mut checkpoints = Checkpointing::new(rt, first + input2.channels.len());
        let mut valve = WatermarkValve::new(first + input2.channels.len());
        loop {
            rt.check_cancelled()?;
            let p1 = input1.poll_counted(rt, &checkpoints.aligner, &mut valve, 0, |b, s| {
                head.push1(b, s)
            })?;
            p1.hand_on_input(rt, &mut checkpoints, |e| head.control(e))?;
            let p2 = input2.poll_counted(rt, &checkpoints.aligner, &mut valve, first, |b, s| {
                head.push2(b, s)
            })?;
            p2.hand_on_input(rt, &mut checkpoints, |e| head.control(e))?;
            checkpoints.notify(|c| head.control(Control::CheckpointComplete(c)))?;
            rt.fire_processing_time(|now| head.control(Control::ProcessingTime(now)))?;
            if input1.finished() && input2.finished() {
                head.control(Control::EndOfInput)?;
                return checkpoints.finish(|c| head.control(Control::CheckpointComplete(c)));
            }
            after_poll(p1.progressed || p2.progressed, rt, &mut timer, || {
                head.control(Control::Flush)
            })?;
        }
    }
}
