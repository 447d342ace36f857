//! The tasks' side of checkpointing in one process: where sources learn that a checkpoint was
//! triggered, where tasks leave their acknowledgements, and where they learn that a checkpoint
//! completed.
//!
//! The coordinator (in this process for a local job, in the JobManager for a cluster job, via
//! the worker) calls [`CheckpointHub::trigger`] and [`CheckpointHub::complete`]; the tasks read
//! three atomics on every turn of their loops, which costs nothing measurable, and are woken
//! when one changes so that idle tasks react at once. Acknowledgements and other reports go
//! to the coordinator through a channel ([`HubEvent`]).
//!
//! The *final* checkpoint: with checkpoints on, a bounded source that has read everything does
//! not end at once. It keeps taking part in checkpoints until every source has finished; the
//! coordinator then triggers one last checkpoint, which each source injects just before its end
//! of input. Every task waits after its end of input until that checkpoint has completed and
//! then commits, so the output of a bounded job becomes visible exactly once, and a failure at
//! any moment before that replays from a checkpoint whose effects are not yet visible.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};

use crate::error::{HummerError, Result};
use crate::state::task_state::TaskAck;
use crate::types::CancelToken;
use crate::types::CheckpointId;
use crate::types::{PARK_SAFETY_TIMEOUT, TaskWaker};

/// What tasks report to the coordinator.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum HubEvent {
    /// A task took its snapshot of a checkpoint.
    Ack(TaskAck),
    /// A task gave a checkpoint up (a newer barrier overtook it during alignment, or its
    /// snapshot could not be sent).
    Decline {
        /// Global subtask index.
        task: usize,
        /// The checkpoint given up.
        checkpoint: CheckpointId,
        /// Why, when it is not that a newer barrier overtook it.
        reason: Option<String>,
    },
    /// A source subtask has read all its input and waits for the final checkpoint.
    SourceFinished {
        /// Global subtask index.
        task: usize,
    },
}

/// How long a task that got a barrier waits for the news of its trigger, at most.
pub const TRIGGER_NEWS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Shared by every task of one job attempt in one process.
pub struct CheckpointHub {
    /// Newest checkpoint the sources must inject.
    trigger: AtomicU64,
    /// The final checkpoint (0: not triggered yet).
    final_id: AtomicU64,
    /// Newest completed checkpoint.
    completed: AtomicU64,
    /// Checkpoints restored from start above this id.
    restored: CheckpointId,
    /// Where the hub's events (acknowledgements, declines, completions) are sent.
    pub events: Sender<HubEvent>,
    wakers: OnceLock<Vec<Arc<TaskWaker>>>,
}

impl CheckpointHub {
    /// A hub whose reports go to `events`; `restored` is the checkpoint the attempt restarted
    /// from (0 if none).
    pub fn new(events: Sender<HubEvent>, restored: CheckpointId) -> Arc<Self> {
        Arc::new(CheckpointHub {
            trigger: AtomicU64::new(restored),
            final_id: AtomicU64::new(0),
            completed: AtomicU64::new(restored),
            restored,
            events,
            wakers: OnceLock::new(),
        })
    }

    /// Binds the wakers of every task in this process (once, before they run).
    pub fn bind_wakers(&self, wakers: Vec<Arc<TaskWaker>>) {
        let _ = self.wakers.set(wakers);
    }

    fn wake_all(&self) {
        for w in self.wakers.get().into_iter().flatten() {
            w.wake();
        }
    }

    /// The checkpoint this attempt restored (0 if none).
    pub fn restored(&self) -> CheckpointId {
        self.restored
    }

    /// Asks the sources to inject barrier `id`; `last` marks the final checkpoint, after which
    /// sources that have read everything end.
    pub fn trigger(&self, id: CheckpointId, last: bool) {
        if last {
            self.final_id.store(id, Ordering::SeqCst);
        }
        self.trigger.fetch_max(id, Ordering::SeqCst);
        self.wake_all();
    }

    /// Checkpoint `id` completed: tasks pass the news to their sinks.
    pub fn complete(&self, id: CheckpointId) {
        self.completed.fetch_max(id, Ordering::SeqCst);
        self.wake_all();
    }

    /// The checkpoint to inject, if one newer than `injected` was triggered.
    #[inline]
    pub fn pending_trigger(&self, injected: CheckpointId) -> Option<CheckpointId> {
        let t = self.trigger.load(Ordering::Acquire);
        (t > injected).then_some(t)
    }

    /// Whether `id` is the final checkpoint.
    pub fn is_final(&self, id: CheckpointId) -> bool {
        id != 0 && self.final_id.load(Ordering::Acquire) == id
    }

    /// Whether `id`, whose barrier has reached a task, is the final checkpoint. In a cluster
    /// the barrier may come over the network before this worker has heard of the trigger
    /// (which says whether it is final): it waits for that, [`TRIGGER_NEWS_WAIT`] at most
    /// (then the checkpoint is taken as not final: its operators end after it, as they
    /// would without the news), or until the job is cancelled.
    pub fn is_final_barrier(&self, id: CheckpointId, cancel: &CancelToken) -> bool {
        let started = std::time::Instant::now();
        while self.trigger.load(Ordering::Acquire) < id
            && started.elapsed() < TRIGGER_NEWS_WAIT
            && !cancel.is_cancelled()
        {
            std::thread::park_timeout(std::time::Duration::from_millis(1));
        }
        self.is_final(id)
    }

    /// The newest completed checkpoint.
    #[inline]
    pub fn completed(&self) -> CheckpointId {
        self.completed.load(Ordering::Acquire)
    }

    /// Reports to the coordinator. A coordinator that is gone (the job is ending) is ignored.
    pub fn report(&self, event: HubEvent) {
        let _ = self.events.send(event);
    }

    /// After its end of input, a task waits here until the final checkpoint has completed
    /// (and returns its id), or the job is cancelled.
    pub fn wait_for_final(&self, cancel: &CancelToken) -> Result<CheckpointId> {
        loop {
            let last = self.final_id.load(Ordering::Acquire);
            if last != 0 && self.completed() >= last {
                return Ok(last);
            }
            if cancel.is_cancelled() {
                return Err(HummerError::Cancelled);
            }
            std::thread::park_timeout(PARK_SAFETY_TIMEOUT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_and_completions_only_move_forward() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let hub = CheckpointHub::new(tx, 4);
        assert_eq!(hub.pending_trigger(4), None);
        hub.trigger(6, false);
        hub.trigger(5, false);
        assert_eq!(hub.pending_trigger(4), Some(6));
        assert_eq!(hub.pending_trigger(6), None);
        assert!(!hub.is_final(6));
        hub.complete(6);
        hub.complete(5);
        assert_eq!(hub.completed(), 6);
    }

    #[test]
    fn waiting_for_the_final_checkpoint_ends_on_completion_or_cancel() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let hub = CheckpointHub::new(tx, 0);
        let cancel = CancelToken::default();
        hub.trigger(3, true);
        assert!(hub.is_final(3));
        hub.complete(3);
        assert_eq!(hub.wait_for_final(&cancel).unwrap(), 3);

        let (tx, _rx) = std::sync::mpsc::channel();
        let hub = CheckpointHub::new(tx, 0);
        cancel.cancel();
        assert!(matches!(
            hub.wait_for_final(&cancel),
            Err(HummerError::Cancelled)
        ));
    }
}
