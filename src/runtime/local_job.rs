//! A local job that survives failures: checkpoints while it runs, restarts from the last one.
//!
//! Used instead of a bare [`executor::start`] when a job takes checkpoints or has a restart
//! strategy. A supervisor thread runs one *attempt* at a time. During an attempt it drives the
//! [`CheckpointCoordinator`] (triggers go to the tasks through the [`CheckpointHub`], their
//! acknowledgements come back through a channel). When an attempt fails, the
//! [`RestartTracker`] decides: restart after a delay from the newest whole checkpoint (every
//! task restarts, the sources rewind, the sinks commit what that checkpoint left pending and
//! drop the rest), or give up and fail the job with the last error and the reason.
//!
//! The first attempt starts on the caller's thread, so that a bad input or setting fails
//! `execute` at once, as without checkpoints.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::checkpoint::coordinator::{
    CheckpointConfig, CheckpointCoordinator, CheckpointStats, load_for,
};
use crate::checkpoint::hub::{CheckpointHub, HubEvent};
use crate::checkpoint::restart_strategy::{RestartDecision, RestartStrategy, RestartTracker};
use crate::checkpoint::store::{CheckpointStore, find_checkpoint};
use crate::checkpoint::task_state::RestoredState;
use crate::error::{HummerError, Result};
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::JobGraph;
use crate::runtime::CancelToken;
use crate::runtime::executor::{self, CheckpointSetup, RunningJob, RuntimeConfig};
use crate::runtime::metrics::{JobProgress, VertexMetrics};

/// How often the supervisor looks at the coordinator when no report arrives.
const TICK: Duration = Duration::from_millis(5);

/// What a supervised local job ended with.
pub struct LocalOutcome {
    /// Counters of the last attempt.
    pub vertices: Vec<VertexMetrics>,
    /// Every checkpoint of every attempt, oldest first.
    pub checkpoints: Vec<CheckpointStats>,
    /// Restarts after failures.
    pub restarts: u32,
}

/// Settings of a supervised job.
#[derive(Clone, Debug)]
pub struct Supervision {
    /// Checkpoints, if the job takes them; `dir` is this run's own directory.
    pub checkpoints: Option<CheckpointConfig>,
    /// What to do when an attempt fails.
    pub restart: RestartStrategy,
    /// A checkpoint or savepoint to start from.
    pub restore_from: Option<PathBuf>,
}

/// A supervised job whose first attempt is running.
pub struct LocalJob {
    thread: JoinHandle<Result<LocalOutcome>>,
    cancel: CancelToken,
}

struct Attempt {
    running: RunningJob,
    hub: Option<Arc<CheckpointHub>>,
    events: Receiver<HubEvent>,
    coordinator: Option<CheckpointCoordinator>,
}

struct Supervisor {
    job: JobGraph,
    exec: ExecutionGraph,
    cfg: RuntimeConfig,
    progress: Arc<JobProgress>,
    supervision: Supervision,
    tracker: RestartTracker,
    history: Vec<CheckpointStats>,
}

impl LocalJob {
    /// Starts the first attempt on this thread and supervises the job on another.
    pub fn start(
        job: JobGraph,
        exec: ExecutionGraph,
        cfg: RuntimeConfig,
        progress: Arc<JobProgress>,
        supervision: Supervision,
    ) -> Result<Self> {
        let mut supervisor = Supervisor {
            tracker: RestartTracker::new(supervision.restart),
            job,
            exec,
            cfg,
            progress,
            supervision,
            history: Vec::new(),
        };
        let first = supervisor.start_attempt(true)?;
        let cancel = CancelToken::default();
        let cancel_t = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("job supervisor".into())
            .spawn(move || supervisor.run(first, &cancel_t))
            .map_err(|e| HummerError::Internal(format!("cannot start the job supervisor: {e}")))?;
        Ok(LocalJob { thread, cancel })
    }

    /// Cancels the job (the running attempt and any restart).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for the job's end.
    pub fn wait(self) -> Result<LocalOutcome> {
        self.thread
            .join()
            .map_err(|_| HummerError::Internal("the job supervisor panicked".into()))?
    }
}

impl Supervisor {
    /// The state to start from: the newest whole checkpoint of this run, else the requested
    /// checkpoint or savepoint (only that is an error if missing or damaged).
    fn restore_point(&self) -> Result<Option<RestoredState>> {
        let mut found = None;
        if let Some(c) = &self.supervision.checkpoints
            && crate::checkpoint::storage::Storage::open(&c.dir)?.exists()
        {
            found = CheckpointStore::open(&c.dir, c.retain)?.latest_valid()?;
        }
        if found.is_none()
            && let Some(path) = &self.supervision.restore_from
        {
            found = Some(find_checkpoint(path)?);
        }
        let Some(checkpoint) = found else {
            return Ok(None);
        };
        let restored = load_for(&checkpoint, &self.job.graph_info())?;
        tracing::info!(
            "restoring from checkpoint {} in {}",
            restored.checkpoint,
            checkpoint.dir.display()
        );
        Ok(Some(restored))
    }

    fn start_attempt(&mut self, first: bool) -> Result<Attempt> {
        let (tx, events) = channel();
        let Some(config) = self.supervision.checkpoints.clone() else {
            let running = executor::start(
                &self.job,
                &self.exec,
                &self.cfg,
                self.progress.clone(),
                None,
                None,
            )?;
            return Ok(Attempt {
                running,
                hub: None,
                events,
                coordinator: None,
            });
        };
        let restored = self.restore_point()?;
        if !first && restored.is_none() {
            tracing::info!("no checkpoint completed yet: restarting from the beginning");
        }
        let restored_id = restored.as_ref().map_or(0, |r| r.checkpoint);
        let hub = CheckpointHub::new(tx, restored_id);
        let coordinator = CheckpointCoordinator::new(
            config,
            self.job.graph_info(),
            self.exec.subtasks.len(),
            self.job.source_subtasks(),
            restored_id,
            Instant::now(),
        )?;
        let setup = CheckpointSetup {
            hub: hub.clone(),
            restored: restored.map(Arc::new),
        };
        let running = executor::start(
            &self.job,
            &self.exec,
            &self.cfg,
            self.progress.clone(),
            None,
            Some(&setup),
        )?;
        Ok(Attempt {
            running,
            hub: Some(hub),
            events,
            coordinator: Some(coordinator),
        })
    }

    fn run(mut self, first: Attempt, cancel: &CancelToken) -> Result<LocalOutcome> {
        let mut attempt = first;
        loop {
            let result = self.drive(attempt, cancel);
            let error = match result {
                Ok(vertices) => {
                    return Ok(LocalOutcome {
                        vertices,
                        checkpoints: std::mem::take(&mut self.history),
                        restarts: self.tracker.restarts(),
                    });
                }
                Err(e) if cancel.is_cancelled() => return Err(e),
                Err(e) => e,
            };
            match self.tracker.on_failure(Instant::now()) {
                RestartDecision::GiveUp { reason } => {
                    if matches!(self.tracker.strategy(), RestartStrategy::None) {
                        return Err(error);
                    }
                    return Err(HummerError::JobFailed {
                        reason,
                        cause: Box::new(error),
                    });
                }
                RestartDecision::RestartAfter(delay) => {
                    tracing::warn!(
                        "job failed ({error}); restart {} in {delay:?}",
                        self.tracker.restarts()
                    );
                    let until = Instant::now() + delay;
                    while Instant::now() < until {
                        if cancel.is_cancelled() {
                            return Err(HummerError::Cancelled);
                        }
                        std::thread::sleep((until - Instant::now()).min(TICK * 4));
                    }
                    attempt = loop {
                        match self.start_attempt(false) {
                            Ok(a) => break a,
                            // A restart that cannot even start is a failure of its own.
                            Err(e) => match self.tracker.on_failure(Instant::now()) {
                                RestartDecision::RestartAfter(d) => {
                                    tracing::warn!("restart failed ({e}); again in {d:?}");
                                    std::thread::sleep(d);
                                }
                                RestartDecision::GiveUp { reason } => {
                                    return Err(HummerError::JobFailed {
                                        reason,
                                        cause: Box::new(e),
                                    });
                                }
                            },
                        }
                    };
                }
            }
        }
    }

    /// Runs one attempt to its end, taking checkpoints meanwhile.
    fn drive(&mut self, mut attempt: Attempt, cancel: &CancelToken) -> Result<Vec<VertexMetrics>> {
        while !attempt.running.is_finished() {
            if cancel.is_cancelled() {
                attempt.running.cancel();
            }
            let (Some(coordinator), Some(hub)) = (&mut attempt.coordinator, &attempt.hub) else {
                std::thread::sleep(TICK * 4);
                continue;
            };
            if let Some(trigger) = coordinator.tick(Instant::now()) {
                hub.trigger(trigger.id, trigger.last);
            }
            match attempt.events.recv_timeout(TICK) {
                Ok(event) => match coordinator.on_event(event, Instant::now()) {
                    Ok(Some(done)) => hub.complete(done),
                    Ok(None) => {}
                    Err(e) => tracing::warn!("cannot store a checkpoint: {e}"),
                },
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
            }
        }
        if let Some(c) = attempt.coordinator.take() {
            self.history.extend_from_slice(c.history());
        }
        attempt.running.wait()
    }
}

/// This run's own checkpoint directory under `base`: `base/<job name>-<pid>-<start ms>`.
pub fn run_directory(base: &Path, job_name: &str) -> PathBuf {
    let name: String = job_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    base.join(format!("{name}-{}-{ms}", std::process::id()))
}
