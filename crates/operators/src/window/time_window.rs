//! The window a result belongs to: `[start, end)` in milliseconds.

use serde::{Deserialize, Serialize};

use crate::types::Timestamp;

/// A window of time `[start, end)` (Flink's `TimeWindow`). The global window of
/// [`crate::window::GlobalWindows`] is `[Timestamp::MIN, Timestamp::MAX)`.
///
/// ```
/// use hummer::operators::window::TimeWindow;
/// let w = TimeWindow::new(10_000, 20_000);
/// assert_eq!(w.max_timestamp(), 19_999);
/// assert!(w.intersects(&TimeWindow::new(20_000, 25_000)), "touching windows merge");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TimeWindow {
    /// First millisecond of the window.
    pub start: Timestamp,
    /// First millisecond after the window.
    pub end: Timestamp,
}

impl TimeWindow {
    /// The window `[start, end)`.
    pub const fn new(start: Timestamp, end: Timestamp) -> Self {
        TimeWindow { start, end }
    }

    /// The global window: all of time.
    pub const fn global() -> Self {
        TimeWindow::new(Timestamp::MIN, Timestamp::MAX)
    }

    /// The last millisecond in the window (`end - 1`): its results carry this timestamp, and
    /// an event-time window fires when the watermark reaches it.
    pub const fn max_timestamp(&self) -> Timestamp {
        if self.end == Timestamp::MAX {
            Timestamp::MAX
        } else {
            self.end - 1
        }
    }

    /// Whether two windows overlap or touch (session windows that do are merged).
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window covering both.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl std::fmt::Display for TimeWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// The start of the window of `size` (shifted by `offset`) that holds `timestamp`: windows
/// are aligned to the epoch (plus the offset), as Flink's `getWindowStartWithOffset`.
pub(crate) fn window_start(timestamp: Timestamp, offset: i64, size: i64) -> Timestamp {
    let remainder = (timestamp - offset).rem_euclid(size);
    timestamp - remainder
}
