//! Connectors: where records come from and where they go.
//!
//! Sources implement [`Source`] (bounded or not; a reader per parallel subtask), sinks
//! implement [`crate::operators::sink::Sink`]. Built in:
//!
//! | source | bounded | parallel |
//! |---|---|---|
//! | [`collection`]: `from_collection`, `from_iter` | yes | no |
//! | [`text_file`]: `read_text_file` (a file or a directory, split at line boundaries) | yes | yes |
//! | [`socket`]: `socket_text_stream` | no | no |
//! | [`generator`]: `GeneratorSource` with `add_source` (optionally rate-limited) | if given a count | yes |
//! | [`kafka`]: `KafkaSource` (topics or a pattern; per-partition watermarks) | if asked to stop at the latest offsets | yes |
//!
//! Sinks: [`print`], [`text_file_sink`] (a part file per subtask), [`collect`] (results
//! returned in the `JobResult`), [`kafka`] (`KafkaSink`: at-least-once or exactly-once).
//!
//! Layer 4 of 12: above `operators` (sinks are operators) and `state`, below `runtime` (the
//! layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_operators as operators;
use hummer_state as state;
use hummer_types::{self as types, error};

pub mod collect;
pub mod collection;
pub mod generator;
pub mod kafka;
pub mod print;
pub mod socket;
pub mod text_file;
pub mod text_file_sink;

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::types::Timestamp;
use crate::types::metrics::JobProgress;

/// Where a source reader runs.
#[derive(Clone, Debug)]
pub struct SourceContext {
    /// Zero-based index of this reader's subtask.
    pub subtask: usize,
    /// Number of parallel readers.
    pub parallelism: usize,
    /// Progress counters of the job (bytes of bounded input).
    pub progress: Arc<JobProgress>,
    /// The subtask's counters (a partitioned source reports its partitions there).
    pub metrics: Arc<crate::types::metrics::SubtaskMetrics>,
}

impl SourceContext {
    /// The context of reader `subtask` of `parallelism`, with counters of its own: for a
    /// reader run outside a job (tests, tools).
    pub fn standalone(subtask: usize, parallelism: usize) -> Self {
        SourceContext {
            subtask,
            parallelism,
            progress: Default::default(),
            metrics: Default::default(),
        }
    }
}

/// What a poll of a source reader found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceStatus {
    /// More records can be read at once.
    MoreAvailable,
    /// Nothing available now; poll again after at most this long.
    Idle(Duration),
    /// The input is exhausted (bounded sources only).
    Finished,
}

/// A reader position that is the number of the next record (generators): eight bytes,
/// big-endian.
pub fn count_position(next: u64) -> Vec<u8> {
    next.to_be_bytes().to_vec()
}

/// The number a [`count_position`] holds; a position of another length is refused naming
/// `source`.
pub fn read_count_position(position: &[u8], source: &str) -> Result<u64> {
    let bytes: [u8; 8] = position
        .try_into()
        .map_err(|_| crate::error::HummerError::BadInput {
            input: format!("the checkpointed position of {source}"),
            reason: format!("{} bytes, where 8 are expected", position.len()),
        })?;
    Ok(u64::from_be_bytes(bytes))
}

/// A source of records (Flink's `Source`): creates one reader per parallel subtask.
pub trait Source<T>: Send + Sync + 'static {
    /// Name shown in plans and error messages.
    fn name(&self) -> String;
    /// True if the source ends by itself (a file), false if it runs until cancelled (a socket).
    fn is_bounded(&self) -> bool;
    /// The largest parallelism the source supports (`Some(1)` for a non-parallel source).
    fn max_parallelism(&self) -> Option<usize> {
        None
    }
    /// True if its readers can rewind to a checkpointed position (see
    /// [`SourceReader::snapshot_position`]). A source that cannot gives at-most-once under
    /// checkpoints, and the job says so when it starts.
    fn is_replayable(&self) -> bool {
        false
    }
    /// Checks the source before the job starts (e.g. that input files exist), so that a bad
    /// input fails `execute()` with a clear error instead of failing a running task.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
    /// Creates the reader of one subtask.
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>>;
}

/// A shared source is a source (one built once and used by several jobs or streams).
impl<T, S: Source<T> + ?Sized> Source<T> for Arc<S> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn is_bounded(&self) -> bool {
        (**self).is_bounded()
    }
    fn max_parallelism(&self) -> Option<usize> {
        (**self).max_parallelism()
    }
    fn is_replayable(&self) -> bool {
        (**self).is_replayable()
    }
    fn validate(&self) -> Result<()> {
        (**self).validate()
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        (**self).create_reader(ctx)
    }
}

/// Reads the records of one source subtask.
pub trait SourceReader<T>: Send {
    /// Appends at most `max` records to `out` and says what comes next.
    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus>;

    /// The reader's position, for a checkpoint: reading resumes there after a restore. `None`
    /// for a source that cannot be replayed (a socket), which then gives at-most-once.
    fn snapshot_position(&self) -> Option<Vec<u8>> {
        None
    }

    /// The reader's watermark: no record with a smaller timestamp comes from it any more.
    /// `None` (the default) for a reader without event time. The source's watermark is the
    /// minimum over its readers (a finished reader holds nothing back), handed on whenever it
    /// advances; the end of a bounded input is the final watermark.
    fn current_watermark(&self) -> Option<Timestamp> {
        None
    }

    /// Whether the reader is idle: it has had nothing to read for a while and, until it
    /// reads again, its watermark must not hold back the job's (a Kafka partition without new
    /// records, say). `false` by default.
    fn is_idle(&self) -> bool {
        false
    }

    /// Like [`SourceReader::poll_next`], and appends each record's timestamp to `stamps`:
    /// called instead of `poll_next` on a reader that took the watermark strategy
    /// ([`SourceReader::use_watermark_strategy`]), which stamps its records with it (a Kafka
    /// reader gives the assigner the record's Kafka timestamp as the previous one). The
    /// default stamps none (`NO_TIMESTAMP`).
    fn poll_next_stamped(
        &mut self,
        out: &mut Vec<T>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        let before = out.len();
        let status = self.poll_next(out, max)?;
        stamps.resize(
            stamps.len() + (out.len() - before),
            crate::types::NO_TIMESTAMP,
        );
        Ok(status)
    }

    /// Offers the reader the source's watermark strategy, to apply per partition of its
    /// input as Flink's split-aware sources do: each partition's records stamped and its own
    /// watermark and idleness tracked, the reader's watermark the minimum over its partitions
    /// that are not idle. A reader that takes it returns `true`, then stamps its records in
    /// [`SourceReader::poll_next_stamped`] and answers `current_watermark` and `is_idle`
    /// from the partitions. By default it does not, and the strategy applies to all the
    /// reader's records together.
    fn use_watermark_strategy(
        &mut self,
        strategy: &crate::operators::WatermarkStrategy<T>,
    ) -> bool {
        let _ = strategy;
        false
    }

    /// The periodic call of the watermark strategy, for a reader that took it.
    fn on_periodic_watermark(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// Checkpoint `id` has completed everywhere (a Kafka reader commits its offsets to the
    /// broker then, for monitoring). Nothing by default; it cannot fail the job.
    fn notify_checkpoint_complete(&mut self, id: crate::types::CheckpointId) {
        let _ = id;
    }

    /// Continues from a position `snapshot_position` returned.
    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let _ = position;
        Err(crate::error::HummerError::Config(
            "this source cannot be replayed from a checkpoint".into(),
        ))
    }
}

/// Helpers shared by the connectors' tests.
#[cfg(test)]
mod testing {
    use super::{Source, SourceContext, SourceReader, SourceStatus};

    /// What a new reader of `source` (in `ctx`), restored to the position of `reader`, reads
    /// to the end, at most `max` records a poll.
    pub(crate) fn read_after_restore<T>(
        source: &impl Source<T>,
        ctx: &SourceContext,
        reader: &dyn SourceReader<T>,
        max: usize,
    ) -> Vec<T> {
        let position = reader.snapshot_position().unwrap();
        let mut resumed = source.create_reader(ctx).unwrap();
        resumed.restore_position(&position).unwrap();
        let mut rest = Vec::new();
        while resumed.poll_next(&mut rest, max).unwrap() != SourceStatus::Finished {}
        rest
    }
}
