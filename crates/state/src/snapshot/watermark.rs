//! The watermark an event-time operator checkpoints with its keyed state, and how it is
//! restored at any parallelism.

use crate::types::{MIN_WATERMARK, Timestamp};

/// The watermark an event-time operator (windows, timers) has seen, checkpointed with its
/// keyed state so that a restored job neither fires early nor drops as late what was on time.
#[derive(Debug, Clone, Copy)]
pub struct OperatorWatermark {
    current: Timestamp,
    restored: bool,
    /// While restoring: the minimum over the old subtasks restored before the last one.
    others: Timestamp,
    /// While restoring: the last old subtask's watermark (its newest piece's).
    last: Timestamp,
}

impl Default for OperatorWatermark {
    fn default() -> Self {
        OperatorWatermark {
            current: MIN_WATERMARK,
            restored: false,
            others: Timestamp::MAX,
            last: Timestamp::MAX,
        }
    }
}

impl OperatorWatermark {
    /// The current watermark.
    #[inline]
    pub fn get(&self) -> Timestamp {
        self.current
    }

    /// Moves to `watermark` if it is ahead; never goes back.
    pub fn advance(&mut self, watermark: Timestamp) {
        self.current = self.current.max(watermark);
    }

    /// Takes a restored subtask's watermark: after a restore the operator starts at the
    /// minimum over the old subtasks whose state it took (at a new parallelism a subtask may
    /// hold keys of several), which every record it now sees was judged against before.
    pub fn restore(&mut self, watermark: Timestamp) {
        self.restore_piece(watermark, false);
    }

    /// Takes the watermark of one piece of a restored subtask's state: a whole snapshot starts
    /// another old subtask; a delta, the next piece of the same one, replaces its watermark
    /// (the state it completes was snapshotted at that later watermark).
    pub fn restore_piece(&mut self, watermark: Timestamp, delta: bool) {
        if !delta && self.restored {
            self.others = self.others.min(self.last);
        }
        self.last = watermark;
        self.restored = true;
        self.current = self.others.min(self.last);
    }
}
