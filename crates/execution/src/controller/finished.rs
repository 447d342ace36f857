//! `Finished`: every task ended after its input ended.

use crate::controller::{JobController, Phase};

impl JobController {
    /// The attempt ended well (`Deploying | Running -> Finished`); ignored once the job has
    /// ended otherwise.
    pub fn finish(&mut self) {
        if !self.status().is_terminal() {
            self.enter(Phase::Finished);
        }
    }
}
