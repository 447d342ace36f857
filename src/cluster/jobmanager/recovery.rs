//! Checkpoints and restarts of cluster jobs.
//!
//! A job submitted with a [`RecoveryRequest`] gets a [`JobRecovery`]: the checkpoint
//! coordinator of its current attempt (the same state machine the local runtime drives), its
//! restart tracker and its checkpoint history. Its life cycle gains one state:
//! `Running -> Restarting -> Deploying -> Running`. A failure (a worker's report, a worker
//! that exits without one, a lost TaskManager) no longer fails such a job at once: the
//! restart strategy decides. A restart cancels every worker of the attempt, frees their
//! slots and, after the strategy's delay, deploys the next attempt on the slots there are then
//! (so at a lower parallelism if a TaskManager is gone: keyed state is redistributed by key
//! group), restoring the newest whole checkpoint. Reports of an older attempt are dropped.
//!
//! Savepoints are checkpoints taken on request and copied out of the job's checkpoint
//! directory, so that retention never removes them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::checkpoint::coordinator::{CheckpointCoordinator, CheckpointStats};
use crate::checkpoint::hub::HubEvent;
use crate::checkpoint::restart_strategy::{RestartDecision, RestartTracker};
use crate::checkpoint::store::{CheckpointStore, copy_checkpoint, find_checkpoint};
use crate::cluster::jobmanager::state::ClusterState;
use crate::cluster::protocol::{JobState, Message, RecoveryRequest};
use crate::error::HummerError;

/// A savepoint asked for and not yet taken.
pub struct PendingSavepoint {
    /// The checkpoint that becomes the savepoint (once triggered).
    pub checkpoint: Option<u64>,
    /// Where to copy it.
    pub dir: PathBuf,
    /// Cancel the job once it is taken.
    pub stop: bool,
    /// Who waits for the answer.
    pub reply: UnboundedSender<Message>,
}

/// Checkpointing and restart state of one job.
pub struct JobRecovery {
    /// What the job asked for.
    pub request: RecoveryRequest,
    /// This job's checkpoint directory (`<checkpoint dir>/<job id>`).
    pub dir: Option<PathBuf>,
    /// The coordinator of the running attempt.
    pub coordinator: Option<CheckpointCoordinator>,
    /// Failures and restarts so far.
    pub tracker: RestartTracker,
    /// Checkpoints of earlier attempts.
    pub history: Vec<CheckpointStats>,
    /// When the next attempt is deployed (while `Restarting`).
    pub restart_at: Option<Instant>,
    /// The failure that caused the restart.
    pub last_error: Option<String>,
    /// Checkpoint id the current attempt restored (0: none).
    pub restored: u64,
    /// A savepoint being taken.
    pub savepoint: Option<PendingSavepoint>,
}

impl JobRecovery {
    /// Recovery state for a job `id` that asked for `request`.
    pub fn new(id: &str, request: RecoveryRequest) -> Self {
        JobRecovery {
            dir: request.checkpoints.as_ref().map(|c| c.dir.join(id)),
            tracker: RestartTracker::new(request.restart),
            request,
            coordinator: None,
            history: Vec::new(),
            restart_at: None,
            last_error: None,
            restored: 0,
            savepoint: None,
        }
    }

    /// Every checkpoint of the job, oldest first.
    pub fn all_history(&self) -> Vec<CheckpointStats> {
        let mut all = self.history.clone();
        if let Some(c) = &self.coordinator {
            all.extend_from_slice(c.history());
        }
        all
    }

    /// The checkpoint the next attempt restores: the newest whole one of this job, else the
    /// one the job was submitted with.
    pub fn restore_point(&self) -> Option<(PathBuf, u64)> {
        let own = self.dir.as_ref().and_then(|dir| {
            let retain = self.request.checkpoints.as_ref().map_or(1, |c| c.retain);
            CheckpointStore::open(dir, retain)
                .ok()?
                .latest_valid()
                .ok()
                .flatten()
        });
        let found = own.or_else(|| {
            let path = self.request.restore_from.as_ref()?;
            match find_checkpoint(path) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!("cannot restore {}: {e}", path.display());
                    None
                }
            }
        })?;
        Some((found.dir, found.metadata.id))
    }
}

/// The failure message of a job its restart strategy gives up on (the text of
/// [`HummerError::JobFailed`], which local jobs return).
fn not_restarted(reason: &str, last_failure: &str) -> String {
    format!("job failed and will not be restarted ({reason}); last failure: {last_failure}")
}

/// How often the JobManager drives checkpoints and restarts.
pub const RECOVERY_TICK: Duration = Duration::from_millis(10);

impl ClusterState {
    /// A job's attempt failed: restart it if its strategy allows, else fail it.
    pub fn job_failed(&mut self, job: &str, error: String) {
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        if entry.state.is_terminal() || entry.state == JobState::Restarting {
            return;
        }
        let Some(recovery) = entry.recovery.as_mut() else {
            return self.end_job(job, JobState::Failed, Some(error));
        };
        match recovery.tracker.on_failure(Instant::now()) {
            RestartDecision::GiveUp { reason } => {
                // A job that never restarts fails with its error as it is.
                let error = match recovery.tracker.strategy() {
                    crate::checkpoint::restart_strategy::RestartStrategy::None => error,
                    _ => not_restarted(&reason, &error),
                };
                self.end_job(job, JobState::Failed, Some(error));
            }
            RestartDecision::RestartAfter(delay) => {
                tracing::warn!(
                    job = %job,
                    restart = recovery.tracker.restarts(),
                    "job failed ({error}); restarting in {delay:?}"
                );
                if let Some(c) = recovery.coordinator.take() {
                    recovery.history.extend_from_slice(c.history());
                }
                if let Some(sp) = recovery.savepoint.take() {
                    let _ = sp.reply.send(Message::Error(format!(
                        "the job failed before the savepoint completed: {error}"
                    )));
                }
                recovery.restart_at = Some(Instant::now() + delay);
                recovery.last_error = Some(error);
                entry.state = JobState::Restarting;
                self.stop_workers(job);
            }
        }
    }

    /// Drives the checkpoints of running jobs and deploys due restarts.
    pub fn tick_recovery(&mut self) {
        let now = Instant::now();
        let ids: Vec<String> = self
            .jobs
            .values()
            .filter(|j| j.recovery.is_some() && !j.state.is_terminal())
            .map(|j| j.id.clone())
            .collect();
        for id in ids {
            let Some(entry) = self.jobs.get_mut(&id) else {
                continue;
            };
            let Some(recovery) = entry.recovery.as_mut() else {
                continue;
            };
            match entry.state {
                JobState::Running => {
                    let Some(trigger) = recovery.coordinator.as_mut().and_then(|c| c.tick(now))
                    else {
                        continue;
                    };
                    if let Some(sp) = &mut recovery.savepoint
                        && sp.checkpoint.is_none()
                    {
                        sp.checkpoint = Some(trigger.id);
                    }
                    for w in entry.workers.values() {
                        if let Some(m) = &w.mailbox {
                            let _ = m.send(Message::TriggerCheckpoint {
                                id: trigger.id,
                                last: trigger.last,
                            });
                        }
                    }
                }
                JobState::Restarting if recovery.restart_at.is_some_and(|t| t <= now) => {
                    self.redeploy(&id);
                }
                _ => {}
            }
        }
    }

    /// Deploys the next attempt of a restarting job, restoring its newest checkpoint.
    fn redeploy(&mut self, id: &str) {
        let offers = self.offers(None);
        let Some(mut entry) = self.jobs.remove(id) else {
            return;
        };
        let mut give_up = None;
        let restore = entry.recovery.as_ref().and_then(JobRecovery::restore_point);
        entry.attempt += 1;
        entry.restore = restore.as_ref().map(|(dir, _)| dir.clone());
        if let Some(r) = entry.recovery.as_mut() {
            r.restored = restore.as_ref().map_or(0, |(_, id)| *id);
        }
        match self.deploy(&mut entry, &offers) {
            Ok(()) => {
                tracing::info!(
                    job = %id,
                    attempt = entry.attempt,
                    parallelism = ?entry.parallelism,
                    restore = ?entry.restore,
                    "job restarted"
                );
                if let Some(r) = entry.recovery.as_mut() {
                    r.restart_at = None;
                }
            }
            Err(e) => {
                // No room (yet): a restart that cannot be deployed counts as another failure,
                // so the restart strategy bounds how long the job waits for slots.
                entry.attempt -= 1;
                let decision = entry
                    .recovery
                    .as_mut()
                    .map(|r| r.tracker.on_failure(Instant::now()));
                match decision {
                    Some(RestartDecision::RestartAfter(delay)) => {
                        if let Some(r) = entry.recovery.as_mut() {
                            r.restart_at =
                                Some(Instant::now() + delay.max(Duration::from_millis(500)));
                        }
                        tracing::warn!(job = %id, "cannot restart the job yet: {e}");
                    }
                    Some(RestartDecision::GiveUp { reason }) => give_up = Some((reason, e)),
                    None => {}
                }
            }
        }
        self.jobs.insert(id.to_string(), entry);
        if let Some((reason, e)) = give_up {
            self.end_job(id, JobState::Failed, Some(not_restarted(&reason, &e)));
        }
    }

    /// Every worker of a job's attempt is running: starts its checkpoint coordinator.
    pub fn attempt_running(&mut self, job: &str) {
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        let tasks = entry.placement.len();
        let Some(recovery) = entry.recovery.as_mut() else {
            return;
        };
        let (Some(config), Some(dir)) = (&recovery.request.checkpoints, &recovery.dir) else {
            return;
        };
        let sources: usize = recovery
            .request
            .source_vertices
            .iter()
            .zip(&entry.parallelism)
            .filter(|(s, _)| **s)
            .map(|(_, p)| p)
            .sum();
        let mut config = config.clone();
        config.dir = dir.clone();
        match CheckpointCoordinator::new(
            config,
            recovery.request.graph.clone(),
            tasks,
            sources,
            recovery.restored,
            Instant::now(),
        ) {
            Ok(c) => recovery.coordinator = Some(c),
            Err(e) => {
                let error = format!("cannot start checkpointing: {e}");
                self.end_job(job, JobState::Failed, Some(error));
            }
        }
    }

    /// A worker's checkpoint report.
    pub fn checkpoint_event(&mut self, job: &str, attempt: u32, event: HubEvent) {
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        if entry.attempt != attempt || entry.state != JobState::Running {
            return;
        }
        let Some(recovery) = entry.recovery.as_mut() else {
            return;
        };
        let Some(coordinator) = recovery.coordinator.as_mut() else {
            return;
        };
        let completed = match coordinator.on_event(event, Instant::now()) {
            Ok(Some(id)) => id,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(job = %job, "cannot store a checkpoint: {e}");
                return;
            }
        };
        for w in entry.workers.values() {
            if let Some(m) = &w.mailbox {
                let _ = m.send(Message::CheckpointComplete(completed));
            }
        }
        let Some(sp) = recovery
            .savepoint
            .take_if(|s| s.checkpoint == Some(completed))
        else {
            return;
        };
        let target = sp
            .dir
            .join(format!("savepoint-{job}-{completed}"))
            .join(format!("chk-{completed}"));
        let copied = recovery
            .dir
            .as_ref()
            .ok_or_else(|| HummerError::Internal("the job has no checkpoint directory".into()))
            .and_then(|d| find_checkpoint(&d.join(format!("chk-{completed}"))))
            .and_then(|c| copy_checkpoint(&c, &target));
        match copied {
            Ok(_) => {
                let path = target;
                tracing::info!(job = %job, path = %path.display(), "savepoint taken");
                let _ = sp.reply.send(Message::Savepoint(path));
                if sp.stop {
                    self.end_job(job, JobState::Cancelled, None);
                }
            }
            Err(e) => {
                let _ = sp
                    .reply
                    .send(Message::Error(format!("cannot write the savepoint: {e}")));
            }
        }
    }

    /// A client asks for a savepoint of `job` (taken as the next checkpoint).
    pub fn request_savepoint(
        &mut self,
        job: &str,
        dir: Option<PathBuf>,
        stop: bool,
        reply: UnboundedSender<Message>,
    ) -> Result<(), String> {
        let default_dir = self.savepoint_dir.clone();
        let entry = self
            .jobs
            .get_mut(job)
            .ok_or_else(|| format!("no job with id {job}"))?;
        if entry.state != JobState::Running {
            return Err(format!("job {job} is {:?}, not running", entry.state));
        }
        let recovery = entry
            .recovery
            .as_mut()
            .filter(|r| r.request.checkpoints.is_some())
            .ok_or_else(|| format!("job {job} does not take checkpoints"))?;
        if recovery.savepoint.is_some() {
            return Err(format!("a savepoint of job {job} is already being taken"));
        }
        let dir = dir.or(default_dir).ok_or_else(|| {
            "no savepoint directory given and the JobManager has none".to_string()
        })?;
        if let Some(c) = recovery.coordinator.as_mut() {
            c.request_trigger();
        }
        recovery.savepoint = Some(PendingSavepoint {
            checkpoint: None,
            dir,
            stop,
            reply,
        });
        Ok(())
    }
}
