//! A local job that survives failures: checkpoints while it runs, restarts from the last one.
//!
//! Used instead of a bare [`task_threads::start`] when a job takes checkpoints, has a restart
//! strategy or starts from a savepoint. A supervisor thread runs one *attempt* at a time and
//! carries out what the job's [`JobController`] decides: during an attempt it drives the
//! checkpoints (triggers go to the tasks through the [`CheckpointHub`], their acknowledgements
//! come back through a channel); when an attempt fails, the controller says whether to restart
//! after a delay from the newest whole checkpoint (every task restarts, the sources rewind, the
//! sinks commit what that checkpoint left pending and drop the rest) or to give up.
//!
//! The first attempt starts on the caller's thread, so that a bad input or setting fails
//! `execute` at once, as without checkpoints.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::checkpoint::coordinator::{CheckpointStats, load_for};
use crate::checkpoint::hub::{CheckpointHub, HubEvent};
use crate::controller::{AttemptStart, FailureOutcome, JobController, RecoveryPolicy};
use crate::error::{HummerError, Result, internal};
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::JobGraph;
use crate::task_threads::{self, CheckpointSetup, RunningJob, RuntimeConfig};
use crate::types::CancelToken;
use crate::types::metrics::{JobProgress, VertexMetrics};

/// How often the supervisor looks at the coordinator when no report arrives.
const TICK: Duration = Duration::from_millis(5);

/// What a supervised job ended with.
pub struct SupervisedOutcome {
    /// Counters of the last attempt.
    pub vertices: Vec<VertexMetrics>,
    /// Every checkpoint of every attempt, oldest first.
    pub checkpoints: Vec<CheckpointStats>,
    /// Restarts after failures.
    pub restarts: u32,
}

/// A supervised job whose first attempt is running.
pub struct SupervisedJob {
    thread: JoinHandle<Result<SupervisedOutcome>>,
    cancel: CancelToken,
}

struct Attempt {
    running: RunningJob,
    hub: Option<Arc<CheckpointHub>>,
    events: Receiver<HubEvent>,
}

struct Supervisor {
    job: JobGraph,
    exec: ExecutionGraph,
    cfg: RuntimeConfig,
    progress: Arc<JobProgress>,
    controller: JobController,
}

impl SupervisedJob {
    /// Starts the first attempt on this thread and supervises the job on another.
    pub fn start(
        job: JobGraph,
        exec: ExecutionGraph,
        cfg: RuntimeConfig,
        progress: Arc<JobProgress>,
        policy: RecoveryPolicy,
    ) -> Result<Self> {
        let mut supervisor = Supervisor {
            controller: JobController::new(policy),
            job,
            exec,
            cfg,
            progress,
        };
        let start = supervisor.controller.start()?;
        let first = supervisor.deploy(start)?;
        let cancel = CancelToken::default();
        let cancel_t = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("job supervisor".into())
            .spawn(move || supervisor.run(first, &cancel_t))
            .map_err(|e| internal!("cannot start the job supervisor: {e}"))?;
        Ok(SupervisedJob { thread, cancel })
    }

    /// Cancels the job (the running attempt and any restart).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Whether the job has ended (its supervisor has returned).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the job's end.
    pub fn wait(self) -> Result<SupervisedOutcome> {
        self.thread
            .join()
            .map_err(|_| internal!("the job supervisor panicked"))?
    }
}

impl Supervisor {
    /// Starts the tasks of an attempt the controller decided on.
    fn deploy(&mut self, start: AttemptStart) -> Result<Attempt> {
        let (tx, events) = channel();
        // A restore point exists only for a job that takes checkpoints (its policy says so),
        // and restored sinks commit through them.
        let checkpoints = if self.controller.takes_checkpoints() {
            let restored = match &start.restore {
                Some(checkpoint) => Some(Arc::new(load_for(checkpoint, &self.job.graph_info())?)),
                None => None,
            };
            let hub = CheckpointHub::new(tx, self.controller.restored());
            Some(CheckpointSetup { hub, restored })
        } else {
            None
        };
        let running = task_threads::start(
            &self.job,
            &self.exec,
            &self.cfg,
            self.progress.clone(),
            None,
            checkpoints.as_ref(),
        )?;
        self.controller.running(
            self.job.graph_info(),
            self.exec.subtasks.len(),
            self.job.source_subtasks(),
            Instant::now(),
        )?;
        Ok(Attempt {
            running,
            hub: checkpoints.map(|c| c.hub),
            events,
        })
    }

    fn run(mut self, first: Attempt, cancel: &CancelToken) -> Result<SupervisedOutcome> {
        let mut attempt = first;
        loop {
            let error = match self.drive(attempt, cancel) {
                Ok(vertices) => {
                    self.controller.finish();
                    return Ok(SupervisedOutcome {
                        vertices,
                        checkpoints: self.controller.checkpoint_history(),
                        restarts: self.controller.restarts(),
                    });
                }
                Err(e) if cancel.is_cancelled() => {
                    self.controller.cancel();
                    return Err(e);
                }
                Err(e) => e,
            };
            let mut outcome = self.controller.failed(error, Instant::now());
            attempt = loop {
                match outcome {
                    FailureOutcome::Failed(e) => return Err(e),
                    FailureOutcome::Ignored => {
                        return Err(internal!("the job controller ignored a failure"));
                    }
                    FailureOutcome::Restart { .. } => {}
                }
                while !self.controller.restart_due(Instant::now()) {
                    if cancel.is_cancelled() {
                        self.controller.cancel();
                        return Err(HummerError::Cancelled);
                    }
                    std::thread::sleep(TICK * 4);
                }
                // A restart that cannot even start is a failure of its own.
                match self.controller.restart().and_then(|s| self.deploy(s)) {
                    Ok(a) => break a,
                    Err(e) => outcome = self.controller.deploy_failed(e, Instant::now()),
                }
            };
        }
    }

    /// Runs one attempt to its end, taking checkpoints meanwhile.
    fn drive(&mut self, attempt: Attempt, cancel: &CancelToken) -> Result<Vec<VertexMetrics>> {
        while !attempt.running.is_finished() {
            if cancel.is_cancelled() {
                attempt.running.cancel();
            }
            let Some(hub) = &attempt.hub else {
                std::thread::sleep(TICK * 4);
                continue;
            };
            if let Some(trigger) = self.controller.tick(Instant::now()) {
                hub.trigger(trigger.id, trigger.last);
            }
            if let Ok(event) = attempt.events.recv_timeout(TICK)
                && let Some(done) = self.controller.on_checkpoint_event(event, Instant::now())
            {
                hub.complete(done);
            }
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
