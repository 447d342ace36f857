//! `Restarting`: the current attempt failed; the next one waits for the restart delay.

use std::time::Instant;

use crate::controller::{AttemptStart, JobController, Phase};
use crate::error::Result;

impl JobController {
    /// Whether the restart delay has passed.
    pub fn restart_due(&self, now: Instant) -> bool {
        self.restart_at().is_some_and(|at| at <= now)
    }

    /// Deploys the next attempt (`Restarting -> Deploying`) from the restore point. An error
    /// (the restore point cannot be read) leaves the job `Restarting`: report it with
    /// [`JobController::failed`], it counts as a failure.
    pub fn restart(&mut self) -> Result<AttemptStart> {
        if !matches!(self.phase, Phase::Restarting { .. }) {
            return Err(self.not_from("restart"));
        }
        self.begin_attempt(self.attempt + 1)
    }
}
