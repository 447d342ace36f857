//! The operator contract: one-input and two-input operators, with hooks for batches (with or
//! without event timestamps), watermarks, processing time, the end of input, checkpoint
//! snapshots, restores and completed checkpoints.

use crate::Collector;
use crate::error::Result;
use crate::types::{CheckpointId, Timestamp};

/// Feeds timestamped records to `process` one at a time, with the collector stamping what it
/// emits with the record's timestamp: Flink's rule that an output record carries the
/// timestamp of the input record it came from, for operators that do not handle timestamps.
#[inline]
pub(crate) fn one_at_a_time<T, O>(
    batch: &mut Vec<T>,
    timestamps: &mut Vec<Timestamp>,
    out: &mut Collector<'_, O>,
    mut process: impl FnMut(&mut Vec<T>, &mut Collector<'_, O>) -> Result<()>,
) -> Result<()> {
    let mut one = Vec::with_capacity(1);
    let result = batch
        .drain(..)
        .zip(timestamps.drain(..))
        .try_for_each(|(record, t)| {
            out.set_timestamp(t);
            one.push(record);
            process(&mut one, out)
        });
    out.clear_timestamp();
    result
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

    /// Processes a batch whose records carry event timestamps (`timestamps[i]` is `batch[i]`'s;
    /// [`crate::types::NO_TIMESTAMP`] for none); both must be left empty. By default each
    /// record goes through [`OneInputOperator::process_batch`] alone, and what it emits carries
    /// its timestamp; operators that know how their outputs relate to their inputs override
    /// this to work a batch at a time.
    fn process_stamped_batch(
        &mut self,
        batch: &mut Vec<Self::In>,
        timestamps: &mut Vec<Timestamp>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        one_at_a_time(batch, timestamps, out, |b, out| self.process_batch(b, out))
    }

    /// True for an operator that makes its own watermarks (a timestamp assigner): the runtime
    /// then does not hand on its input's watermarks and statuses; the operator emits its own
    /// with [`Collector::emit_watermark`] and [`Collector::emit_watermark_status`].
    fn generates_watermarks(&self) -> bool {
        false
    }

    /// Processing time reached `now`, a deadline this operator asked for through its
    /// context's [`crate::types::ProcessingTimeService`]: processing-time windows and timers
    /// fire here. Called on the task's thread, never during another call of the operator.
    fn on_processing_time(
        &mut self,
        now: Timestamp,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        let _ = (now, out);
        Ok(())
    }

    /// The input's watermark advanced to `watermark` (the minimum over the operator's input
    /// channels): no record with a timestamp at or below it follows. Event-time operators fire what
    /// it completes here; the watermark itself is handed on after this returns.
    fn process_watermark(
        &mut self,
        watermark: Timestamp,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        let _ = (watermark, out);
        Ok(())
    }

    /// Called once when every input has ended. Batch-mode aggregations emit here.
    ///
    /// With checkpoints, a bounded job ends with a final checkpoint, after whose barrier no
    /// record comes: the operator ends when that barrier reaches it, before its snapshot (as
    /// Flink finishes operators before their final checkpoint), so what it emits here is
    /// covered by the final checkpoint and the state it drops here is not written. An
    /// operator that has ended writes no state; restored from such a checkpoint, it is not
    /// called again. (See [`OneInputOperator::ends_at_final_barrier`].)
    fn end_of_input(&mut self, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        let _ = out;
        Ok(())
    }

    /// Whether the operator ends (its [`OneInputOperator::end_of_input`]) when the final
    /// checkpoint's barrier reaches it, before its snapshot: true but for a transactional
    /// sink, whose end of input must follow its pre-commit of the final checkpoint.
    fn ends_at_final_barrier(&self) -> bool {
        true
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
    /// Like [`OneInputOperator::process_stamped_batch`], for the first input.
    fn process_stamped_batch1(
        &mut self,
        batch: &mut Vec<Self::In1>,
        timestamps: &mut Vec<Timestamp>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        one_at_a_time(batch, timestamps, out, |b, out| self.process_batch1(b, out))
    }

    /// Like [`OneInputOperator::process_stamped_batch`], for the second input.
    fn process_stamped_batch2(
        &mut self,
        batch: &mut Vec<Self::In2>,
        timestamps: &mut Vec<Timestamp>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        one_at_a_time(batch, timestamps, out, |b, out| self.process_batch2(b, out))
    }

    /// Processing time reached a deadline this operator asked for (see
    /// [`OneInputOperator::on_processing_time`]).
    fn on_processing_time(
        &mut self,
        now: Timestamp,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        let _ = (now, out);
        Ok(())
    }

    /// The input's watermark advanced to `watermark` (the minimum over the channels of both
    /// inputs): no record with a timestamp at or below it follows. Event-time operators fire what
    /// it completes here; the watermark itself is handed on after this returns.
    fn process_watermark(
        &mut self,
        watermark: Timestamp,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        let _ = (watermark, out);
        Ok(())
    }

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

    /// Checkpoint `id` completed everywhere (an operator with side effects commits here).
    fn notify_checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        let _ = id;
        Ok(())
    }

    /// Loads the part of a snapshot that belongs to `key_groups`.
    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        let _ = (snapshot, key_groups);
        Ok(())
    }
}
