//! How an operator hands on its output: a [`Collector`] buffers records into batches for the
//! operator's [`Output`] (the next operator of the chain, a fan-out, or a shuffle).
//!
//! Records may carry event timestamps. A collector keeps them in a vector beside the records,
//! only once some record has one: a stream without event time never pays for them.

use crate::error::{HummerError, Result};
use crate::state::task_state::TaskSnapshot;
use crate::types::{CheckpointId, NO_TIMESTAMP, Timestamp, WatermarkStatus};

/// Receives the batches of one stream: the next link of a chain, a fan-out, or a writer into
/// the channels of a shuffle.
///
/// `push` takes the records out of `batch` (it is left empty, its capacity may be reused).
pub trait Output<T>: Send {
    /// Processes and drains a batch.
    fn push(&mut self, batch: &mut Vec<T>) -> Result<()>;
    /// Processes and drains a batch whose records carry event timestamps (`timestamps[i]` is
    /// `batch[i]`'s, [`NO_TIMESTAMP`] for none); both vectors are left empty.
    fn push_stamped(&mut self, batch: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()>;
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
    /// The stream's watermark advanced to `watermark`: no record with a timestamp at or below
    /// it follows. Hands on what is buffered first, so the watermark keeps its place after
    /// the records before it.
    fn watermark(&mut self, watermark: Timestamp) -> Result<()>;
    /// The stream became idle (its watermark holds nothing back) or active again.
    fn watermark_status(&mut self, status: WatermarkStatus) -> Result<()>;
    /// Processing time reached `now` and some operator downstream asked to be called then
    /// (see [`crate::types::ProcessingTimeService`]): processing-time windows and timers fire,
    /// periodic watermarks are emitted.
    fn processing_time(&mut self, now: Timestamp) -> Result<()>;
}

/// Where an operator puts its output records.
///
/// Records are buffered and handed downstream in batches of at most the job's batch size, so
/// an operator that produces many records per input (a tokenizer) keeps its working set small.
///
/// An output record carries the timestamp the collector is set to ([`Collector::set_timestamp`];
/// the runtime sets it to the input record's while an operator without timestamp handling of
/// its own processes it, as Flink does), or one given with
/// [`Collector::collect_with_timestamp`].
pub struct Collector<'a, T> {
    buf: &'a mut Vec<T>,
    /// Timestamps of `buf`'s records: empty while none has one; else one per record up to
    /// the last change of `stamp`, the records after it having `stamp` (see `settle`).
    stamps: &'a mut Vec<Timestamp>,
    /// The timestamp given to records collected now.
    stamp: Option<Timestamp>,
    next: &'a mut dyn Output<T>,
    limit: usize,
    error: Option<HummerError>,
}

impl<'a, T> Collector<'a, T> {
    pub(crate) fn new(
        buf: &'a mut Vec<T>,
        stamps: &'a mut Vec<Timestamp>,
        next: &'a mut dyn Output<T>,
        limit: usize,
    ) -> Self {
        Collector {
            buf,
            stamps,
            stamp: None,
            next,
            limit: limit.max(1),
            error: None,
        }
    }

    /// Emits one record (with the collector's current timestamp, if it has one).
    ///
    /// The record's timestamp is written only when the stamp changes or the batch is handed
    /// on, so a stream without event time pays nothing here.
    #[inline]
    pub fn collect(&mut self, record: T) {
        self.buf.push(record);
        if self.buf.len() >= self.limit {
            self.spill();
        }
    }

    /// Emits one record with event timestamp `timestamp`.
    #[inline]
    pub fn collect_with_timestamp(&mut self, record: T, timestamp: Timestamp) {
        self.align();
        self.stamps.push(timestamp);
        self.buf.push(record);
        if self.buf.len() >= self.limit {
            self.spill();
        }
    }

    /// Gives the records collected since the last call the timestamp they were collected
    /// under: the current stamp, or none (when some record of the batch has one).
    #[inline]
    fn settle(&mut self) {
        let t = match self.stamp {
            Some(t) => t,
            None if self.stamps.is_empty() => return,
            None => NO_TIMESTAMP,
        };
        self.stamps.resize(self.buf.len(), t);
    }

    /// Makes `stamps` as long as `buf`: settles, or marks the records so far as having no
    /// timestamp when none had one.
    #[inline]
    fn align(&mut self) {
        if self.stamp.is_none() {
            self.stamps.resize(self.buf.len(), NO_TIMESTAMP);
        } else {
            self.settle();
        }
    }

    /// Emits every record of an iterator.
    #[inline]
    pub fn collect_all(&mut self, records: impl IntoIterator<Item = T>) {
        for r in records {
            self.collect(r);
        }
    }

    /// Records collected from now on carry `timestamp` (until set again or cleared).
    #[inline]
    pub fn set_timestamp(&mut self, timestamp: Timestamp) {
        self.align();
        self.stamp = Some(timestamp);
    }

    /// Records collected from now on carry no timestamp.
    #[inline]
    pub fn clear_timestamp(&mut self) {
        self.settle();
        self.stamp = None;
    }

    /// Hands on what is buffered, then emits a watermark. Only operators that generate
    /// watermarks (see [`crate::OneInputOperator::generates_watermarks`]) call it;
    /// for the others the runtime hands on the input's watermark.
    pub fn emit_watermark(&mut self, watermark: Timestamp) {
        self.emit(|next| next.watermark(watermark));
    }

    /// Hands on what is buffered, then declares the stream idle or active (an operator that
    /// generates watermarks, with an idleness timeout).
    pub fn emit_watermark_status(&mut self, status: WatermarkStatus) {
        self.emit(|next| next.watermark_status(status));
    }

    fn emit(&mut self, f: impl FnOnce(&mut dyn Output<T>) -> Result<()>) {
        if !self.buf.is_empty() {
            self.spill();
        }
        if self.error.is_none()
            && let Err(e) = f(self.next)
        {
            self.error = Some(e);
        }
    }

    #[cold]
    fn spill(&mut self) {
        self.settle();
        if self.error.is_some() {
            // The job is failing: drop what downstream can no longer take.
            self.buf.clear();
            self.stamps.clear();
            return;
        }
        let sent = if self.stamps.is_empty() {
            self.next.push(self.buf)
        } else {
            self.next.push_stamped(self.buf, self.stamps)
        };
        if let Err(e) = sent {
            self.error = Some(e);
        }
    }

    /// Runs `f` (an operator's call) with a collector over `buf` feeding `next`, then hands on
    /// what is buffered. The operator's own error comes first, else the first downstream one.
    #[inline]
    pub fn run(
        buf: &'a mut Vec<T>,
        stamps: &'a mut Vec<Timestamp>,
        next: &'a mut dyn Output<T>,
        limit: usize,
        f: impl FnOnce(&mut Collector<'a, T>) -> Result<()>,
    ) -> Result<()> {
        let mut out = Collector::new(buf, stamps, next, limit);
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

/// An [`Output`] that keeps what is pushed to it, in order (timestamps dropped): lets an
/// operator hand a user function a [`Collector`] of another type than its own output, then wrap
/// what it got; tests of operators and chains read what an operator emitted from it.
pub struct VecOutput<T>(pub Vec<T>);

impl<T: Send> Output<T> for VecOutput<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<()> {
        self.0.append(batch);
        Ok(())
    }
    fn push_stamped(&mut self, batch: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        timestamps.clear();
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
    fn watermark(&mut self, _watermark: Timestamp) -> Result<()> {
        Ok(())
    }
    fn watermark_status(&mut self, _status: WatermarkStatus) -> Result<()> {
        Ok(())
    }
    fn processing_time(&mut self, _now: Timestamp) -> Result<()> {
        Ok(())
    }
}

/// Runs `f` with a collector whose records are returned (appended to `into`).
pub(crate) fn collect_into<T: Send>(
    into: &mut Vec<T>,
    f: impl FnOnce(&mut Collector<'_, T>) -> Result<()>,
) -> Result<()> {
    let mut gather = Gather {
        records: std::mem::take(into),
        buf: Vec::new(),
        stamps: Vec::new(),
    };
    gather.run(f)?;
    *into = gather.records;
    Ok(())
}

/// Buffers kept between calls of [`Gather::run`], so that taking back what a function
/// collects allocates nothing once they have grown (a window operator fires once per key
/// and window: several times per record for sliding windows).
pub(crate) struct Gather<T> {
    records: Vec<T>,
    buf: Vec<T>,
    stamps: Vec<Timestamp>,
}

impl<T: Send> Gather<T> {
    pub(crate) fn new() -> Self {
        Gather {
            records: Vec::new(),
            buf: Vec::new(),
            stamps: Vec::new(),
        }
    }

    /// Runs `f` with a collector; the records it collected are appended to the buffer
    /// that [`Gather::records`] gives (clear it before the next run).
    pub(crate) fn run(
        &mut self,
        f: impl FnOnce(&mut Collector<'_, T>) -> Result<()>,
    ) -> Result<()> {
        let mut sink = VecOutput(std::mem::take(&mut self.records));
        let result = Collector::run(&mut self.buf, &mut self.stamps, &mut sink, usize::MAX, f);
        self.records = sink.0;
        result
    }

    /// What the runs since it was last cleared collected.
    pub(crate) fn records(&mut self) -> &mut Vec<T> {
        &mut self.records
    }
}
