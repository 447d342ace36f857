//! Window assigners: which windows a record belongs to (Flink's `WindowAssigner`s).
//!
//! Tumbling and sliding windows are aligned to the epoch (plus an optional offset), session
//! windows start at each record and merge when they overlap or touch, and the global window
//! holds everything (it needs a trigger, such as a count).

use std::sync::Arc;
use std::time::Duration;

use crate::types::Timestamp;
use crate::window::TimeWindow;
use crate::window::time_window::window_start;
use crate::window::triggers::{EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, Trigger};

/// Which windows a record belongs to.
pub trait WindowAssigner: Clone + Send + Sync + 'static {
    /// Appends the windows of a record with timestamp `timestamp` (its event time, or the
    /// processing time `now` for a processing-time assigner) to `out`.
    fn assign(&self, timestamp: Timestamp, out: &mut Vec<TimeWindow>);
    /// True for event time (timestamps, watermarks), false for processing time (the clock).
    fn is_event_time(&self) -> bool;
    /// Session windows: windows that overlap or touch are merged into one.
    fn is_merging(&self) -> bool {
        false
    }
    /// The trigger used unless another is set: fire when time passes the window's end.
    fn default_trigger<T: 'static>(&self) -> Arc<dyn Trigger<T>> {
        if self.is_event_time() {
            Arc::new(EventTimeTrigger)
        } else {
            Arc::new(ProcessingTimeTrigger)
        }
    }
    /// How the assigner shows in plans.
    fn describe(&self) -> String;
}

fn millis(d: Duration, what: &str) -> i64 {
    let ms = d.as_millis() as i64;
    assert!(ms > 0, "{what} must be at least 1 ms, got {d:?}");
    ms
}

macro_rules! tumbling {
    ($name:ident, $event:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            size: i64,
            offset: i64,
        }

        impl $name {
            /// Windows of `size`, aligned to the epoch.
            ///
            /// Panics if `size` is below a millisecond (a programming error in the job).
            pub fn of(size: Duration) -> Self {
                $name {
                    size: millis(size, "a window size"),
                    offset: 0,
                }
            }

            /// Shifts the windows by `offset` (e.g. to align daily windows to a time zone).
            pub fn with_offset(mut self, offset: Duration) -> Self {
                self.offset = (offset.as_millis() as i64).rem_euclid(self.size);
                self
            }
        }

        impl WindowAssigner for $name {
            fn assign(&self, timestamp: Timestamp, out: &mut Vec<TimeWindow>) {
                let start = window_start(timestamp, self.offset, self.size);
                out.push(TimeWindow::new(start, start.saturating_add(self.size)));
            }
            fn is_event_time(&self) -> bool {
                $event
            }
            fn describe(&self) -> String {
                format!("{}({} ms)", stringify!($name), self.size)
            }
        }
    };
}

tumbling!(
    TumblingEventTimeWindows,
    true,
    "Fixed-size, non-overlapping windows of event time."
);
tumbling!(
    TumblingProcessingTimeWindows,
    false,
    "Fixed-size, non-overlapping windows of processing time."
);

macro_rules! sliding {
    ($name:ident, $event:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            size: i64,
            slide: i64,
            offset: i64,
        }

        impl $name {
            /// Windows of `size`, one starting every `slide`.
            ///
            /// Panics if either is below a millisecond.
            pub fn of(size: Duration, slide: Duration) -> Self {
                $name {
                    size: millis(size, "a window size"),
                    slide: millis(slide, "a window slide"),
                    offset: 0,
                }
            }

            /// Shifts the windows by `offset`.
            pub fn with_offset(mut self, offset: Duration) -> Self {
                self.offset = (offset.as_millis() as i64).rem_euclid(self.slide);
                self
            }
        }

        impl WindowAssigner for $name {
            fn assign(&self, timestamp: Timestamp, out: &mut Vec<TimeWindow>) {
                let last = window_start(timestamp, self.offset, self.slide);
                let mut start = last;
                while start > timestamp - self.size {
                    out.push(TimeWindow::new(start, start.saturating_add(self.size)));
                    start -= self.slide;
                }
            }
            fn is_event_time(&self) -> bool {
                $event
            }
            fn describe(&self) -> String {
                format!(
                    "{}({} ms every {} ms)",
                    stringify!($name),
                    self.size,
                    self.slide
                )
            }
        }
    };
}

sliding!(
    SlidingEventTimeWindows,
    true,
    "Fixed-size windows of event time, a new one every `slide` (a record is in `size / slide`)."
);
sliding!(
    SlidingProcessingTimeWindows,
    false,
    "Fixed-size windows of processing time, a new one every `slide`."
);

/// Cumulating windows of event time (Flink SQL's `CUMULATE`): windows of `size` aligned to
/// the epoch, each seen growing a `step` at a time: a record at `t` is in the windows
/// `[start, start + k * step)` of its aligned `size` window that already contain it.
#[derive(Clone, Copy, Debug)]
pub struct CumulativeEventTimeWindows {
    step: i64,
    size: i64,
    offset: i64,
}

impl CumulativeEventTimeWindows {
    /// Windows growing by `step` up to `size`.
    ///
    /// Panics if either is below a millisecond or `size` is not a multiple of `step` (a
    /// programming error; SQL's planner checks it first).
    pub fn of(step: Duration, size: Duration) -> Self {
        let (step, size) = (millis(step, "a window step"), millis(size, "a window size"));
        assert!(
            size % step == 0,
            "a cumulating window's size ({size} ms) is a multiple of its step ({step} ms)"
        );
        CumulativeEventTimeWindows {
            step,
            size,
            offset: 0,
        }
    }

    /// Shifts the windows by `offset`.
    pub fn with_offset(mut self, offset: Duration) -> Self {
        self.offset = (offset.as_millis() as i64).rem_euclid(self.size);
        self
    }
}

impl WindowAssigner for CumulativeEventTimeWindows {
    fn assign(&self, timestamp: Timestamp, out: &mut Vec<TimeWindow>) {
        let start = window_start(timestamp, self.offset, self.size);
        let mut end = start.saturating_add(self.step);
        // The first end after the record, then every step up to the whole window.
        while end <= timestamp {
            end = end.saturating_add(self.step);
        }
        while end <= start.saturating_add(self.size) {
            out.push(TimeWindow::new(start, end));
            end = end.saturating_add(self.step);
        }
    }
    fn is_event_time(&self) -> bool {
        true
    }
    fn describe(&self) -> String {
        format!(
            "CumulativeEventTimeWindows({} ms in steps of {} ms)",
            self.size, self.step
        )
    }
}

macro_rules! sessions {
    ($name:ident, $event:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            gap: i64,
        }

        impl $name {
            /// Sessions that end after `gap` without a record.
            ///
            /// Panics if `gap` is below a millisecond.
            pub fn with_gap(gap: Duration) -> Self {
                $name {
                    gap: millis(gap, "a session gap"),
                }
            }
        }

        impl WindowAssigner for $name {
            fn assign(&self, timestamp: Timestamp, out: &mut Vec<TimeWindow>) {
                out.push(TimeWindow::new(
                    timestamp,
                    timestamp.saturating_add(self.gap),
                ));
            }
            fn is_event_time(&self) -> bool {
                $event
            }
            fn is_merging(&self) -> bool {
                true
            }
            fn describe(&self) -> String {
                format!("{}(gap {} ms)", stringify!($name), self.gap)
            }
        }
    };
}

sessions!(
    EventTimeSessionWindows,
    true,
    "Sessions of event time: a window per burst of records, closed by a gap without any."
);
sessions!(
    ProcessingTimeSessionWindows,
    false,
    "Sessions of processing time: closed by a gap without records on the clock."
);

/// One window holding every record of a key; it fires only through a trigger (such as
/// [`crate::window::CountTrigger`]; `count_window` sets one).
#[derive(Clone, Copy, Debug, Default)]
pub struct GlobalWindows;

impl GlobalWindows {
    /// The global window assigner.
    pub fn create() -> Self {
        GlobalWindows
    }
}

impl WindowAssigner for GlobalWindows {
    fn assign(&self, _timestamp: Timestamp, out: &mut Vec<TimeWindow>) {
        out.push(TimeWindow::global());
    }
    fn is_event_time(&self) -> bool {
        // Records need no timestamp; the window never ends before the end of input.
        false
    }
    fn default_trigger<T: 'static>(&self) -> Arc<dyn Trigger<T>> {
        Arc::new(NeverTrigger)
    }
    fn describe(&self) -> String {
        "GlobalWindows".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn windows(a: &impl WindowAssigner, t: Timestamp) -> Vec<TimeWindow> {
        let mut out = Vec::new();
        a.assign(t, &mut out);
        out.sort();
        out
    }

    proptest! {
        /// Against the definition: a record is in every window `[start, start + k * step)`
        /// of its aligned `size` window that contains it, for k = 1 ..= size / step.
        #[test]
        fn cumulating_windows_are_the_grown_windows_containing_the_timestamp(
            t in -100_000i64..100_000, step in 1i64..20, steps in 1i64..8,
        ) {
            let size = step * steps;
            let a = CumulativeEventTimeWindows::of(
                Duration::from_millis(step as u64), Duration::from_millis(size as u64),
            );
            let start = t.div_euclid(size) * size;
            let expected: Vec<TimeWindow> = (1..=steps)
                .map(|k| TimeWindow::new(start, start + k * step))
                .filter(|w| w.start <= t && t < w.end)
                .collect();
            prop_assert_eq!(windows(&a, t), expected);
        }
    }

    proptest! {
        /// Against the definition: a record is in exactly the aligned windows that contain it.
        #[test]
        fn sliding_windows_are_the_aligned_windows_containing_the_timestamp(
            t in -100_000i64..100_000, size in 1i64..50, slide in 1i64..50, offset in 0i64..50,
        ) {
            let a = SlidingEventTimeWindows::of(
                Duration::from_millis(size as u64), Duration::from_millis(slide as u64),
            ).with_offset(Duration::from_millis(offset as u64));
            let off = offset % slide;
            let expected: Vec<TimeWindow> = (t - size - slide..=t + slide)
                .filter(|s| (s - off).rem_euclid(slide) == 0 && *s <= t && t < s + size)
                .map(|s| TimeWindow::new(s, s + size))
                .collect();
            prop_assert_eq!(windows(&a, t), expected);
        }

        #[test]
        fn a_tumbling_window_contains_its_timestamp(t in -100_000i64..100_000, size in 1i64..1000) {
            let a = TumblingEventTimeWindows::of(Duration::from_millis(size as u64));
            let w = windows(&a, t);
            prop_assert_eq!(w.len(), 1);
            prop_assert!(w[0].start <= t && t < w[0].end && w[0].start.rem_euclid(size) == 0);
        }
    }
}
