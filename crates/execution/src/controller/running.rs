//! `Running`: every task of the current attempt runs; checkpoints are taken.

use std::time::Instant;

use crate::checkpoint::coordinator::{CheckpointCoordinator, DueCheckpoint};
use crate::checkpoint::hub::HubEvent;
use crate::controller::{JobController, Phase};
use crate::types::CheckpointId;

impl JobController {
    /// The checkpoint to trigger now, if one is due (expiring an overdue one first).
    pub fn tick(&mut self, now: Instant) -> Option<DueCheckpoint> {
        self.coordinator()?.tick(now)
    }

    /// A task's checkpoint report; returns the checkpoint it completed, if any. A checkpoint
    /// that cannot be stored is logged and given up; the job goes on.
    pub fn on_checkpoint_event(&mut self, event: HubEvent, now: Instant) -> Option<CheckpointId> {
        match self.coordinator()?.on_event(event, now) {
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
        self.coordinator().map(|c| c.request_trigger()).is_some()
    }

    /// The running attempt's checkpoint coordinator (none if the job is not running or takes
    /// no checkpoints).
    fn coordinator(&mut self) -> Option<&mut CheckpointCoordinator> {
        match &mut self.phase {
            Phase::Running { coordinator } => coordinator.as_deref_mut(),
            _ => None,
        }
    }
}
