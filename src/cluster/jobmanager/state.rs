//! The JobManager's view of the cluster: TaskManagers, artifacts, jobs and their life cycle.
//!
//! A job moves `Deploying -> Running -> Finished | Failed | Cancelled` (and, if it may restart,
//! `Running -> Restarting -> Deploying`, see [`super::recovery`]):
//! deployed when placed (each TaskManager of the placement gets a `Deploy`), running once every
//! worker has announced its data port (the JobManager then sends each of them the peers'
//! addresses), finished when every worker has reported success. A worker failure, a worker
//! process that exits without reporting, or the loss of one of its TaskManagers fails the job
//! and cancels its other workers.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::cluster::protocol::{
    Collected, DeploySpec, JobId, JobState, JobSummary, Message, PeerAddress, Resources,
    SubmitRequest, TaskManagerInfo,
};
use crate::runtime::metrics::VertexMetrics;
use crate::scheduler::parallelism::decide;
use crate::scheduler::{Scheduler, SlotOffer, TaskManagerLoad, Waiting};

/// A registered TaskManager.
pub struct TaskManagerEntry {
    /// What it offers.
    pub info: TaskManagerInfo,
    /// Its connection's mailbox.
    pub mailbox: UnboundedSender<Message>,
    /// When it was last heard from.
    pub last_heartbeat: Instant,
    /// Last resource sample.
    pub resources: Resources,
    /// Slots used by running jobs.
    pub used_slots: usize,
}

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
fn data_host_of(info: &TaskManagerInfo, network: Option<&str>) -> String {
    network
        .and_then(|net| info.data_networks.iter().find(|(n, _)| n == net))
        .map_or_else(|| info.data_host.clone(), |(_, addr)| addr.clone())
}

/// A submitted job.
pub struct JobEntry {
    /// Id.
    pub id: JobId,
    /// The submission.
    pub request: SubmitRequest,
    /// State.
    pub state: JobState,
    /// Submission time.
    pub submitted: Instant,
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
    pub error: Option<String>,
    /// `collect()` records reported by workers.
    pub collected: Collected,
    /// Clients waiting for the end.
    pub waiters: Vec<UnboundedSender<Message>>,
    /// The current attempt (0, then one more per restart).
    pub attempt: u32,
    /// The checkpoint the current attempt restores, if any.
    pub restore: Option<std::path::PathBuf>,
    /// Checkpoints and restarts, if the job asked for them.
    pub recovery: Option<super::recovery::JobRecovery>,
}

impl JobEntry {
    /// The job as listed.
    pub fn summary(&self) -> JobSummary {
        let end = self.ended.unwrap_or_else(Instant::now);
        JobSummary {
            id: self.id.clone(),
            name: self.request.name.clone(),
            state: self.state,
            duration_ms: end.duration_since(self.submitted).as_millis() as u64,
            error: self.error.clone(),
            vertices: self.vertex_totals(),
            restarts: self.recovery.as_ref().map_or(0, |r| r.tracker.restarts()),
            checkpoints: self
                .recovery
                .as_ref()
                .map(|r| r.all_history())
                .unwrap_or_default(),
        }
    }

    /// Counters per vertex, summed over the workers' latest reports.
    pub fn vertex_totals(&self) -> Vec<VertexMetrics> {
        let mut totals: Vec<VertexMetrics> = Vec::new();
        for w in self.workers.values() {
            if totals.is_empty() {
                totals = w.metrics.clone();
                continue;
            }
            for (t, m) in totals.iter_mut().zip(&w.metrics) {
                t.records_in += m.records_in;
                t.records_out += m.records_out;
                t.backpressured_ns += m.backpressured_ns;
            }
        }
        totals
    }
}

/// Everything the JobManager knows.
pub struct ClusterState {
    /// Its own RPC address (given to workers).
    pub rpc_address: String,
    /// TaskManagers by id.
    pub task_managers: BTreeMap<String, TaskManagerEntry>,
    /// Job binaries by sha256.
    pub artifacts: HashMap<String, std::sync::Arc<Vec<u8>>>,
    /// Jobs by id, in submission order of their ids.
    pub jobs: BTreeMap<JobId, JobEntry>,
    /// Placement strategy.
    pub scheduler: Box<dyn Scheduler>,
    /// Heartbeat timeout.
    pub heartbeat_timeout: Duration,
    /// Failures that may be consequences of another: a worker that exited before its report
    /// arrived, or a worker that lost a peer's connection. Each fails its job after
    /// [`DEFERRAL`] unless a report with the root cause ends the job first.
    deferred: Vec<DeferredFailure>,
    /// Monitor samples of every TaskManager.
    pub monitor: super::monitor::MonitorStore,
    /// Jobs waiting for free slots, per TaskManager.
    pub queues: BTreeMap<String, Vec<JobId>>,
    /// The queue every TaskManager takes from, for schedulers that pull.
    pub shared_queue: Vec<JobId>,
    /// Time spent deciding placements, queues and migrations.
    pub scheduler_time: Duration,
    /// Where savepoints go when a request names no directory.
    pub savepoint_dir: Option<std::path::PathBuf>,

    rebalance_round: u64,
    next_job: u64,
}

/// Ended jobs kept for listing and status queries.
pub const RETAINED_JOBS: usize = 1000;

/// A failure waiting for a better explanation.
struct DeferredFailure {
    job: JobId,
    /// The worker it concerns, if it is about a worker that exited: dropped if that worker's
    /// success report arrives after all.
    task_manager: Option<String>,
    /// The job attempt it concerns: dropped once the job has moved on to another.
    attempt: u32,
    at: Instant,
    error: String,
}

/// How long a possibly secondary failure waits for the root cause to be reported.
pub const DEFERRAL: Duration = Duration::from_millis(3000);

impl ClusterState {
    /// An empty cluster.
    pub fn new(
        rpc_address: String,
        scheduler: Box<dyn Scheduler>,
        heartbeat_timeout: Duration,
    ) -> Self {
        ClusterState {
            rpc_address,
            task_managers: BTreeMap::new(),
            artifacts: HashMap::new(),
            jobs: BTreeMap::new(),
            scheduler,
            heartbeat_timeout,
            deferred: Vec::new(),
            monitor: Default::default(),
            queues: BTreeMap::new(),
            shared_queue: Vec::new(),
            scheduler_time: Duration::ZERO,
            savepoint_dir: None,

            rebalance_round: 0,
            next_job: 0,
        }
    }

    /// Free slots of every TaskManager (or of one).
    pub(super) fn offers(&self, only: Option<&str>) -> Vec<SlotOffer> {
        self.task_managers
            .values()
            .filter(|tm| only.is_none_or(|o| o == tm.info.id))
            .map(|tm| SlotOffer {
                task_manager: tm.info.id.clone(),
                free: tm.info.slots.saturating_sub(tm.used_slots),
            })
            .collect()
    }

    /// Accepts a job: deploys it, or with `queue` set and no room, puts it in the queue of the
    /// TaskManager with the shortest one; returns its id.
    pub fn submit(&mut self, request: SubmitRequest) -> Result<JobId, String> {
        let started = Instant::now();
        let result = self.submit_timed(request);
        self.scheduler_time += started.elapsed();
        result
    }

    fn submit_timed(&mut self, request: SubmitRequest) -> Result<JobId, String> {
        if !self.artifacts.contains_key(&request.artifact) {
            return Err(format!(
                "artifact {} is unknown: upload it before submitting",
                request.artifact
            ));
        }
        if let Some(net) = &request.data_network {
            let missing: Vec<&str> = self
                .task_managers
                .values()
                .filter(|t| !t.info.data_networks.iter().any(|(n, _)| n == net))
                .map(|t| t.info.id.as_str())
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "data network '{net}' is not declared by TaskManager(s) {}",
                    missing.join(", ")
                ));
            }
        }
        self.next_job += 1;
        let id = format!("{:08x}{:08x}", std::process::id(), self.next_job);
        let offers = self.offers(None);
        let mut recovery = request
            .recovery
            .clone()
            .map(|r| super::recovery::JobRecovery::new(&id, r));
        // The first attempt restores the savepoint the job was submitted with, if any; its
        // checkpoint ids continue above that savepoint's.
        let mut restore = None;
        if let Some(r) = recovery.as_mut()
            && let Some((dir, checkpoint)) = r.restore_point()
        {
            restore = Some(dir);
            r.restored = checkpoint;
        }
        let mut entry = JobEntry {
            id: id.clone(),
            request,
            state: JobState::Deploying,
            submitted: Instant::now(),
            ended: None,
            parallelism: Vec::new(),
            placement: Vec::new(),
            queued_on: None,
            workers: BTreeMap::new(),
            error: None,
            collected: Vec::new(),
            waiters: Vec::new(),
            attempt: 0,
            restore,
            recovery,
        };
        match self.deploy(&mut entry, &offers) {
            Ok(()) => {}
            Err(e) if !entry.request.queue => return Err(e),
            Err(_) => {
                entry.state = JobState::Waiting;
                match self.scheduler.queue_for(&self.loads()) {
                    Waiting::Shared => {
                        tracing::info!(job = %id, "job waits in the shared queue");
                        self.shared_queue.push(id.clone());
                    }
                    Waiting::Queue(tm) => {
                        tracing::info!(job = %id, task_manager = %tm, "job waits for free slots");
                        entry.queued_on = Some(tm.clone());
                        self.queues.entry(tm).or_default().push(id.clone());
                    }
                }
            }
        }
        self.forget_old_jobs();
        self.jobs.insert(id.clone(), entry);
        Ok(id)
    }

    /// The TaskManagers as queueing decisions see them.
    pub fn loads(&self) -> Vec<TaskManagerLoad> {
        self.task_managers
            .values()
            .map(|t| TaskManagerLoad {
                id: t.info.id.clone(),
                slots: t.info.slots,
                used: t.used_slots,
                waiting: self
                    .queues
                    .get(&t.info.id)
                    .map(|q| {
                        q.iter()
                            .map(|id| {
                                (
                                    id.clone(),
                                    self.jobs.get(id).map_or(0, |j| j.request.priority),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                sample: self.monitor.latest(&t.info.id).map(|r| r.sample.clone()),
            })
            .collect()
    }

    /// Places a job on the slots `offers` describe and sends its deploys.
    pub(super) fn deploy(
        &mut self,
        entry: &mut JobEntry,
        offers: &[SlotOffer],
    ) -> Result<(), String> {
        let request = &entry.request;
        let free: usize = offers.iter().map(|o| o.free).sum();
        let parallelism = decide(&request.vertices, request.default_parallelism, free)?;
        let placement = self
            .scheduler
            .place(&parallelism, offers)
            .map_err(|e| e.to_string())?;
        let slots = self
            .scheduler
            .place_slots(parallelism.iter().copied().max().unwrap_or(0), offers);
        let mut workers: BTreeMap<String, WorkerEntry> = BTreeMap::new();
        for tm in &placement {
            workers.entry(tm.clone()).or_default();
        }
        if let Ok(slots) = slots {
            for tm in slots {
                if let Some(w) = workers.get_mut(&tm) {
                    w.slots += 1;
                }
            }
        }
        for (tm, w) in workers.iter_mut() {
            let Some(tm_entry) = self.task_managers.get_mut(tm) else {
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
                vertex_parallelism: parallelism.clone(),
                placement: placement.clone(),
                attempt: entry.attempt,
                restore: entry.restore.clone(),
            };
            let _ = tm_entry.mailbox.send(Message::Deploy(spec));
        }
        tracing::info!(job = %entry.id, name = %request.name, ?placement, "job deployed");
        entry.state = JobState::Deploying;
        entry.parallelism = parallelism;
        entry.placement = placement;
        entry.workers = workers;
        entry.queued_on = None;
        Ok(())
    }

    /// Starts the waiting jobs of `tm` that fit its free slots now, highest priority first:
    /// from its own queue, then from the shared one.
    pub fn start_waiting(&mut self, tm: &str) {
        self.start_queued(tm);
        if !self.shared_queue.is_empty() {
            let own = self
                .queues
                .insert(tm.to_string(), std::mem::take(&mut self.shared_queue));
            self.start_queued(tm);
            self.shared_queue = self.queues.remove(tm).unwrap_or_default();
            if let Some(own) = own {
                self.queues.insert(tm.to_string(), own);
            }
        }
    }

    /// Starts jobs from `tm`'s queue while they fit.
    fn start_queued(&mut self, tm: &str) {
        loop {
            let Some(queue) = self.queues.get_mut(tm) else {
                return;
            };
            let jobs = &self.jobs;
            queue.retain(|id| jobs.get(id).is_some_and(|j| j.state == JobState::Waiting));
            let Some(pos) = (0..queue.len()).max_by_key(|&i| {
                (
                    jobs.get(&queue[i]).map_or(i32::MIN, |j| j.request.priority),
                    std::cmp::Reverse(i),
                )
            }) else {
                return;
            };
            let id = queue[pos].clone();
            let offers = self.offers(Some(tm));
            if offers.iter().map(|o| o.free).sum::<usize>() == 0 {
                return;
            }
            let Some(mut entry) = self.jobs.remove(&id) else {
                return;
            };
            let deployed = self.deploy(&mut entry, &offers);
            self.jobs.insert(id.clone(), entry);
            if deployed.is_err() {
                return;
            }
            if let Some(q) = self.queues.get_mut(tm) {
                q.retain(|j| *j != id);
            }
        }
    }

    /// One RFTS round over the waiting jobs: moves them from overloaded TaskManagers' queues to
    /// under-saturated ones, then starts what fits. Returns the number of moves.
    pub fn rebalance(&mut self) -> usize {
        let started = Instant::now();
        let moves = self.rebalance_timed();
        self.scheduler_time += started.elapsed();
        moves
    }

    fn rebalance_timed(&mut self) -> usize {
        self.rebalance_round += 1;
        let moves = self
            .scheduler
            .rebalance(&self.loads(), self.rebalance_round);
        let mut moved = 0;
        for (id, to) in moves {
            let Some(from) = self.jobs.get(&id).and_then(|j| j.queued_on.clone()) else {
                continue;
            };
            if from == to || !self.task_managers.contains_key(&to) {
                continue;
            }
            if let Some(q) = self.queues.get_mut(&from) {
                q.retain(|j| *j != id);
            }
            self.queues.entry(to.clone()).or_default().push(id.clone());
            if let Some(j) = self.jobs.get_mut(&id) {
                j.queued_on = Some(to.clone());
            }
            tracing::info!(job = %id, from = %from, to = %to, "waiting job migrated");
            moved += 1;
        }
        let tms: Vec<String> = self.task_managers.keys().cloned().collect();
        for tm in &tms {
            self.start_waiting(tm);
        }
        moved
    }

    /// Keeps at most [`RETAINED_JOBS`] ended jobs (and their collected records).
    fn forget_old_jobs(&mut self) {
        let ended: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.state.is_terminal())
            .map(|j| j.id.clone())
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(RETAINED_JOBS)) {
            self.jobs.remove(id);
        }
    }

    /// A worker announced its data port; starts the job when all have.
    pub fn worker_ready(&mut self, job: &str, tm: &str, port: u16) {
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        if let Some(w) = entry.workers.get_mut(tm) {
            w.data_port = Some(port);
        }
        if entry.state != JobState::Deploying
            || entry.workers.values().any(|w| w.data_port.is_none())
        {
            return;
        }
        let peers: Vec<PeerAddress> = entry
            .workers
            .iter()
            .filter_map(|(tm, w)| {
                Some(PeerAddress {
                    task_manager: tm.clone(),
                    address: format!("{}:{}", w.data_host, w.data_port?),
                })
            })
            .collect();
        entry.state = JobState::Running;
        for w in entry.workers.values() {
            if let Some(m) = &w.mailbox {
                let _ = m.send(Message::Start(peers.clone()));
            }
        }
        tracing::info!(job = %job, attempt = entry.attempt, "job running");
        self.attempt_running(job);
    }

    /// A worker reported success; finishes the job when all have.
    pub fn worker_finished(
        &mut self,
        job: &str,
        tm: &str,
        vertices: Vec<VertexMetrics>,
        collected: Collected,
    ) {
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        if let Some(w) = entry.workers.get_mut(tm) {
            w.finished = true;
            w.metrics = vertices;
        }
        entry.collected.extend(collected);
        if entry.workers.values().all(|w| w.finished) {
            self.end_job(job, JobState::Finished, None);
        }
    }

    /// Ends a job: releases its slots, tells TaskManagers to stop what is left, wakes waiters.
    pub fn end_job(&mut self, job: &str, state: JobState, error: Option<String>) {
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        if entry.state.is_terminal() {
            return;
        }
        entry.state = state;
        entry.error = error;
        entry.ended = Some(Instant::now());
        if let Some(tm) = entry.queued_on.take()
            && let Some(q) = self.queues.get_mut(&tm)
        {
            q.retain(|j| j != job);
        }
        self.shared_queue.retain(|j| j != job);
        if let Some(r) = entry.recovery.as_mut() {
            if let Some(c) = r.coordinator.take() {
                r.history.extend_from_slice(c.history());
            }
            if let Some(sp) = r.savepoint.take() {
                let _ = sp
                    .reply
                    .send(Message::Error(format!("the job ended ({state:?})")));
            }
        }
        let freed = if state == JobState::Finished {
            self.release_slots(job)
        } else {
            self.stop_workers(job)
        };
        let Some(entry) = self.jobs.get_mut(job) else {
            return;
        };
        let summary = entry.summary();
        match &summary.error {
            Some(e) => tracing::warn!(job = %job, state = ?state, "job ended: {e}"),
            None => tracing::info!(job = %job, state = ?state, "job ended"),
        }
        for waiter in entry.waiters.drain(..) {
            let _ = waiter.send(Message::JobEnded(summary.clone(), entry.collected.clone()));
        }
        for tm in freed {
            self.start_waiting(&tm);
        }
    }

    /// Frees the slots of a job's workers; returns their TaskManagers.
    fn release_slots(&mut self, job: &str) -> Vec<String> {
        let Some(entry) = self.jobs.get_mut(job) else {
            return Vec::new();
        };
        for (tm, w) in &entry.workers {
            if let Some(t) = self.task_managers.get_mut(tm) {
                t.used_slots = t.used_slots.saturating_sub(w.slots);
            }
        }
        entry.workers.keys().cloned().collect()
    }

    /// Cancels every worker of a job's attempt and frees their slots; returns their
    /// TaskManagers.
    pub(super) fn stop_workers(&mut self, job: &str) -> Vec<String> {
        let freed = self.release_slots(job);
        let Some(entry) = self.jobs.get_mut(job) else {
            return freed;
        };
        for (tm, w) in &mut entry.workers {
            if let Some(m) = &w.mailbox {
                let _ = m.send(Message::CancelJob(job.to_string()));
            }
            w.slots = 0;
            if let Some(t) = self.task_managers.get(tm) {
                let _ = t.mailbox.send(Message::CancelJob(job.to_string()));
            }
        }
        freed
    }

    /// A TaskManager is gone: fails the jobs that had workers on it.
    pub fn task_manager_lost(&mut self, tm: &str, reason: &str) {
        if self.task_managers.remove(tm).is_none() {
            return;
        }
        tracing::warn!(task_manager = %tm, "TaskManager lost: {reason}");
        // Its waiting jobs wait elsewhere.
        for id in self.queues.remove(tm).unwrap_or_default() {
            let target = self
                .task_managers
                .keys()
                .min_by_key(|t| self.queues.get(*t).map_or(0, Vec::len))
                .cloned();
            match target {
                Some(t) => {
                    if let Some(j) = self.jobs.get_mut(&id) {
                        j.queued_on = Some(t.clone());
                    }
                    self.queues.entry(t).or_default().push(id);
                }
                None => self.end_job(
                    &id,
                    JobState::Failed,
                    Some(format!(
                        "TaskManager {tm} was lost and no other can run the job"
                    )),
                ),
            }
        }
        let affected: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| !j.state.is_terminal() && j.workers.contains_key(tm))
            .map(|j| j.id.clone())
            .collect();
        for job in affected {
            self.job_failed(&job, format!("TaskManager {tm} was lost: {reason}"));
        }
    }

    /// A worker's counters so far.
    pub fn worker_progress(&mut self, job: &str, tm: &str, vertices: Vec<VertexMetrics>) {
        if let Some(w) = self.jobs.get_mut(job).and_then(|j| j.workers.get_mut(tm))
            && !w.finished
        {
            w.metrics = vertices;
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
        error: String,
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
            let reported_after_all = d.task_manager.as_ref().is_some_and(|tm| {
                self.jobs
                    .get(&d.job)
                    .and_then(|j| j.workers.get(tm))
                    .is_some_and(|w| w.finished)
            });
            let same_attempt = self
                .jobs
                .get(&d.job)
                .is_some_and(|j| j.attempt == d.attempt);
            if same_attempt && !reported_after_all {
                self.job_failed(&d.job, d.error);
            }
        }
    }

    /// TaskManagers whose last heartbeat is older than the timeout.
    pub fn expired_task_managers(&self) -> Vec<String> {
        self.task_managers
            .values()
            .filter(|t| t.last_heartbeat.elapsed() > self.heartbeat_timeout)
            .map(|t| t.info.id.clone())
            .collect()
    }
}
