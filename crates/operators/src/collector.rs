//! How an operator hands on its output: a [`Collector`] buffers records into batches for the
//! operator's [`Output`] (the next operator of the chain, a fan-out, or a shuffle).
//!
//! Records may carry event timestamps. A collector keeps them in a vector beside the records,
//! only once some record has one: a stream without event time never pays for them.

use crate::error::{HummerError, Result};
use crate::output::{Control, Output, VecOutput};
use crate::types::{NO_TIMESTAMP, Timestamp, WatermarkStatus};

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
    /// watermarks (see [`crate::Operator::generates_watermarks`]) call it;
    /// for the others the runtime hands on the input's watermark.
    pub fn emit_watermark(&mut self, watermark: Timestamp) {
        self.emit(Control::Watermark(watermark));
    }

    /// Hands on what is buffered, then declares the stream idle or active (an operator that
    /// generates watermarks, with an idleness timeout).
    pub fn emit_watermark_status(&mut self, status: WatermarkStatus) {
        self.emit(Control::WatermarkStatus(status));
    }

    fn emit(&mut self, event: Control<'_>) {
        if event.is_in_stream() && !self.buf.is_empty() {
            self.spill();
        }
        if self.error.is_none()
            && let Err(e) = self.next.control(event)
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
        if let Err(e) = self.next.push(self.buf, self.stamps) {
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

/// Runs `f` with a collector whose records are returned (appended to `into`).
pub(crate) fn collect_into<T: Send>(
    into: &mut Vec<T>,
    f: impl FnOnce(&mut Collector<'_, T>) -> Result<()>,
) -> Result<()> {
    let mut gather = CollectBuffer {
        records: std::mem::take(into),
        buf: Vec::new(),
        stamps: Vec::new(),
    };
    gather.run(f)?;
    *into = gather.records;
    Ok(())
}

/// Buffers kept between calls of [`CollectBuffer::run`], so that taking back what a function
/// collects allocates nothing once they have grown (a window operator fires once per key
/// and window: several times per record for sliding windows).
pub(crate) struct CollectBuffer<T> {
    records: Vec<T>,
    buf: Vec<T>,
    stamps: Vec<Timestamp>,
}

impl<T: Send> CollectBuffer<T> {
    pub(crate) fn new() -> Self {
        CollectBuffer {
            records: Vec::new(),
            buf: Vec::new(),
            stamps: Vec::new(),
        }
    }

    /// Runs `f` with a collector; the records it collected are appended to the buffer
    /// that [`CollectBuffer::records`] gives (clear it before the next run).
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
