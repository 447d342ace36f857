//! The job controller: one per job, the job's life cycle as an explicit state machine.
//!
//! ```text
//!  Created ──start──▶ Deploying ──running──▶ Running ──finish──▶ Finished
//!                       ▲   │                  │
//!                       │   └──────failed──────┤
//!                    restart                   ▼
//!                       └──────────────── Restarting ──(give up)──▶ Failed
//!  any state but a terminal one ──cancel──▶ Cancelled
//! ```
//!
//! The controller decides; its owner acts. The local supervised runtime
//! ([`crate::supervised`]) starts task threads when the controller says deploy, the
//! JobManager sends deploys to TaskManagers; both report back what happened (running, failed,
//! finished) and drive the checkpoints of the running attempt through the controller. So the
//! rules are written once, here:
//!
//! * which checkpoint an attempt restores ([`JobController::restore_point`]): the newest whole
//!   checkpoint of this job, else the checkpoint or savepoint it was started from;
//! * whether and when a failed job restarts, and the error it fails with when the restart
//!   strategy gives up ([`failed`]);
//! * that a deployment which cannot even start counts as a failure of its own, retried no
//!   sooner than [`DEPLOY_RETRY_MIN`].
//!
//! One file per state, each holding the transitions into that state: [`created`],
//! [`deploying`], [`running`], [`restarting`], [`finished`], [`failed`], [`cancelled`]; and
//! the record of the job's failures, [`exceptions`].

mod cancelled;
mod created;
mod deploying;
mod exceptions;
mod failed;
mod finished;
mod restarting;
mod running;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::checkpoint::backend::Storage;
use crate::checkpoint::coordinator::{CheckpointConfig, CheckpointCoordinator, CheckpointStats};
use crate::checkpoint::store::{CheckpointStore, CompletedCheckpoint, find_checkpoint};
use crate::error::{Result, internal};
use crate::restart_strategy::{RestartStrategy, RestartTracker};
use crate::types::CheckpointId;

pub use exceptions::{EXCEPTIONS_KEPT, ExceptionRecord};
pub use failed::FailureOutcome;

/// The shortest wait before a deployment that could not start is tried again.
pub const DEPLOY_RETRY_MIN: Duration = Duration::from_millis(500);

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JobStatus {
    /// Accepted, not deployed yet (waiting for slots in a cluster).
    Created,
    /// An attempt is being deployed: its tasks are starting.
    Deploying,
    /// Every task of the current attempt runs.
    Running,
    /// The current attempt failed; the next one is deployed after the restart delay.
    Restarting,
    /// Every task ended after its input ended.
    Finished,
    /// The job failed and will not be restarted.
    Failed,
    /// The job was cancelled.
    Cancelled,
}

impl JobStatus {
    /// True once the job has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Finished | JobStatus::Failed | JobStatus::Cancelled
        )
    }
}

/// How a job recovers from failures: its checkpoints, its restart strategy, and the state it
/// starts from.
#[derive(Clone, Debug)]
pub struct RecoveryPolicy {
    /// Checkpoints, if the job takes them; `dir` is this job's own checkpoint directory.
    pub checkpoints: Option<CheckpointConfig>,
    /// What to do when an attempt fails.
    pub restart: RestartStrategy,
    /// A checkpoint or savepoint the job starts from.
    pub restore_from: Option<PathBuf>,
}

/// What an attempt the controller asks to deploy starts from.
#[derive(Debug)]
pub struct AttemptStart {
    /// The attempt: 0, then one more per restart.
    pub attempt: u32,
    /// The checkpoint it restores, if any.
    pub restore: Option<CompletedCheckpoint>,
}

/// The controller of one job.
///
/// Invariants: `coordinator` is set only while `Running` with checkpoints; `restart_at` only
/// while `Restarting`; `restored` is the checkpoint the current attempt started from (0: none),
/// and the coordinator numbers its checkpoints above it.
pub struct JobController {
    status: JobStatus,
    policy: RecoveryPolicy,
    tracker: RestartTracker,
    attempt: u32,
    restored: CheckpointId,
    coordinator: Option<CheckpointCoordinator>,
    /// Checkpoints of attempts that have ended.
    history: Vec<CheckpointStats>,
    restart_at: Option<Instant>,
    /// The failure that caused the current restart.
    last_failure: Option<String>,
    /// Every failure, oldest first (the last [`EXCEPTIONS_KEPT`]).
    exceptions: Vec<ExceptionRecord>,
}

impl JobController {
    /// Where the job is.
    pub fn status(&self) -> JobStatus {
        self.status
    }

    /// The recovery policy the job runs with.
    pub fn policy(&self) -> &RecoveryPolicy {
        &self.policy
    }

    /// The current attempt.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The checkpoint the current attempt restored (0: none).
    pub fn restored(&self) -> CheckpointId {
        self.restored
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.tracker.restarts()
    }

    /// The failure that caused the restart under way, if any.
    pub fn last_failure(&self) -> Option<&str> {
        self.last_failure.as_deref()
    }

    /// The job's failures, oldest first.
    pub fn exceptions(&self) -> &[ExceptionRecord] {
        &self.exceptions
    }

    /// When the next attempt is due, while restarting.
    pub fn restart_at(&self) -> Option<Instant> {
        self.restart_at
    }

    /// Every checkpoint of every attempt, oldest first.
    pub fn checkpoint_history(&self) -> Vec<CheckpointStats> {
        let mut all = self.history.clone();
        if let Some(c) = &self.coordinator {
            all.extend_from_slice(c.history());
        }
        all
    }

    /// Whether the job takes checkpoints.
    pub fn takes_checkpoints(&self) -> bool {
        self.policy.checkpoints.is_some()
    }

    /// The checkpoint an attempt restores: the newest whole checkpoint of this job, else the
    /// checkpoint or savepoint the job was started from (only that one is an error if it is
    /// missing or damaged).
    pub fn restore_point(&self) -> Result<Option<CompletedCheckpoint>> {
        if let Some(c) = &self.policy.checkpoints
            && Storage::open(&c.dir)?.exists()
            && let Some(own) = CheckpointStore::open(&c.dir, c.retain)?.latest_valid()?
        {
            return Ok(Some(own));
        }
        self.policy
            .restore_from
            .as_deref()
            .map(find_checkpoint)
            .transpose()
    }

    /// Starts an attempt: the next status is `Deploying`, from the restore point.
    fn begin_attempt(&mut self, attempt: u32) -> Result<AttemptStart> {
        let restore = self.restore_point()?;
        match &restore {
            Some(c) => tracing::info!(
                attempt,
                "restoring from checkpoint {} in {}",
                c.metadata.id,
                c.dir.display()
            ),
            None if attempt > 0 => tracing::info!(
                attempt,
                "no checkpoint completed yet: restarting from the beginning"
            ),
            None => {}
        }
        self.restored = restore.as_ref().map_or(0, |c| c.metadata.id);
        self.attempt = attempt;
        self.restart_at = None;
        self.status = JobStatus::Deploying;
        Ok(AttemptStart { attempt, restore })
    }

    /// Ends the current attempt's checkpointing, keeping its history.
    fn retire_coordinator(&mut self) {
        if let Some(c) = self.coordinator.take() {
            self.history.extend_from_slice(c.history());
        }
    }

    fn check_status(&self, allowed: &[JobStatus], transition: &str) -> Result<()> {
        if allowed.contains(&self.status) {
            Ok(())
        } else {
            Err(internal!(
                "job controller: cannot {transition} a job that is {:?}",
                self.status
            ))
        }
    }
}

#[cfg(test)]
mod tests;
