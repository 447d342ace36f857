//! Where timestamps and watermarks come from: [`WatermarkStrategy`] (Flink's), the
//! [`WatermarkGenerator`]s it makes, and the [`WatermarkTracker`] that applies one to a stream.
//!
//! A strategy is used in two places: by the timestamp assigner operator
//! (`DataStream::assign_timestamps_and_watermarks`) and by a source reading several splits
//! (`StreamExecutionEnvironment::from_source`), which runs one tracker per split and emits the
//! minimum over them. Both go through [`WatermarkTracker`], so the rules (the timestamp given to
//! a record, when a watermark is emitted, when a stream is idle) are written once.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::types::{AlignmentGroup, NO_TIMESTAMP, Timestamp, WatermarkStatus};

/// Where a [`WatermarkGenerator`] puts the watermarks it makes.
#[derive(Debug, Default)]
pub struct WatermarkOutput {
    watermark: Option<Timestamp>,
}

impl WatermarkOutput {
    /// Emits a watermark: no record at or below `watermark` follows. A watermark not above
    /// the last one emitted is ignored.
    pub fn emit_watermark(&mut self, watermark: Timestamp) {
        self.watermark = Some(self.watermark.map_or(watermark, |w| w.max(watermark)));
    }
}

/// Makes watermarks from the records of one stream (Flink's `WatermarkGenerator`).
pub trait WatermarkGenerator<T>: Send {
    /// Called for every record with its timestamp; a punctuated generator emits here.
    fn on_event(&mut self, record: &T, timestamp: Timestamp, output: &mut WatermarkOutput);
    /// Called every `auto_watermark_interval` of processing time; a periodic generator emits
    /// here.
    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput);
}

/// Watermarks that trail the largest timestamp seen by a fixed bound: `max - bound - 1`.
#[derive(Debug, Clone)]
pub struct BoundedOutOfOrderness {
    bound: i64,
    max: Option<Timestamp>,
}

impl BoundedOutOfOrderness {
    /// Records may arrive up to `bound` late (out of order) without being late.
    pub fn new(bound: Duration) -> Self {
        BoundedOutOfOrderness {
            bound: bound.as_millis() as i64,
            max: None,
        }
    }
}

impl<T> WatermarkGenerator<T> for BoundedOutOfOrderness {
    fn on_event(&mut self, _record: &T, timestamp: Timestamp, _output: &mut WatermarkOutput) {
        if timestamp != NO_TIMESTAMP {
            self.max = Some(self.max.map_or(timestamp, |m| m.max(timestamp)));
        }
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        if let Some(max) = self.max {
            output.emit_watermark(max.saturating_sub(self.bound).saturating_sub(1));
        }
    }
}

/// A generator that emits nothing.
#[derive(Debug, Clone, Copy)]
pub struct NoWatermarks;

impl<T> WatermarkGenerator<T> for NoWatermarks {
    fn on_event(&mut self, _record: &T, _timestamp: Timestamp, _output: &mut WatermarkOutput) {}
    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

type GeneratorFactory<T> = Arc<dyn Fn() -> Box<dyn WatermarkGenerator<T>> + Send + Sync>;
type TimestampAssigner<T> = Arc<dyn Fn(&T, Timestamp) -> Timestamp + Send + Sync>;

/// How a stream gets its event timestamps and watermarks (Flink's `WatermarkStrategy`).
///
/// ```
/// use std::time::Duration;
/// use hummer::operators::WatermarkStrategy;
/// // Records carry their time in field 1; they arrive at most 4 s out of order; a split with
/// // nothing for 30 s stops holding the watermark back.
/// let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(4))
///     .with_timestamp_assigner(|r: &(String, i64), _| r.1)
///     .with_idleness(Duration::from_secs(30));
/// # let _ = strategy;
/// ```
pub struct WatermarkStrategy<T> {
    generator: GeneratorFactory<T>,
    assigner: Option<TimestampAssigner<T>>,
    idleness: Option<Duration>,
    alignment: Option<Alignment>,
}

/// A strategy's watermark alignment: named by the user, bound to the job's group of that
/// name by `from_source`.
#[derive(Clone, Debug)]
enum Alignment {
    Named(String, Duration),
    Bound(Arc<AlignmentGroup>),
}

impl<T> Clone for WatermarkStrategy<T> {
    fn clone(&self) -> Self {
        WatermarkStrategy {
            generator: self.generator.clone(),
            assigner: self.assigner.clone(),
            idleness: self.idleness,
            alignment: self.alignment.clone(),
        }
    }
}

impl<T> fmt::Debug for WatermarkStrategy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatermarkStrategy")
            .field("assigner", &self.assigner.is_some())
            .field("idleness", &self.idleness)
            .finish()
    }
}

impl<T: 'static> WatermarkStrategy<T> {
    /// Watermarks from a custom generator, made anew for every stream (or split) it watches.
    pub fn for_generator<G, F>(make: F) -> Self
    where
        G: WatermarkGenerator<T> + 'static,
        F: Fn() -> G + Send + Sync + 'static,
    {
        WatermarkStrategy {
            generator: Arc::new(move || Box::new(make())),
            assigner: None,
            idleness: None,
            alignment: None,
        }
    }

    /// Watermarks trailing the largest timestamp seen by `bound`: records up to `bound` out
    /// of order are on time.
    pub fn for_bounded_out_of_orderness(bound: Duration) -> Self {
        Self::for_generator(move || BoundedOutOfOrderness::new(bound))
    }

    /// Watermarks for timestamps that never decrease (`max - 1`).
    pub fn for_monotonous_timestamps() -> Self {
        Self::for_bounded_out_of_orderness(Duration::ZERO)
    }

    /// Timestamps without watermarks: event-time windows then fire only at the end of a
    /// bounded input.
    pub fn no_watermarks() -> Self {
        Self::for_generator(|| NoWatermarks)
    }

    /// Takes each record's timestamp from `f(record, previous timestamp)` (the previous one is
    /// [`NO_TIMESTAMP`] where the record had none). Without an assigner records keep the
    /// timestamps they have.
    pub fn with_timestamp_assigner(
        mut self,
        f: impl Fn(&T, Timestamp) -> Timestamp + Send + Sync + 'static,
    ) -> Self {
        self.assigner = Some(Arc::new(f));
        self
    }

    /// A stream (or split) that has had no record for `timeout` of processing time is idle:
    /// it no longer holds back the watermark downstream, until its next record.
    pub fn with_idleness(mut self, timeout: Duration) -> Self {
        self.idleness = Some(timeout);
        self
    }

    /// Aligns the watermarks of the sources (`from_source`) whose strategies name the group
    /// `group`: a source subtask whose watermark is ahead of the group's slowest by more than
    /// `max_drift` pauses until that one catches up (Flink's `withWatermarkAlignment`), so
    /// sources that are joined advance together in event time and the join holds state for
    /// the drift, not for the difference in their speeds. Idle and finished sources do not
    /// hold the others back. (On `assign_timestamps_and_watermarks`, which reads no source,
    /// it has no effect.)
    pub fn with_watermark_alignment(
        mut self,
        group: impl Into<String>,
        max_drift: Duration,
    ) -> Self {
        self.alignment = Some(Alignment::Named(group.into(), max_drift));
        self
    }

    /// Binds a named alignment to the group `resolve(name, max_drift)` gives (the job's).
    pub fn bind_alignment(
        mut self,
        resolve: impl FnOnce(&str, Duration) -> Arc<AlignmentGroup>,
    ) -> Self {
        if let Some(Alignment::Named(name, drift)) = &self.alignment {
            self.alignment = Some(Alignment::Bound(resolve(name, *drift)));
        }
        self
    }

    /// The alignment group a source with this strategy joins, once bound.
    pub fn alignment_group(&self) -> Option<&Arc<AlignmentGroup>> {
        match &self.alignment {
            Some(Alignment::Bound(group)) => Some(group),
            _ => None,
        }
    }

    /// The idleness timeout, if any.
    pub fn idleness(&self) -> Option<Duration> {
        self.idleness
    }

    /// A tracker applying this strategy to one stream.
    pub fn tracker(&self) -> WatermarkTracker<T> {
        WatermarkTracker {
            generator: (self.generator)(),
            assigner: self.assigner.clone(),
            idleness: self.idleness.map(|d| d.as_millis() as i64),
            watermark: None,
            status: WatermarkStatus::Active,
            seen_since_tick: false,
            last_activity: None,
        }
    }
}

/// A strategy applied to one stream: stamps its records, makes its watermark, tells when it
/// is idle.
pub struct WatermarkTracker<T> {
    generator: Box<dyn WatermarkGenerator<T>>,
    assigner: Option<TimestampAssigner<T>>,
    idleness: Option<i64>,
    watermark: Option<Timestamp>,
    status: WatermarkStatus,
    seen_since_tick: bool,
    /// Processing time of the last tick that followed records.
    last_activity: Option<Timestamp>,
}

/// What a tracker's state change means for its stream.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TrackerChange {
    /// The stream became active (before its records) or idle.
    pub status: Option<WatermarkStatus>,
    /// The watermark advanced to this.
    pub watermark: Option<Timestamp>,
}

impl<T> WatermarkTracker<T> {
    /// The timestamp of `record` (its previous one: `previous`), which the generator sees.
    /// Returns `Active` in the change if the stream was idle.
    #[inline]
    pub fn on_record(&mut self, record: &T, previous: Timestamp) -> (Timestamp, TrackerChange) {
        let ts = match &self.assigner {
            Some(f) => f(record, previous),
            None => previous,
        };
        let mut output = WatermarkOutput::default();
        self.generator.on_event(record, ts, &mut output);
        self.seen_since_tick = true;
        let mut change = TrackerChange::default();
        if self.status == WatermarkStatus::Idle {
            self.status = WatermarkStatus::Active;
            change.status = Some(WatermarkStatus::Active);
        }
        change.watermark = self.advance(output);
        (ts, change)
    }

    fn advance(&mut self, output: WatermarkOutput) -> Option<Timestamp> {
        let w = output.watermark?;
        if self.watermark.is_some_and(|old| old >= w) {
            return None;
        }
        self.watermark = Some(w);
        Some(w)
    }

    /// The periodic call at processing time `now`: the generator's periodic watermark, and
    /// idleness. A stream is idle when ticks `idleness` apart saw no record in between; time
    /// its task spent blocked downstream (backpressure) does not count, since the tick that
    /// follows a blocked push sees the records pushed.
    pub fn on_periodic(&mut self, now: Timestamp) -> TrackerChange {
        let mut output = WatermarkOutput::default();
        self.generator.on_periodic_emit(&mut output);
        let mut change = TrackerChange {
            status: None,
            watermark: self.advance(output),
        };
        if self.seen_since_tick || self.last_activity.is_none() {
            self.seen_since_tick = false;
            self.last_activity = Some(now);
        } else if let (Some(timeout), Some(last)) = (self.idleness, self.last_activity)
            && self.status == WatermarkStatus::Active
            && now - last >= timeout
        {
            self.status = WatermarkStatus::Idle;
            change.status = Some(WatermarkStatus::Idle);
        }
        change
    }

    /// The last watermark made (`None` before the first).
    pub fn watermark(&self) -> Option<Timestamp> {
        self.watermark
    }

    /// Whether the stream is idle now.
    pub fn is_idle(&self) -> bool {
        self.status == WatermarkStatus::Idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_out_of_orderness_trails_the_largest_timestamp() {
        let s = WatermarkStrategy::<i64>::for_bounded_out_of_orderness(Duration::from_millis(100))
            .with_timestamp_assigner(|r, _| *r);
        let mut t = s.tracker();
        assert_eq!(t.on_periodic(0).watermark, None, "nothing seen yet");
        assert_eq!(t.on_record(&1_000, NO_TIMESTAMP).0, 1_000);
        t.on_record(&900, NO_TIMESTAMP);
        assert_eq!(t.on_periodic(1).watermark, Some(899));
        assert_eq!(
            t.on_periodic(2).watermark,
            None,
            "no advance, nothing emitted"
        );
        t.on_record(&1_500, NO_TIMESTAMP);
        assert_eq!(t.on_periodic(3).watermark, Some(1_399));
    }

    #[test]
    fn a_stream_without_records_for_the_timeout_is_idle_until_its_next_record() {
        let s = WatermarkStrategy::<i64>::for_monotonous_timestamps()
            .with_timestamp_assigner(|r, _| *r)
            .with_idleness(Duration::from_millis(500));
        let mut t = s.tracker();
        t.on_record(&10, NO_TIMESTAMP);
        assert_eq!(t.on_periodic(1_000).status, None);
        assert_eq!(t.on_periodic(1_400).status, None, "400 ms without records");
        assert_eq!(
            t.on_periodic(1_500).status,
            Some(WatermarkStatus::Idle),
            "500 ms without records"
        );
        assert!(t.is_idle());
        assert_eq!(t.on_periodic(9_000).status, None, "idle once");
        let (_, change) = t.on_record(&20, NO_TIMESTAMP);
        assert_eq!(change.status, Some(WatermarkStatus::Active));
        assert_eq!(t.on_periodic(9_100).status, None);
    }

    /// A task blocked downstream for longer than the timeout does not tick meanwhile; the
    /// first tick after the block sees the records pushed before it, so the stream stays
    /// active: backpressure is not idleness.
    #[test]
    fn backpressure_is_not_idleness() {
        let s = WatermarkStrategy::<i64>::for_monotonous_timestamps()
            .with_timestamp_assigner(|r, _| *r)
            .with_idleness(Duration::from_millis(500));
        let mut t = s.tracker();
        t.on_periodic(0);
        t.on_record(&1, NO_TIMESTAMP);
        // Blocked for 10 s: no tick until the push returned.
        assert_eq!(t.on_periodic(10_000).status, None);
        assert!(!t.is_idle());
        t.on_record(&2, NO_TIMESTAMP);
        assert_eq!(t.on_periodic(20_000).status, None);
        assert!(!t.is_idle());
    }

    #[test]
    fn without_an_assigner_records_keep_their_timestamps() {
        let mut t = WatermarkStrategy::<u8>::no_watermarks().tracker();
        assert_eq!(t.on_record(&1, 77).0, 77);
        assert_eq!(t.on_periodic(0).watermark, None);
    }
}
