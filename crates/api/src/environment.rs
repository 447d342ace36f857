//! The entry point of a job program.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::checkpoint::coordinator::CheckpointConfig;
use crate::cluster::executor::{ClusterExecutor, WorkerExecutor};
use crate::connectors::Source;
use crate::connectors::collection::{CollectionSource, IteratorSource};
use crate::connectors::socket::SocketTextSource;
use crate::connectors::text_file::TextFileSource;
use crate::error::{Result, internal};
use crate::execution::local::LocalExecutor;
use crate::execution::recovery::RecoverySettings;
use crate::execution::restart_strategy::RestartStrategy;
use crate::execution::task_threads::RuntimeConfig;
use crate::execution::{Executor, JobSubmission, SharedCollectSlot};
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::{JobGraph, TranslateConfig};
use crate::graph::render;
use crate::graph::stream_graph::{NodeKind, StreamGraph};
use crate::runtime::factory::{NodeFactory, SourceFactory};
use crate::runtime::type_ops::{TypeOps, type_ops};
use crate::state::disk_tier::{Budget, DiskTier};
use crate::types::AlignmentGroup;
use crate::types::metrics::JobProgress;
use crate::types::{Data, NodeId, Partitioning, RuntimeMode};
use crate::{DataStream, ExecutionConfig, JobClient, JobResult};

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
    /// The SQL statement the job runs, for the dashboard's job view.
    pub(crate) sql: Option<String>,
    pub(crate) config: ExecutionConfig,
    pub(crate) collect_slots: Vec<(NodeId, SharedCollectSlot)>,
    pub(crate) progress: Arc<JobProgress>,
    /// Streams split off an operator's output: (main stream's node, side output tag) → the
    /// side stream's node and record type.
    /// Watermark alignment groups by name (`WatermarkStrategy::with_watermark_alignment`).
    pub(crate) alignment_groups: std::collections::HashMap<String, Arc<AlignmentGroup>>,
    pub(crate) side_outputs:
        std::collections::HashMap<(NodeId, String), (NodeId, std::any::TypeId)>,
    /// Nodes that only unpack another node's output (a window's results and late records):
    /// node → the operator whose output they unpack. Settings made on such a stream
    /// (parallelism, name) go to that operator.
    pub(crate) unpacks: std::collections::HashMap<NodeId, NodeId>,
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
    /// Whether `other` is this environment (a clone of it), not another one.
    pub fn same_as(&self, other: &StreamExecutionEnvironment) -> bool {
        Rc::ptr_eq(&self.state, &other.state)
    }

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
                sql: None,
                config: ExecutionConfig::default(),
                collect_slots: Vec::new(),
                progress: Arc::new(JobProgress::default()),
                side_outputs: Default::default(),
                alignment_groups: Default::default(),
                unpacks: Default::default(),
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
    pub fn set_network_task_mode(&self, mode: crate::channels::network::NetworkTaskMode) -> &Self {
        self.state.borrow_mut().config.network_task = mode;
        self
    }

    /// Sets the number of records per batch.
    pub fn set_batch_size(&self, batch_size: usize) -> &Self {
        self.state.borrow_mut().config.batch_size = batch_size;
        self
    }

    /// Sets a memory budget for keyed state, in bytes (Flink's managed memory for its
    /// RocksDB backend): past it, keyed tables move cold entries to local disk and read them
    /// back when their key comes again. The budget is the process's, shared by its tasks; a
    /// TaskManager's comes from its own `--state-memory`. Default: none, all state in memory.
    pub fn set_state_memory(&self, bytes: u64) -> &Self {
        self.state.borrow_mut().config.state_memory = Some(bytes);
        self
    }

    /// Sets where the disk tier of [`Self::set_state_memory`] keeps its files: a directory of
    /// its own is made there and removed when the process no longer needs it. Default: the
    /// system's temporary directory.
    pub fn set_state_dir(&self, dir: impl Into<PathBuf>) -> &Self {
        self.state.borrow_mut().config.state_dir = Some(dir.into());
        self
    }

    /// Sets how often timestamp assigners and sources emit periodic watermarks (default
    /// 200 ms).
    pub fn set_auto_watermark_interval(&self, interval: Duration) -> &Self {
        self.state.borrow_mut().config.auto_watermark_interval = interval;
        self
    }

    /// Sets the processing-time clock of the job's tasks (default: the system clock). With a
    /// [`crate::types::ManualClock`], processing-time windows, timers and idleness are driven
    /// by the test, not by sleeping.
    pub fn set_clock(&self, clock: std::sync::Arc<dyn crate::types::Clock>) -> &Self {
        self.state.borrow_mut().config.clock = clock;
        self
    }

    /// Submits to the JobManager at `address` instead of running locally (also set by the
    /// `HUMMER_JOBMANAGER` environment variable).
    pub fn set_jobmanager(&self, address: Option<String>) -> &Self {
        self.state.borrow_mut().jobmanager = address;
        self
    }

    /// Runs the job in this process even when `HUMMER_JOBMANAGER` names a cluster (a small
    /// helper job of a tool, such as reading a topic back).
    pub fn run_locally(&self) -> &Self {
        self.state.borrow_mut().jobmanager = Some(String::new());
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

    /// Records the SQL statement the job runs (a `hummer sql` job): a cluster's dashboard
    /// shows it in the job's view.
    pub fn set_sql(&self, statement: &str) -> &Self {
        self.state.borrow_mut().sql = Some(statement.to_string());
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
        let factory = NodeFactory::Source(Arc::new(SourceFactory(Arc::new(source), None)));
        let id = self.add_node(name, NodeKind::Source, factory, type_ops::<T>());
        DataStream::new(self.clone(), id)
    }

    /// Adds a source whose records get event timestamps and watermarks from `strategy` per
    /// split (Flink's `fromSource`): each split a subtask reads has its own watermark, and the
    /// subtask emits the minimum over its active splits, so a split that lags (or one idle
    /// past the strategy's idleness timeout) is accounted for where it is read.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// use std::time::Duration;
    /// let env = StreamExecutionEnvironment::local();
    /// let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(5))
    ///     .with_timestamp_assigner(|e: &u64, _| *e as i64 * 10);
    /// let counts = env
    ///     .from_source(GeneratorSource::new(|i| i).with_count(100), strategy)
    ///     .window_all(TumblingEventTimeWindows::of(Duration::from_millis(500)))
    ///     .aggregate(CountAggregate)
    ///     .collect();
    /// let mut result = env.execute("from_source").unwrap();
    /// let counts: Vec<u64> = result.collected(&counts).unwrap().into_iter().map(|r| r.value).collect();
    /// assert_eq!(counts, vec![50, 50]);
    /// ```
    pub fn from_source<T: Data, S: Source<T>>(
        &self,
        source: S,
        strategy: crate::operators::WatermarkStrategy<T>,
    ) -> DataStream<T> {
        let name = format!("{} [timestamps/watermarks per split]", source.name());
        let strategy = strategy.bind_alignment(|group, max_drift| {
            self.state
                .borrow_mut()
                .alignment_groups
                .entry(group.to_string())
                .or_insert_with(|| AlignmentGroup::new(group, max_drift))
                .clone()
        });
        let factory =
            NodeFactory::Source(Arc::new(SourceFactory(Arc::new(source), Some(strategy))));
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
        network_task: Option<crate::channels::network::NetworkTaskMode>,
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

    /// The names of the job's sources that never end (a Kafka topic read on, a generator
    /// without a count): a client shows such a job's results as they come, not at its end.
    pub fn unbounded_sources(&self) -> Vec<String> {
        self.state
            .borrow()
            .graph
            .nodes
            .iter()
            .filter(|n| matches!(&n.factory, NodeFactory::Source(s) if !s.is_bounded()))
            .map(|n| n.name.clone())
            .collect()
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
            .map_err(|e| internal!("plan JSON: {e}"))
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
    /// The job runs where [`Self::executor`] says: in this process, in a cluster (this binary
    /// is uploaded and submitted as the job), or, in a worker process started by a
    /// TaskManager, as that worker's share of the job (the process then ends).
    ///
    /// The environment's graph is handed to the job: the environment can build the next job.
    pub fn execute_async(&self, job_name: &str) -> Result<JobClient> {
        let executor = self.executor()?;
        let (stream, job, exec) = self.translate()?;
        let plan_json = serde_json::to_string(&render::to_json(&stream, &job, &exec))
            .map_err(|e| internal!("plan JSON: {e}"))?;
        let mut state = self.state.borrow_mut();
        let c = &state.config;
        let runtime = RuntimeConfig {
            batch_size: c.batch_size,
            channel_capacity: c.channel_capacity,
            buffer_timeout: c.buffer_timeout,
            network_task: c.network_task,
            auto_watermark_interval: c.auto_watermark_interval,
            clock: c.clock.clone(),
        };
        let recovery = RecoverySettings {
            checkpointing: c.checkpointing.clone(),
            restart_strategy: c.restart_strategy,
            restore_from: c.restore_from.clone(),
        };
        if let Some(bytes) = c.state_memory {
            DiskTier::ensure_process(Budget::Bytes(bytes), c.state_dir.as_deref())?;
        }
        let collect_slots = std::mem::take(&mut state.collect_slots);
        let (mode, source_vertices) = (job.mode(), job.source_vertices());
        let submission = JobSubmission {
            name: job_name.to_string(),
            job,
            exec,
            plan_json,
            runtime,
            progress: state.progress.clone(),
            recovery,
            collect_slots: collect_slots.clone(),
        };
        let started = Instant::now();
        let handle = match executor.execute(submission) {
            Ok(handle) => handle,
            Err(e) => {
                state.collect_slots = collect_slots;
                return Err(e);
            }
        };
        state.graph = StreamGraph::default();
        Ok(JobClient::new(
            job_name,
            mode,
            started,
            handle,
            source_vertices,
            collect_slots,
        ))
    }

    /// The JobManager `execute` submits to: the one set, else `HUMMER_JOBMANAGER`; `None` (or
    /// an empty address) runs the job in this process.
    fn jobmanager_address(&self) -> Option<String> {
        self.state
            .borrow()
            .jobmanager
            .clone()
            .or_else(|| std::env::var(crate::cluster::JOBMANAGER_ENV).ok())
            .filter(|a| !a.is_empty())
    }

    /// Whether this process is a cluster job's worker: a TaskManager started it to run its
    /// share of a job, which `execute` then runs.
    pub fn is_cluster_worker() -> bool {
        std::env::var_os(crate::cluster::WORKER_ENV).is_some()
    }

    /// Whether `execute` runs the whole job in this process: not as a TaskManager's worker,
    /// not on a cluster (see [`StreamExecutionEnvironment::executor`]).
    pub fn runs_in_process(&self) -> bool {
        WorkerExecutor::from_env().is_none() && self.jobmanager_address().is_none()
    }

    /// Where `execute` runs the job: as a worker's share if a TaskManager started this
    /// process, in the cluster of the JobManager set (or named by `HUMMER_JOBMANAGER`), else
    /// in this process.
    pub fn executor(&self) -> Result<Box<dyn Executor>> {
        if let Some(worker) = WorkerExecutor::from_env() {
            return Ok(Box::new(worker?));
        }
        let address = self.jobmanager_address();
        let state = self.state.borrow();
        Ok(match address {
            Some(address) => Box::new(ClusterExecutor {
                address,
                data_network: state.data_network.clone(),
                queue_when_busy: state.queue_when_busy,
                priority: state.priority,
                worker_env: state.worker_env.clone(),
                sql: state.sql.clone(),
                default_parallelism: state.config.parallelism,
            }),
            None => Box::new(LocalExecutor),
        })
    }
}
