//! `Finished`: every task ended after its input ended.

use crate::controller::{JobController, JobStatus};

impl JobController {
    /// The attempt ended well (`Deploying | Running -> Finished`); ignored once the job has
    /// ended otherwise.
    pub fn finish(&mut self) {
        if self.status.is_terminal() {
            return;
        }
        self.retire_coordinator();
        self.status = JobStatus::Finished;
    }
}
