//! Runs an execution graph in this process: one thread per subtask, with the channels the
//! [`ChannelAllocator`] makes (memory rings between subtasks here; in a cluster worker,
//! network channels to the subtasks of other workers).
//!
//! Start-up builds every channel and every task on the calling thread, so that a bad input, a
//! sink that cannot open its output or a graph error fails before any thread runs. Threads
//! then wait on a barrier until their wakers are bound, so no wake-up can be lost.
//!
//! The first task to fail records its error, cancels the job and wakes every thread; the
//! others see the cancellation at their next batch or wake-up and exit. [`RunningJob::wait`]
//! joins every thread before it returns, so no thread outlives the job.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::channels::{ChannelAllocator, ChannelSpec, Placement};
use crate::checkpoint::hub::CheckpointHub;
use crate::connectors::SourceContext;
use crate::error::{HummerError, Result, internal, panic_message};
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::JobGraph;
use crate::operators::OperatorContext;
use crate::runtime::factory::NodeFactory;
use crate::runtime::task::network_task_body;
use crate::runtime::task::{TaskBody, TaskRuntime};
use crate::runtime::type_ops::{ErasedOutput, ErasedReceiver, ErasedSender, WriterContext};
use crate::state::disk_tier::DiskTier;
use crate::state::task_state::{Pieces, RestoredState};
use crate::types::CancelToken;
use crate::types::TaskWaker;
use crate::types::metrics::{JobProgress, SubtaskMetrics, VertexMetrics};
use crate::types::{Clock, ProcessingTimeService};

/// Runtime settings of a job.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Records per batch.
    pub batch_size: usize,
    /// Batches in flight per channel.
    pub channel_capacity: usize,
    /// Longest a record waits in an output buffer while its task is busy (`None`: only full
    /// buffers and idle tasks flush).
    pub buffer_timeout: Option<Duration>,
    /// Where the sending ends of remote channels run, unless their edge says otherwise.
    pub network_task: crate::channels::network::NetworkTaskMode,
    /// How often periodic watermarks are emitted.
    pub auto_watermark_interval: Duration,
    /// The processing-time clock of every task.
    pub clock: Arc<dyn Clock>,
}

struct Failure {
    first: Mutex<Option<HummerError>>,
    cancel: CancelToken,
    wakers: Vec<Arc<TaskWaker>>,
}

impl Failure {
    fn fail(&self, error: HummerError) {
        if let Ok(mut first) = self.first.lock() {
            // The first real error wins; cancellations are consequences, not causes.
            if first.is_none() && !matches!(error, HummerError::Cancelled) {
                *first = Some(error);
            }
        }
        self.cancel.cancel();
        for w in &self.wakers {
            w.wake();
        }
    }
}

/// A job whose threads are running.
pub struct RunningJob {
    threads: Vec<JoinHandle<()>>,
    failure: Arc<Failure>,
    counters: JobCounters,
}

/// `(vertex, subtask index)` of a task that counts towards a vertex.
type SubtaskPlace = (usize, usize);

/// The live counters of a running job's subtasks, summed per vertex on demand.
#[derive(Clone)]
pub struct JobCounters {
    counters: Arc<Vec<(Arc<SubtaskMetrics>, Option<SubtaskPlace>)>>,
    vertex_names: Arc<Vec<(String, usize)>>,
}

impl JobCounters {
    /// Current totals per vertex.
    pub fn snapshot(&self) -> Vec<VertexMetrics> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut totals: Vec<VertexMetrics> = self
            .vertex_names
            .iter()
            .map(|(name, parallelism)| VertexMetrics {
                name: name.clone(),
                parallelism: *parallelism,
                records_in: 0,
                records_out: 0,
                backpressured_ns: 0,
                watermarks: Vec::new(),
                late_records: Vec::new(),
                partitions: Vec::new(),
                subtasks: Vec::new(),
            })
            .collect();
        for (m, place) in self.counters.iter() {
            let Some((vertex, subtask)) = *place else {
                continue;
            };
            if let Some(t) = totals.get_mut(vertex) {
                t.records_in += m.records_in.load(Relaxed);
                t.records_out += m.records_out.load(Relaxed);
                t.backpressured_ns += m.backpressured_ns.load(Relaxed);
                t.watermarks.push((subtask, m.watermark.load(Relaxed)));
                t.late_records.push((subtask, m.late_records.load(Relaxed)));
                t.subtasks.push(m.row(subtask));
                if let Ok(partitions) = m.partitions.lock() {
                    t.partitions
                        .extend(partitions.iter().map(|p| (subtask, p.clone())));
                }
            }
        }
        for t in &mut totals {
            t.watermarks.sort_unstable();
            t.late_records.sort_unstable();
            t.subtasks.sort_by_key(|r| r.subtask);
        }
        totals
    }
}

impl RunningJob {
    /// Cancels the job: every thread stops at its next batch or wake-up.
    pub fn cancel(&self) {
        self.failure.cancel.cancel();
        for w in &self.failure.wakers {
            w.wake();
        }
    }

    /// Waits for every thread; returns the job's first error, `Cancelled` if it was
    /// cancelled, or the per-vertex counters.
    pub fn wait(self) -> Result<Vec<VertexMetrics>> {
        for t in self.threads {
            if t.join().is_err() {
                self.failure
                    .fail(internal!("a task thread panicked outside its guard"));
            }
        }
        if let Some(e) = self.failure.first.lock().ok().and_then(|mut f| f.take()) {
            return Err(e);
        }
        if self.failure.cancel.is_cancelled() {
            return Err(HummerError::Cancelled);
        }
        Ok(self.counters.snapshot())
    }

    /// Whether every thread of the job has ended.
    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(|t| t.is_finished())
    }

    /// A handle on the live counters (for progress reports while the job runs).
    pub fn counters(&self) -> JobCounters {
        self.counters.clone()
    }
}

/// What a job attempt that takes checkpoints needs: the coordinator's hub, and the state of
/// the checkpoint it restarts from, if any.
#[derive(Clone)]
pub struct CheckpointSetup {
    /// Where triggers come from and acknowledgements go.
    pub hub: Arc<CheckpointHub>,
    /// The state to start from.
    pub restored: Option<Arc<RestoredState>>,
}

/// A task ready to be spawned.
struct PreparedTask {
    name: String,
    body: Box<dyn TaskBody>,
    waker: Arc<TaskWaker>,
    metrics: Arc<SubtaskMetrics>,
    /// The task's processing time (shared with the operators of its chain).
    time: ProcessingTimeService,
    /// Vertex and subtask index whose counters it adds to (`None` for network tasks).
    vertex: Option<SubtaskPlace>,
    /// Global subtask index (network tasks: the producing or consuming subtask's).
    global: usize,
}

/// Builds and starts the subtasks of `exec` that run in this process.
pub fn start(
    job: &JobGraph,
    exec: &ExecutionGraph,
    cfg: &RuntimeConfig,
    progress: Arc<JobProgress>,
    placement: Option<&Placement>,
    checkpoints: Option<&CheckpointSetup>,
) -> Result<RunningJob> {
    validate_sources(job, checkpoints.is_some())?;
    let n = exec.subtasks.len();
    let wakers: Vec<Arc<TaskWaker>> = (0..n).map(|_| Arc::new(TaskWaker::default())).collect();
    let metrics: Vec<Arc<SubtaskMetrics>> = (0..n).map(|_| Arc::default()).collect();
    let cancel = CancelToken::default();
    let mut alloc = ChannelAllocator::new(cfg.channel_capacity, &wakers, placement);
    let mut builder = TaskBuilder {
        job,
        cfg,
        cancel: &cancel,
        progress: &progress,
        checkpoints,
        senders: HashMap::new(),
        receivers: HashMap::new(),
    };
    builder.allocate_channels(exec, &mut alloc)?;
    let network_tasks = alloc.take_network_tasks();
    let mut tasks: Vec<PreparedTask> = Vec::with_capacity(n + network_tasks.len());
    for (global, st) in exec.subtasks.iter().enumerate() {
        if !alloc.is_here(global) {
            continue;
        }
        let place = TaskPlace {
            vertex: st.vertex,
            index: st.index,
            global,
        };
        let time = ProcessingTimeService::new(cfg.clock.clone());
        tasks.push(PreparedTask {
            name: st.name.clone(),
            body: builder.build(place, &metrics[global], &time)?,
            waker: wakers[global].clone(),
            metrics: metrics[global].clone(),
            time,
            vertex: Some((st.vertex, st.index)),
            global,
        });
    }
    tasks.extend(network_tasks.into_iter().map(|t| PreparedTask {
        name: t.name,
        body: network_task_body(t.body),
        waker: t.waker,
        metrics: Arc::default(),
        time: ProcessingTimeService::new(cfg.clock.clone()),
        vertex: None,
        global: t.subtask,
    }));
    spawn(tasks, job, cfg, cancel, checkpoints)
}

/// Checks every source before anything is built; warns about sources that cannot be replayed
/// in a job that takes checkpoints.
fn validate_sources(job: &JobGraph, checkpointing: bool) -> Result<()> {
    for node in &job.stream.nodes {
        if let NodeFactory::Source(s) = &node.factory {
            s.validate()?;
            if checkpointing && !s.is_replayable() {
                tracing::warn!(
                    "source '{}' cannot be replayed: after a failure its records since the last \
                     checkpoint are lost (at-most-once)",
                    node.name
                );
            }
        }
    }
    Ok(())
}

/// Starts a thread per prepared task; they run once every waker is bound.
fn spawn(
    tasks: Vec<PreparedTask>,
    job: &JobGraph,
    cfg: &RuntimeConfig,
    cancel: CancelToken,
    checkpoints: Option<&CheckpointSetup>,
) -> Result<RunningJob> {
    let failure = Arc::new(Failure {
        first: Mutex::new(None),
        cancel: cancel.clone(),
        wakers: tasks.iter().map(|t| t.waker.clone()).collect(),
    });
    if let Some(c) = checkpoints {
        c.hub.bind_wakers(failure.wakers.clone());
    }
    let counters: Vec<(Arc<SubtaskMetrics>, Option<SubtaskPlace>)> = tasks
        .iter()
        .map(|t| (t.metrics.clone(), t.vertex))
        .collect();
    let gate = Arc::new(StartGate::default());
    let mut threads = Vec::with_capacity(tasks.len());
    for task in tasks {
        let rt = TaskRuntime {
            cancel: cancel.clone(),
            buffer_timeout: cfg.buffer_timeout,
            metrics: task.metrics,
            task: task.global,
            max_parallelism: job.max_parallelism,
            checkpoints: checkpoints.map(|c| c.hub.clone()),
            time: task.time,
        };
        let failure_t = failure.clone();
        let gate_t = gate.clone();
        let task_name = task.name.clone();
        let body = task.body;
        let spawned = std::thread::Builder::new()
            .name(thread_name(&task.name))
            .spawn(move || {
                gate_t.wait();
                let started = std::time::Instant::now();
                let result = catch_unwind(AssertUnwindSafe(|| body.run(&rt)));
                tracing::debug!(task = %task_name, elapsed = ?started.elapsed(), "task ended");
                match result {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => failure_t.fail(e),
                    Err(p) => failure_t.fail(internal!(
                        "task panicked outside an operator: {}",
                        panic_message(&*p)
                    )),
                }
            });
        match spawned {
            Ok(handle) => {
                task.waker.bind(handle.thread().clone());
                threads.push(handle);
            }
            Err(e) => {
                // The threads already started see the cancellation and exit at once.
                failure.fail(internal!("cannot start a task thread: {e}"));
                gate.release();
                for t in threads {
                    let _ = t.join();
                }
                return Err(internal!("cannot start a task thread: {e}"));
            }
        }
    }
    gate.release();
    Ok(RunningJob {
        threads,
        failure,
        counters: JobCounters {
            counters: Arc::new(counters),
            vertex_names: Arc::new(
                job.vertices
                    .iter()
                    .map(|v| (v.name.clone(), v.parallelism))
                    .collect(),
            ),
        },
    })
}

/// Holds the task threads until their wakers are bound.
#[derive(Default)]
struct StartGate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl StartGate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn release(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.opened.notify_all();
    }
}

fn thread_name(subtask: &str) -> String {
    // Linux shows only 15 bytes of a thread name; keep the start, which names the head.
    subtask.chars().take(60).collect()
}

/// Where a subtask sits in the execution graph.
struct TaskPlace {
    vertex: usize,
    /// Index among the vertex's subtasks.
    index: usize,
    /// Index among all subtasks of the job.
    global: usize,
}

/// Builds the task of each subtask from its chain, taking the channel ends allocated for it.
struct TaskBuilder<'a> {
    job: &'a JobGraph,
    cfg: &'a RuntimeConfig,
    cancel: &'a CancelToken,
    progress: &'a Arc<JobProgress>,
    checkpoints: Option<&'a CheckpointSetup>,
    /// Sending ends by (producer subtask, job edge).
    senders: HashMap<(usize, usize), Vec<ErasedSender>>,
    /// Receiving ends by (consumer subtask, input port).
    receivers: HashMap<(usize, usize), Vec<ErasedReceiver>>,
}

impl TaskBuilder<'_> {
    /// Asks `alloc` for the ends this process holds of every channel, grouped by (producer
    /// subtask, job edge) and (consumer subtask, input port).
    fn allocate_channels(
        &mut self,
        exec: &ExecutionGraph,
        alloc: &mut ChannelAllocator<'_>,
    ) -> Result<()> {
        let job = self.job;
        for (id, ch) in exec.channels.iter().enumerate() {
            let edge = &job.edges[ch.job_edge];
            let stream_edge = &job.stream.edges[edge.stream_edge];
            let spec = ChannelSpec {
                id,
                producer: ch.producer,
                consumer: ch.consumer,
                network_task: stream_edge.network_task,
            };
            let ops = &job.stream.nodes[stream_edge.source].out_type;
            let (push, pull) = ops.allocate(alloc, spec)?;
            if let Some(push) = push {
                self.senders
                    .entry((ch.producer, ch.job_edge))
                    .or_default()
                    .push(push);
            }
            if let Some(pull) = pull {
                self.receivers
                    .entry((ch.consumer, edge.input))
                    .or_default()
                    .push(pull);
            }
        }
        Ok(())
    }

    /// The task of one subtask: its chain built from the tail to the head.
    fn build(
        &mut self,
        place: TaskPlace,
        metrics: &Arc<SubtaskMetrics>,
        time: &ProcessingTimeService,
    ) -> Result<Box<dyn TaskBody>> {
        let TaskBuilder {
            job,
            cfg,
            cancel,
            progress,
            checkpoints,
            senders,
            receivers,
        } = self;
        let (job, cfg, checkpoints, cancel, progress) =
            (*job, *cfg, *checkpoints, *cancel, *progress);
        let TaskPlace {
            vertex,
            index,
            global,
        } = place;
        let restored = checkpoints.and_then(|c| c.restored.as_deref());
        let restored_of = |node: usize| restored.map_or(Pieces::NONE, |r| r.pieces(node));
        let stream = &job.stream;
        let chain = &job.vertices[vertex].nodes;
        let writer_ctx = WriterContext {
            batch_size: cfg.batch_size,
            max_parallelism: job.max_parallelism,
            cancel: cancel.clone(),
            metrics: metrics.clone(),
        };
        // Inputs of the chained nodes built so far (tail first).
        let mut built: HashMap<usize, ErasedOutput> = HashMap::new();
        for &node_id in chain.iter().rev() {
            let node = &stream.nodes[node_id];
            let ctx = OperatorContext {
                name: node.name.clone(),
                subtask: index,
                parallelism: job.node_parallelism[node_id],
                max_parallelism: job.max_parallelism,
                mode: job.mode,
                batch_size: cfg.batch_size,
                node: node_id,
                checkpointing: checkpoints.is_some(),
                time: time.clone(),
                auto_watermark_interval: cfg.auto_watermark_interval,
                metrics: metrics.clone(),
                disk_tier: DiskTier::process(),
            };
            let mut outs = Vec::new();
            for (edge_idx, e) in stream.outputs_of(node_id) {
                if job.vertex_of[e.target] == vertex {
                    let input = built
                        .remove(&e.target)
                        .ok_or_else(|| internal!("chained node {} not built", e.target))?;
                    outs.push(input);
                } else {
                    let job_edge = job
                        .edges
                        .iter()
                        .position(|je| je.stream_edge == edge_idx)
                        .ok_or_else(|| internal!("edge {edge_idx} has no job edge"))?;
                    let chans = senders.remove(&(global, job_edge)).unwrap_or_default();
                    outs.push(node.out_type.writer(chans, &e.partitioning, &writer_ctx)?);
                }
            }
            let out = node.out_type.fan_out(outs)?;
            let is_head = node_id == chain[0];
            match (&node.factory, is_head) {
                (NodeFactory::OneInput(f), false) => {
                    built.insert(node_id, f.create_link(&ctx, out, restored_of(node_id))?);
                }
                (NodeFactory::OneInput(f), true) => {
                    let link = f.create_link(&ctx, out, restored_of(node_id))?;
                    let (_, first_input) = stream
                        .inputs_of(node_id)
                        .next()
                        .ok_or_else(|| internal!("operator without input"))?;
                    let in_type = &stream.nodes[first_input.source].out_type;
                    let rx = receivers.remove(&(global, 0)).unwrap_or_default();
                    return in_type.input_task(rx, link);
                }
                (NodeFactory::Source(f), true) => {
                    let source_ctx = SourceContext {
                        subtask: index,
                        parallelism: ctx.parallelism,
                        progress: progress.clone(),
                        metrics: ctx.metrics.clone(),
                    };
                    return f.create_task(&ctx, &source_ctx, out, restored);
                }
                (NodeFactory::TwoInput(f), true) => {
                    let rx0 = receivers.remove(&(global, 0)).unwrap_or_default();
                    let rx1 = receivers.remove(&(global, 1)).unwrap_or_default();
                    return f.create_task(&ctx, out, rx0, rx1, restored_of(node_id));
                }
                (_, false) => {
                    return Err(internal!(
                        "node '{}' cannot be fused into a chain",
                        node.name
                    ));
                }
            }
        }
        Err(internal!("chain {vertex} has no head"))
    }
}
