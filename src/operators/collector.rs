//! How an operator hands on its output: a [`Collector`] buffers records into batches for the
//! operator's [`Output`] (the next operator of the chain, a fan-out, or a shuffle).

use crate::error::{HummerError, Result};
use crate::state::task_state::TaskSnapshot;
use crate::types::{CheckpointId, Timestamp, WatermarkStatus};

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
    /// The stream's watermark advanced to `watermark`: no record with a smaller timestamp
    /// follows. Hands on what is buffered first, so the watermark keeps its place after the
    /// records before it.
    fn watermark(&mut self, watermark: Timestamp) -> Result<()>;
    /// The stream became idle (its watermark holds nothing back) or active again.
    fn watermark_status(&mut self, status: WatermarkStatus) -> Result<()>;
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

    /// Runs `f` (an operator's call) with a collector over `buf` feeding `next`, then hands on
    /// what is buffered. The operator's own error comes first, else the first downstream one.
    #[inline]
    pub(crate) fn run(
        buf: &'a mut Vec<T>,
        next: &'a mut dyn Output<T>,
        limit: usize,
        f: impl FnOnce(&mut Collector<'a, T>) -> Result<()>,
    ) -> Result<()> {
        let mut out = Collector::new(buf, next, limit);
        let result = f(&mut out);
        result.and(out.done())
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
