//! `Cancelled`: the job was cancelled.

use crate::controller::{JobController, Phase};

impl JobController {
    /// Cancels the job (any state but a terminal one `-> Cancelled`); false if it had ended.
    pub fn cancel(&mut self) -> bool {
        if self.status().is_terminal() {
            return false;
        }
        self.enter(Phase::Cancelled);
        true
    }
}
