//! Worker mode: a job binary started by a TaskManager.
//!
//! The TaskManager starts the job's binary with the arguments the client was started with and
//! the deploy spec in [`crate::WORKER_ENV`]. The program runs its `main` as usual, so
//! it builds the same graph; at `execute()` the environment chooses the
//! [`crate::executor::WorkerExecutor`], which comes here instead of running locally: the graph's fingerprint is checked against the submitted one,
//! the data listener is bound, the JobManager is told the data port and answers with every
//! peer's address, and the subtasks placed on this TaskManager run with remote channels to the
//! others. The outcome is reported to the JobManager and the process exits.
//!
//! A job that takes checkpoints gets a [`CheckpointHub`] here: the JobManager's triggers and
//! completions are passed to it, its tasks' acknowledgements are forwarded to the JobManager,
//! and the attempt's restore point (a checkpoint directory on shared storage) is loaded before
//! any task starts.

use std::net::TcpStream;

use crate::channels::secure::{Security, Stream};
use std::sync::{Arc, Mutex};

use crate::checkpoint::hub::CheckpointHub;
use crate::checkpoint::shared::StateUploader;

use crate::channels::Placement;
use crate::channels::network::DataListener;
use crate::connectors::collect::CollectSlot;
use crate::error::{HummerError, Result, internal};
use crate::execution::task_threads::{self, CheckpointSetup, RuntimeConfig};
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::JobGraph;
use crate::protocol::{DeploySpec, MAX_FRAME, Message, PROTOCOL_VERSION, Role, sync_io};
use crate::types::CancelToken;
use crate::types::NodeId;
use crate::types::metrics::JobProgress;

/// The deploy spec of this process, if it was started as a worker.
pub fn spec_from_env() -> Option<Result<DeploySpec>> {
    let text = std::env::var(crate::WORKER_ENV).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| {
        HummerError::Config(format!(
            "{} does not hold a deploy spec: {e}",
            crate::WORKER_ENV
        ))
    }))
}

/// Makes the process's disk tier of the budget its TaskManager gave it (see
/// [`crate::STATE_MEMORY_ENV`]), if it gave one.
fn use_state_budget() -> Result<()> {
    let Ok(bytes) = std::env::var(crate::STATE_MEMORY_ENV) else {
        return Ok(());
    };
    let bytes: u64 = bytes.parse().map_err(|e| {
        HummerError::Config(format!(
            "{} must be a number of bytes, got '{bytes}': {e}",
            crate::STATE_MEMORY_ENV
        ))
    })?;
    let dir = std::env::var_os(crate::STATE_DIR_ENV).map(std::path::PathBuf::from);
    crate::state::disk_tier::DiskTier::ensure_process(
        crate::state::disk_tier::Budget::Bytes(bytes),
        dir.as_deref(),
    )
}

/// The fingerprint of a job graph: sha256 of its JSON plan.
pub fn fingerprint(plan_json: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(plan_json.as_bytes()))
}

/// What the worker needs from the environment.
pub(crate) struct WorkerJob<'a> {
    /// The graph as translated with the job's total parallelism (its fingerprint is checked).
    pub(crate) job: &'a JobGraph,
    pub(crate) plan_json: &'a str,
    pub(crate) runtime: RuntimeConfig,
    pub(crate) collect_slots: &'a [(NodeId, Arc<dyn CollectSlot + Send + Sync>)],
}

/// Runs this worker's subtasks and reports to the JobManager; never returns.
pub(crate) fn run(spec: DeploySpec, job: WorkerJob<'_>) -> ! {
    if let Err(e) = use_state_budget() {
        eprintln!("worker of job {}: {e}", spec.job);
        std::process::exit(2);
    }
    let mut jm = match connect(&spec) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("worker of job {}: {e}", spec.job);
            std::process::exit(2);
        }
    };
    let writer = match jm.try_clone() {
        Ok(w) => Arc::new(Mutex::new(w)),
        Err(e) => {
            eprintln!("worker of job {}: {e}", spec.job);
            std::process::exit(2);
        }
    };
    let outcome = run_subtasks(&spec, &job, &mut jm, &writer);
    let report = match &outcome {
        Ok(message) => message.clone(),
        Err(e) => Message::WorkerFailed {
            error: e.root_cause().report(),
            operator: e
                .failing_operator()
                .map(|(operator, subtask)| (operator.to_string(), subtask)),
        },
    };
    let sent = send(&writer, &report);
    match (outcome, sent) {
        (Ok(_), Ok(())) => std::process::exit(0),
        (Err(e), _) => {
            eprintln!("worker of job {} failed: {e}", spec.job);
            std::process::exit(1);
        }
        (Ok(_), Err(e)) => {
            eprintln!(
                "worker of job {}: cannot report to the JobManager: {e}",
                spec.job
            );
            std::process::exit(1);
        }
    }
}

fn connect(spec: &DeploySpec) -> Result<Stream> {
    let net = |source| HummerError::Network {
        endpoint: spec.jobmanager.clone(),
        source,
    };
    let tcp = TcpStream::connect(&spec.jobmanager).map_err(net)?;
    tcp.set_nodelay(true).map_err(net)?;
    let mut jm = Security::of_process()?.connect(tcp).map_err(net)?;
    let hello = Message::Hello {
        version: PROTOCOL_VERSION,
        role: Role::Worker {
            job: spec.job.clone(),
            task_manager: spec.task_manager.clone(),
            attempt: spec.attempt,
        },
    };
    exchange(&mut jm, &hello, |m| matches!(m, Message::Welcome))?;
    Ok(jm)
}

fn exchange(
    jm: &mut Stream,
    message: &Message,
    expect: impl Fn(&Message) -> bool,
) -> Result<Message> {
    let err = |e: crate::protocol::FrameError| HummerError::Cluster(e.to_string());
    sync_io::write(jm, message).map_err(err)?;
    match sync_io::read(jm).map_err(err)? {
        m if expect(&m) => Ok(m),
        Message::Error(e) => Err(HummerError::Cluster(e)),
        other => Err(HummerError::Cluster(format!("unexpected {other:?}"))),
    }
}

/// Writes one message to the JobManager; the connection is shared by the worker's threads,
/// so that their frames never interleave.
fn send(
    writer: &Mutex<Stream>,
    message: &Message,
) -> std::result::Result<(), crate::protocol::FrameError> {
    let mut stream = writer.lock().unwrap_or_else(|p| p.into_inner());
    sync_io::write(&mut *stream, message)
}

/// The message that carries a task's checkpoint report to the JobManager. A snapshot too
/// large for one frame (`limit` bytes) is declined with the reason instead: sent, the frame
/// would be refused and the worker's connection closed, failing the job at every checkpoint.
fn checkpoint_report(
    attempt: u32,
    event: crate::checkpoint::hub::HubEvent,
    limit: usize,
) -> Message {
    use crate::checkpoint::hub::HubEvent;
    // Operator state (references, once written to files) and source positions are nearly
    // all of a report: only a large one is measured exactly.
    let state_bytes: usize = match &event {
        HubEvent::Ack(ack) => {
            let positions = ack.snapshot.sources.iter().flat_map(|(_, splits)| splits);
            ack.snapshot
                .operators
                .iter()
                .map(|(_, b)| b.len())
                .sum::<usize>()
                + positions.map(|s| s.position.len()).sum::<usize>()
        }
        _ => 0,
    };
    let message = Message::Checkpoint { attempt, event };
    if state_bytes < limit / 2 {
        return message;
    }
    let size = postcard::experimental::serialized_size(&message).unwrap_or(usize::MAX);
    if size <= limit {
        return message;
    }
    let Message::Checkpoint {
        event: HubEvent::Ack(ack),
        ..
    } = message
    else {
        return message;
    };
    Message::Checkpoint {
        attempt,
        event: HubEvent::Decline {
            task: ack.task,
            checkpoint: ack.snapshot.checkpoint,
            reason: Some(format!(
                "its snapshot is {} MiB and a worker sends at most {} MiB per task to the \
                 JobManager",
                size >> 20,
                limit >> 20
            )),
        },
    }
}

/// Forwards the tasks' checkpoint reports to the JobManager, each acknowledged snapshot's
/// state first written to the checkpoint storage, so that the JobManager gets its references
/// only (a snapshot that cannot be written declines the checkpoint, naming why).
fn forward_checkpoint_reports(
    writer: Arc<Mutex<Stream>>,
    reports: std::sync::mpsc::Receiver<crate::checkpoint::hub::HubEvent>,
    uploader: StateUploader,
    attempt: u32,
) -> Result<()> {
    use crate::checkpoint::hub::HubEvent;
    std::thread::Builder::new()
        .name("checkpoint-reports".into())
        .spawn(move || {
            for mut event in reports {
                if let HubEvent::Ack(ack) = &mut event
                    && let Err(e) = uploader.store(ack)
                {
                    event = HubEvent::Decline {
                        task: ack.task,
                        checkpoint: ack.snapshot.checkpoint,
                        reason: Some(format!("cannot write its state: {e}")),
                    };
                }
                let report = checkpoint_report(attempt, event, MAX_FRAME);
                if send(&writer, &report).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| internal!("cannot forward checkpoint reports: {e}"))?;
    Ok(())
}

/// Sends the worker's counters to the JobManager every second while it runs.
struct ProgressReporter {
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl ProgressReporter {
    fn stop(self) {
        let _ = self.done.send(());
        let _ = self.thread.join();
    }
}

fn report_progress(
    writer: Arc<Mutex<Stream>>,
    counters: crate::execution::task_threads::JobCounters,
) -> Result<ProgressReporter> {
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("progress-report".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stop.recv_timeout(std::time::Duration::from_secs(1))
            {
                let _ = send(&writer, &Message::WorkerProgress(counters.snapshot()));
            }
        })
        .map_err(|e| internal!("cannot report progress: {e}"))?;
    Ok(ProgressReporter { done, thread })
}

/// Ends this process when the JobManager cancels the job or goes away: a worker never
/// outlives its job, even if its TaskManager was killed. Passes checkpoint triggers and
/// completions to the tasks' hub.
fn watch_jobmanager(jm: &Stream, job: &str, hub: Option<Arc<CheckpointHub>>) -> Result<()> {
    let mut reader = jm
        .try_clone()
        .map_err(|e| internal!("cannot watch the JobManager: {e}"))?;
    let job = job.to_string();
    std::thread::Builder::new()
        .name("jobmanager-watch".into())
        .spawn(move || {
            loop {
                match sync_io::read(&mut reader) {
                    Ok(Message::CancelJob(_)) => {
                        eprintln!("worker of job {job}: cancelled by the JobManager");
                        std::process::exit(3);
                    }
                    Ok(Message::TriggerCheckpoint { id, last }) => {
                        if let Some(hub) = &hub {
                            hub.trigger(id, last);
                        }
                    }
                    Ok(Message::CheckpointComplete(id)) => {
                        if let Some(hub) = &hub {
                            hub.complete(id);
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("worker of job {job}: lost the JobManager: {e}");
                        std::process::exit(3);
                    }
                }
            }
        })
        .map_err(|e| internal!("cannot watch the JobManager: {e}"))?;
    Ok(())
}

/// The hub and restored state of a worker whose job takes checkpoints.
fn checkpoint_setup(
    spec: &DeploySpec,
    graph: &JobGraph,
    writer: &Arc<Mutex<Stream>>,
) -> Result<Option<CheckpointSetup>> {
    let Some(recovery) = &spec.request.recovery else {
        return Ok(None);
    };
    if recovery.checkpoints.is_none() {
        return Ok(None);
    }
    let restored = match &spec.restore {
        Some(path) => {
            let checkpoint = crate::checkpoint::store::find_checkpoint(path)?;
            let restored =
                crate::checkpoint::coordinator::load_for(&checkpoint, &graph.graph_info())?;
            Some(Arc::new(restored))
        }
        None => None,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let hub = CheckpointHub::new(tx, restored.as_ref().map_or(0, |r| r.checkpoint));
    let uploader = match recovery.checkpoints_of(&spec.job) {
        Some(config) => StateUploader::open(&config.dir)?,
        None => return Ok(None),
    };
    forward_checkpoint_reports(writer.clone(), rx, uploader, spec.attempt)?;
    Ok(Some(CheckpointSetup { hub, restored }))
}

fn run_subtasks(
    spec: &DeploySpec,
    job: &WorkerJob<'_>,
    jm: &mut Stream,
    writer: &Arc<Mutex<Stream>>,
) -> Result<Message> {
    let built = fingerprint(job.plan_json);
    if built != spec.request.fingerprint {
        return Err(HummerError::InvalidGraph(format!(
            "job graph fingerprint mismatch: this worker built {built}, the client submitted {}; \
             the binary or its arguments differ from the submitted job",
            spec.request.fingerprint
        )));
    }
    // The JobManager chose the parallelism of every vertex.
    let graph = job
        .job
        .clone()
        .with_vertex_parallelism(&spec.vertex_parallelism)?;
    let exec = ExecutionGraph::from_job_graph(&graph);
    let checkpoints = checkpoint_setup(spec, &graph, writer)?;
    if exec.subtasks.len() != spec.placement.len() {
        return Err(HummerError::InvalidGraph(format!(
            "the placement covers {} subtasks, the graph has {}",
            spec.placement.len(),
            exec.subtasks.len()
        )));
    }
    let bind_host = spec.data_host.clone();
    let listener = DataListener::bind(&bind_host, &spec.job, CancelToken::default())?;
    let port = listener.port();
    let peers = match exchange(jm, &Message::WorkerReady { data_port: port }, |m| {
        matches!(m, Message::Start(_))
    })? {
        Message::Start(peers) => peers,
        _ => return Err(internal!("start")),
    };
    watch_jobmanager(jm, &spec.job, checkpoints.as_ref().map(|c| c.hub.clone()))?;
    let remote = spec
        .placement
        .iter()
        .map(|tm| {
            if *tm == spec.task_manager {
                Ok(None)
            } else {
                peers
                    .iter()
                    .find(|p| p.task_manager == *tm)
                    .map(|p| Some(p.address.clone()))
                    .ok_or_else(|| HummerError::Cluster(format!("no address for TaskManager {tm}")))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let placement = Placement {
        job: spec.job.clone(),
        remote,
        listener,
        // Connect from this TaskManager's address on the job's network, so the shuffle leaves
        // through that network's interface.
        bind: spec
            .request
            .data_network
            .as_ref()
            .map(|_| spec.data_host.clone()),
        network_task: job.runtime.network_task,
    };
    let running = task_threads::start(
        &graph,
        &exec,
        &job.runtime,
        Arc::new(JobProgress::default()),
        Some(&placement),
        checkpoints.as_ref(),
    )?;
    let reporter = report_progress(writer.clone(), running.counters())?;
    let outcome = running.wait();
    reporter.stop();
    let vertices = outcome?;
    let collected = job
        .collect_slots
        .iter()
        .map(|(node, slot)| Ok((*node, slot.take_encoded()?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Message::WorkerFinished {
        vertices,
        collected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::hub::HubEvent;
    use crate::state::task_state::{TaskAck, TaskSnapshot};

    fn ack(state_bytes: usize) -> HubEvent {
        let mut snapshot = TaskSnapshot::new(7, 128);
        snapshot.operators.push((3, vec![0u8; state_bytes]));
        HubEvent::Ack(TaskAck {
            task: 2,
            snapshot,
            alignment: std::time::Duration::ZERO,
            sync: std::time::Duration::ZERO,
            state_in_files: false,
        })
    }

    #[test]
    fn a_snapshot_too_large_for_a_frame_is_declined_with_its_size() {
        let small = checkpoint_report(1, ack(1000), 4 << 20);
        assert!(matches!(
            small,
            Message::Checkpoint {
                event: HubEvent::Ack(_),
                ..
            }
        ));
        let large = checkpoint_report(1, ack(5 << 20), 4 << 20);
        let Message::Checkpoint {
            attempt: 1,
            event:
                HubEvent::Decline {
                    task: 2,
                    checkpoint: 7,
                    reason: Some(reason),
                },
        } = large
        else {
            panic!("not a decline: {large:?}");
        };
        assert!(
            reason.contains("5 MiB") && reason.contains("at most 4 MiB"),
            "{reason}"
        );
    }
}
