//! What a job does when something happens to it, as a function of the job alone.
//!
//! Each reaction changes one [`JobEntry`] (its controller, its workers, its waiters) and
//! returns the [`Effect`]s it has outside the job: slots to free on TaskManagers, a record
//! for the job store, the job's own end, a redeploy. `JobManagerState` looks the job up
//! once, runs the reaction and applies its effects, so a reaction never looks the job up
//! again by id, and the rules of a job's life stay in one place, testable without a cluster.
//! Work that need not hold the JobManager's lock (copying a savepoint) comes back as a
//! [`SavepointCopy`] for the caller to run once the lock is released.

use std::path::PathBuf;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::jobs::JobEntry;
use crate::checkpoint::hub::HubEvent;
use crate::checkpoint::store::{copy_checkpoint, find_checkpoint};
use crate::error::{HummerError, internal};
use crate::execution::controller::{FailureOutcome, JobStatus};
use crate::ha::JobRecord;
use crate::protocol::{Collected, JobId, Message, PeerAddress};
use crate::types::metrics::VertexMetrics;

/// What a job's reaction asks of the JobManager beyond the job itself, applied in order.
#[derive(Debug)]
pub enum Effect {
    /// Write the job's record to the job store (with high availability).
    Persist(JobRecord),
    /// Free `slots` slots of TaskManager `task_manager`.
    Release {
        /// The TaskManager.
        task_manager: String,
        /// How many.
        slots: usize,
    },
    /// Send a message to a TaskManager's own connection.
    TellTaskManager {
        /// The TaskManager.
        task_manager: String,
        /// What to send.
        message: Message,
    },
    /// Take the job out of every queue (and out of the jobs waiting to resume).
    Dequeue,
    /// Start the jobs waiting for `0`'s slots (some were just freed).
    StartWaiting(String),
    /// End the job.
    End {
        /// `Finished`, `Failed` or `Cancelled`.
        status: JobStatus,
        /// Why, if it failed.
        error: Option<HummerError>,
    },
    /// Deploy the job's next attempt (its restart is due).
    Redeploy,
}

/// A completed checkpoint to copy out as a savepoint, off the JobManager's lock.
pub struct SavepointCopy {
    /// The job.
    pub job: JobId,
    /// The completed checkpoint's directory.
    source: Result<PathBuf, HummerError>,
    /// Where the savepoint goes.
    target: PathBuf,
    /// Who waits for the answer.
    reply: UnboundedSender<Message>,
    /// Cancel the job once the savepoint is written.
    pub stop: bool,
}

impl SavepointCopy {
    /// Copies the checkpoint and answers the client; `true` if the savepoint was written
    /// (then, with `stop`, the job is to be cancelled).
    pub fn run(self) -> bool {
        let copied = self
            .source
            .and_then(|dir| find_checkpoint(&dir))
            .and_then(|c| copy_checkpoint(&c, &self.target));
        match copied {
            Ok(_) => {
                tracing::info!(job = %self.job, path = %self.target.display(), "savepoint taken");
                let _ = self.reply.send(Message::Savepoint(self.target));
                true
            }
            Err(e) => {
                let _ = self
                    .reply
                    .send(Message::Error(format!("cannot write the savepoint: {e}")));
                false
            }
        }
    }
}

impl JobEntry {
    /// A worker announced its data port; once every worker has, the job runs and each
    /// worker learns its peers' addresses.
    pub fn on_worker_ready(&mut self, tm: &str, port: u16, now: Instant) -> Vec<Effect> {
        if let Some(w) = self.workers.get_mut(tm) {
            w.data_port = Some(port);
        }
        if self.controller.status() != JobStatus::Deploying
            || self.workers.values().any(|w| w.data_port.is_none())
        {
            return Vec::new();
        }
        let peers: Vec<PeerAddress> = self
            .workers
            .iter()
            .filter_map(|(tm, w)| {
                Some(PeerAddress {
                    task_manager: tm.clone(),
                    address: format!("{}:{}", w.data_host, w.data_port?),
                })
            })
            .collect();
        let graph = self
            .request
            .recovery
            .as_ref()
            .map(|r| r.graph.clone())
            .unwrap_or_default();
        let (tasks, sources) = (self.placement.len(), self.source_subtasks());
        if let Err(e) = self.controller.running(graph, tasks, sources, now) {
            return vec![Effect::End {
                status: JobStatus::Failed,
                error: Some(e.context("cannot start checkpointing")),
            }];
        }
        self.tell_workers(&Message::Start(peers));
        tracing::info!(job = %self.id, attempt = self.controller.attempt(), "job running");
        Vec::new()
    }

    /// A worker reported success; once every worker has, the job has finished.
    pub fn on_worker_finished(
        &mut self,
        tm: &str,
        vertices: Vec<VertexMetrics>,
        collected: Collected,
    ) -> Vec<Effect> {
        if let Some(w) = self.workers.get_mut(tm) {
            w.finished = true;
            w.metrics = vertices;
        }
        self.collected.extend(collected);
        if self.workers.values().all(|w| w.finished) {
            vec![Effect::End {
                status: JobStatus::Finished,
                error: None,
            }]
        } else {
            Vec::new()
        }
    }

    /// The current attempt failed: the controller restarts the job (its workers are
    /// cancelled now, the next attempt deployed when the restart is due) or fails it.
    pub fn on_failure(&mut self, error: HummerError, now: Instant) -> Vec<Effect> {
        match self.controller.failed(error, now) {
            FailureOutcome::Ignored => Vec::new(),
            FailureOutcome::Failed(e) => vec![Effect::End {
                status: JobStatus::Failed,
                error: Some(e),
            }],
            FailureOutcome::Restart { .. } => {
                if let Some(sp) = self.savepoint.take() {
                    let failure = self.controller.last_failure().unwrap_or_default();
                    let _ = sp.reply.send(Message::Error(format!(
                        "the job failed before the savepoint completed: {failure}"
                    )));
                }
                self.stop_workers()
            }
        }
    }

    /// Time passed: a due restart redeploys, a due checkpoint is triggered.
    pub fn on_tick(&mut self, now: Instant) -> Vec<Effect> {
        if self.controller.restart_due(now) {
            return vec![Effect::Redeploy];
        }
        let Some(trigger) = self.controller.tick(now) else {
            return Vec::new();
        };
        if let Some(sp) = &mut self.savepoint
            && sp.checkpoint.is_none()
        {
            sp.checkpoint = Some(trigger.id);
        }
        self.tell_workers(&Message::TriggerCheckpoint {
            id: trigger.id,
            last: trigger.last,
        });
        Vec::new()
    }

    /// A worker's checkpoint report of the current attempt. A checkpoint it completes is
    /// confirmed to the workers; if it is the savepoint's, the copy to make is returned.
    pub fn on_checkpoint_event(&mut self, event: HubEvent, now: Instant) -> Option<SavepointCopy> {
        let completed = self.controller.on_checkpoint_event(event, now)?;
        self.tell_workers(&Message::CheckpointComplete(completed));
        let sp = self
            .savepoint
            .take_if(|s| s.checkpoint == Some(completed))?;
        let source = self
            .controller
            .policy()
            .checkpoints
            .as_ref()
            .map(|c| c.dir.join(format!("chk-{completed}")))
            .ok_or_else(|| internal!("the job has no checkpoint directory"));
        let target = sp
            .dir
            .join(format!("savepoint-{}-{completed}", self.id))
            .join(format!("chk-{completed}"));
        Some(SavepointCopy {
            job: self.id.clone(),
            source,
            target,
            reply: sp.reply,
            stop: sp.stop,
        })
    }

    /// Ends the job (`Finished`, `Failed` or `Cancelled`) once: its record is persisted,
    /// its slots freed (a job that did not finish has its workers cancelled too), clients
    /// waiting for it answered, and the freed TaskManagers start what waits for them.
    pub fn end(&mut self, status: JobStatus, error: Option<HummerError>) -> Vec<Effect> {
        // The controller may have ended the job already (a failure it gave up on); the
        // JobManager's side of the end happens once.
        if self.ended.is_some() {
            return Vec::new();
        }
        self.mark_ended(status);
        self.error = error.as_ref().map(HummerError::report);
        self.ended = Some(Instant::now());
        self.queued_on = None;
        let mut effects = vec![Effect::Persist(self.record(Some(status))), Effect::Dequeue];
        if let Some(sp) = self.savepoint.take() {
            let _ = sp
                .reply
                .send(Message::Error(format!("the job ended ({status:?})")));
        }
        effects.extend(if status == JobStatus::Finished {
            self.release_slots()
        } else {
            self.stop_workers()
        });
        let summary = self.summary();
        match &summary.error {
            Some(e) => tracing::warn!(job = %self.id, state = ?status, "job ended: {e}"),
            None => tracing::info!(job = %self.id, state = ?status, "job ended"),
        }
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(Message::JobEnded(summary.clone(), self.collected.clone()));
        }
        effects.extend(self.workers.keys().cloned().map(Effect::StartWaiting));
        effects
    }

    /// Puts the controller in the end state `status`.
    pub fn mark_ended(&mut self, status: JobStatus) {
        match status {
            JobStatus::Finished => self.controller.finish(),
            JobStatus::Cancelled => {
                self.controller.cancel();
            }
            _ => self.controller.fail(),
        }
    }

    /// Gives back the slots of the attempt's workers.
    fn release_slots(&mut self) -> Vec<Effect> {
        self.workers
            .iter_mut()
            .map(|(tm, w)| Effect::Release {
                task_manager: tm.clone(),
                slots: std::mem::take(&mut w.slots),
            })
            .collect()
    }

    /// Cancels every worker of the attempt (on its own connection and through its
    /// TaskManager, whichever is still there) and gives back their slots.
    fn stop_workers(&mut self) -> Vec<Effect> {
        let cancel = Message::CancelJob(self.id.clone());
        self.tell_workers(&cancel);
        let mut effects = self.release_slots();
        effects.extend(self.workers.keys().map(|tm| Effect::TellTaskManager {
            task_manager: tm.clone(),
            message: cancel.clone(),
        }));
        effects
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobmanager::jobs::WorkerEntry;
    use crate::protocol::SubmitRequest;

    fn job_on(tms: &[&str]) -> JobEntry {
        let request = SubmitRequest {
            name: "job".into(),
            artifact: String::new(),
            args: Vec::new(),
            fingerprint: String::new(),
            vertices: Vec::new(),
            default_parallelism: 1,
            streaming: false,
            data_network: None,
            queue: false,
            priority: 0,
            env: Vec::new(),
            sql: None,
            recovery: None,
            topology: Default::default(),
        };
        let mut entry = JobEntry::new("j1".into(), request);
        entry.controller.start().expect("a new job starts");
        for tm in tms {
            entry.workers.insert(
                (*tm).to_string(),
                WorkerEntry {
                    slots: 2,
                    data_host: "127.0.0.1".into(),
                    ..WorkerEntry::default()
                },
            );
        }
        entry.placement = tms.iter().map(|t| t.to_string()).collect();
        entry
    }

    fn ends(effects: &[Effect]) -> Vec<JobStatus> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::End { status, .. } => Some(*status),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_job_runs_when_every_worker_is_ready_and_ends_when_every_one_finished() {
        let mut job = job_on(&["a", "b"]);
        assert!(job.on_worker_ready("a", 1, Instant::now()).is_empty());
        assert_eq!(job.state(), JobStatus::Deploying);
        assert!(job.on_worker_ready("b", 2, Instant::now()).is_empty());
        assert_eq!(job.state(), JobStatus::Running);
        assert!(ends(&job.on_worker_finished("a", Vec::new(), Vec::new())).is_empty());
        let last = job.on_worker_finished("b", Vec::new(), Vec::new());
        assert_eq!(ends(&last), vec![JobStatus::Finished]);
    }

    #[test]
    fn an_end_frees_every_slot_once_and_cancels_workers_unless_finished() {
        for status in [JobStatus::Finished, JobStatus::Failed, JobStatus::Cancelled] {
            let mut job = job_on(&["a", "b"]);
            let effects = job.end(status, None);
            let freed: usize = effects
                .iter()
                .map(|e| match e {
                    Effect::Release { slots, .. } => *slots,
                    _ => 0,
                })
                .sum();
            assert_eq!(freed, 4, "{status:?}");
            let cancels = effects
                .iter()
                .filter(|e| matches!(e, Effect::TellTaskManager { .. }))
                .count();
            let expected = if status == JobStatus::Finished { 0 } else { 2 };
            assert_eq!(cancels, expected, "{status:?}");
            assert!(matches!(effects.first(), Some(Effect::Persist(r)) if r.ended == Some(status)));
            assert_eq!(job.state(), status);
            assert!(job.end(JobStatus::Failed, None).is_empty(), "ends once");
        }
    }

    #[test]
    fn a_failure_without_restarts_ends_the_job_failed() {
        let mut job = job_on(&["a"]);
        let effects = job.on_failure(HummerError::Cluster("boom".into()), Instant::now());
        assert_eq!(ends(&effects), vec![JobStatus::Failed]);
    }
}
