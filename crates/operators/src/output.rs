//! What flows from one operator to the next: batches of records, and control events between
//! them.
//!
//! An [`Output`] has two methods: [`Output::push`] for the hot path (one direct call per
//! batch) and [`Output::control`] for everything else, spelled once as [`Control`]. The next
//! link of a chain, a fan-out and the writer into a shuffle's channels are outputs; so are the
//! trivial [`VecOutput`] and [`Discard`].

use std::marker::PhantomData;

use crate::error::Result;
use crate::state::task_state::TaskSnapshot;
use crate::types::{CheckpointId, Timestamp, WatermarkStatus};

/// An event of a stream that is not a record, in the order of the stream: it follows every
/// record pushed before it.
#[derive(Debug)]
pub enum Control<'a> {
    /// Hand on what is buffered (a buffer timeout, an idle input). Never emits aggregation
    /// state: only records already produced move on.
    Flush,
    /// End of input: operators emit their final results, then the end moves downstream.
    EndOfInput,
    /// A checkpoint barrier: each operator adds its state to the snapshot, then passes the
    /// barrier on.
    Barrier(&'a mut TaskSnapshot),
    /// Checkpoint `id` completed: transactional sinks commit what it covers.
    CheckpointComplete(CheckpointId),
    /// The watermark advanced: no record with a timestamp at or below it follows.
    Watermark(Timestamp),
    /// The stream became idle (its watermark holds nothing back) or active again.
    WatermarkStatus(WatermarkStatus),
    /// Processing time reached this instant and some operator downstream asked to be called
    /// then (see [`crate::types::ProcessingTimeService`]): processing-time windows and timers
    /// fire, periodic watermarks are emitted.
    ProcessingTime(Timestamp),
}

impl Control<'_> {
    /// The same event, borrowed again: for handing one event to several outputs.
    pub fn reborrow(&mut self) -> Control<'_> {
        match self {
            Control::Flush => Control::Flush,
            Control::EndOfInput => Control::EndOfInput,
            Control::Barrier(snapshot) => Control::Barrier(snapshot),
            Control::CheckpointComplete(id) => Control::CheckpointComplete(*id),
            Control::Watermark(w) => Control::Watermark(*w),
            Control::WatermarkStatus(s) => Control::WatermarkStatus(*s),
            Control::ProcessingTime(now) => Control::ProcessingTime(*now),
        }
    }

    /// Whether the event travels the stream, behind the records before it: an output that
    /// buffers records hands them on before it passes such an event on (the one rule of
    /// ordering between records and control events). Completed checkpoints and processing
    /// time concern each task on its own and overtake nothing.
    pub fn is_in_stream(&self) -> bool {
        !matches!(
            self,
            Control::CheckpointComplete(_) | Control::ProcessingTime(_)
        )
    }
}

/// Receives the batches and control events of one stream: the next link of a chain, a
/// fan-out, or a writer into the channels of a shuffle.
pub trait Output<T>: Send {
    /// Processes and drains a batch. `timestamps` is empty when no record of the batch has
    /// an event timestamp, else holds one per record (`NO_TIMESTAMP` for none); both vectors
    /// are left empty (their capacity may be reused).
    fn push(&mut self, records: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()>;
    /// Handles a control event (see [`Control::is_in_stream`] for what must be handed on
    /// before it).
    fn control(&mut self, event: Control<'_>) -> Result<()>;
}

/// An [`Output`] that keeps what is pushed to it, in order (timestamps dropped): lets an
/// operator hand a user function a [`Collector`](crate::Collector) of another type than its
/// own output, then wrap what it got; tests of operators and chains read what an operator
/// emitted from it.
pub struct VecOutput<T>(pub Vec<T>);

impl<T: Send> Output<T> for VecOutput<T> {
    fn push(&mut self, records: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        timestamps.clear();
        self.0.append(records);
        Ok(())
    }
    fn control(&mut self, _event: Control<'_>) -> Result<()> {
        Ok(())
    }
}

/// An [`Output`] that drops everything pushed to it.
pub struct Discard<T>(PhantomData<fn(T)>);

impl<T> Default for Discard<T> {
    fn default() -> Self {
        Discard(PhantomData)
    }
}

impl<T: Send> Output<T> for Discard<T> {
    fn push(&mut self, records: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        records.clear();
        timestamps.clear();
        Ok(())
    }
    fn control(&mut self, _event: Control<'_>) -> Result<()> {
        Ok(())
    }
}
