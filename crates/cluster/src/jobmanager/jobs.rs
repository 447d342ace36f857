//! The JobManager's jobs: each with its job controller, its placement and its workers.
//!
//! A job's life cycle is its [`JobController`]'s (created → deploying → running → restarting
//! → finished / failed / cancelled); what the JobManager adds is where it runs (placement,
//! workers, a queue while it waits for slots), what clients wait for (its result, a
//! savepoint) and its `collect()` records.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use crate::execution::controller::{JobController, JobStatus, RecoveryPolicy};
use crate::execution::restart_strategy::RestartStrategy;
use crate::protocol::{Collected, JobId, JobSummary, Message, SubmitRequest, TaskManagerInfo};
use crate::types::metrics::VertexMetrics;

/// Ended jobs kept for listing and status queries.
pub const RETAINED_JOBS: usize = 1000;

/// One worker of a job.
#[derive(Default)]
pub struct WorkerEntry {
    /// Mailbox of the worker's own connection, once it said hello.
    pub mailbox: Option<UnboundedSender<Message>>,
    /// Its data port, once ready.
    pub data_port: Option<u16>,
    /// True once it reported success.
    pub finished: bool,
    /// Slots it holds on its TaskManager.
    pub slots: usize,
    /// Its latest counters (final once finished).
    pub metrics: Vec<VertexMetrics>,
    /// The address it uses on the job's data network.
    pub data_host: String,
}

/// A TaskManager's address on a data network (its default one if `None`).
pub fn data_host_of(info: &TaskManagerInfo, network: Option<&str>) -> String {
    network
        .and_then(|net| info.data_networks.iter().find(|(n, _)| n == net))
        .map_or_else(|| info.data_host.clone(), |(_, addr)| addr.clone())
}

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

/// A submitted job.
pub struct JobEntry {
    /// Id.
    pub id: JobId,
    /// The submission.
    pub request: SubmitRequest,
    /// Its life cycle, restarts and checkpoints.
    pub controller: JobController,
    /// Submission time.
    pub submitted: Instant,
    /// When it was submitted, in milliseconds since the Unix epoch.
    pub submitted_at_ms: u64,
    /// End time.
    pub ended: Option<Instant>,
    /// Parallelism of every vertex, as decided.
    pub parallelism: Vec<usize>,
    /// TaskManager of every subtask.
    pub placement: Vec<String>,
    /// The TaskManager whose queue holds the job while it waits.
    pub queued_on: Option<String>,
    /// Workers by TaskManager id.
    pub workers: BTreeMap<String, WorkerEntry>,
    /// Why it failed.
    pub error: Option<crate::error::ErrorReport>,
    /// `collect()` records reported by workers.
    pub collected: Collected,
    /// Clients waiting for the end.
    pub waiters: Vec<UnboundedSender<Message>>,
    /// A savepoint being taken.
    pub savepoint: Option<PendingSavepoint>,
}

impl JobEntry {
    /// A job just submitted as `id`, not placed yet. Its checkpoints go to a directory of
    /// its own under the one it asked for.
    pub fn new(id: JobId, request: SubmitRequest) -> Self {
        let policy = match &request.recovery {
            Some(r) => RecoveryPolicy {
                checkpoints: r.checkpoints_of(&id),
                restart: r.restart,
                restore_from: r.restore_from.clone(),
            },
            None => RecoveryPolicy {
                checkpoints: None,
                restart: RestartStrategy::None,
                restore_from: None,
            },
        };
        JobEntry {
            id,
            request,
            controller: JobController::new(policy),
            submitted: Instant::now(),
            submitted_at_ms: crate::types::epoch_ms(),
            ended: None,
            parallelism: Vec::new(),
            placement: Vec::new(),
            queued_on: None,
            workers: BTreeMap::new(),
            error: None,
            collected: Vec::new(),
            waiters: Vec::new(),
            savepoint: None,
        }
    }

    /// A job taken over from another leader (see `JobManagerState::take_over`): its first
    /// attempt here is `attempt`.
    pub fn resumed(id: JobId, request: SubmitRequest, attempt: u32) -> Self {
        let mut entry = JobEntry::new(id, request);
        entry.controller = JobController::resumed(entry.controller.policy().clone(), attempt);
        entry
    }

    /// What the job store keeps of the job, as it is now (`ended`: how it ended, if it did).
    pub fn record(&self, ended: Option<JobStatus>) -> crate::ha::JobRecord {
        crate::ha::JobRecord {
            id: self.id.clone(),
            request: self.request.clone(),
            attempt: self.controller.attempt(),
            parallelism: self.parallelism.clone(),
            ended,
            error: self.error.clone(),
        }
    }

    /// The job's state as clients see it: a created job waits for slots.
    pub fn state(&self) -> JobStatus {
        self.controller.status()
    }

    /// True once the job has ended.
    pub fn is_terminal(&self) -> bool {
        self.controller.status().is_terminal()
    }

    /// Whether a report of `attempt` concerns the job's current attempt.
    pub fn is_current(&self, attempt: u32) -> bool {
        self.controller.attempt() == attempt
    }

    /// Source subtasks of the current placement (the checkpoint coordinator waits for them
    /// all before the final checkpoint).
    pub fn source_subtasks(&self) -> usize {
        self.request.recovery.as_ref().map_or(0, |r| {
            r.source_vertices
                .iter()
                .zip(&self.parallelism)
                .filter(|(s, _)| **s)
                .map(|(_, p)| p)
                .sum()
        })
    }

    /// Sends `message` to every worker that said hello.
    pub fn tell_workers(&self, message: &Message) {
        for w in self.workers.values() {
            if let Some(m) = &w.mailbox {
                let _ = m.send(message.clone());
            }
        }
    }

    /// The job as listed.
    pub fn summary(&self) -> JobSummary {
        JobSummary {
            id: self.id.clone(),
            name: self.request.name.clone(),
            state: self.state(),
            duration_ms: self.duration_ms(),
            error: self.error.clone(),
            vertices: self.vertex_totals(),
            restarts: self.controller.restarts(),
            checkpoints: self.controller.checkpoint_history(),
        }
    }

    /// Counters per vertex, summed over the workers' latest reports; each subtask's row names
    /// the TaskManager it runs on.
    pub fn vertex_totals(&self) -> Vec<VertexMetrics> {
        let mut totals: Vec<VertexMetrics> = Vec::new();
        for (tm, w) in &self.workers {
            let mut metrics = w.metrics.clone();
            for row in metrics.iter_mut().flat_map(|v| v.subtasks.iter_mut()) {
                row.task_manager.clone_from(tm);
            }
            if totals.is_empty() {
                totals = metrics;
                continue;
            }
            for (t, m) in totals.iter_mut().zip(&metrics) {
                t.merge(m);
            }
        }
        totals
    }

    /// Milliseconds it has run (until now, or until it ended).
    pub fn duration_ms(&self) -> u64 {
        let end = self.ended.unwrap_or_else(Instant::now);
        end.duration_since(self.submitted).as_millis() as u64
    }

    /// When it ended, in milliseconds since the Unix epoch.
    pub fn ended_at_ms(&self) -> Option<u64> {
        self.ended
            .map(|_| self.submitted_at_ms + self.duration_ms())
    }
}

/// Every job the JobManager knows, by id (in submission order of their ids).
#[derive(Default)]
pub struct JobTable {
    jobs: BTreeMap<JobId, JobEntry>,
}

impl JobTable {
    /// The job `id`.
    pub fn get(&self, id: &str) -> Option<&JobEntry> {
        self.jobs.get(id)
    }

    /// The job `id`, to change it.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut JobEntry> {
        self.jobs.get_mut(id)
    }

    /// Every job.
    pub fn values(&self) -> impl Iterator<Item = &JobEntry> {
        self.jobs.values()
    }

    /// Adds a job, forgetting the oldest ended ones beyond [`RETAINED_JOBS`].
    pub fn insert(&mut self, entry: JobEntry) {
        let ended: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.is_terminal())
            .map(|j| j.id.clone())
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(RETAINED_JOBS)) {
            self.jobs.remove(id);
        }
        self.jobs.insert(entry.id.clone(), entry);
    }

    /// Takes a job out, to change it together with the cluster; put it back with
    /// [`Self::put_back`].
    pub fn take(&mut self, id: &str) -> Option<JobEntry> {
        self.jobs.remove(id)
    }

    /// Puts back a job taken out.
    pub fn put_back(&mut self, entry: JobEntry) {
        self.jobs.insert(entry.id.clone(), entry);
    }

    /// Ids of the jobs that match `f`.
    pub fn ids_where(&self, f: impl Fn(&JobEntry) -> bool) -> Vec<JobId> {
        self.jobs
            .values()
            .filter(|j| f(j))
            .map(|j| j.id.clone())
            .collect()
    }

    /// The priority of a job, if it is known.
    pub fn priority(&self, id: &str) -> Option<i32> {
        self.jobs.get(id).map(|j| j.request.priority)
    }
}
