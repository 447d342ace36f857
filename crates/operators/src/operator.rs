//! The operator contract: one trait, [`Operator`], whatever the operator's inputs: one
//! process method that takes a [`Batch`] (records with their event timestamps, if they have
//! any; for two inputs a [`EitherBatch`] saying which input it came from), and a lifecycle
//! whose every hook has a default, so an operator writes only what it does: a map writes
//! `process`, a window operator adds watermarks, timers and its state. The
//! runtime (`hummer-runtime`'s chain) calls the hooks synchronously on the task's thread, one
//! call at a time; what an operator needs to know about where it runs (its name, subtask,
//! parallelism, clock) it gets at construction, in its [`crate::OperatorContext`].

use crate::Collector;
use crate::error::Result;
use crate::state::declared::{DeclaredState, OperatorSnapshot};
use crate::state::snapshot::SnapshotBuffer;
use crate::types::{CheckpointId, NO_TIMESTAMP, Timestamp};

/// A batch of records handed to an operator, with their event timestamps when some record
/// has one (a stream without event time carries none).
///
/// An operator consumes the batch: through [`Batch::drain`] (records with their timestamps),
/// [`Batch::for_each`] (one record at a time, what it emits stamped with that record's
/// timestamp), [`Batch::by_timestamp`] (runs of records sharing a timestamp) or
/// [`Batch::into_records`] (the records alone, for an operator whose output carries no input
/// timestamp). What it leaves in the batch is dropped.
pub struct Batch<'a, T> {
    records: &'a mut Vec<T>,
    /// `timestamps[i]` is `records[i]`'s; `None` when no record has one.
    timestamps: Option<&'a mut Vec<Timestamp>>,
}

impl<'a, T> Batch<'a, T> {
    /// A batch of records without timestamps.
    pub fn new(records: &'a mut Vec<T>) -> Self {
        Batch {
            records,
            timestamps: None,
        }
    }

    /// A batch whose records carry `timestamps` (`timestamps[i]` is `records[i]`'s, with
    /// [`NO_TIMESTAMP`] for a record without one); empty `timestamps` mean none has one.
    pub fn with_timestamps(records: &'a mut Vec<T>, timestamps: &'a mut Vec<Timestamp>) -> Self {
        debug_assert!(timestamps.is_empty() || timestamps.len() == records.len());
        Batch {
            records,
            timestamps: (!timestamps.is_empty()).then_some(timestamps),
        }
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True for a batch without records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// True when the records carry event timestamps.
    pub fn has_timestamps(&self) -> bool {
        self.timestamps.is_some()
    }

    /// The records, their timestamps dropped: for an operator whose output does not carry
    /// the timestamps of its inputs (a sink, a table that emits at the end).
    pub fn into_records(self) -> &'a mut Vec<T> {
        if let Some(t) = self.timestamps {
            t.clear();
        }
        self.records
    }

    /// Takes every record out with its timestamp ([`NO_TIMESTAMP`] when it has none).
    pub fn drain(self) -> Drain<'a, T> {
        Drain {
            records: self.records.drain(..),
            timestamps: self.timestamps.map(|t| t.drain(..)),
        }
    }

    /// Calls `f` on each record in turn, with what it emits carrying that record's
    /// timestamp: Flink's rule that an output record has the timestamp of the input record
    /// it came from, for operators that do not handle timestamps themselves.
    #[inline]
    pub fn for_each<O>(
        self,
        out: &mut Collector<'_, O>,
        mut f: impl FnMut(T, &mut Collector<'_, O>) -> Result<()>,
    ) -> Result<()> {
        let Some(timestamps) = self.timestamps else {
            return self.records.drain(..).try_for_each(|r| f(r, out));
        };
        let result = self
            .records
            .drain(..)
            .zip(timestamps.drain(..))
            .try_for_each(|(r, t)| {
                out.set_timestamp(t);
                f(r, out)
            });
        out.clear_timestamp();
        result
    }

    /// Calls `f` on the records in runs that share a timestamp (the whole batch at once when
    /// none has one), with what it emits carrying that timestamp: for operators that work a
    /// batch at a time and do not handle timestamps themselves. `f` must leave the run empty.
    pub fn by_timestamp<O>(
        self,
        out: &mut Collector<'_, O>,
        mut f: impl FnMut(&mut Vec<T>, &mut Collector<'_, O>) -> Result<()>,
    ) -> Result<()> {
        let Some(timestamps) = self.timestamps else {
            return f(self.records, out);
        };
        let mut records = self.records.drain(..);
        let mut run = Vec::new();
        let mut result = Ok(());
        for same in timestamps.chunk_by(|a, b| a == b) {
            run.extend(records.by_ref().take(same.len()));
            out.set_timestamp(same[0]);
            result = f(&mut run, out);
            run.clear();
            if result.is_err() {
                break;
            }
        }
        drop(records);
        timestamps.clear();
        out.clear_timestamp();
        result
    }
}

impl<'a, T> From<&'a mut Vec<T>> for Batch<'a, T> {
    fn from(records: &'a mut Vec<T>) -> Self {
        Batch::new(records)
    }
}

/// The records of a [`Batch`] with their timestamps; see [`Batch::drain`].
pub struct Drain<'a, T> {
    records: std::vec::Drain<'a, T>,
    timestamps: Option<std::vec::Drain<'a, Timestamp>>,
}

impl<T> Iterator for Drain<'_, T> {
    type Item = (T, Timestamp);

    #[inline]
    fn next(&mut self) -> Option<(T, Timestamp)> {
        let record = self.records.next()?;
        let t = match &mut self.timestamps {
            Some(t) => t.next().unwrap_or(NO_TIMESTAMP),
            None => NO_TIMESTAMP,
        };
        Some((record, t))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

/// What an operator reads: `(T,)` for one input of `T`, `(L, R)` for two inputs; it fixes the
/// batch type of [`Operator::process`].
pub trait Inputs {
    /// The batch an operator's process method takes.
    type Batch<'a>;
}

impl<T: 'static> Inputs for (T,) {
    type Batch<'a> = Batch<'a, T>;
}

impl<L: 'static, R: 'static> Inputs for (L, R) {
    type Batch<'a> = EitherBatch<'a, L, R>;
}

/// A batch of one of a two-input operator's inputs.
pub enum EitherBatch<'a, L, R> {
    /// From the first input (the stream `connect` or `join` was called on).
    First(Batch<'a, L>),
    /// From the second input.
    Second(Batch<'a, R>),
}

impl<'a, T> EitherBatch<'a, T, T> {
    /// The batch of two inputs of one type, and whether it came from the first: for an
    /// operator that treats both sides alike but for which side a record is from.
    pub fn with_side(self) -> (Batch<'a, T>, bool) {
        match self {
            EitherBatch::First(batch) => (batch, true),
            EitherBatch::Second(batch) => (batch, false),
        }
    }
}

/// The operator contract: what it reads and emits, the one method that processes a batch of
/// its input, and its lifecycle. Every hook but [`Operator::process`] has a default
/// that does nothing.
///
/// The runtime calls the hooks on the task's thread, one call at a time, and guards every
/// call: an error or a panic fails the job with the operator and subtask named.
pub trait Operator: Send + 'static {
    /// What it reads: `(T,)` for one input of `T`, `(L, R)` for two (see [`Inputs`]).
    type In: Inputs;
    /// Output record type.
    type Out;

    /// Processes a batch of its input (one input: a [`Batch`]; two inputs: a
    /// [`EitherBatch`] saying which input it came from). See [`Batch`] for the ways to
    /// consume it.
    fn process(
        &mut self,
        batch: <Self::In as Inputs>::Batch<'_>,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()>;

    /// True for an operator that makes its own watermarks (a timestamp assigner): the runtime
    /// then does not hand on its input's watermarks and statuses; the operator emits its own
    /// with [`Collector::emit_watermark`] and [`Collector::emit_watermark_status`].
    fn generates_watermarks(&self) -> bool {
        false
    }

    /// The input's watermark advanced to `time` (the minimum over every channel of every
    /// input): no record with a timestamp at or below it follows, and event-time timers and
    /// windows fire what it completes here. The watermark itself is handed on after this
    /// returns (unless the operator [`Operator::generates_watermarks`]).
    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        let _ = (time, out);
        Ok(())
    }

    /// Processing time reached `now`, a deadline this operator asked for through its
    /// context's [`crate::types::ProcessingTimeService`]; processing-time timers and windows
    /// fire what is due. Not called once the operator has ended.
    fn on_processing_time(
        &mut self,
        now: Timestamp,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<()> {
        let _ = (now, out);
        Ok(())
    }

    /// Called once when every input has ended. Batch-mode aggregations emit here.
    ///
    /// With checkpoints, a bounded job ends with a final checkpoint, after whose barrier no
    /// record comes: the operator ends when that barrier reaches it, before its snapshot (as
    /// Flink finishes operators before their final checkpoint), so what it emits here is
    /// covered by the final checkpoint and the state it drops here is not written. An
    /// operator that has ended writes no state; restored from such a checkpoint, it is not
    /// called again. (See [`Operator::ends_at_final_barrier`].)
    fn end_of_input(&mut self, out: &mut Collector<'_, Self::Out>) -> Result<()> {
        let _ = out;
        Ok(())
    }

    /// Whether the operator ends (its [`Operator::end_of_input`]) when the final
    /// checkpoint's barrier reaches it, before its snapshot: true but for a transactional
    /// sink, whose end of input must follow its pre-commit of the final checkpoint.
    fn ends_at_final_barrier(&self) -> bool {
        true
    }

    /// The state the operator keeps, declared as typed tables (and the watermark it
    /// keeps): the runtime snapshots, restores, redistributes by key group and makes
    /// incremental what is declared here (see [`crate::state::declared`]); an operator
    /// writes no snapshot bytes itself. Called at every checkpoint barrier, restore and
    /// completed checkpoint; the order of the tables must stay the same across builds.
    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new()
    }

    /// Called once after the declared state has been restored from every old subtask's
    /// snapshot, before any other hook: rebuild what derives from the state (timer queues
    /// from the timers kept with each key), ask for timers that fell due while the job was
    /// down.
    fn restored(&mut self) -> Result<()> {
        Ok(())
    }

    /// Checkpoint `id` completed everywhere (a transactional sink commits here); the
    /// declared tables have been told already.
    fn notify_checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        let _ = id;
        Ok(())
    }
}

/// An operator's declared state driven the way the runtime drives it at a barrier and on a
/// restore: the one place that turns [`Operator::state`] into snapshot bytes and back (the
/// chain calls it with the buffer it keeps per operator; tests and tools call it directly).
pub trait Checkpointed: Operator {
    /// The operator's snapshot for `checkpoint` (`None`: it declares no state), written into
    /// a buffer sized by `buffer`, the parts of its tables on disk left to be written after
    /// the barrier.
    fn snapshot_into(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
        buffer: &mut SnapshotBuffer,
    ) -> Result<Option<OperatorSnapshot>> {
        (self.state()).snapshot_deferring(checkpoint, max_parallelism, buffer)
    }

    /// The operator's whole snapshot for `checkpoint`, written into a fresh buffer.
    fn snapshot_state(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
    ) -> Result<Option<Vec<u8>>> {
        self.snapshot_into(checkpoint, max_parallelism, &mut SnapshotBuffer::default())?
            .map(OperatorSnapshot::into_bytes)
            .transpose()
    }

    /// Loads the snapshots of every old subtask (the key groups in `key_groups` of each),
    /// then tells the operator it was [`Operator::restored`]. Nothing to load: nothing is
    /// called.
    fn restore_pieces<'a>(
        &mut self,
        pieces: impl IntoIterator<Item = &'a [u8]>,
        key_groups: std::ops::Range<usize>,
    ) -> Result<()> {
        let mut any = false;
        for (i, piece) in pieces.into_iter().enumerate() {
            self.restore_piece(i, piece, key_groups.clone())?;
            any = true;
        }
        if any { self.restored() } else { Ok(()) }
    }

    /// Loads old subtask snapshot `i` (the key groups in `key_groups` of it); the caller
    /// tells the operator it was [`Operator::restored`] after the last one.
    fn restore_piece(
        &mut self,
        i: usize,
        piece: &[u8],
        key_groups: std::ops::Range<usize>,
    ) -> Result<()> {
        let what = format!("state snapshot {i} of the restored checkpoint");
        self.state().restore(piece, key_groups, &what)
    }

    /// [`Checkpointed::restore_pieces`] of one snapshot.
    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        self.restore_pieces([snapshot], key_groups)
    }

    /// Checkpoint `id` completed everywhere: the declared tables first, then the operator.
    fn checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
        self.state().checkpoint_complete(id);
        self.notify_checkpoint_complete(id)
    }
}

impl<Op: Operator> Checkpointed for Op {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Keeps every record pushed to it with its timestamp ([`NO_TIMESTAMP`] for none).
    #[derive(Default)]
    struct Stamped(Vec<(u32, Timestamp)>);

    impl crate::Output<u32> for Stamped {
        fn push(&mut self, records: &mut Vec<u32>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
            let stamps = timestamps.drain(..).chain(std::iter::repeat(NO_TIMESTAMP));
            self.0.extend(records.drain(..).zip(stamps));
            Ok(())
        }
        fn control(&mut self, _: crate::Control<'_>) -> Result<()> {
            Ok(())
        }
    }

    /// Runs `consume` on a batch and returns what reached the output (in batches of at most
    /// 4 records), with timestamps.
    fn emitted(
        records: &[u32],
        timestamps: &[Timestamp],
        consume: impl FnOnce(Batch<'_, u32>, &mut Collector<'_, u32>) -> Result<()>,
    ) -> Vec<(u32, Timestamp)> {
        let (mut records, mut timestamps) = (records.to_vec(), timestamps.to_vec());
        let mut out = Stamped::default();
        let (mut buf, mut stamps) = (Vec::new(), Vec::new());
        Collector::run(&mut buf, &mut stamps, &mut out, 4, |c| {
            consume(Batch::with_timestamps(&mut records, &mut timestamps), c)
        })
        .unwrap();
        assert!(
            records.is_empty() && timestamps.is_empty(),
            "the batch is consumed"
        );
        out.0
    }

    proptest! {
        /// Each way of consuming a batch gives an output record its input's timestamp (none
        /// when the batch has none), against a brute-force pairing.
        #[test]
        fn every_way_of_consuming_a_batch_keeps_the_inputs_timestamps(
            input in proptest::collection::vec((0u32..50, 0i64..4), 0..40),
            stamped in any::<bool>(),
        ) {
            let records: Vec<u32> = input.iter().map(|(r, _)| *r).collect();
            let timestamps: Vec<Timestamp> = if stamped {
                input.iter().map(|(_, t)| *t).collect()
            } else {
                Vec::new()
            };
            let expected: Vec<(u32, Timestamp)> = records
                .iter()
                .enumerate()
                .map(|(i, r)| (*r, timestamps.get(i).copied().unwrap_or(NO_TIMESTAMP)))
                .collect();
            let drained = emitted(&records, &timestamps, |b, c| {
                b.drain().for_each(|(r, t)| c.collect_with_timestamp(r, t));
                Ok(())
            });
            prop_assert_eq!(&drained, &expected);
            let each = emitted(&records, &timestamps, |b, c| {
                b.for_each(c, |r, c| {
                    c.collect(r);
                    Ok(())
                })
            });
            prop_assert_eq!(&each, &expected);
            let mut runs = 0;
            let by_run = emitted(&records, &timestamps, |b, c| {
                b.by_timestamp(c, |run, c| {
                    runs += 1;
                    c.collect_all(run.drain(..));
                    Ok(())
                })
            });
            prop_assert_eq!(&by_run, &expected);
            // A batch without timestamps (an empty one included) is one run.
            let distinct_runs = timestamps.chunk_by(|a, b| a == b).count().max(1);
            prop_assert_eq!(runs, distinct_runs);
        }
    }

    #[test]
    fn an_error_in_a_run_stops_the_batch_and_leaves_it_consumed() {
        let mut seen = Vec::new();
        let out = emitted(&[1, 2, 3], &[5, 6, 7], |b, c| {
            b.by_timestamp(c, |run, _| {
                seen.append(run);
                if seen.len() == 2 {
                    return Err(crate::error::internal!("refused"));
                }
                Ok(())
            })
            .or(Ok(()))
        });
        assert_eq!(seen, vec![1, 2]);
        assert!(out.is_empty());
    }
}
