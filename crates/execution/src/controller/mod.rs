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

/// Where a job is in its life: the one status enum, from this controller through the
/// cluster's protocol and REST to the dashboard (which lists [`JobStatus::ALL`] by these
/// names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JobStatus {
    /// Accepted, not deployed yet: waiting for slots in a cluster, named `Waiting` on the
    /// wire and in REST.
    #[serde(rename = "Waiting")]
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
    /// Every status, in the order of the life cycle.
    pub const ALL: [JobStatus; 7] = [
        JobStatus::Created,
        JobStatus::Deploying,
        JobStatus::Restarting,
        JobStatus::Running,
        JobStatus::Finished,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

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

/// Where a job is, with what only that phase has: the invariants of the life cycle are the
/// shape of this type (a coordinator exists only while running, a restart time only while
/// restarting), not comments.
enum Phase {
    /// Accepted, not deployed yet.
    Created,
    /// An attempt's tasks are starting.
    Deploying,
    /// Every task of the attempt runs.
    Running {
        /// Its checkpoints, if the job takes them (boxed: it is large, the other phases
        /// are small).
        coordinator: Option<Box<CheckpointCoordinator>>,
    },
    /// The attempt failed; the next one is deployed at `at`.
    Restarting {
        /// When the next attempt is due.
        at: Instant,
        /// The failure that caused the restart.
        cause: String,
    },
    /// Ended after its input ended.
    Finished,
    /// Failed for good.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl Phase {
    fn status(&self) -> JobStatus {
        match self {
            Phase::Created => JobStatus::Created,
            Phase::Deploying => JobStatus::Deploying,
            Phase::Running { .. } => JobStatus::Running,
            Phase::Restarting { .. } => JobStatus::Restarting,
            Phase::Finished => JobStatus::Finished,
            Phase::Failed => JobStatus::Failed,
            Phase::Cancelled => JobStatus::Cancelled,
        }
    }
}

/// The controller of one job.
///
/// `restored` is the checkpoint the current attempt started from (0: none); the
/// coordinator numbers its checkpoints above it.
pub struct JobController {
    phase: Phase,
    policy: RecoveryPolicy,
    tracker: RestartTracker,
    attempt: u32,
    restored: CheckpointId,
    /// Checkpoints of attempts that have ended.
    history: Vec<CheckpointStats>,
    /// Every failure, oldest first (the last [`EXCEPTIONS_KEPT`]).
    exceptions: Vec<ExceptionRecord>,
}

impl JobController {
    /// Where the job is.
    pub fn status(&self) -> JobStatus {
        self.phase.status()
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
        match &self.phase {
            Phase::Restarting { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// The job's failures, oldest first.
    pub fn exceptions(&self) -> &[ExceptionRecord] {
        &self.exceptions
    }

    /// When the next attempt is due, while restarting.
    pub fn restart_at(&self) -> Option<Instant> {
        match self.phase {
            Phase::Restarting { at, .. } => Some(at),
            _ => None,
        }
    }

    /// Every checkpoint of every attempt, oldest first.
    pub fn checkpoint_history(&self) -> Vec<CheckpointStats> {
        let mut all = self.history.clone();
        if let Phase::Running {
            coordinator: Some(c),
        } = &self.phase
        {
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
        self.enter(Phase::Deploying);
        Ok(AttemptStart { attempt, restore })
    }

    /// Moves to `phase`; a running attempt's checkpointing ends, its history kept.
    fn enter(&mut self, phase: Phase) {
        if let Phase::Running {
            coordinator: Some(c),
        } = std::mem::replace(&mut self.phase, phase)
        {
            self.history.extend_from_slice(c.history());
        }
    }

    /// The error for a transition the job's phase does not allow (the owner's bug).
    fn not_from(&self, transition: &str) -> crate::error::HummerError {
        internal!(
            "job controller: cannot {transition} a job that is {:?}",
            self.status()
        )
    }
}

#[cfg(test)]
mod tests;
