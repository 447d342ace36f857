//! The chain machinery: how operators fused into one task call each other.
//!
//! Each link of a chain owns its operator and a boxed [`Output`] for everything downstream,
//! so a batch passes the whole chain as nested calls on one thread, with one dynamic call per
//! operator per batch and no queue in between. A stream consumed by several operators goes
//! through a [`FanOut`].
//!
//! Every call into an operator is [`guarded`]: a panic or an error raised by the operator is
//! turned into [`HummerError::Operator`] naming the operator and the subtask, which fails the
//! job.

use hummer_state::disk_tier::TierUse;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{HummerError, Result, panic_message};
use crate::operators::{
    Batch, Checkpointed, Collector, Control, EitherBatch, Operator, OperatorContext, Output,
};
use crate::state::declared::OperatorSnapshot;
use crate::state::snapshot::SnapshotBuffer;
use crate::state::task_state::{Pieces, TaskSnapshot};
use crate::types::{CheckpointId, Timestamp};

/// Runs `f` (a call into an operator), turning a panic or an error into an error that names
/// the operator and subtask.
#[inline]
pub fn guarded<R>(ctx: &OperatorContext, f: impl FnOnce() -> Result<R>) -> Result<R> {
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

/// Adds the state `take` returns (if any) to a task's snapshot under the operator's node id,
/// its parts on disk to be written later; guarded like every call into an operator.
pub fn snapshot_guarded(
    ctx: &OperatorContext,
    snapshot: &mut TaskSnapshot,
    take: impl FnOnce(CheckpointId, usize) -> Result<Option<OperatorSnapshot>>,
) -> Result<()> {
    let (id, max) = (snapshot.checkpoint, snapshot.max_parallelism);
    if let Some(state) = guarded(ctx, || take(id, max))? {
        snapshot.operators.push((ctx.node, state.bytes));
        let operator = snapshot.operators.len() - 1;
        snapshot.cold_parts.add(operator, state.cold_parts);
    }
    Ok(())
}

/// What an operator that has ended writes to a checkpoint instead of its state: restored,
/// it is not called again (see [`Operator::end_of_input`]). No snapshot of this
/// crate starts like it, and an operator's own bytes would have to be exactly these.
pub const ENDED: &[u8] = b"HMR-ENDED-OPERATOR/1";

/// An operator and everything downstream of it: what a chain link and a two-input head
/// share. Every call into the operator is guarded; what it emits goes through a collector
/// into `next`.
pub struct Link<Op: Operator> {
    op: Op,
    ctx: OperatorContext,
    buf: Vec<Op::Out>,
    stamps: Vec<Timestamp>,
    next: Box<dyn Output<Op::Out>>,
    /// The operator makes its own watermarks: the input's are not handed on.
    generates_watermarks: bool,
    /// Its end of input has been called (at the final checkpoint's barrier, at the end of
    /// input, or before the checkpoint it was restored from): it is not called again, and
    /// the operator gets no more timers.
    ended: bool,
    /// Sized from the operator's last snapshot (the runtime owns its state's snapshots).
    snapshot_buffer: SnapshotBuffer,
}

impl<Op: Operator> Link<Op> {
    /// The link of `op`; with a budget for state, its declared tables may move cold entries
    /// to the context's disk tier from now on (before any restore).
    pub fn new(mut op: Op, ctx: OperatorContext, next: Box<dyn Output<Op::Out>>) -> Self {
        if let Some(tier) = &ctx.disk_tier {
            op.state().use_disk_tier(&TierUse {
                tier: tier.clone(),
                max_parallelism: ctx.max_parallelism,
                counters: ctx.metrics.clone(),
            });
        }
        Link {
            generates_watermarks: op.generates_watermarks(),
            ended: false,
            snapshot_buffer: SnapshotBuffer::default(),
            op,
            ctx,
            buf: Vec::new(),
            stamps: Vec::new(),
            next,
        }
    }

    /// Calls into the operator with a collector feeding the rest of the chain.
    #[inline]
    pub fn call(
        &mut self,
        f: impl FnOnce(&mut Op, &mut Collector<'_, Op::Out>) -> Result<()>,
    ) -> Result<()> {
        let limit = self.ctx.batch_size;
        let (op, buf, stamps, next) = (
            &mut self.op,
            &mut self.buf,
            &mut self.stamps,
            &mut *self.next,
        );
        guarded(&self.ctx, || {
            Collector::run(buf, stamps, next, limit, |out| f(op, out))
        })
    }

    /// Calls one of the operator's process methods on a batch; what it leaves in the batch
    /// is dropped, so both vectors are empty for the next batch.
    #[inline]
    pub fn process<T>(
        &mut self,
        records: &mut Vec<T>,
        timestamps: &mut Vec<Timestamp>,
        f: impl FnOnce(&mut Op, Batch<'_, T>, &mut Collector<'_, Op::Out>) -> Result<()>,
    ) -> Result<()> {
        let result = self.call(|op, out| f(op, Batch::with_timestamps(records, timestamps), out));
        records.clear();
        timestamps.clear();
        result
    }

    /// Loads the operator's state from the snapshots of every subtask of the restored run,
    /// read one at a time. If every one of them had ended, so has this one.
    pub fn restore(&mut self, snapshots: Pieces<'_>) -> Result<()> {
        let (op, groups) = (&mut self.op, self.ctx.key_groups());
        let (mut live, mut ended) = (0, 0);
        guarded(&self.ctx, || {
            snapshots.for_each(|piece| {
                if piece == ENDED {
                    ended += 1;
                    return Ok(());
                }
                live += 1;
                op.restore_piece(live - 1, piece, groups.clone())
            })?;
            if live > 0 { op.restored() } else { Ok(()) }
        })?;
        self.ended = live == 0 && ended > 0;
        Ok(())
    }

    /// Calls the operator's end of input, once.
    pub fn end(&mut self) -> Result<()> {
        if !self.ended {
            self.call(|op, out| op.end_of_input(out))?;
            self.ended = true;
        }
        Ok(())
    }

    /// Handles a control event: the operator's hook for it (guarded), then the rest of the
    /// chain. What the operator emits in its hook goes ahead of the event.
    pub fn control(&mut self, event: Control<'_>) -> Result<()> {
        match event {
            Control::Flush => {}
            Control::EndOfInput => self.end()?,
            Control::Barrier(snapshot) => {
                // At the final checkpoint's barrier the operator ends first: what it emits
                // then goes ahead of the barrier, and it writes that it ended instead of its
                // state.
                if snapshot.is_final && self.op.ends_at_final_barrier() {
                    self.end()?;
                }
                if self.ended {
                    snapshot.operators.push((self.ctx.node, ENDED.to_vec()));
                } else {
                    let (op, buffer) = (&mut self.op, &mut self.snapshot_buffer);
                    snapshot_guarded(&self.ctx, snapshot, |id, max| {
                        op.snapshot_into(id, max, buffer)
                    })?;
                }
                return self.next.control(Control::Barrier(snapshot));
            }
            Control::CheckpointComplete(id) => {
                let op = &mut self.op;
                guarded(&self.ctx, || op.checkpoint_complete(id))?;
            }
            Control::Watermark(watermark) => {
                self.call(|op, out| op.on_watermark(watermark, out))?;
                if self.generates_watermarks {
                    return Ok(());
                }
            }
            Control::WatermarkStatus(_) if self.generates_watermarks => return Ok(()),
            Control::WatermarkStatus(_) => {}
            Control::ProcessingTime(now) => {
                if !self.ended {
                    self.call(|op, out| op.on_processing_time(now, out))?;
                }
            }
        }
        self.next.control(event)
    }
}

impl<T, Op> Output<T> for Link<Op>
where
    Op: Operator<In = (T,)>,
    T: Send + 'static,
    Op::Out: Send,
{
    #[inline]
    fn push(&mut self, records: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        self.process(records, timestamps, |op, batch, out| op.process(batch, out))
    }

    fn control(&mut self, event: Control<'_>) -> Result<()> {
        Link::control(self, event)
    }
}

impl<L: 'static, R: 'static, Op: Operator<In = (L, R)>> Link<Op> {
    /// Processes a batch of the first input (`timestamps` as for [`Output::push`]).
    pub fn push1(&mut self, records: &mut Vec<L>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        self.process(records, timestamps, |op, batch, out| {
            op.process(EitherBatch::First(batch), out)
        })
    }

    /// Processes a batch of the second input (`timestamps` as for [`Output::push`]).
    pub fn push2(&mut self, records: &mut Vec<R>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        self.process(records, timestamps, |op, batch, out| {
            op.process(EitherBatch::Second(batch), out)
        })
    }
}

/// Fans one stream out to several consumers (chained operators and/or shuffles); every
/// consumer but the last gets a copy of each batch.
pub struct FanOut<T> {
    pub(crate) outputs: Vec<Box<dyn Output<T>>>,
}

impl<T: Clone + Send> Output<T> for FanOut<T> {
    fn push(&mut self, records: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        if let Some((last, rest)) = self.outputs.split_last_mut() {
            for out in rest {
                let (mut copy, mut stamps) = (records.clone(), timestamps.clone());
                out.push(&mut copy, &mut stamps)?;
            }
            last.push(records, timestamps)?;
        }
        records.clear();
        timestamps.clear();
        Ok(())
    }

    fn control(&mut self, mut event: Control<'_>) -> Result<()> {
        self.outputs
            .iter_mut()
            .try_for_each(|o| o.control(event.reborrow()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::VecOutput;
    use crate::operators::union::Union;
    use crate::state::UnionList;
    use crate::state::declared::DeclaredState;
    use crate::types::{RuntimeMode, WatermarkStatus};

    /// A two-input operator with a side effect per checkpoint: it buffers what it sees and
    /// "commits" (emits) it only when a checkpoint completes, as a transactional sink does.
    struct CommitOnComplete {
        pending: Vec<u32>,
        committed: Vec<(CheckpointId, Vec<u32>)>,
    }

    impl Operator for CommitOnComplete {
        type In = (u32, u32);
        type Out = u32;

        fn process(
            &mut self,
            batch: EitherBatch<'_, u32, u32>,
            out: &mut Collector<'_, u32>,
        ) -> Result<()> {
            let (batch, first) = batch.with_side();
            let offset = if first { 0 } else { 1000 };
            batch.for_each(out, |x, out| {
                self.pending.push(x + offset);
                out.collect(x);
                Ok(())
            })
        }

        fn notify_checkpoint_complete(&mut self, id: CheckpointId) -> Result<()> {
            if id == 13 {
                return Err(crate::error::HummerError::Panic("commit refused".into()));
            }
            self.committed.push((id, std::mem::take(&mut self.pending)));
            Ok(())
        }
    }

    fn ctx() -> OperatorContext {
        OperatorContext {
            name: "commit".into(),
            subtask: 1,
            parallelism: 2,
            max_parallelism: 128,
            mode: RuntimeMode::Streaming,
            batch_size: 16,
            node: 3,
            checkpointing: true,
            time: Default::default(),
            auto_watermark_interval: std::time::Duration::from_millis(200),
            metrics: Default::default(),
            disk_tier: None,
        }
    }

    /// Downstream of the head: records pushed, the completions that reached it, and each
    /// barrier with the number of records that came before it.
    struct Downstream {
        records: VecOutput<u32>,
        completed: Vec<CheckpointId>,
        barriers: Vec<(CheckpointId, usize)>,
    }

    /// A [`Downstream`] the test reads while the head owns a handle to it.
    #[derive(Clone)]
    struct SharedDownstream(std::sync::Arc<std::sync::Mutex<Downstream>>);

    impl SharedDownstream {
        fn lock(&self) -> std::sync::LockResult<std::sync::MutexGuard<'_, Downstream>> {
            self.0.lock()
        }
    }

    fn downstream() -> SharedDownstream {
        SharedDownstream(std::sync::Arc::new(std::sync::Mutex::new(Downstream {
            records: VecOutput(Vec::new()),
            completed: Vec::new(),
            barriers: Vec::new(),
        })))
    }

    impl Output<u32> for SharedDownstream {
        fn push(&mut self, records: &mut Vec<u32>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
            self.lock().unwrap().records.push(records, timestamps)
        }
        fn control(&mut self, event: Control<'_>) -> Result<()> {
            let mut down = self.lock().unwrap();
            match event {
                Control::Barrier(snapshot) => {
                    let before = down.records.0.len();
                    down.barriers.push((snapshot.checkpoint, before));
                }
                Control::CheckpointComplete(id) => down.completed.push(id),
                _ => {}
            }
            Ok(())
        }
    }

    /// A two-input head over a [`CommitOnComplete`] that has seen nothing, and its downstream.
    fn commit_head() -> (Link<CommitOnComplete>, SharedDownstream) {
        let down = downstream();
        let op = CommitOnComplete {
            pending: Vec::new(),
            committed: Vec::new(),
        };
        (Link::new(op, ctx(), Box::new(down.clone())), down)
    }

    #[test]
    fn a_two_input_head_passes_completed_checkpoints_to_its_operator_and_downstream() {
        let (mut head, down) = commit_head();
        head.push1(&mut vec![1, 2], &mut Vec::new()).unwrap();
        head.push2(&mut vec![3], &mut Vec::new()).unwrap();
        head.control(Control::CheckpointComplete(4)).unwrap();
        head.push1(&mut vec![5], &mut Vec::new()).unwrap();
        head.control(Control::CheckpointComplete(5)).unwrap();
        assert_eq!(
            head.op.committed,
            vec![(4, vec![1, 2, 1003]), (5, vec![5])],
            "the operator commits what each checkpoint covers"
        );
        let down = down.lock().unwrap();
        assert_eq!(down.completed, vec![4, 5]);
        assert_eq!(down.records.0, vec![1, 2, 3, 5]);
    }

    #[test]
    fn a_failing_commit_names_the_two_input_operator_and_subtask() {
        let (mut head, down) = commit_head();
        let err = head.control(Control::CheckpointComplete(13)).unwrap_err();
        assert!(
            matches!(&err, HummerError::Operator { operator, subtask: 1, .. } if operator == "commit"),
            "{err}"
        );
        assert!(down.lock().unwrap().completed.is_empty());
    }

    /// Sums its input into state and emits the sum at end of input, without clearing it (as
    /// a user's operator may); counts its calls. `sink`: it ends only after its final
    /// pre-commit, as a transactional sink does.
    #[derive(Default)]
    struct SumAtEnd {
        /// The sum of each batch, and on restore the old subtasks'.
        sums: UnionList<u32>,
        ends: u32,
        timers: u32,
        sink: bool,
    }

    impl Operator for SumAtEnd {
        type In = (u32,);
        type Out = u32;

        fn process(&mut self, batch: Batch<'_, u32>, _: &mut Collector<'_, u32>) -> Result<()> {
            let sum = batch.into_records().drain(..).sum::<u32>();
            self.sums.items_mut().push(sum);
            Ok(())
        }

        fn end_of_input(&mut self, out: &mut Collector<'_, u32>) -> Result<()> {
            self.ends += 1;
            out.collect(self.sums.items().iter().sum());
            Ok(())
        }

        fn on_processing_time(&mut self, _: Timestamp, _: &mut Collector<'_, u32>) -> Result<()> {
            self.timers += 1;
            Ok(())
        }

        fn ends_at_final_barrier(&self) -> bool {
            !self.sink
        }

        fn state(&mut self) -> DeclaredState<'_> {
            DeclaredState::new().table("sums", &mut self.sums)
        }
    }

    /// The snapshot of a [`SumAtEnd`] that holds `sums`.
    fn sums_snapshot(sums: &[u32]) -> Vec<u8> {
        let mut sums = UnionList::from(sums.to_vec());
        let state = DeclaredState::new().table("sums", &mut sums);
        let snapshot = state.snapshot(1, 128, &mut SnapshotBuffer::default());
        snapshot.unwrap().unwrap()
    }

    fn barrier(link: &mut Link<SumAtEnd>, id: CheckpointId, is_final: bool) -> TaskSnapshot {
        let mut snapshot = TaskSnapshot::new(id, 128);
        snapshot.is_final = is_final;
        link.control(Control::Barrier(&mut snapshot)).unwrap();
        snapshot
    }

    #[test]
    fn at_the_final_barrier_an_operator_ends_before_its_snapshot_and_only_once() {
        let down = downstream();
        let mut link = Link::new(SumAtEnd::default(), ctx(), Box::new(down.clone()));
        link.push(&mut vec![1, 2], &mut Vec::new()).unwrap();
        let regular = barrier(&mut link, 1, false);
        assert_eq!(regular.operators, vec![(3, sums_snapshot(&[3]))]);
        link.push(&mut vec![4], &mut Vec::new()).unwrap();
        let last = barrier(&mut link, 2, true);
        assert_eq!(
            last.operators,
            vec![(3, ENDED.to_vec())],
            "an ended operator writes no state"
        );
        link.control(Control::ProcessingTime(5)).unwrap();
        link.control(Control::EndOfInput).unwrap();
        let op = &link.op;
        assert_eq!(
            (op.ends, op.timers),
            (1, 0),
            "ended once, no timer after it"
        );
        let down = down.lock().unwrap();
        assert_eq!(down.records.0, vec![7]);
        assert_eq!(
            down.barriers,
            vec![(1, 0), (2, 1)],
            "the end's output precedes the barrier"
        );
    }

    #[test]
    fn a_sink_ends_after_its_final_snapshot() {
        let down = downstream();
        let op = SumAtEnd {
            sink: true,
            ..SumAtEnd::default()
        };
        let mut link = Link::new(op, ctx(), Box::new(down.clone()));
        link.push(&mut vec![5], &mut Vec::new()).unwrap();
        let last = barrier(&mut link, 1, true);
        assert_eq!(last.operators, vec![(3, sums_snapshot(&[5]))]);
        assert_eq!(link.op.ends, 0);
        link.control(Control::EndOfInput).unwrap();
        assert_eq!(link.op.ends, 1);
        assert_eq!(down.lock().unwrap().barriers, vec![(1, 0)]);
    }

    #[test]
    fn restored_from_ended_subtasks_an_operator_is_ended_unless_one_was_not() {
        let ended = || {
            let down = downstream();
            let mut link = Link::new(SumAtEnd::default(), ctx(), Box::new(down.clone()));
            link.restore(Pieces::Held(&[ENDED.to_vec(), ENDED.to_vec()]))
                .unwrap();
            link.control(Control::EndOfInput).unwrap();
            (link.op.ends, down.lock().unwrap().records.0.clone())
        };
        assert_eq!(
            ended(),
            (0, vec![]),
            "its end's output was in the checkpoint already"
        );
        let down = downstream();
        let mut link = Link::new(SumAtEnd::default(), ctx(), Box::new(down.clone()));
        link.restore(Pieces::Held(&[ENDED.to_vec(), sums_snapshot(&[2, 4])]))
            .unwrap();
        link.control(Control::EndOfInput).unwrap();
        assert_eq!(
            down.lock().unwrap().records.0,
            vec![6],
            "only the live state ends"
        );
    }

    /// An output that writes down what reaches it, in order.
    #[derive(Clone, Default)]
    struct Log(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl Output<u32> for Log {
        fn push(&mut self, records: &mut Vec<u32>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
            let line = format!("records {records:?} at {timestamps:?}");
            self.0.lock().unwrap().push(line);
            records.clear();
            timestamps.clear();
            Ok(())
        }
        fn control(&mut self, event: Control<'_>) -> Result<()> {
            let line = match event {
                Control::Barrier(snapshot) => format!("barrier {}", snapshot.checkpoint),
                other => format!("{other:?}"),
            };
            self.0.lock().unwrap().push(line);
            Ok(())
        }
    }

    #[test]
    fn every_control_event_passes_a_chain_and_a_fan_out_in_stream_order() {
        let (a, b) = (Log::default(), Log::default());
        let fan = FanOut {
            outputs: vec![Box::new(a.clone()), Box::new(b.clone())],
        };
        let mut link = Link::new(Union::default(), ctx(), Box::new(fan));
        let mut snapshot = TaskSnapshot::new(7, 128);
        link.push(&mut vec![1, 2], &mut Vec::new()).unwrap();
        link.control(Control::Watermark(5)).unwrap();
        link.push(&mut vec![3], &mut vec![9]).unwrap();
        link.control(Control::WatermarkStatus(WatermarkStatus::Idle))
            .unwrap();
        link.control(Control::ProcessingTime(11)).unwrap();
        link.control(Control::Barrier(&mut snapshot)).unwrap();
        link.control(Control::CheckpointComplete(7)).unwrap();
        link.control(Control::Flush).unwrap();
        link.control(Control::EndOfInput).unwrap();
        let expected = [
            "records [1, 2] at []",
            "Watermark(5)",
            "records [3] at [9]",
            "WatermarkStatus(Idle)",
            "ProcessingTime(11)",
            "barrier 7",
            "CheckpointComplete(7)",
            "Flush",
            "EndOfInput",
        ];
        assert_eq!(*a.0.lock().unwrap(), expected);
        assert_eq!(
            *b.0.lock().unwrap(),
            expected,
            "every consumer of a fan-out sees it all"
        );
        assert_eq!(
            snapshot.operators.len(),
            0,
            "a stateless operator adds no state"
        );
    }
}
