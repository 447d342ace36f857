//! Watermark alignment (Flink's `withWatermarkAlignment`): sources of one alignment group
//! that run ahead of the group's slowest member in event time by more than a maximum drift
//! pause until it catches up.
//!
//! Without it, two sources read at their own speeds: a small table (Nexmark's auctions) is
//! read to its end while a large one (the bids) is still at its start, and every operator
//! that joins them holds the fast side's records until the watermark (the minimum of both)
//! lets them go. Alignment bounds that state by the drift instead of by the input's size.
//!
//! The group lives in the process: in a cluster, the source subtasks of one TaskManager are
//! aligned with each other.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Timestamp;

/// Sources whose watermarks are kept within `max_drift` of each other.
#[derive(Debug)]
pub struct AlignmentGroup {
    name: String,
    max_drift: i64,
    /// Each member's watermark (`None`: it has none yet, or it is idle or finished, and does
    /// not hold the others back), by member id.
    members: Mutex<Vec<(u64, Option<Timestamp>)>>,
    next_id: AtomicI64,
    /// The smallest watermark over the members that have one (`Timestamp::MAX`: none has).
    min: AtomicI64,
    /// Threads of members that paused, woken when the group's minimum advances (rather than
    /// after a fixed sleep: a source of a small table pauses hundreds of times per replay).
    waiting: Mutex<Vec<std::thread::Thread>>,
}

impl AlignmentGroup {
    /// A group named `name` with a maximum drift of `max_drift`.
    pub fn new(name: impl Into<String>, max_drift: Duration) -> Arc<Self> {
        Arc::new(AlignmentGroup {
            name: name.into(),
            max_drift: max_drift.as_millis().min(i64::MAX as u128) as i64,
            members: Mutex::new(Vec::new()),
            next_id: AtomicI64::new(0),
            min: AtomicI64::new(Timestamp::MAX),
            waiting: Mutex::new(Vec::new()),
        })
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The maximum drift.
    pub fn max_drift(&self) -> Duration {
        Duration::from_millis(self.max_drift.max(0) as u64)
    }

    /// Joins the group (a source subtask); it leaves when the member is dropped.
    pub fn join(self: &Arc<Self>) -> AlignmentMember {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as u64;
        self.lock().push((id, None));
        AlignmentMember {
            group: self.clone(),
            id,
            watermark: None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Option<Timestamp>)>> {
        // A member panicking while holding the lock leaves a consistent vector.
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, id: u64, watermark: Option<Timestamp>, leave: bool) {
        let mut members = self.lock();
        if leave {
            members.retain(|m| m.0 != id);
        } else if let Some(m) = members.iter_mut().find(|m| m.0 == id) {
            m.1 = watermark;
        }
        let min = members
            .iter()
            .filter_map(|m| m.1)
            .min()
            .unwrap_or(Timestamp::MAX);
        let old = self.min.swap(min, Ordering::AcqRel);
        drop(members);
        if min > old {
            let waiting =
                std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
            for thread in waiting {
                thread.unpark();
            }
        }
    }
}

/// One source subtask's place in an [`AlignmentGroup`].
#[derive(Debug)]
pub struct AlignmentMember {
    group: Arc<AlignmentGroup>,
    id: u64,
    watermark: Option<Timestamp>,
}

impl AlignmentMember {
    /// Publishes the member's watermark (`None` while it has none, is idle or has finished).
    pub fn publish(&mut self, watermark: Option<Timestamp>) {
        if watermark != self.watermark {
            self.watermark = watermark;
            self.group.update(self.id, watermark, false);
        }
    }

    /// Whether the member must pause: its progress (the largest timestamp it has read, or
    /// else its watermark) is ahead of the group's slowest watermark by more than the maximum
    /// drift. Progress counts what was read since the last periodic watermark, so a fast
    /// member stops within a batch of the bound, not a watermark interval later.
    #[inline]
    pub fn must_pause(&self, progress: Option<Timestamp>) -> bool {
        let min = self.group.min.load(Ordering::Acquire);
        if self.watermark == Some(min) {
            return false; // the slowest member: the others wait for it
        }
        progress
            .or(self.watermark)
            .is_some_and(|p| p > min.saturating_add(self.group.max_drift))
    }
}

impl AlignmentMember {
    /// Asks to be woken (the calling thread unparked) when the group's minimum advances; the
    /// caller then parks, with a timeout.
    pub fn wake_me_when_the_group_advances(&self) {
        let mut waiting = self.group.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let me = std::thread::current();
        if !waiting.iter().any(|t| t.id() == me.id()) {
            waiting.push(me);
        }
    }
}

impl Drop for AlignmentMember {
    fn drop(&mut self) {
        self.group.update(self.id, None, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_ahead_by_more_than_the_drift_pauses_until_the_slowest_catches_up() {
        let group = AlignmentGroup::new("g", Duration::from_millis(100));
        let (mut fast, mut slow) = (group.join(), group.join());
        fast.publish(Some(1_000));
        assert!(
            !fast.must_pause(None),
            "alone with a watermark, it is the slowest"
        );
        slow.publish(Some(850));
        assert!(fast.must_pause(None) && !slow.must_pause(None));
        assert!(!slow.must_pause(Some(5_000)), "the slowest never pauses");
        slow.publish(Some(900));
        assert!(!fast.must_pause(None), "exactly the drift apart is allowed");
        assert!(
            fast.must_pause(Some(1_001)),
            "what it read beyond its watermark counts"
        );
        slow.publish(None); // idle: no longer holds the others back
        assert!(!fast.must_pause(None));
        slow.publish(Some(0));
        assert!(fast.must_pause(None));
        drop(slow);
        assert!(
            !fast.must_pause(None),
            "a member that left holds nobody back"
        );
    }

    #[test]
    fn a_paused_member_is_woken_as_soon_as_the_group_advances() {
        let group = AlignmentGroup::new("g", Duration::from_millis(10));
        let (mut fast, mut slow) = (group.join(), group.join());
        slow.publish(Some(0));
        fast.publish(Some(100));
        let waiter = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            while fast.must_pause(None) {
                fast.wake_me_when_the_group_advances();
                if fast.must_pause(None) {
                    // Without the wake-up this would sleep the whole 30 s.
                    std::thread::park_timeout(Duration::from_secs(30));
                }
            }
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        slow.publish(Some(95));
        let waited = waiter.join().unwrap();
        assert!(waited < Duration::from_secs(10), "{waited:?}");
    }
}
