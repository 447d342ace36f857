//! The executor of the embedded local cluster: the job's subtasks as threads of this process.

use crate::error::Result;
use crate::supervised::SupervisedJob;
use crate::task_threads::{self, RunningJob};
use crate::{Executor, JobHandle, JobOutcome, JobSubmission};

/// Runs jobs in this process: bare when they neither checkpoint nor restart, else supervised
/// by their job controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalExecutor;

impl Executor for LocalExecutor {
    fn execute(&self, s: JobSubmission) -> Result<Box<dyn JobHandle>> {
        Ok(match s.recovery.local_policy(s.job.mode(), &s.name) {
            None => Box::new(task_threads::start(
                &s.job, &s.exec, &s.runtime, s.progress, None, None,
            )?),
            Some(policy) => Box::new(SupervisedJob::start(
                s.job, s.exec, s.runtime, s.progress, policy,
            )?),
        })
    }
}

impl JobHandle for RunningJob {
    fn cancel(&self) {
        RunningJob::cancel(self);
    }

    fn wait(self: Box<Self>) -> Result<JobOutcome> {
        Ok(JobOutcome {
            vertices: RunningJob::wait(*self)?,
            ..JobOutcome::default()
        })
    }

    fn metrics(&self) -> Option<Vec<crate::types::metrics::VertexMetrics>> {
        Some(self.counters().snapshot())
    }

    fn is_finished(&self) -> Option<bool> {
        Some(RunningJob::is_finished(self))
    }
}

impl JobHandle for SupervisedJob {
    fn cancel(&self) {
        SupervisedJob::cancel(self);
    }

    fn wait(self: Box<Self>) -> Result<JobOutcome> {
        let outcome = SupervisedJob::wait(*self)?;
        Ok(JobOutcome {
            vertices: outcome.vertices,
            checkpoints: outcome.checkpoints,
            restarts: outcome.restarts,
        })
    }

    fn is_finished(&self) -> Option<bool> {
        Some(SupervisedJob::is_finished(self))
    }
}
