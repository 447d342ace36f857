//! Operators and how they are fused into chains.
//!
//! An operator transforms batches: [`OneInputOperator::process_batch`] receives a batch of
//! input records and emits output records into a [`Collector`]. Operators of one chain (see
//! `graph::job_graph`) are fused: each link of the chain owns its operator and a boxed
//! [`Output`] for everything downstream, so a batch passes the whole chain as nested calls on
//! one thread, with one dynamic call per operator per batch and no queue in between.
//!
//! Every call into an operator is guarded: a panic or an error raised by the operator is turned
//! into [`HummerError::Operator`] naming the operator and the subtask, which fails the job.
//!
//! One operator per file: [`map`], [`flat_map`], [`filter`], [`keyed_aggregate`],
//! [`keyed_process`], [`keyed_join`], [`co_map`], [`union`], [`sink`].

pub mod co_map;
pub mod filter;
pub mod flat_map;
pub mod keyed_aggregate;
pub mod keyed_join;
pub mod keyed_process;
pub mod map;
pub mod sink;
pub mod union;

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::api::RuntimeMode;
use crate::checkpoint::CheckpointId;
use crate::checkpoint::task_state::TaskSnapshot;
use crate::error::{HummerError, Result, panic_message};

/// Where an operator instance runs: its name and its place among its parallel subtasks.
#[derive(Clone, Debug)]
pub struct OperatorContext {
    /// The operator's name (as in `explain()`).
    pub name: String,
    /// Zero-based index of this subtask.
    pub subtask: usize,
    /// Number of parallel subtasks of this operator.
    pub parallelism: usize,
    /// Number of key groups of the job.
    pub max_parallelism: usize,
    /// The mode the job runs in (decides when keyed aggregations emit).
    pub mode: RuntimeMode,
    /// Records per batch handed downstream.
    pub batch_size: usize,
    /// The operator's stream node id: its identity in checkpoints and savepoints.
    pub node: usize,
    /// Whether the job takes checkpoints (transactional sinks then commit per checkpoint).
    pub checkpointing: bool,
}

/// Receives the batches of one stream: the next link of a chain, a fan-out, or a writer into
/// the channels of a shuffle.
///
/// `push` takes the records out of `batch` (it is left empty, its capacity may be reused).
pub trait Output<T>: Send {
    /// Processes and drains a batch.
    fn push(&mut self, batch: &mut Vec<T>) -> Result<()>;
    /// Hands on anything buffered (buffer timeout or idle input). Never emits aggregation
    /// state: only records already produced are flushed.
    fn flush(&mut self) -> Result<()>;
    /// End of input: emits final results and propagates the end downstream.
    fn finish(&mut self) -> Result<()>;
    /// A checkpoint barrier: hands on everything buffered, adds this output's state to
    /// `snapshot` and passes the barrier downstream, in that order.
    fn barrier(&mut self, snapshot: &mut TaskSnapshot) -> Result<()>;
    /// Checkpoint `id` completed: transactional sinks commit what it covers.
    fn checkpoint_complete(&mut self, id: CheckpointId) -> Result<()>;
}

/// Where an operator puts its output records.
///
/// Records are buffered and handed downstream in batches of at most the job's batch size, so
/// an operator that produces many records per input (a tokenizer) keeps its working set small.
pub struct Collector<'a, T> {
    buf: &'a mut Vec<T>,
    next: &'a mut dyn Output<T>,
    limit: usize,
    error: Option<HummerError>,
}

impl<'a, T> Collector<'a, T> {
    pub(crate) fn new(buf: &'a mut Vec<T>, next: &'a mut dyn Output<T>, limit: usize) -> Self {
        Collector {
            buf,
            next,
            limit: limit.max(1),
            error: None,
        }
    }

    /// Emits one record.
    #[inline]
    pub fn collect(&mut self, record: T) {
        self.buf.push(record);
        if self.buf.len() >= self.limit {
            self.spill();
        }
    }

    /// Emits every record of an iterator.
    #[inline]
    pub fn collect_all(&mut self, records: impl IntoIterator<Item = T>) {
        for r in records {
            self.collect(r);
        }
    }

    #[cold]
    fn spill(&mut self) {
        if self.error.is_some() {
            // The job is failing: drop what downstream can no longer take.
            self.buf.clear();
        } else if let Err(e) = self.next.push(self.buf) {
            self.error = Some(e);
        }
    }

    /// Hands on what is buffered; returns the first downstream error, if any.
    pub(crate) fn done(mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.spill();
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// An operator with one input.
pub trait OneInputOperator: Send + 'static {
    /// Input record type.
    type In;
    /// Output record type.
    type Out;

    /// Processes a batch of records; the batch must be left empty.
    fn process_batch(
        &mut self,
        batch: &mut Vec<Self::In>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()>;

    /// Called once when every input has ended. Batch-mode aggregations emit here.
    fn end_of_input(&mut self, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        let _ = out;
        Ok(())
    }

    /// The operator's state for checkpoint `checkpoint` (`None`: it keeps none). Keyed state
    /// is grouped by key group out of `max_parallelism` (see [`crate::state::snapshot`]).
    fn snapshot_state(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
    ) -> Result<Option<Vec<u8>>> {
        let _ = (checkpoint, max_parallelism);
        Ok(None)
    }

    /// Checkpoint `id` completed everywhere (a transactional sink commits here).
    fn notify_checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        let _ = id;
        Ok(())
    }

    /// Loads the part of a snapshot that belongs to `key_groups` (the key groups this subtask
    /// owns now, which may differ from when the snapshot was taken).
    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        let _ = (snapshot, key_groups);
        Ok(())
    }
}

/// An operator with two inputs of possibly different types.
pub trait TwoInputOperator: Send + 'static {
    /// First input's record type.
    type In1;
    /// Second input's record type.
    type In2;
    /// Output record type.
    type Out;

    /// Processes a batch from the first input; the batch must be left empty.
    fn process_batch1(
        &mut self,
        batch: &mut Vec<Self::In1>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()>;
    /// Processes a batch from the second input; the batch must be left empty.
    fn process_batch2(
        &mut self,
        batch: &mut Vec<Self::In2>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()>;
    /// Called once when both inputs have ended.
    fn end_of_input(&mut self, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        let _ = out;
        Ok(())
    }

    /// The operator's state for checkpoint `checkpoint` (`None`: it keeps none).
    fn snapshot_state(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
    ) -> Result<Option<Vec<u8>>> {
        let _ = (checkpoint, max_parallelism);
        Ok(None)
    }

    /// Loads the part of a snapshot that belongs to `key_groups`.
    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        let _ = (snapshot, key_groups);
        Ok(())
    }
}

/// Runs `f` (a call into an operator), turning a panic or an error into an error that names
/// the operator and subtask.
#[inline]
pub(crate) fn guarded<R>(ctx: &OperatorContext, f: impl FnOnce() -> Result<R>) -> Result<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.attribute(&ctx.name, ctx.subtask)),
        Err(payload) => Err(HummerError::Operator {
            operator: ctx.name.clone(),
            subtask: ctx.subtask,
            cause: Box::new(HummerError::Panic(panic_message(&*payload))),
        }),
    }
}

/// Loads the snapshots of every subtask of a restored run through `restore`, which keeps the
/// key groups this subtask owns; guarded like every call into an operator.
fn restore_guarded(
    ctx: &OperatorContext,
    snapshots: &[Vec<u8>],
    mut restore: impl FnMut(&[u8], std::ops::Range<usize>) -> Result<()>,
) -> Result<()> {
    let groups = ctx.key_groups();
    snapshots
        .iter()
        .try_for_each(|s| guarded(ctx, || restore(s, groups.clone())))
}

/// Adds the state `take` returns (if any) to a task's snapshot under the operator's node id;
/// guarded like every call into an operator.
fn snapshot_guarded(
    ctx: &OperatorContext,
    snapshot: &mut TaskSnapshot,
    take: impl FnOnce(CheckpointId, usize) -> Result<Option<Vec<u8>>>,
) -> Result<()> {
    let (id, max) = (snapshot.checkpoint, snapshot.max_parallelism);
    if let Some(state) = guarded(ctx, || take(id, max))? {
        snapshot.operators.push((ctx.node, state));
    }
    Ok(())
}

/// One fused link of a chain: an operator and everything downstream of it.
pub(crate) struct ChainLink<Op: OneInputOperator> {
    op: Op,
    ctx: OperatorContext,
    buf: Vec<Op::Out>,
    next: Box<dyn Output<Op::Out>>,
}

impl<Op: OneInputOperator> ChainLink<Op> {
    pub(crate) fn new(op: Op, ctx: OperatorContext, next: Box<dyn Output<Op::Out>>) -> Self {
        ChainLink {
            op,
            ctx,
            buf: Vec::new(),
            next,
        }
    }

    /// Loads the operator's state from the snapshots of every subtask of the restored run.
    pub(crate) fn restore(&mut self, snapshots: &[Vec<u8>]) -> Result<()> {
        let op = &mut self.op;
        restore_guarded(&self.ctx, snapshots, |s, groups| {
            op.restore_state(s, groups)
        })
    }
}

impl OperatorContext {
    /// The key groups this subtask owns.
    pub fn key_groups(&self) -> std::ops::Range<usize> {
        crate::state::key_groups::key_groups_of_subtask(
            self.subtask,
            self.max_parallelism,
            self.parallelism,
        )
    }
}

impl<Op> Output<Op::In> for ChainLink<Op>
where
    Op: OneInputOperator,
    Op::In: Send,
    Op::Out: Send,
{
    #[inline]
    fn push(&mut self, batch: &mut Vec<Op::In>) -> Result<()> {
        let limit = self.ctx.batch_size;
        let (op, buf, next) = (&mut self.op, &mut self.buf, &mut *self.next);
        guarded(&self.ctx, || {
            let mut out = Collector::new(buf, next, limit);
            let r = op.process_batch(batch, &mut out);
            let downstream = out.done();
            r.and(downstream)
        })
    }

    fn flush(&mut self) -> Result<()> {
        self.next.flush()
    }

    fn finish(&mut self) -> Result<()> {
        let limit = self.ctx.batch_size;
        let (op, buf, next) = (&mut self.op, &mut self.buf, &mut *self.next);
        guarded(&self.ctx, || {
            let mut out = Collector::new(buf, next, limit);
            let r = op.end_of_input(&mut out);
            let downstream = out.done();
            r.and(downstream)
        })?;
        self.next.finish()
    }

    fn barrier(&mut self, snapshot: &mut TaskSnapshot) -> Result<()> {
        let op = &mut self.op;
        snapshot_guarded(&self.ctx, snapshot, |id, max| op.snapshot_state(id, max))?;
        self.next.barrier(snapshot)
    }

    fn checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        let op = &mut self.op;
        guarded(&self.ctx, || op.notify_checkpoint_complete(id))?;
        self.next.checkpoint_complete(id)
    }
}

/// The head of a chain that starts with a two-input operator.
pub(crate) struct TwoInputHead<Op: TwoInputOperator> {
    op: Op,
    ctx: OperatorContext,
    buf: Vec<Op::Out>,
    next: Box<dyn Output<Op::Out>>,
}

impl<Op: TwoInputOperator> TwoInputHead<Op> {
    pub(crate) fn new(op: Op, ctx: OperatorContext, next: Box<dyn Output<Op::Out>>) -> Self {
        TwoInputHead {
            op,
            ctx,
            buf: Vec::new(),
            next,
        }
    }

    /// Loads the operator's state from the snapshots of every subtask of the restored run.
    pub(crate) fn restore(&mut self, snapshots: &[Vec<u8>]) -> Result<()> {
        let op = &mut self.op;
        restore_guarded(&self.ctx, snapshots, |s, groups| {
            op.restore_state(s, groups)
        })
    }

    pub(crate) fn barrier(&mut self, snapshot: &mut TaskSnapshot) -> Result<()> {
        let op = &mut self.op;
        snapshot_guarded(&self.ctx, snapshot, |id, max| op.snapshot_state(id, max))?;
        self.next.barrier(snapshot)
    }

    pub(crate) fn checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        self.next.checkpoint_complete(id)
    }

    pub(crate) fn push1(&mut self, batch: &mut Vec<Op::In1>) -> Result<()> {
        let limit = self.ctx.batch_size;
        let (op, buf, next) = (&mut self.op, &mut self.buf, &mut *self.next);
        guarded(&self.ctx, || {
            let mut out = Collector::new(buf, next, limit);
            let r = op.process_batch1(batch, &mut out);
            r.and(out.done())
        })
    }

    pub(crate) fn push2(&mut self, batch: &mut Vec<Op::In2>) -> Result<()> {
        let limit = self.ctx.batch_size;
        let (op, buf, next) = (&mut self.op, &mut self.buf, &mut *self.next);
        guarded(&self.ctx, || {
            let mut out = Collector::new(buf, next, limit);
            let r = op.process_batch2(batch, &mut out);
            r.and(out.done())
        })
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.next.flush()
    }

    pub(crate) fn finish(&mut self) -> Result<()> {
        let limit = self.ctx.batch_size;
        let (op, buf, next) = (&mut self.op, &mut self.buf, &mut *self.next);
        guarded(&self.ctx, || {
            let mut out = Collector::new(buf, next, limit);
            let r = op.end_of_input(&mut out);
            r.and(out.done())
        })?;
        self.next.finish()
    }
}

/// Fans one stream out to several consumers (chained operators and/or shuffles); every
/// consumer but the last gets a copy of each batch.
pub(crate) struct FanOut<T> {
    pub(crate) outputs: Vec<Box<dyn Output<T>>>,
}

impl<T: Clone + Send> Output<T> for FanOut<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<()> {
        if let Some((last, rest)) = self.outputs.split_last_mut() {
            for out in rest {
                let mut copy = batch.clone();
                out.push(&mut copy)?;
            }
            last.push(batch)?;
        }
        batch.clear();
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.outputs.iter_mut().try_for_each(|o| o.flush())
    }

    fn finish(&mut self) -> Result<()> {
        self.outputs.iter_mut().try_for_each(|o| o.finish())
    }

    fn barrier(&mut self, snapshot: &mut TaskSnapshot) -> Result<()> {
        self.outputs
            .iter_mut()
            .try_for_each(|o| o.barrier(snapshot))
    }

    fn checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        self.outputs
            .iter_mut()
            .try_for_each(|o| o.checkpoint_complete(id))
    }
}

/// Test support: an [`Output`] that keeps every record pushed to it, in order.
#[cfg(test)]
pub(crate) struct Gather<T>(pub Vec<T>);

#[cfg(test)]
impl<T: Send> Output<T> for Gather<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<()> {
        self.0.append(batch);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    fn barrier(&mut self, _snapshot: &mut TaskSnapshot) -> Result<()> {
        Ok(())
    }
    fn checkpoint_complete(&mut self, _id: CheckpointId) -> Result<()> {
        Ok(())
    }
}
