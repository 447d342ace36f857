//! The entry point of a job program.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::api::{DataStream, ExecutionConfig, JobResult, RuntimeMode};
use crate::checkpoint::coordinator::CheckpointConfig;
use crate::checkpoint::restart_strategy::RestartStrategy;
use crate::cluster::client::ClusterClient;
use crate::cluster::protocol::{JobState, RecoveryRequest, SubmitRequest};
use crate::cluster::worker;
use crate::connectors::Source;
use crate::connectors::collect::CollectSlot;
use crate::connectors::collection::{CollectionSource, IteratorSource};
use crate::connectors::socket::SocketTextSource;
use crate::connectors::text_file::TextFileSource;
use crate::data::Data;
use crate::error::{HummerError, Result};
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::{JobGraph, TranslateConfig};
use crate::graph::render;
use crate::graph::stream_graph::{NodeId, NodeKind, StreamGraph};
use crate::runtime::executor::{self, RunningJob, RuntimeConfig};
use crate::runtime::factory::{NodeFactory, SourceFactory};
use crate::runtime::local_job::{self, LocalJob, Supervision};
use crate::runtime::metrics::JobProgress;
use crate::runtime::record_writer::Partitioning;
use crate::runtime::type_ops::{TypeOps, type_ops};

pub(crate) struct EnvState {
    pub(crate) graph: StreamGraph,
    /// JobManager to submit to (else `HUMMER_JOBMANAGER`, else run locally).
    pub(crate) jobmanager: Option<String>,
    /// Data network (by name) the job's shuffles use in cluster mode.
    pub(crate) data_network: Option<String>,
    /// In cluster mode, wait in a TaskManager's queue when no slots are free.
    pub(crate) queue_when_busy: bool,
    /// Priority among waiting jobs.
    pub(crate) priority: i32,
    /// Environment variables for the job's workers in cluster mode.
    pub(crate) worker_env: Vec<(String, String)>,
    pub(crate) config: ExecutionConfig,
    pub(crate) collect_slots: Vec<(NodeId, Arc<dyn CollectSlot + Send + Sync>)>,
    pub(crate) progress: Arc<JobProgress>,
}

/// Builds a job and runs it (Flink's `StreamExecutionEnvironment`).
///
/// The environment is local: `execute` runs the job in this process, one thread per subtask
/// (the embedded local cluster). Cloning it gives another handle on the same job.
///
/// ```
/// use hummer::prelude::*;
///
/// let env = StreamExecutionEnvironment::local();
/// env.set_parallelism(2);
/// let counts = env
///     .from_collection(vec!["a b".to_string(), "b c".into(), "b".into()])
///     .flat_map(|line: String| line.split(' ').map(str::to_string).collect::<Vec<_>>())
///     .key_by(|word: &String| word.clone())
///     .count()
///     .collect();
/// let mut result = env.execute("count words").unwrap();
/// let mut counts = result.collected(&counts).unwrap();
/// counts.sort();
/// assert_eq!(counts, vec![("a".to_string(), 1), ("b".to_string(), 3), ("c".to_string(), 1)]);
/// ```
#[derive(Clone)]
pub struct StreamExecutionEnvironment {
    pub(crate) state: Rc<RefCell<EnvState>>,
}

impl Default for StreamExecutionEnvironment {
    fn default() -> Self {
        Self::local()
    }
}

impl StreamExecutionEnvironment {
    /// An environment that runs jobs in this process.
    pub fn local() -> Self {
        StreamExecutionEnvironment {
            state: Rc::new(RefCell::new(EnvState {
                graph: StreamGraph::default(),
                jobmanager: None,
                data_network: None,
                queue_when_busy: false,
                priority: 0,
                worker_env: Vec::new(),
                config: ExecutionConfig::default(),
                collect_slots: Vec::new(),
                progress: Arc::new(JobProgress::default()),
            })),
        }
    }

    /// Sets the parallelism of operators that set none.
    pub fn set_parallelism(&self, parallelism: usize) -> &Self {
        self.state.borrow_mut().config.parallelism = parallelism;
        self
    }

    /// Sets the number of key groups (the upper bound of any parallelism).
    pub fn set_max_parallelism(&self, max_parallelism: usize) -> &Self {
        self.state.borrow_mut().config.max_parallelism = max_parallelism;
        self
    }

    /// Sets the runtime mode.
    pub fn set_runtime_mode(&self, mode: RuntimeMode) -> &Self {
        self.state.borrow_mut().config.mode = mode;
        self
    }

    /// Sets the buffer timeout (see [`ExecutionConfig::buffer_timeout`]).
    pub fn set_buffer_timeout(&self, timeout: Option<Duration>) -> &Self {
        self.state.borrow_mut().config.buffer_timeout = timeout;
        self
    }

    /// Where the sending ends of remote channels run in cluster mode: fused into the producing
    /// subtask (default) or in tasks of their own. An edge can override it
    /// ([`DataStream::network_task`]).
    pub fn set_network_task_mode(&self, mode: crate::network::NetworkTaskMode) -> &Self {
        self.state.borrow_mut().config.network_task = mode;
        self
    }

    /// Sets the number of records per batch.
    pub fn set_batch_size(&self, batch_size: usize) -> &Self {
        self.state.borrow_mut().config.batch_size = batch_size;
        self
    }

    /// Submits to the JobManager at `address` instead of running locally (also set by the
    /// `HUMMER_JOBMANAGER` environment variable).
    pub fn set_jobmanager(&self, address: Option<String>) -> &Self {
        self.state.borrow_mut().jobmanager = address;
        self
    }

    /// In cluster mode, runs the job's shuffles over the named data network: every worker
    /// listens on, and connects from, its TaskManager's address on that network
    /// (`hummer taskmanager --data-net NAME=ADDR`), so two jobs can use different NICs.
    pub fn set_data_network(&self, name: Option<String>) -> &Self {
        self.state.borrow_mut().data_network = name;
        self
    }

    /// In cluster mode, lets the job wait in a TaskManager's queue (with this priority; higher
    /// first) when the cluster has no free slots, instead of being refused.
    pub fn set_queue_when_busy(&self, queue: bool, priority: i32) -> &Self {
        let mut state = self.state.borrow_mut();
        state.queue_when_busy = queue;
        state.priority = priority;
        drop(state);
        self
    }

    /// Sets an environment variable of the job's workers in cluster mode: a program started
    /// as a worker sees it, so one binary can tell apart the jobs it submits.
    pub fn set_worker_env(&self, key: &str, value: &str) -> &Self {
        self.state
            .borrow_mut()
            .worker_env
            .push((key.to_string(), value.to_string()));
        self
    }

    /// Takes a checkpoint every `interval` (streaming jobs), into a directory of this run under
    /// the system's temporary directory unless [`Self::set_checkpoint_config`] says otherwise.
    /// A failed job then restarts from its last checkpoint (see
    /// [`Self::set_restart_strategy`]) with exactly-once state, and transactional sinks
    /// ([`DataStream::write_text_file`]) commit their output per checkpoint.
    pub fn enable_checkpointing(&self, interval: Duration) -> &Self {
        let mut state = self.state.borrow_mut();
        let dir = state.config.checkpointing.as_ref().map_or_else(
            || std::env::temp_dir().join("hummer-checkpoints"),
            |c| c.dir.clone(),
        );
        let mut config = state
            .config
            .checkpointing
            .take()
            .unwrap_or_else(|| CheckpointConfig::new(interval, dir));
        config.interval = interval;
        state.config.checkpointing = Some(config);
        drop(state);
        self
    }

    /// Sets every checkpoint setting (interval, timeout, minimum pause, retained count and
    /// the directory under which each run keeps its checkpoints).
    pub fn set_checkpoint_config(&self, config: CheckpointConfig) -> &Self {
        self.state.borrow_mut().config.checkpointing = Some(config);
        self
    }

    /// Sets what happens when a task fails (see [`RestartStrategy`]).
    pub fn set_restart_strategy(&self, strategy: RestartStrategy) -> &Self {
        self.state.borrow_mut().config.restart_strategy = Some(strategy);
        self
    }

    /// Starts the job from a checkpoint or savepoint directory (a `chk-<id>` directory, or a
    /// directory of checkpoints whose newest whole one is taken). The job may run at another
    /// parallelism; its operators must match those that have state in the checkpoint.
    pub fn set_restore_from(&self, path: Option<PathBuf>) -> &Self {
        self.state.borrow_mut().config.restore_from = path;
        self
    }

    /// The current settings.
    pub fn config(&self) -> ExecutionConfig {
        self.state.borrow().config.clone()
    }

    /// Progress counters of the job's bounded inputs (for progress bars).
    pub fn progress(&self) -> Arc<JobProgress> {
        self.state.borrow().progress.clone()
    }

    /// Adds a source.
    pub fn add_source<T: Data, S: Source<T>>(&self, source: S) -> DataStream<T> {
        let name = source.name();
        let factory = NodeFactory::Source(Arc::new(SourceFactory(Arc::new(source))));
        let id = self.add_node(name, NodeKind::Source, factory, type_ops::<T>());
        DataStream::new(self.clone(), id)
    }

    /// The elements of a vector, in order (a bounded, non-parallel source).
    pub fn from_collection<T: Data + Sync>(&self, items: Vec<T>) -> DataStream<T> {
        self.add_source(CollectionSource::new(items))
    }

    /// The items of an iterator (a bounded, non-parallel source that can run once).
    pub fn from_iter<T: Data, I>(&self, items: I) -> DataStream<T>
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: Send + 'static,
    {
        self.add_source(IteratorSource::new(items.into_iter()))
    }

    /// The lines of a text file, or of every file of a directory (bounded; read in parallel,
    /// split at line boundaries).
    pub fn read_text_file(&self, path: impl Into<PathBuf>) -> DataStream<String> {
        self.add_source(TextFileSource::new(path))
    }

    /// The lines sent by a TCP server (unbounded until the server closes; not parallel).
    pub fn socket_text_stream(&self, host: impl Into<String>, port: u16) -> DataStream<String> {
        self.add_source(SocketTextSource::new(host, port))
    }

    pub(crate) fn add_node(
        &self,
        name: String,
        kind: NodeKind,
        factory: NodeFactory,
        out_type: Arc<dyn TypeOps>,
    ) -> NodeId {
        self.state
            .borrow_mut()
            .graph
            .add_node(name, kind, factory, out_type)
    }

    pub(crate) fn add_edge(
        &self,
        source: NodeId,
        target: NodeId,
        input: usize,
        p: Partitioning,
        network_task: Option<crate::network::NetworkTaskMode>,
    ) {
        self.state
            .borrow_mut()
            .graph
            .add_edge(source, target, input, p, network_task);
    }

    fn translate(&self) -> Result<(StreamGraph, JobGraph, ExecutionGraph)> {
        let state = self.state.borrow();
        state.config.validate()?;
        let cfg = TranslateConfig {
            default_parallelism: state.config.parallelism,
            max_parallelism: state.config.max_parallelism,
            mode: state.config.mode,
        };
        let job = JobGraph::from_stream_graph(&state.graph, &cfg)?;
        let exec = ExecutionGraph::from_job_graph(&job);
        Ok((state.graph.clone(), job, exec))
    }

    /// The job graph (the fused chains) the job built so far translates to.
    pub fn job_graph(&self) -> Result<JobGraph> {
        Ok(self.translate()?.1)
    }

    /// The stream graph, the job graph (fused chains) and the execution graph (subtasks) of
    /// the job built so far, as text.
    pub fn explain(&self) -> Result<String> {
        let (stream, job, exec) = self.translate()?;
        Ok(render::to_text(&stream, &job, &exec))
    }

    /// The three graphs as JSON.
    pub fn explain_json(&self) -> Result<String> {
        let (stream, job, exec) = self.translate()?;
        serde_json::to_string_pretty(&render::to_json(&stream, &job, &exec))
            .map_err(|e| HummerError::Internal(format!("plan JSON: {e}")))
    }

    /// The job graph as Graphviz DOT.
    pub fn explain_dot(&self) -> Result<String> {
        let (_, job, _) = self.translate()?;
        Ok(render::to_dot(&job))
    }

    /// Runs the job to its end and returns its result.
    pub fn execute(&self, job_name: &str) -> Result<JobResult> {
        self.execute_async(job_name)?.wait()
    }

    /// Starts the job and returns at once with a client that can wait for it or cancel it.
    ///
    /// Locally the job runs in this process. With a JobManager set (see
    /// [`StreamExecutionEnvironment::set_jobmanager`]) this binary is uploaded and submitted as
    /// the job; in a worker process started by a TaskManager, this call runs the worker's share
    /// of the job and exits the process.
    ///
    /// The environment's graph is handed to the job: the environment can build the next job.
    pub fn execute_async(&self, job_name: &str) -> Result<JobClient> {
        let (stream, job, exec) = self.translate()?;
        let (runtime, progress, remote, supervision) = {
            let state = self.state.borrow();
            let c = &state.config;
            let runtime = RuntimeConfig {
                batch_size: c.batch_size,
                channel_capacity: c.channel_capacity,
                buffer_timeout: c.buffer_timeout,
                network_task: c.network_task,
            };
            let remote = state
                .jobmanager
                .clone()
                .or_else(|| std::env::var(crate::cluster::JOBMANAGER_ENV).ok())
                .filter(|a| !a.is_empty());
            (
                runtime,
                state.progress.clone(),
                remote,
                supervision(c, &job, job_name),
            )
        };
        let plan_json = serde_json::to_string(&render::to_json(&stream, &job, &exec))
            .map_err(|e| HummerError::Internal(format!("plan JSON: {e}")))?;
        if let Some(spec) = worker::spec_from_env() {
            let spec = spec?;
            let state = self.state.borrow();
            worker::run(
                spec,
                worker::WorkerJob {
                    job: &job,
                    plan_json: &plan_json,
                    runtime,
                    collect_slots: &state.collect_slots,
                },
            );
        }
        let source_vertices = job
            .vertices
            .iter()
            .map(|v| matches!(job.stream.nodes[v.nodes[0]].factory, NodeFactory::Source(_)))
            .collect();
        let started = Instant::now();
        let kind = match remote {
            Some(address) => {
                let id = self.submit(&address, job_name, &job, &plan_json)?;
                Execution::Remote { address, id }
            }
            None => match supervision {
                None => Execution::Local(executor::start(
                    &job, &exec, &runtime, progress, None, None,
                )?),
                Some(supervision) => Execution::Supervised(LocalJob::start(
                    job.clone(),
                    exec,
                    runtime,
                    progress,
                    supervision,
                )?),
            },
        };
        let mut state = self.state.borrow_mut();
        state.graph = StreamGraph::default();
        Ok(JobClient {
            job_name: job_name.to_string(),
            mode: job.mode,
            started,
            execution: kind,
            source_vertices,
            collect_slots: std::mem::take(&mut state.collect_slots),
        })
    }

    /// Uploads this binary and submits the job; returns its id.
    fn submit(&self, address: &str, name: &str, job: &JobGraph, plan_json: &str) -> Result<String> {
        let exe = std::env::current_exe().map_err(|e| {
            HummerError::io("cannot find this program's executable", "/proc/self/exe", e)
        })?;
        let bytes = std::fs::read(&exe).map_err(|e| HummerError::io("cannot read", &exe, e))?;
        let mut client = ClusterClient::connect(address)?;
        let artifact = client.upload_artifact(bytes)?;
        let state = self.state.borrow();
        let recovery = recovery_request(&state.config, job)?;
        client.submit(SubmitRequest {
            name: name.to_string(),
            artifact,
            args: std::env::args().skip(1).collect(),
            fingerprint: worker::fingerprint(plan_json),
            vertices: job.vertex_requests(),
            default_parallelism: state.config.parallelism,
            streaming: job.mode == RuntimeMode::Streaming,
            data_network: state.data_network.clone(),
            queue: state.queue_when_busy,
            priority: state.priority,
            env: state.worker_env.clone(),
            recovery,
        })
    }
}

/// The job's restart strategy: the configured one, else Flink's defaults (restarts with
/// checkpoints, none without).
fn restart_strategy(c: &ExecutionConfig, checkpoints: bool) -> RestartStrategy {
    c.restart_strategy.unwrap_or(if checkpoints {
        RestartStrategy::default()
    } else {
        RestartStrategy::None
    })
}

/// How a local job is supervised, if at all: only jobs with checkpoints, a restart strategy or
/// a restore point need the supervisor; the others run bare.
fn supervision(c: &ExecutionConfig, job: &JobGraph, job_name: &str) -> Option<Supervision> {
    // Restored state needs the checkpoint machinery (restored sinks commit through it).
    let default_config;
    let configured = match (&c.checkpointing, &c.restore_from) {
        (None, Some(_)) => {
            default_config = CheckpointConfig::new(
                Duration::from_secs(600),
                std::env::temp_dir().join("hummer-checkpoints"),
            );
            Some(&default_config)
        }
        (c, _) => c.as_ref(),
    };
    let checkpoints = match (configured, job.mode()) {
        (Some(_), RuntimeMode::Batch) => {
            tracing::info!("checkpoints are not taken in batch mode: a failed job reruns");
            None
        }
        (Some(cfg), _) => {
            let mut cfg = cfg.clone();
            cfg.dir = local_job::run_directory(&cfg.dir, job_name);
            Some(cfg)
        }
        (None, _) => None,
    };
    let restart = restart_strategy(c, checkpoints.is_some());
    if checkpoints.is_none() && restart == RestartStrategy::None && c.restore_from.is_none() {
        return None;
    }
    Some(Supervision {
        checkpoints,
        restart,
        restore_from: c.restore_from.clone(),
    })
}

/// What a cluster job asks for to checkpoint and restart; a restore point is checked against
/// the job here, so that an incompatible savepoint is refused before anything is deployed.
fn recovery_request(c: &ExecutionConfig, job: &JobGraph) -> Result<Option<RecoveryRequest>> {
    // Workers resolve paths in their own directories: hand them absolute ones (object store
    // URLs are left as they are).
    let absolute = |p: &std::path::Path| -> Result<PathBuf> {
        if crate::checkpoint::storage::is_url(p) {
            return Ok(p.to_path_buf());
        }
        std::path::absolute(p).map_err(|e| HummerError::io("cannot resolve path", p, e))
    };
    let checkpoints = match (&c.checkpointing, job.mode()) {
        (Some(cfg), RuntimeMode::Streaming) => {
            let mut cfg = cfg.clone();
            cfg.dir = absolute(&cfg.dir)?;
            Some(cfg)
        }
        _ => None,
    };
    let restart = restart_strategy(c, checkpoints.is_some());
    let restore_from = match &c.restore_from {
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
        source_vertices: job
            .vertices
            .iter()
            .map(|v| matches!(job.stream.nodes[v.nodes[0]].factory, NodeFactory::Source(_)))
            .collect(),
        graph: job.graph_info(),
    }))
}

enum Execution {
    Local(RunningJob),
    Supervised(LocalJob),
    Remote { address: String, id: String },
}

/// A running job: wait for its result or cancel it. Can be sent to another thread.
pub struct JobClient {
    job_name: String,
    mode: RuntimeMode,
    started: Instant,
    execution: Execution,
    source_vertices: Vec<bool>,
    collect_slots: Vec<(NodeId, Arc<dyn CollectSlot + Send + Sync>)>,
}

impl JobClient {
    /// Cancels the job; `wait` then returns [`HummerError::Cancelled`].
    pub fn cancel(&self) {
        match &self.execution {
            Execution::Local(running) => running.cancel(),
            Execution::Supervised(job) => job.cancel(),
            Execution::Remote { address, id } => {
                if let Err(e) = ClusterClient::connect(address).and_then(|mut c| c.cancel(id)) {
                    tracing::warn!("cannot cancel job {id}: {e}");
                }
            }
        }
    }

    /// The job's id in the cluster (`None` for a local job).
    pub fn job_id(&self) -> Option<&str> {
        match &self.execution {
            Execution::Local(_) | Execution::Supervised(_) => None,
            Execution::Remote { id, .. } => Some(id),
        }
    }

    /// The mode the job runs in.
    pub fn mode(&self) -> RuntimeMode {
        self.mode
    }

    /// Waits for the job's end. Every task thread has exited when this returns.
    pub fn wait(self) -> Result<JobResult> {
        let mut checkpoints = Vec::new();
        let mut restarts = 0;
        let vertices = match self.execution {
            Execution::Local(running) => running.wait()?,
            Execution::Supervised(job) => {
                let outcome = job.wait()?;
                checkpoints = outcome.checkpoints;
                restarts = outcome.restarts;
                outcome.vertices
            }
            Execution::Remote { address, id } => {
                let (summary, collected) = ClusterClient::connect(&address)?.wait(&id)?;
                match summary.state {
                    JobState::Finished => {}
                    JobState::Cancelled => return Err(HummerError::Cancelled),
                    state => {
                        return Err(HummerError::Cluster(format!(
                            "job {id} {state:?}: {}",
                            summary.error.unwrap_or_default()
                        )));
                    }
                }
                for (node, bytes) in collected {
                    if let Some((_, slot)) = self.collect_slots.iter().find(|(n, _)| *n == node) {
                        slot.append_encoded(&bytes)?;
                    }
                }
                checkpoints = summary.checkpoints;
                restarts = summary.restarts;
                summary.vertices
            }
        };
        let source_records = vertices
            .iter()
            .zip(&self.source_vertices)
            .filter(|(_, is_source)| **is_source)
            .map(|(v, _)| v.records_in)
            .sum();
        let collected: HashMap<_, _> = self
            .collect_slots
            .iter()
            .map(|(node, slot)| (*node, slot.take()))
            .collect();
        Ok(JobResult {
            job_name: self.job_name,
            mode: self.mode,
            duration: self.started.elapsed(),
            vertices,
            source_records,
            checkpoints,
            restarts,
            collected,
        })
    }
}
