//! The operator contract: one-input and two-input operators, with hooks for batches, the end
//! of input, checkpoint snapshots, restores and completed checkpoints.

use crate::error::Result;
use crate::operators::Collector;
use crate::types::{CheckpointId, Timestamp};

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

    /// The input's watermark advanced to `watermark` (the minimum over the operator's input
    /// channels): no record with a smaller timestamp follows. Event-time operators fire what
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
    /// The input's watermark advanced to `watermark` (the minimum over the channels of both
    /// inputs): no record with a smaller timestamp follows. Event-time operators fire what
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
