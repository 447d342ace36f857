//! The cluster's executors: a client's [`ClusterExecutor`] submits this binary as a job to a
//! JobManager; a worker process's [`WorkerExecutor`] runs the share of a job a TaskManager
//! deployed to it.
//!
//! A job binary runs its `main` in both roles and builds the same graph; the environment
//! chooses the executor when it starts the job (see `StreamExecutionEnvironment::execute`):
//! the worker executor in a process a TaskManager started (its deploy spec is in
//! [`crate::WORKER_ENV`]), the cluster executor when a JobManager is set, else the
//! local one.

use std::path::PathBuf;

use crate::client::ClusterClient;
use crate::error::{HummerError, Result};
use crate::execution::restart_strategy::RestartStrategy;
use crate::execution::{Executor, JobHandle, JobOutcome, JobSubmission, SharedCollectSlot};
use crate::graph::job_graph::JobGraph;
use crate::protocol::{DeploySpec, JobStatus, RecoveryRequest, SubmitRequest};
use crate::types::{NodeId, RuntimeMode};
use crate::worker;

/// Submits jobs to a JobManager.
#[derive(Clone, Debug, Default)]
pub struct ClusterExecutor {
    /// The JobManager's RPC address.
    pub address: String,
    /// Data network (by name) the job's shuffles use.
    pub data_network: Option<String>,
    /// Wait in a TaskManager's queue when no slots are free.
    pub queue_when_busy: bool,
    /// Priority among waiting jobs.
    pub priority: i32,
    /// Environment variables for the job's workers.
    pub worker_env: Vec<(String, String)>,
    /// The SQL statement the job runs, if it is a SQL job.
    pub sql: Option<String>,
    /// Parallelism of vertices that set none (the JobManager may lower it to fit).
    pub default_parallelism: usize,
}

impl Executor for ClusterExecutor {
    fn execute(&self, s: JobSubmission) -> Result<Box<dyn JobHandle>> {
        let exe = std::env::current_exe().map_err(|e| {
            HummerError::io("cannot find this program's executable", "/proc/self/exe", e)
        })?;
        let bytes = std::fs::read(&exe).map_err(|e| HummerError::io("cannot read", &exe, e))?;
        let mut client = ClusterClient::connect(&self.address)?;
        let artifact = client.upload_artifact(bytes)?;
        let id = client.submit(SubmitRequest {
            name: s.name.clone(),
            artifact,
            args: std::env::args().skip(1).collect(),
            fingerprint: worker::fingerprint(&s.plan_json),
            vertices: s.job.vertex_requests(),
            default_parallelism: self.default_parallelism,
            streaming: s.job.mode() == RuntimeMode::Streaming,
            data_network: self.data_network.clone(),
            queue: self.queue_when_busy,
            priority: self.priority,
            env: self.worker_env.clone(),
            sql: self.sql.clone(),
            recovery: recovery_request(&s, &s.job)?,
            topology: s.job.topology(),
        })?;
        Ok(Box::new(RemoteJob {
            address: self.address.clone(),
            id,
            collect_slots: s.collect_slots,
        }))
    }
}

/// What a cluster job asks for to checkpoint and restart; a restore point is checked against
/// the job here, so that an incompatible savepoint is refused before anything is deployed.
fn recovery_request(s: &JobSubmission, job: &JobGraph) -> Result<Option<RecoveryRequest>> {
    // Workers resolve paths in their own directories: hand them absolute ones (object store
    // URLs are left as they are).
    let absolute = |p: &std::path::Path| -> Result<PathBuf> {
        if crate::checkpoint::backend::is_url(p) {
            return Ok(p.to_path_buf());
        }
        std::path::absolute(p).map_err(|e| HummerError::io("cannot resolve path", p, e))
    };
    let settings = &s.recovery;
    let checkpoints = match settings.checkpoints_in(job.mode()) {
        Some(cfg) => {
            let mut cfg = cfg.clone();
            cfg.dir = absolute(&cfg.dir)?;
            Some(cfg)
        }
        None => None,
    };
    let restart = settings.restart_strategy(checkpoints.is_some());
    let restore_from = match &settings.restore_from {
        Some(path) => {
            let checkpoint = crate::checkpoint::store::find_checkpoint(path)?;
            crate::checkpoint::coordinator::load_for(&checkpoint, &job.graph_info())?;
            Some(absolute(&checkpoint.dir)?)
        }
        None => None,
    };
    if checkpoints.is_none() && restart == RestartStrategy::None && restore_from.is_none() {
        return Ok(None);
    }
    if restore_from.is_some() && checkpoints.is_none() {
        return Err(HummerError::Config(
            "a cluster job started from a savepoint must take checkpoints \
             (enable_checkpointing), so that its sinks can commit"
                .into(),
        ));
    }
    Ok(Some(RecoveryRequest {
        checkpoints,
        restart,
        restore_from,
        source_vertices: job.source_vertices(),
        graph: job.graph_info(),
    }))
}

/// A job submitted to a JobManager.
struct RemoteJob {
    address: String,
    id: String,
    collect_slots: Vec<(NodeId, SharedCollectSlot)>,
}

impl JobHandle for RemoteJob {
    fn cancel(&self) {
        if let Err(e) = ClusterClient::connect(&self.address).and_then(|mut c| c.cancel(&self.id)) {
            tracing::warn!("cannot cancel job {}: {e}", self.id);
        }
    }

    fn job_id(&self) -> Option<&str> {
        Some(&self.id)
    }

    fn wait(self: Box<Self>) -> Result<JobOutcome> {
        let (summary, collected) = ClusterClient::wait_following(&self.address, &self.id)?;
        match summary.state {
            JobStatus::Finished => {}
            JobStatus::Cancelled => return Err(HummerError::Cancelled),
            state => {
                let what = format!("job {} {state:?}", self.id);
                return Err(match summary.error {
                    Some(report) => HummerError::Remote(report).context(what),
                    None => HummerError::Cluster(what),
                });
            }
        }
        for (node, bytes) in collected {
            if let Some((_, slot)) = self.collect_slots.iter().find(|(n, _)| *n == node) {
                slot.append_encoded(&bytes)?;
            }
        }
        Ok(JobOutcome {
            vertices: summary.vertices,
            checkpoints: summary.checkpoints,
            restarts: summary.restarts,
        })
    }
}

/// Runs this worker's share of a job: the entry point of a process a TaskManager started.
pub struct WorkerExecutor {
    spec: DeploySpec,
}

impl WorkerExecutor {
    /// The executor of this process if a TaskManager started it as a worker (`None` if not;
    /// an error if its deploy spec cannot be read).
    pub fn from_env() -> Option<Result<Self>> {
        worker::spec_from_env().map(|spec| spec.map(|spec| WorkerExecutor { spec }))
    }
}

impl Executor for WorkerExecutor {
    /// Runs the subtasks placed on this worker, reports the outcome to the JobManager and
    /// ends the process: a worker runs one job share and nothing after it.
    fn execute(&self, s: JobSubmission) -> Result<Box<dyn JobHandle>> {
        worker::run(
            self.spec.clone(),
            worker::WorkerJob {
                job: &s.job,
                plan_json: &s.plan_json,
                runtime: s.runtime,
                collect_slots: &s.collect_slots,
            },
        )
    }
}
