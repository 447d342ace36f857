//! The loop of one subtask thread.
//!
//! A task is a chain head driven by its inputs: a source reader, or one or two input gates.
//! It hands each batch to the fused chain, flushes the chain's output buffers when its input
//! runs dry or the buffer timeout has passed, and parks (never spins) while there is nothing
//! to do. End of input arrives per channel; when every channel has ended, the chain is
//! finished, which emits batch-mode results and ends the downstream channels in turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::connectors::{SourceReader, SourceStatus};
use crate::error::{HummerError, Result};
use crate::operators::{OperatorContext, Output, TwoInputHead, TwoInputOperator, guarded};
use crate::runtime::CancelToken;
use crate::runtime::channel::{ChannelReceiver, PARK_SAFETY_TIMEOUT, StreamEvent};
use crate::runtime::metrics::SubtaskMetrics;

/// What a task needs from its surroundings while it runs.
pub(crate) struct TaskRuntime {
    pub(crate) cancel: CancelToken,
    pub(crate) buffer_timeout: Option<Duration>,
    pub(crate) metrics: Arc<SubtaskMetrics>,
}

/// A runnable subtask.
pub(crate) trait TaskBody: Send {
    /// Runs until end of input, failure or cancellation.
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()>;
}

/// Decides when a busy task flushes its output buffers.
struct FlushTimer {
    timeout: Option<Duration>,
    last: Instant,
    /// Records went into the chain since the last flush.
    pending: bool,
}

impl FlushTimer {
    fn new(timeout: Option<Duration>) -> Self {
        FlushTimer {
            timeout,
            last: Instant::now(),
            pending: false,
        }
    }

    /// True when the buffer timeout has passed since the last flush.
    #[inline]
    fn due(&self) -> bool {
        self.timeout.is_some_and(|t| self.last.elapsed() >= t)
    }

    fn flushed(&mut self) {
        self.last = Instant::now();
        self.pending = false;
    }
}

/// Most events taken from one channel before the gate looks at the next (fairness).
const EVENTS_PER_CHANNEL_VISIT: usize = 4;

/// The receiving side of all channels feeding one input of a task.
pub(crate) struct InputGate<T> {
    channels: Vec<ChannelReceiver<T>>,
    live: Vec<bool>,
    open: usize,
    next: usize,
}

/// What one poll of a gate found.
#[derive(Default)]
struct GatePoll {
    progressed: bool,
}

impl<T> InputGate<T> {
    pub(crate) fn new(channels: Vec<ChannelReceiver<T>>) -> Self {
        let n = channels.len();
        InputGate {
            channels,
            live: vec![true; n],
            open: n,
            next: 0,
        }
    }

    fn finished(&self) -> bool {
        self.open == 0
    }

    /// Hands every available batch (a few per channel, round-robin) to `f`.
    fn poll(&mut self, mut f: impl FnMut(Vec<T>) -> Result<()>) -> Result<GatePoll> {
        let mut result = GatePoll::default();
        let n = self.channels.len();
        for i in 0..n {
            let idx = (self.next + i) % n;
            if !self.live[idx] {
                continue;
            }
            for _ in 0..EVENTS_PER_CHANNEL_VISIT {
                match self.channels[idx].try_recv() {
                    Some(StreamEvent::Batch(batch)) => {
                        result.progressed = true;
                        f(batch)?;
                    }
                    Some(StreamEvent::EndOfInput) => {
                        result.progressed = true;
                        self.live[idx] = false;
                        self.open -= 1;
                        break;
                    }
                    None => break,
                }
            }
        }
        if n > 0 {
            self.next = (self.next + 1) % n;
        }
        Ok(result)
    }
}

/// Called when no input is available: flushes what is buffered, or parks if nothing is.
///
/// Flushing and parking are never done in one go: a flush may itself wait on a full
/// downstream channel and use up the wake-up an upstream producer sent meanwhile, so after a
/// flush the task polls its input once more before it parks.
fn idle(
    cancel: &CancelToken,
    flush: impl FnOnce() -> Result<()>,
    timer: &mut FlushTimer,
    wait: Duration,
) -> Result<()> {
    if timer.pending {
        flush()?;
        timer.flushed();
        return Ok(());
    }
    if cancel.is_cancelled() {
        return Err(HummerError::Cancelled);
    }
    std::thread::park_timeout(wait.min(PARK_SAFETY_TIMEOUT));
    Ok(())
}

/// After a task polled its inputs: if nothing came, flush and park; if it is busy, flush
/// when the buffer timeout has passed.
fn after_poll(
    progressed: bool,
    rt: &TaskRuntime,
    timer: &mut FlushTimer,
    flush: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if !progressed {
        return idle(&rt.cancel, flush, timer, PARK_SAFETY_TIMEOUT);
    }
    timer.pending = true;
    if timer.due() {
        flush()?;
        timer.flushed();
    }
    Ok(())
}

/// A chain headed by a source.
pub(crate) struct SourceTask<T> {
    pub(crate) ctx: OperatorContext,
    pub(crate) reader: Box<dyn SourceReader<T>>,
    pub(crate) head: Box<dyn Output<T>>,
}

impl<T: Send + 'static> TaskBody for SourceTask<T> {
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()> {
        let SourceTask {
            ctx,
            mut reader,
            mut head,
        } = *self;
        let mut timer = FlushTimer::new(rt.buffer_timeout);
        let mut buf: Vec<T> = Vec::with_capacity(ctx.batch_size);
        loop {
            if rt.cancel.is_cancelled() {
                return Err(HummerError::Cancelled);
            }
            let status = guarded(&ctx, || reader.poll_next(&mut buf, ctx.batch_size))?;
            if !buf.is_empty() {
                rt.metrics.add_in(buf.len());
                head.push(&mut buf)?;
                timer.pending = true;
            }
            match status {
                SourceStatus::Finished => return head.finish(),
                SourceStatus::Idle(wait) => idle(&rt.cancel, || head.flush(), &mut timer, wait)?,
                SourceStatus::MoreAvailable => {
                    if timer.due() {
                        head.flush()?;
                        timer.flushed();
                    }
                }
            }
        }
    }
}

/// A chain headed by a one-input operator reading from channels.
pub(crate) struct OneInputTask<T> {
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
        loop {
            if rt.cancel.is_cancelled() {
                return Err(HummerError::Cancelled);
            }
            let poll = input.poll(|mut batch| {
                rt.metrics.add_in(batch.len());
                head.push(&mut batch)
            })?;
            if input.finished() {
                return head.finish();
            }
            after_poll(poll.progressed, rt, &mut timer, || head.flush())?;
        }
    }
}

/// A chain headed by a two-input operator.
pub(crate) struct TwoInputTask<Op: TwoInputOperator> {
    pub(crate) input1: InputGate<Op::In1>,
    pub(crate) input2: InputGate<Op::In2>,
    pub(crate) head: TwoInputHead<Op>,
}

impl<Op> TaskBody for TwoInputTask<Op>
where
    Op: TwoInputOperator,
    Op::In1: Send,
    Op::In2: Send,
    Op::Out: Send,
{
    fn run(self: Box<Self>, rt: &TaskRuntime) -> Result<()> {
        let TwoInputTask {
            mut input1,
            mut input2,
            mut head,
        } = *self;
        let mut timer = FlushTimer::new(rt.buffer_timeout);
        loop {
            if rt.cancel.is_cancelled() {
                return Err(HummerError::Cancelled);
            }
            let p1 = input1.poll(|mut batch| {
                rt.metrics.add_in(batch.len());
                head.push1(&mut batch)
            })?;
            let p2 = input2.poll(|mut batch| {
                rt.metrics.add_in(batch.len());
                head.push2(&mut batch)
            })?;
            if input1.finished() && input2.finished() {
                return head.finish();
            }
            after_poll(p1.progressed || p2.progressed, rt, &mut timer, || {
                head.flush()
            })?;
        }
    }
}
