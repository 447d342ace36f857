//! `Deploying`: an attempt whose tasks are starting.

use std::time::Instant;

use crate::checkpoint::coordinator::{CheckpointCoordinator, GraphInfo};
use crate::controller::{JobController, Phase};
use crate::error::Result;

impl JobController {
    /// Every task of the attempt runs (`Deploying -> Running`); a job with checkpoints starts
    /// its coordinator for `tasks` tasks, `sources` of them sources, numbering checkpoints
    /// above the restored one.
    pub fn running(
        &mut self,
        graph: GraphInfo,
        tasks: usize,
        sources: usize,
        now: Instant,
    ) -> Result<()> {
        if !matches!(self.phase, Phase::Deploying) {
            return Err(self.not_from("run"));
        }
        let coordinator = match &self.policy.checkpoints {
            Some(config) => Some(Box::new(CheckpointCoordinator::new(
                config.clone(),
                graph,
                tasks,
                sources,
                self.restored,
                now,
            )?)),
            None => None,
        };
        self.enter(Phase::Running { coordinator });
        Ok(())
    }
}
