//! Sinks: the end of a stream. A [`Sink`] creates one [`SinkWriter`] per parallel subtask.

use std::marker::PhantomData;
use std::sync::Arc;

use serde_bytes::ByteBuf;

use crate::error::Result;
use crate::state::UnionList;
use crate::state::declared::{DeclaredState, Redistribution, SnapshotAt, StateTable, TablePiece};
use crate::state::disk_tier::ColdPart;
use crate::state::snapshot::incremental::ChangeSummary;
use crate::types::CheckpointId;
use crate::{Batch, Collector, Operator, OperatorContext};

/// A destination for the records of a stream (Flink's `Sink`).
pub trait Sink<T>: Send + Sync + 'static {
    /// Name shown in plans and error messages.
    fn name(&self) -> String;
    /// Creates the writer of one subtask. Called on the task's thread before any record.
    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>>;
}

/// Writes the records of one subtask.
///
/// A transactional (exactly-once) writer uses the checkpoint hooks for a two-phase commit:
/// [`SinkWriter::pre_commit`] at each barrier makes what was written since the last one
/// durable but invisible and returns the writer's state (its pending transactions);
/// [`SinkWriter::commit`] makes them visible once the checkpoint has completed everywhere;
/// [`SinkWriter::restore`] hands a restarted writer the state of the checkpoint it restarts
/// from, whose pending transactions it must commit, and lets it abort everything newer. The
/// defaults do nothing: such a sink is at-least-once under checkpoints.
pub trait SinkWriter<T>: Send {
    /// Writes and drains a batch.
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()>;
    /// Called once at end of input: make everything written durable and visible (with
    /// checkpoints, the last checkpoint's commit does that instead). By default: nothing to do.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// Barrier of checkpoint `checkpoint`: pre-commit what was written since the last one;
    /// returns the writer's state for the checkpoint.
    fn pre_commit(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>> {
        let _ = checkpoint;
        Ok(None)
    }
    /// Checkpoint `checkpoint` completed: commit every transaction it covers.
    fn commit(&mut self, checkpoint: CheckpointId) -> Result<()> {
        let _ = checkpoint;
        Ok(())
    }
    /// The state one subtask of the restored run returned from `pre_commit` (called once per
    /// old subtask, before any record).
    fn restore(&mut self, state: &[u8]) -> Result<()> {
        let _ = state;
        Ok(())
    }
}

/// A sink that takes every record and keeps none (Flink's `DiscardingSink`, SQL's
/// `blackhole` connector).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiscardingSink;

impl<T: 'static> Sink<T> for DiscardingSink {
    fn name(&self) -> String {
        "Discarding sink".into()
    }
    fn create_writer(&self, _: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        Ok(Box::new(DiscardingSink))
    }
}

impl<T> SinkWriter<T> for DiscardingSink {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        batch.clear();
        Ok(())
    }
}

/// Adapts a [`Sink`] to the operator interface; it emits nothing.
pub struct SinkOperator<T> {
    writer: Box<dyn SinkWriter<T>>,
    _types: PhantomData<fn(T)>,
}

impl<T: 'static> SinkOperator<T> {
    /// Opens the writer of subtask `ctx.subtask` of `sink`.
    pub fn create(sink: &Arc<dyn Sink<T>>, ctx: &OperatorContext) -> Result<Self> {
        Ok(SinkOperator {
            writer: sink.create_writer(ctx)?,
            _types: PhantomData,
        })
    }
}

impl<T: 'static> Operator for SinkOperator<T> {
    type In = (T,);
    type Out = ();

    fn process(&mut self, batch: Batch<'_, T>, _out: &mut Collector<'_, ()>) -> Result<()> {
        self.writer.write_batch(batch.into_records())
    }

    fn end_of_input(&mut self, _out: &mut Collector<'_, ()>) -> Result<()> {
        self.writer.finish()
    }

    fn ends_at_final_barrier(&self) -> bool {
        // Its finish comes after the final checkpoint's pre-commit, whose commit makes
        // everything visible.
        false
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new().table("transactions", Transactions(&mut *self.writer))
    }

    fn notify_checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        self.writer.commit(id)
    }
}

/// A writer's pending transactions as operator state: written at each barrier from what
/// [`SinkWriter::pre_commit`] returns, and on restore every old subtask's handed to every
/// new one (union redistribution: a transaction belongs to no key, and each restored writer
/// decides which of them it commits or aborts).
struct Transactions<'a, T>(&'a mut dyn SinkWriter<T>);

impl<T> StateTable for Transactions<'_, T> {
    fn change_summary(&mut self) -> Option<ChangeSummary> {
        None
    }

    fn append_snapshot(&mut self, out: &mut Vec<u8>, at: &SnapshotAt) -> Result<Option<ColdPart>> {
        let pending = self.0.pre_commit(at.checkpoint)?.map(ByteBuf::from);
        UnionList::from(Vec::from_iter(pending)).append_snapshot(out, at)
    }

    fn restore(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        let mut pending = UnionList::<ByteBuf>::default();
        pending.restore(piece)?;
        pending.items().iter().try_for_each(|p| self.0.restore(p))
    }

    fn redistribution(&self) -> Redistribution {
        Redistribution::Union
    }
}
