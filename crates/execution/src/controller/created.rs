//! `Created`: a job accepted and not deployed yet.

use crate::controller::{AttemptStart, JobController, Phase, RecoveryPolicy};
use crate::error::Result;
use crate::restart_strategy::RestartTracker;

impl JobController {
    /// A new job, not deployed yet.
    pub fn new(policy: RecoveryPolicy) -> Self {
        JobController {
            phase: Phase::Created,
            tracker: RestartTracker::new(policy.restart),
            policy,
            attempt: 0,
            restored: 0,
            history: Vec::new(),
            exceptions: Vec::new(),
        }
    }

    /// A job taken over from another JobManager, not deployed yet: its first attempt here is
    /// `attempt` (above every attempt the other one deployed, whose reports are then ignored),
    /// restoring the job's newest whole checkpoint.
    pub fn resumed(policy: RecoveryPolicy, attempt: u32) -> Self {
        JobController {
            attempt,
            ..JobController::new(policy)
        }
    }

    /// Deploys the first attempt (`Created -> Deploying`), from the checkpoint or savepoint
    /// the job was started from, if any. An error (a missing restore point) leaves the job
    /// `Created`.
    pub fn start(&mut self) -> Result<AttemptStart> {
        if !matches!(self.phase, Phase::Created) {
            return Err(self.not_from("start"));
        }
        self.begin_attempt(self.attempt)
    }
}
