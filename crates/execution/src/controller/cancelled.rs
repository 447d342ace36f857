//! `Cancelled`: the job was cancelled.

use crate::controller::{JobController, JobStatus};

impl JobController {
    /// Cancels the job (any state but a terminal one `-> Cancelled`); false if it had ended.
    pub fn cancel(&mut self) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.retire_coordinator();
        self.restart_at = None;
        self.status = JobStatus::Cancelled;
        true
    }
}
