//! Everything the JobManager knows, and what it does when something happens: the cluster
//! ([`ClusterState`]: TaskManagers, slots, queues), the jobs ([`JobTable`], each with its job
//! controller), the uploaded artifacts, and failures waiting for their root cause.
//!
//! A job is deployed when placed (each TaskManager of the placement gets a `Deploy`), runs
//! once every worker has announced its data port (the JobManager then sends each of them the
//! peers' addresses), and finishes when every worker has reported success. A worker failure,
//! a worker process that exits without reporting, or the loss of one of its TaskManagers is
//! a failure of the attempt: the job's controller decides whether it restarts (every worker of
//! the attempt is cancelled, their slots freed, and after the restart delay the next attempt
//! is deployed on the slots there are then, restoring the newest whole checkpoint) or fails.
//! Reports of an older attempt are dropped.
//!
//! With high availability (an HA directory), every change of a job that a new leader needs
//! (submitted, deployed as attempt N, ended) is written to the job store before it takes
//! effect, and a new leader resumes the jobs it finds there ([`JobManagerState::take_over`]).
//!
//! Savepoints are checkpoints taken on request and copied out of the job's checkpoint
//! directory, so that retention never removes them.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::cluster_state::ClusterState;
use super::jobs::{JobEntry, JobTable, PendingSavepoint, WorkerEntry, data_host_of};
use super::reactions::{Effect, SavepointCopy};
use super::refusal::Refusal;
use crate::checkpoint::hub::HubEvent;
use crate::error::HummerError;
use crate::execution::controller::{AttemptStart, FailureOutcome, JobStatus};
use crate::ha::lease::Leadership;
use crate::ha::{HaStore, JobRecord};
use crate::protocol::{Collected, DeploySpec, JobId, Message, SubmitRequest};
use crate::scheduler::parallelism::decide;
use crate::scheduler::{PlacementError, SlotOffer, Waiting};
use crate::types::metrics::VertexMetrics;

/// How long a possibly secondary failure waits for the root cause to be reported.
pub const DEFERRAL: Duration = Duration::from_millis(3000);

/// How often the JobManager drives checkpoints and restarts.
pub const RECOVERY_TICK: Duration = Duration::from_millis(10);

/// How long a job taken over from another leader waits for its TaskManagers to come back
/// (as many free slots as its last attempt used) before it resumes on the slots there are.
pub const RESUME_GRACE: Duration = Duration::from_secs(10);

/// A job taken over from another leader, waiting to resume.
struct Resuming {
    since: Instant,
    /// Slots its last attempt used.
    slots: usize,
}

/// A failure waiting for a better explanation.
struct DeferredFailure {
    job: JobId,
    /// The worker it concerns, if it is about a worker that exited: dropped if that worker's
    /// success report arrives after all.
    task_manager: Option<String>,
    /// The job attempt it concerns: dropped once the job has moved on to another.
    attempt: u32,
    at: Instant,
    error: HummerError,
}

/// Where a job's attempt runs.
struct Deployment {
    parallelism: Vec<usize>,
    /// TaskManager of every subtask.
    subtasks: Vec<String>,
    /// Workers by TaskManager, with the slots each holds.
    workers: BTreeMap<String, WorkerEntry>,
}

/// The JobManager's state.
pub struct JobManagerState {
    /// Its own RPC address (given to workers).
    rpc_address: String,
    /// TaskManagers, slots and queues.
    pub cluster: ClusterState,
    /// The jobs.
    pub jobs: JobTable,
    /// Job binaries by sha256.
    pub artifacts: HashMap<String, std::sync::Arc<Vec<u8>>>,
    /// Where savepoints go when a request names no directory.
    savepoint_dir: Option<PathBuf>,
    /// Failures that may be consequences of another: a worker that exited before its report
    /// arrived, or a worker that lost a peer's connection. Each fails its job after
    /// [`DEFERRAL`] unless a report with the root cause ends the job first.
    deferred: Vec<DeferredFailure>,
    next_job: u64,
    /// The job store, with high availability.
    ha: Option<HaStore>,
    /// This JobManager's leadership, with high availability: checked before every action.
    pub leadership: Option<std::sync::Arc<Leadership>>,
    /// Jobs taken over from another leader, not yet resumed.
    resuming: BTreeMap<JobId, Resuming>,
}

impl JobManagerState {
    /// A JobManager at `rpc_address` over `cluster`, without jobs.
    pub fn new(rpc_address: String, cluster: ClusterState, savepoint_dir: Option<PathBuf>) -> Self {
        JobManagerState {
            rpc_address,
            cluster,
            jobs: JobTable::default(),
            artifacts: HashMap::new(),
            savepoint_dir,
            deferred: Vec::new(),
            next_job: 0,
            ha: None,
            leadership: None,
            resuming: BTreeMap::new(),
        }
    }

    /// Leads with the job store `ha` under `leadership`: resumes every job the store holds
    /// that had not ended, from its newest whole checkpoint, once its TaskManagers are back
    /// (or after [`RESUME_GRACE`]), and lists the ended ones as they ended (their collected
    /// records and checkpoint history stayed with the old leader). Returns how many jobs it
    /// resumes.
    pub fn take_over(
        &mut self,
        ha: HaStore,
        leadership: std::sync::Arc<Leadership>,
    ) -> crate::error::Result<usize> {
        let mut resumed = 0;
        for record in ha.load_jobs()? {
            if let Some(state) = record.ended {
                let mut entry =
                    JobEntry::resumed(record.id.clone(), record.request, record.attempt);
                entry.mark_ended(state);
                entry.parallelism = record.parallelism;
                entry.error = record.error;
                entry.ended = Some(Instant::now());
                self.jobs.insert(entry);
                continue;
            }
            if let Some(bytes) = ha.load_artifact(&record.request.artifact)? {
                self.artifacts
                    .insert(record.request.artifact.clone(), std::sync::Arc::new(bytes));
            }
            let slots = record.parallelism.iter().copied().max().unwrap_or(1);
            let entry = JobEntry::resumed(record.id.clone(), record.request, record.attempt + 1);
            tracing::info!(job = %record.id, attempt = record.attempt + 1, "job taken over");
            self.resuming.insert(
                record.id.clone(),
                Resuming {
                    since: Instant::now(),
                    slots,
                },
            );
            self.jobs.insert(entry);
            resumed += 1;
        }
        self.ha = Some(ha);
        self.leadership = Some(leadership);
        Ok(resumed)
    }

    /// The job store, with high availability.
    pub fn ha_store(&self) -> Option<&HaStore> {
        self.ha.as_ref()
    }

    /// The fencing token this JobManager leads with (0 without high availability).
    pub fn leader_token(&self) -> u64 {
        self.leadership.as_ref().map_or(0, |l| l.token())
    }

    /// Writes what the job store keeps of `entry` (with high availability).
    fn persist(&self, record: JobRecord) -> crate::error::Result<()> {
        match &self.ha {
            Some(ha) => ha.save_job(&record),
            None => Ok(()),
        }
    }

    /// Resumes the jobs taken over whose TaskManagers are back, or that waited long enough.
    fn resume_taken_over(&mut self, now: Instant) {
        if self.resuming.is_empty() {
            return;
        }
        let offers = self.cluster.offers(None);
        let free: usize = offers.iter().map(|o| o.free).sum();
        let due: Vec<JobId> = self
            .resuming
            .iter()
            .filter(|(_, r)| free >= r.slots || now.duration_since(r.since) >= RESUME_GRACE)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let offers = self.cluster.offers(None);
            // Without any slot yet it keeps waiting.
            if self.start_on(&id, &offers) {
                self.resuming.remove(&id);
            }
        }
    }

    /// Places a job that has not run yet on `offers` and deploys its first attempt (a job
    /// whose controller cannot start it fails). `false` if it does not fit: it stays as it
    /// was.
    fn start_on(&mut self, id: &str, offers: &[SlotOffer]) -> bool {
        let Some(mut entry) = self.jobs.take(id) else {
            return false;
        };
        let Ok(placement) = self.place(&entry, offers) else {
            self.jobs.put_back(entry);
            return false;
        };
        let error = match entry.controller.start() {
            Ok(start) => {
                self.deploy(&mut entry, placement, start);
                None
            }
            Err(e) => Some(e.context("cannot start the job")),
        };
        self.jobs.put_back(entry);
        if let Some(error) = error {
            self.end_job(id, JobStatus::Failed, Some(error));
        }
        true
    }

    /// Accepts a job: deploys it, or with `queue` set and no room, puts it in the queue the
    /// scheduler chooses; returns its id.
    pub fn submit(&mut self, request: SubmitRequest) -> Result<JobId, Refusal> {
        let started = Instant::now();
        let result = self.accept(request);
        self.cluster.scheduler_time += started.elapsed();
        result
    }

    fn accept(&mut self, request: SubmitRequest) -> Result<JobId, Refusal> {
        if !self.artifacts.contains_key(&request.artifact) {
            return Err(Refusal::UnknownArtifact(request.artifact.clone()));
        }
        if let Some(net) = &request.data_network {
            let missing: Vec<&str> = self
                .cluster
                .task_managers
                .values()
                .filter(|t| !t.info.data_networks.iter().any(|(n, _)| n == net))
                .map(|t| t.info.id.as_str())
                .collect();
            if !missing.is_empty() {
                return Err(Refusal::MissingDataNetwork {
                    network: net.clone(),
                    missing: missing.join(", "),
                });
            }
        }
        self.next_job += 1;
        // Ids of a leader start with its fencing token, so no two leaders give the same one.
        let prefix = match self.leadership.as_ref() {
            Some(l) => l.token(),
            None => u64::from(std::process::id()),
        };
        let id = format!("{prefix:08x}{:08x}", self.next_job);
        let mut entry = JobEntry::new(id.clone(), request);
        self.persist(entry.record(None))
            .map_err(|e| Refusal::CannotStart(format!("cannot record the job: {e}")))?;
        let offers = self.cluster.offers(None);
        match self.place(&entry, &offers) {
            Ok(placement) => {
                let start = entry
                    .controller
                    .start()
                    .map_err(|e| Refusal::CannotStart(e.to_string()))?;
                self.deploy(&mut entry, placement, start);
            }
            Err(e) if !entry.request.queue => return Err(e.into()),
            Err(_) => {
                let loads = self.cluster.loads(|j| self.jobs.priority(j));
                match self.cluster.scheduler.queue_for(&loads) {
                    Waiting::Shared => {
                        tracing::info!(job = %id, "job waits in the shared queue");
                        self.cluster.shared_queue.push(id.clone());
                    }
                    Waiting::Queue(tm) => {
                        tracing::info!(job = %id, task_manager = %tm, "job waits for free slots");
                        entry.queued_on = Some(tm.clone());
                        self.cluster.queues.entry(tm).or_default().push(id.clone());
                    }
                }
            }
        }
        self.jobs.insert(entry);
        Ok(id)
    }

    /// Chooses the parallelism and the slots of a job's next attempt on `offers`.
    fn place(&self, entry: &JobEntry, offers: &[SlotOffer]) -> Result<Deployment, PlacementError> {
        let request = &entry.request;
        let free: usize = offers.iter().map(|o| o.free).sum();
        let parallelism = decide(&request.vertices, request.default_parallelism, free)?;
        let scheduler = &self.cluster.scheduler;
        let subtasks = scheduler.place(&parallelism, offers)?;
        let slots = scheduler.place_slots(parallelism.iter().copied().max().unwrap_or(0), offers);
        let mut workers: BTreeMap<String, WorkerEntry> = BTreeMap::new();
        for tm in &subtasks {
            workers.entry(tm.clone()).or_default();
        }
        if let Ok(slots) = slots {
            for tm in slots {
                if let Some(w) = workers.get_mut(&tm) {
                    w.slots += 1;
                }
            }
        }
        Ok(Deployment {
            parallelism,
            subtasks,
            workers,
        })
    }

    /// Takes the slots of a placement and sends the deploys of the attempt the job's
    /// controller started.
    fn deploy(&mut self, entry: &mut JobEntry, placement: Deployment, start: AttemptStart) {
        let Deployment {
            parallelism,
            subtasks,
            mut workers,
        } = placement;
        let restore = start.restore.map(|c| c.dir);
        entry.parallelism = parallelism;
        if let Err(e) = self.persist(entry.record(None)) {
            // A new leader would resume the job at an attempt it may share with this one;
            // this attempt's workers are still cancelled when their TaskManagers register
            // with it (they run no worker of its jobs yet).
            tracing::error!(job = %entry.id, "cannot record the attempt: {e}");
        }
        let leader_token = self.leader_token();
        let request = &entry.request;
        for (tm, w) in workers.iter_mut() {
            let Some(tm_entry) = self.cluster.task_managers.get_mut(tm) else {
                continue;
            };
            tm_entry.used_slots += w.slots;
            let data_host = data_host_of(&tm_entry.info, request.data_network.as_deref());
            w.data_host = data_host.clone();
            let spec = DeploySpec {
                job: entry.id.clone(),
                request: request.clone(),
                task_manager: tm.clone(),
                jobmanager: self.rpc_address.clone(),
                data_host,
                vertex_parallelism: entry.parallelism.clone(),
                placement: subtasks.clone(),
                attempt: start.attempt,
                restore: restore.clone(),
                leader_token,
            };
            let _ = tm_entry.mailbox.send(Message::Deploy(spec));
        }
        tracing::info!(
            job = %entry.id,
            name = %request.name,
            attempt = start.attempt,
            ?subtasks,
            restore = ?restore,
            "job deployed"
        );
        entry.placement = subtasks;
        entry.workers = workers;
        entry.queued_on = None;
    }

    /// Starts the waiting jobs of `tm` that fit its free slots now, highest priority first:
    /// from its own queue, then from the shared one.
    pub fn start_waiting(&mut self, tm: &str) {
        self.start_queued(tm);
        if !self.cluster.shared_queue.is_empty() {
            let own = self.cluster.queues.insert(
                tm.to_string(),
                std::mem::take(&mut self.cluster.shared_queue),
            );
            self.start_queued(tm);
            self.cluster.shared_queue = self.cluster.queues.remove(tm).unwrap_or_default();
            if let Some(own) = own {
                self.cluster.queues.insert(tm.to_string(), own);
            }
        }
    }

    /// Starts jobs from `tm`'s queue while they fit.
    fn start_queued(&mut self, tm: &str) {
        loop {
            let Some(queue) = self.cluster.queues.get_mut(tm) else {
                return;
            };
            let jobs = &self.jobs;
            queue.retain(|id| {
                jobs.get(id)
                    .is_some_and(|j| j.state() == JobStatus::Created)
            });
            let Some(pos) = (0..queue.len()).max_by_key(|&i| {
                (
                    jobs.priority(&queue[i]).unwrap_or(i32::MIN),
                    std::cmp::Reverse(i),
                )
            }) else {
                return;
            };
            let id = queue[pos].clone();
            let offers = self.cluster.offers(Some(tm));
            if offers.iter().map(|o| o.free).sum::<usize>() == 0 {
                return;
            }
            if !self.start_on(&id, &offers) {
                return;
            }
            if let Some(q) = self.cluster.queues.get_mut(tm) {
                q.retain(|j| *j != id);
            }
        }
    }

    /// One RFTS round over the waiting jobs: moves them from overloaded TaskManagers' queues to
    /// under-saturated ones, then starts what fits. Returns the number of moves.
    pub fn rebalance(&mut self) -> usize {
        let started = Instant::now();
        let moves = self.rebalance_round();
        self.cluster.scheduler_time += started.elapsed();
        moves
    }

    fn rebalance_round(&mut self) -> usize {
        self.cluster.rebalance_round += 1;
        let round = self.cluster.rebalance_round;
        let loads = self.cluster.loads(|j| self.jobs.priority(j));
        if let Some(assessment) = self.cluster.scheduler.assess(&loads) {
            self.cluster.scheduling.round(round, &loads, &assessment);
        }
        let moves = self.cluster.scheduler.rebalance(&loads, round);
        let mut moved = 0;
        for (id, to) in moves {
            let Some(from) = self.jobs.get(&id).and_then(|j| j.queued_on.clone()) else {
                continue;
            };
            if from == to || !self.cluster.task_managers.contains_key(&to) {
                continue;
            }
            if let Some(q) = self.cluster.queues.get_mut(&from) {
                q.retain(|j| *j != id);
            }
            self.cluster
                .queues
                .entry(to.clone())
                .or_default()
                .push(id.clone());
            if let Some(j) = self.jobs.get_mut(&id) {
                j.queued_on = Some(to.clone());
            }
            tracing::info!(job = %id, from = %from, to = %to, "waiting job migrated");
            self.cluster.scheduling.migration(round, &id, &from, &to);
            moved += 1;
        }
        let tms: Vec<String> = self.cluster.task_managers.keys().cloned().collect();
        for tm in &tms {
            self.start_waiting(tm);
        }
        moved
    }

    /// Runs `reaction` on job `job` (if it is known) and applies its effects.
    fn react(&mut self, job: &str, reaction: impl FnOnce(&mut JobEntry) -> Vec<Effect>) {
        if let Some(entry) = self.jobs.get_mut(job) {
            let effects = reaction(entry);
            self.apply(job, effects);
        }
    }

    /// Applies the effects of a reaction of job `job`, in order.
    fn apply(&mut self, job: &str, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Persist(record) => {
                    if let Err(e) = self.persist(record) {
                        tracing::error!(job = %job, "cannot record the job's change: {e}");
                    }
                }
                Effect::Release {
                    task_manager,
                    slots,
                } => self.cluster.release(&task_manager, slots),
                Effect::TellTaskManager {
                    task_manager,
                    message,
                } => {
                    if let Some(t) = self.cluster.task_managers.get(&task_manager) {
                        let _ = t.mailbox.send(message);
                    }
                }
                Effect::Dequeue => {
                    self.cluster.dequeue(job);
                    self.resuming.remove(job);
                }
                Effect::StartWaiting(tm) => self.start_waiting(&tm),
                Effect::End { status, error } => self.end_job(job, status, error),
                Effect::Redeploy => self.redeploy(job),
            }
        }
    }

    /// A worker announced its data port; starts the job when all have.
    pub fn worker_ready(&mut self, job: &str, tm: &str, port: u16) {
        self.react(job, |j| j.on_worker_ready(tm, port, Instant::now()));
    }

    /// A worker reported success; finishes the job when all have.
    pub fn worker_finished(
        &mut self,
        job: &str,
        tm: &str,
        vertices: Vec<VertexMetrics>,
        collected: Collected,
    ) {
        self.react(job, |j| j.on_worker_finished(tm, vertices, collected));
    }

    /// A worker's counters so far.
    pub fn worker_progress(&mut self, job: &str, tm: &str, vertices: Vec<VertexMetrics>) {
        if let Some(w) = self.jobs.get_mut(job).and_then(|j| j.workers.get_mut(tm))
            && !w.finished
        {
            w.metrics = vertices;
        }
    }

    /// Ends a job (`Finished`, `Failed` or `Cancelled`): releases its slots, tells
    /// TaskManagers to stop what is left, wakes waiters.
    pub fn end_job(&mut self, job: &str, state: JobStatus, error: Option<HummerError>) {
        self.react(job, |j| j.end(state, error));
    }

    /// A job's attempt failed: its controller restarts it or fails it.
    pub fn job_failed(&mut self, job: &str, error: HummerError) {
        self.react(job, |j| j.on_failure(error, Instant::now()));
    }

    /// A TaskManager is gone: its waiting jobs wait elsewhere, its jobs' attempts fail.
    pub fn task_manager_lost(&mut self, tm: &str, reason: &str) {
        if self.cluster.task_managers.remove(tm).is_none() {
            return;
        }
        tracing::warn!(task_manager = %tm, "TaskManager lost: {reason}");
        for id in self.cluster.queues.remove(tm).unwrap_or_default() {
            let target = self
                .cluster
                .task_managers
                .keys()
                .min_by_key(|t| self.cluster.queues.get(*t).map_or(0, Vec::len))
                .cloned();
            match target {
                Some(t) => {
                    if let Some(j) = self.jobs.get_mut(&id) {
                        j.queued_on = Some(t.clone());
                    }
                    self.cluster.queues.entry(t).or_default().push(id);
                }
                None => self.end_job(
                    &id,
                    JobStatus::Failed,
                    Some(HummerError::Cluster(format!(
                        "TaskManager {tm} was lost and no other can run the job"
                    ))),
                ),
            }
        }
        let affected = self
            .jobs
            .ids_where(|j| !j.is_terminal() && j.workers.contains_key(tm));
        for job in affected {
            self.job_failed(
                &job,
                HummerError::Cluster(format!("TaskManager {tm} was lost: {reason}")),
            );
        }
    }

    /// Records a failure that fails the job only if nothing better explains it soon. With a
    /// TaskManager, it is about that TaskManager's worker exiting, and is dropped if the
    /// worker's success report arrives in time.
    pub fn defer_failure(
        &mut self,
        job: &str,
        task_manager: Option<&str>,
        attempt: u32,
        error: HummerError,
    ) {
        self.deferred.push(DeferredFailure {
            job: job.to_string(),
            task_manager: task_manager.map(str::to_string),
            attempt,
            at: Instant::now(),
            error,
        });
    }

    /// Fails the jobs whose deferred failures have waited long enough.
    pub fn fire_deferred_failures(&mut self) {
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|d| d.at.elapsed() >= DEFERRAL);
        self.deferred = waiting;
        for d in due {
            let Some(entry) = self.jobs.get(&d.job) else {
                continue;
            };
            let reported_after_all = d
                .task_manager
                .as_ref()
                .is_some_and(|tm| entry.workers.get(tm).is_some_and(|w| w.finished));
            if entry.is_current(d.attempt) && !reported_after_all {
                self.job_failed(&d.job, d.error);
            }
        }
    }

    /// Drives the checkpoints of running jobs and deploys due restarts.
    pub fn tick(&mut self) {
        let now = Instant::now();
        self.resume_taken_over(now);
        for id in self.jobs.ids_where(|j| !j.is_terminal()) {
            self.react(&id, |j| j.on_tick(now));
        }
    }

    /// Deploys the next attempt of a restarting job on the slots there are now. A restart
    /// that cannot be deployed counts as another failure, so the restart strategy bounds how
    /// long the job waits for slots.
    fn redeploy(&mut self, id: &str) {
        let offers = self.cluster.offers(None);
        let Some(mut entry) = self.jobs.take(id) else {
            return;
        };
        let started = self
            .place(&entry, &offers)
            .map_err(|e| HummerError::Cluster(e.to_string()))
            .and_then(|placement| Ok((placement, entry.controller.restart()?)));
        let outcome = match started {
            Ok((placement, start)) => {
                self.deploy(&mut entry, placement, start);
                None
            }
            Err(e) => {
                tracing::warn!(job = %id, "cannot restart the job yet: {e}");
                Some(entry.controller.deploy_failed(e, Instant::now()))
            }
        };
        self.jobs.put_back(entry);
        if let Some(FailureOutcome::Failed(e)) = outcome {
            self.end_job(id, JobStatus::Failed, Some(e));
        }
    }

    /// A worker's checkpoint report. A checkpoint that completes a savepoint comes back as
    /// the copy to make once the lock is released.
    #[must_use = "a savepoint's copy is to be run"]
    pub fn checkpoint_event(
        &mut self,
        job: &str,
        attempt: u32,
        event: HubEvent,
    ) -> Option<SavepointCopy> {
        let entry = self.jobs.get_mut(job)?;
        if !entry.is_current(attempt) {
            return None;
        }
        entry.on_checkpoint_event(event, Instant::now())
    }

    /// A client asks for a savepoint of `job` (taken as the next checkpoint).
    pub fn request_savepoint(
        &mut self,
        job: &str,
        dir: Option<PathBuf>,
        stop: bool,
        reply: UnboundedSender<Message>,
    ) -> Result<(), Refusal> {
        let default_dir = self.savepoint_dir.clone();
        let entry = self
            .jobs
            .get_mut(job)
            .ok_or_else(|| Refusal::NoSuchJob(job.to_string()))?;
        if entry.state() != JobStatus::Running {
            return Err(Refusal::NotRunning {
                job: job.to_string(),
                state: entry.state(),
            });
        }
        if !entry.controller.takes_checkpoints() {
            return Err(Refusal::NoCheckpoints(job.to_string()));
        }
        if entry.savepoint.is_some() {
            return Err(Refusal::SavepointPending(job.to_string()));
        }
        let dir = dir.or(default_dir).ok_or(Refusal::NoSavepointDirectory)?;
        entry.controller.request_checkpoint();
        entry.savepoint = Some(PendingSavepoint {
            checkpoint: None,
            dir,
            stop,
            reply,
        });
        Ok(())
    }
}
