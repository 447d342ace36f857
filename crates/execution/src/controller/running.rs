//! `Running`: every task of the current attempt runs; checkpoints are taken.

use std::time::Instant;

use crate::checkpoint::coordinator::DueCheckpoint;
use crate::checkpoint::hub::HubEvent;
use crate::controller::{JobController, JobStatus};
use crate::types::CheckpointId;

impl JobController {
    /// The checkpoint to trigger now, if one is due (expiring an overdue one first).
    pub fn tick(&mut self, now: Instant) -> Option<DueCheckpoint> {
        if self.status != JobStatus::Running {
            return None;
        }
        self.coordinator.as_mut()?.tick(now)
    }

    /// A task's checkpoint report; returns the checkpoint it completed, if any. A checkpoint
    /// that cannot be stored is logged and given up; the job goes on.
    pub fn on_checkpoint_event(&mut self, event: HubEvent, now: Instant) -> Option<CheckpointId> {
        if self.status != JobStatus::Running {
            return None;
        }
        match self.coordinator.as_mut()?.on_event(event, now) {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!("cannot store a checkpoint: {e}");
                None
            }
        }
    }

    /// Asks for a checkpoint at the next tick, whatever the interval (a savepoint); false if
    /// the job takes no checkpoints or is not running.
    pub fn request_checkpoint(&mut self) -> bool {
        match (&mut self.coordinator, self.status) {
            (Some(c), JobStatus::Running) => {
                c.request_trigger();
                true
            }
            _ => false,
        }
    }
}
