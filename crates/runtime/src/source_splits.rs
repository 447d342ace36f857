//! The readers of one source subtask: one per split it reads.
//!
//! A fresh job gives each source subtask one split (its own share of the input). A job
//! restarted from a checkpoint at another parallelism deals the checkpointed splits out over
//! the new subtasks (see [`RestoredState::splits`]), so a subtask may read several, one after
//! another, each resumed at its checkpointed position; its snapshots then list them all.

use crate::connectors::{Source, SourceContext, SourceReader, SourceStatus};
use crate::error::Result;
use crate::operators::WatermarkStrategy;
use crate::operators::watermark_strategy::WatermarkTracker;
use crate::state::task_state::{RestoredState, SourceSplit};
use crate::types::{AlignmentMember, MAX_WATERMARK, NO_TIMESTAMP, Timestamp};

/// Who applies the source's watermark strategy (`from_source`) to a split.
pub enum Stamping<T> {
    /// Nobody: the source has no strategy, its records no timestamps.
    None,
    /// The split, to all its records together: their timestamps, its watermark, its
    /// idleness.
    Split(WatermarkTracker<T>),
    /// The reader, per partition of its input (see
    /// [`SourceReader::use_watermark_strategy`]).
    Reader,
}

pub struct Split<T> {
    subtask: usize,
    parallelism: usize,
    reader: Box<dyn SourceReader<T>>,
    finished: bool,
    stamping: Stamping<T>,
}

impl<T: 'static> Split<T> {
    pub fn new(
        subtask: usize,
        parallelism: usize,
        mut reader: Box<dyn SourceReader<T>>,
        strategy: Option<&WatermarkStrategy<T>>,
    ) -> Self {
        let stamping = match strategy {
            None => Stamping::None,
            Some(s) if reader.use_watermark_strategy(s) => Stamping::Reader,
            Some(s) => Stamping::Split(s.tracker()),
        };
        Split {
            subtask,
            parallelism,
            reader,
            finished: false,
            stamping,
        }
    }
}

impl<T> Split<T> {
    /// The split's watermark: its strategy's, held back by the reader's own when it has one
    /// (a reader of several files knows which of them lags).
    pub fn watermark(&self) -> Option<Timestamp> {
        match (&self.stamping, self.reader.current_watermark()) {
            (Stamping::Split(t), Some(own)) => t.watermark().map(|w| w.min(own)),
            (Stamping::Split(t), None) => t.watermark(),
            (_, own) => own,
        }
    }

    pub fn is_idle(&self) -> bool {
        match &self.stamping {
            Stamping::Split(t) => t.is_idle(),
            _ => self.reader.is_idle(),
        }
    }

    /// Polls the reader; stamps what it appended to `out` (from `out[before..]`).
    pub fn poll(
        &mut self,
        out: &mut Vec<T>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        let before = out.len();
        match &mut self.stamping {
            Stamping::None => self.reader.poll_next(out, max),
            Stamping::Reader => {
                stamps.resize(before, NO_TIMESTAMP);
                self.reader.poll_next_stamped(out, stamps, max)
            }
            // Readers with timestamps of their own (Kafka's) take the strategy and stamp
            // their records themselves (`Stamping::Reader`); here records have none.
            Stamping::Split(tracker) => {
                let status = self.reader.poll_next(out, max)?;
                stamps.resize(before, NO_TIMESTAMP);
                stamps.extend(
                    out[before..]
                        .iter()
                        .map(|r| tracker.on_record(r, NO_TIMESTAMP).0),
                );
                Ok(status)
            }
        }
    }
}

/// Every split one source subtask reads.
pub struct SourceSplits<T> {
    splits: Vec<Split<T>>,
    current: usize,
    /// The subtask's place in its strategy's watermark alignment group, if it has one.
    alignment: Option<AlignmentMember>,
    /// The largest timestamp the splits have given a record (for the alignment).
    progress: Option<Timestamp>,
}

impl<T: 'static> SourceSplits<T> {
    /// The readers of subtask `ctx.subtask`: its own split, or those `restored` deals it.
    pub fn open(
        source: &dyn Source<T>,
        node: usize,
        ctx: &SourceContext,
        restored: Option<&RestoredState>,
        strategy: Option<&WatermarkStrategy<T>>,
    ) -> Result<Self> {
        let assigned = restored.and_then(|r| r.splits(node, ctx.subtask, ctx.parallelism));
        let mut splits = Vec::new();
        match assigned {
            None => splits.push(Split::new(
                ctx.subtask,
                ctx.parallelism,
                source.create_reader(ctx)?,
                strategy,
            )),
            Some(assigned) => {
                for SourceSplit {
                    subtask,
                    parallelism,
                    position,
                } in assigned
                {
                    let split_ctx = SourceContext {
                        subtask,
                        parallelism,
                        progress: ctx.progress.clone(),
                        metrics: ctx.metrics.clone(),
                    };
                    let mut reader = source.create_reader(&split_ctx)?;
                    reader.restore_position(&position)?;
                    splits.push(Split::new(subtask, parallelism, reader, strategy));
                }
            }
        }
        Ok(SourceSplits {
            splits,
            current: 0,
            alignment: strategy
                .and_then(WatermarkStrategy::alignment_group)
                .map(|group| group.join()),
            progress: None,
        })
    }
}

impl<T> SourceSplits<T> {
    /// Whether the splits stamp their records and make watermarks with a strategy (and so
    /// need the periodic call).
    pub fn has_strategy(&self) -> bool {
        self.splits
            .iter()
            .any(|s| !matches!(s.stamping, Stamping::None))
    }

    /// The periodic call of every split's watermark strategy.
    pub fn on_periodic(&mut self, now: Timestamp) {
        for split in &mut self.splits {
            match &mut split.stamping {
                Stamping::Split(t) => {
                    t.on_periodic(now);
                }
                Stamping::Reader => split.reader.on_periodic_watermark(now),
                Stamping::None => {}
            }
        }
    }

    /// Appends at most `max` records from the current split (and their timestamps to
    /// `stamps`, when the splits have a watermark strategy); the next poll starts at the next
    /// split, so a subtask reading several advances them together.
    pub fn poll_next(
        &mut self,
        out: &mut Vec<T>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        let status = self.poll_splits(out, stamps, max);
        if let (Some(_), Some(&max)) = (&self.alignment, stamps.iter().max()) {
            self.progress = Some(self.progress.map_or(max, |p| p.max(max)));
        }
        status
    }

    pub fn poll_splits(
        &mut self,
        out: &mut Vec<T>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        if let [only] = self.splits.as_mut_slice() {
            if only.finished {
                return Ok(SourceStatus::Finished);
            }
            let status = only.poll(out, stamps, max)?;
            only.finished = status == SourceStatus::Finished;
            return Ok(status);
        }
        let n = self.splits.len();
        let mut idle: Option<std::time::Duration> = None;
        for step in 0..n {
            let i = (self.current + step) % n;
            let split = &mut self.splits[i];
            if split.finished {
                continue;
            }
            match split.poll(out, stamps, max)? {
                SourceStatus::MoreAvailable => {
                    // The next poll starts at the next split: the splits advance together,
                    // so none runs far ahead of the others in event time.
                    self.current = (i + 1) % n;
                    return Ok(SourceStatus::MoreAvailable);
                }
                SourceStatus::Finished => split.finished = true,
                SourceStatus::Idle(wait) => {
                    idle = Some(idle.map_or(wait, |w| w.min(wait)));
                }
            }
            if !out.is_empty() {
                self.current = (i + 1) % n;
                return Ok(SourceStatus::MoreAvailable);
            }
        }
        Ok(match idle {
            Some(wait) => SourceStatus::Idle(wait),
            None => SourceStatus::Finished,
        })
    }

    /// The minimum of the watermarks of the splits that are neither finished nor idle (`None`
    /// if one of them has none, or if every unfinished split is idle; the maximum once all
    /// have finished).
    pub fn watermark(&self) -> Option<Timestamp> {
        let mut open = self.splits.iter().filter(|s| !s.finished).peekable();
        if open.peek().is_none() {
            return Some(MAX_WATERMARK);
        }
        let mut min = None;
        for split in open.filter(|s| !s.is_idle()) {
            let w = split.watermark()?;
            min = Some(min.map_or(w, |m: Timestamp| m.min(w)));
        }
        min
    }

    /// Whether every unfinished split is idle (and one is unfinished).
    pub fn is_idle(&self) -> bool {
        let mut open = self.splits.iter().filter(|s| !s.finished).peekable();
        open.peek().is_some() && open.all(|s| s.is_idle())
    }

    /// Publishes the subtask's watermark to its alignment group (`None` while it has none or
    /// is idle); `finished`: it has read everything and holds nobody back any more.
    pub fn publish_alignment(&mut self, watermark: Option<Timestamp>, finished: bool) {
        if finished {
            self.alignment = None;
        } else if let Some(member) = &mut self.alignment {
            member.publish(watermark);
        }
    }

    /// Before pausing: asks the alignment group to wake this thread when it advances.
    pub fn wake_when_aligned(&self) {
        if let Some(member) = &self.alignment {
            member.wake_me_when_the_group_advances();
        }
    }

    /// Whether the subtask must not read now: it is ahead of its alignment group by more than
    /// the maximum drift.
    #[inline]
    pub fn must_pause(&self) -> bool {
        self.alignment
            .as_ref()
            .is_some_and(|member| member.must_pause(self.progress))
    }

    /// Checkpoint `id` completed: tells every split's reader.
    pub fn checkpoint_complete(&mut self, id: crate::types::CheckpointId) {
        for split in &mut self.splits {
            split.reader.notify_checkpoint_complete(id);
        }
    }

    /// The positions of every split, or `None` if one of them cannot be replayed.
    pub fn snapshot(&self) -> Option<Vec<SourceSplit>> {
        self.splits
            .iter()
            .map(|s| {
                Some(SourceSplit {
                    subtask: s.subtask,
                    parallelism: s.parallelism,
                    position: s.reader.snapshot_position()?,
                })
            })
            .collect()
    }
}
