//! `Deploying`: an attempt whose tasks are starting.

use std::time::Instant;

use crate::checkpoint::coordinator::{CheckpointCoordinator, GraphInfo};
use crate::controller::{JobController, JobStatus};
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
        self.check_status(&[JobStatus::Deploying], "run")?;
        if let Some(config) = &self.policy.checkpoints {
            self.coordinator = Some(CheckpointCoordinator::new(
                config.clone(),
                graph,
                tasks,
                sources,
                self.restored,
                now,
            )?);
        }
        self.status = JobStatus::Running;
        Ok(())
    }
}
