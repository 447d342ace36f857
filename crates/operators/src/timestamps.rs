//! `assign_timestamps_and_watermarks`: gives records their event timestamps and makes the
//! stream's watermarks from a [`WatermarkStrategy`] (Flink's `TimestampsAndWatermarksOperator`).
//!
//! The operator replaces the watermarks of its input with its own: periodic ones every
//! `auto_watermark_interval` of processing time, punctuated ones as its generator emits them,
//! an idle status after the strategy's idleness timeout, and the final watermark at the end
//! of a bounded input.

use std::time::Duration;

use crate::error::Result;
use crate::types::{MAX_WATERMARK, ProcessingTimeService, Timestamp};
use crate::watermark_strategy::{TrackerChange, WatermarkTracker};
use crate::{Batch, Collector, Operator, WatermarkStrategy};

/// Stamps records and emits watermarks as a [`WatermarkStrategy`] says.
pub struct TimestampsAndWatermarks<T> {
    tracker: WatermarkTracker<T>,
    time: ProcessingTimeService,
    interval: i64,
}

impl<T: 'static> TimestampsAndWatermarks<T> {
    /// Applies `strategy`, emitting periodic watermarks every `interval` of `time`.
    pub fn new(
        strategy: &WatermarkStrategy<T>,
        time: ProcessingTimeService,
        interval: Duration,
    ) -> Self {
        let interval = (interval.as_millis() as i64).max(1);
        time.request_at(time.now().saturating_add(interval));
        TimestampsAndWatermarks {
            tracker: strategy.tracker(),
            time,
            interval,
        }
    }

    fn stamp(&mut self, record: T, previous: Timestamp, out: &mut Collector<'_, T>) {
        let (ts, change) = self.tracker.on_record(&record, previous);
        if let Some(status) = change.status {
            out.emit_watermark_status(status);
        }
        out.collect_with_timestamp(record, ts);
        if let Some(w) = change.watermark {
            out.emit_watermark(w);
        }
    }
}

fn hand_on<T>(change: TrackerChange, out: &mut Collector<'_, T>) {
    if let Some(w) = change.watermark {
        out.emit_watermark(w);
    }
    if let Some(status) = change.status {
        out.emit_watermark_status(status);
    }
}

impl<T: 'static> Operator for TimestampsAndWatermarks<T> {
    type In = (T,);
    type Out = T;

    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, T>) -> Result<()> {
        for (record, previous) in batch.drain() {
            self.stamp(record, previous, out);
        }
        Ok(())
    }

    fn generates_watermarks(&self) -> bool {
        true
    }

    /// Upstream watermarks are replaced by this operator's, except the end of input.
    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, T>) -> Result<()> {
        if time == MAX_WATERMARK {
            out.emit_watermark(MAX_WATERMARK);
        }
        Ok(())
    }

    /// The periodic watermark.
    fn on_processing_time(&mut self, now: Timestamp, out: &mut Collector<'_, T>) -> Result<()> {
        hand_on(self.tracker.on_periodic(now), out);
        self.time.request_at(now.saturating_add(self.interval));
        Ok(())
    }
}
