//! The control-plane protocol: messages between clients, the JobManager, TaskManagers and
//! workers, and the framing that carries them.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of a
//! [postcard](https://docs.rs/postcard)-encoded [`Message`]. Every connection starts with a
//! [`Message::Hello`] carrying [`PROTOCOL_VERSION`]; a peer speaking another version is refused
//! with an error naming both versions. A frame longer than [`MAX_FRAME`], a truncated frame or
//! bytes that do not decode are errors of that connection only: it is closed and logged, and
//! the process goes on serving everyone else.

use serde::{Deserialize, Serialize};

use crate::scheduler::parallelism::VertexRequest;
use crate::scheduler::rfts::NodeSample;
use crate::types::metrics::VertexMetrics;

/// Version of this protocol; peers must match exactly.
pub const PROTOCOL_VERSION: u32 = 5;

/// Largest frame accepted (artifacts travel in one frame).
pub const MAX_FRAME: usize = 512 << 20;

/// Identifier of a submitted job.
pub type JobId = String;

/// Records of `collect()` sinks: (sink node id, postcard-encoded `Vec<T>`).
pub type Collected = Vec<(usize, Vec<u8>)>;

/// Who opens a connection to the JobManager.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Role {
    /// A TaskManager offering slots.
    TaskManager(TaskManagerInfo),
    /// A client submitting or querying jobs.
    Client,
    /// A worker process of a job, started by a TaskManager.
    Worker {
        /// The job.
        job: JobId,
        /// The TaskManager that started it.
        task_manager: String,
        /// The job attempt it belongs to (restarts count up from 0).
        attempt: u32,
    },
}

/// What a TaskManager offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskManagerInfo {
    /// Unique id (host and process id).
    pub id: String,
    /// Task slots (default: CPU cores).
    pub slots: usize,
    /// CPU cores of the host.
    pub cores: usize,
    /// Total memory of the host, bytes.
    pub memory_bytes: u64,
    /// Address on which its workers accept data connections (host or IP).
    pub data_host: String,
    /// Further data networks: (name, this TaskManager's address on it).
    pub data_networks: Vec<(String, String)>,
    /// Workers it runs, as (job, attempt): a TaskManager registering with a new leader
    /// reports those it kept running, and the leader keeps or cancels them.
    pub running: Vec<(JobId, u32)>,
}

/// The latest monitor sample, sent with every heartbeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Number of the sample: a new one every monitor interval, repeated between; 0 before
    /// the first sample.
    pub seq: u64,
    /// Cores, CPU and memory utilisation, total memory.
    pub sample: NodeSample,
}

impl Default for Resources {
    fn default() -> Self {
        Resources {
            seq: 0,
            sample: NodeSample {
                cores: 1.0,
                cpu: 0.0,
                memory: 0.0,
                total_memory: 1.0,
            },
        }
    }
}

/// What a job needs and where its code is; sent by a client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmitRequest {
    /// The job's name.
    pub name: String,
    /// sha256 of the job binary (uploaded before).
    pub artifact: String,
    /// Arguments the binary was started with (the worker is started with the same).
    pub args: Vec<String>,
    /// Fingerprint of the job graph the client built.
    pub fingerprint: String,
    /// What every job vertex asks for (explicit parallelism, bounds), in vertex order; the
    /// JobManager decides the parallelism.
    pub vertices: Vec<VertexRequest>,
    /// The job's total parallelism; the client and the workers translate the graph with it.
    pub default_parallelism: usize,
    /// True for a job with unbounded sources.
    pub streaming: bool,
    /// Data network the job's shuffles use (a name the TaskManagers declare), if not the
    /// default one.
    pub data_network: Option<String>,
    /// Wait in a TaskManager's queue when the cluster has no free slots, instead of failing.
    #[serde(default)]
    pub queue: bool,
    /// Among waiting jobs, higher runs (and moves) first.
    #[serde(default)]
    pub priority: i32,
    /// Environment variables the workers get (besides the ones the TaskManager sets).
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The SQL statement the job runs (a `hummer sql` job), for the dashboard.
    #[serde(default)]
    pub sql: Option<String>,
    /// Checkpoints and restarts, if the job takes checkpoints or may restart.
    #[serde(default)]
    pub recovery: Option<RecoveryRequest>,
    /// The job's chains and edges, for monitoring.
    #[serde(default)]
    pub topology: crate::types::JobTopology,
}

/// How a submitted job takes checkpoints and recovers from failures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRequest {
    /// Checkpoint settings (`None`: the job only restarts from its beginning). The directory
    /// is where the JobManager keeps a directory per job; it must be reachable by the
    /// JobManager and every worker under that path (shared storage, as Flink requires).
    pub checkpoints: Option<crate::checkpoint::coordinator::CheckpointConfig>,
    /// What to do when a worker fails or a TaskManager is lost.
    pub restart: crate::execution::restart_strategy::RestartStrategy,
    /// A checkpoint or savepoint to start from.
    pub restore_from: Option<std::path::PathBuf>,
    /// Which vertices are headed by a source, in vertex order.
    pub source_vertices: Vec<bool>,
    /// The job's operators, as every checkpoint records them.
    pub graph: crate::checkpoint::coordinator::GraphInfo,
}

impl RecoveryRequest {
    /// The checkpoint settings of submitted job `job`: its checkpoints go to a directory of
    /// its own under the one it asked for (the JobManager's coordinator and the workers that
    /// write its state files both go by this).
    pub fn checkpoints_of(
        &self,
        job: &JobId,
    ) -> Option<crate::checkpoint::coordinator::CheckpointConfig> {
        self.checkpoints.clone().map(|mut c| {
            c.dir = c.dir.join(job);
            c
        })
    }
}

/// Where a worker runs what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeploySpec {
    /// The job.
    pub job: JobId,
    /// The submission.
    pub request: SubmitRequest,
    /// The TaskManager of this worker.
    pub task_manager: String,
    /// JobManager RPC address the worker reports to.
    pub jobmanager: String,
    /// Address the worker binds its data listener and its outgoing data connections to (the
    /// TaskManager's address on the job's data network).
    pub data_host: String,
    /// Parallelism of every vertex, as the JobManager decided it.
    pub vertex_parallelism: Vec<usize>,
    /// TaskManager id of every subtask of the execution graph (global subtask order).
    pub placement: Vec<String>,
    /// The job attempt (0, then one more per restart).
    pub attempt: u32,
    /// The checkpoint to restore (a `chk-<id>` directory), if any.
    pub restore: Option<std::path::PathBuf>,
    /// The fencing token of the JobManager that deployed it (0 without high availability):
    /// a TaskManager refuses a deploy from a leader older than one it has seen.
    pub leader_token: u64,
}

/// A worker's data-plane address, as announced to its peers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerAddress {
    /// TaskManager that runs the worker.
    pub task_manager: String,
    /// `host:port` of the worker's data listener.
    pub address: String,
}

/// Life cycle of a job: the job controller's status, the one enum from the controller
/// through this protocol and REST to the dashboard.
pub use crate::execution::controller::JobStatus;

/// A job as listed by `hummer list` and REST.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    /// Id.
    pub id: JobId,
    /// Name.
    pub name: String,
    /// State.
    pub state: JobStatus,
    /// Milliseconds since the job was submitted (or its total run time once ended).
    pub duration_ms: u64,
    /// Why it failed, if it did.
    pub error: Option<crate::error::ErrorReport>,
    /// Records in and out per vertex, summed over the workers that reported.
    pub vertices: Vec<VertexMetrics>,
    /// Restarts after failures.
    pub restarts: u32,
    /// Checkpoint history, oldest first.
    pub checkpoints: Vec<crate::checkpoint::coordinator::CheckpointStats>,
}

/// Every message of the protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// First message of every connection.
    Hello {
        /// The sender's [`PROTOCOL_VERSION`].
        version: u32,
        /// Who the sender is.
        role: Role,
    },
    /// The JobManager accepted the hello.
    Welcome,
    /// The JobManager accepted a TaskManager's registration; its fencing token (0 without
    /// high availability).
    Registered(u64),
    /// A request failed; the text says why.
    Error(String),
    /// Generic success.
    Ok,

    // TaskManager -> JobManager
    /// Liveness and resources.
    Heartbeat(Resources),
    /// A worker process ended (its exit code, `None` if killed by a signal).
    WorkerExited {
        /// Job of the worker.
        job: JobId,
        /// Its attempt.
        attempt: u32,
        /// Exit code.
        code: Option<i32>,
        /// Last lines the worker wrote to stderr.
        stderr_tail: String,
    },
    /// Asks for an artifact's bytes.
    FetchArtifact(String),

    // JobManager -> TaskManager
    /// Start a worker.
    Deploy(DeploySpec),
    /// An artifact's bytes (answer to `FetchArtifact`).
    Artifact {
        /// sha256, hex.
        sha256: String,
        /// The executable.
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// Stop the workers of a job.
    CancelJob(JobId),

    // Client -> JobManager
    /// Does the JobManager have this artifact? Answered with `Ok` or `Error`.
    HasArtifact(String),
    /// Stores an artifact.
    UploadArtifact {
        /// sha256 the client computed, hex.
        sha256: String,
        /// The executable.
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// Submits a job; answered with `Submitted` or `Error`.
    Submit(SubmitRequest),
    /// The job was accepted under this id.
    Submitted(JobId),
    /// Answers with `JobEnded` when the job has ended.
    WaitJob(JobId),
    /// A job ended, with the records of its `collect()` sinks: (sink node id, postcard-encoded
    /// `Vec<T>`) per worker.
    JobEnded(JobSummary, Collected),
    /// Lists jobs; answered with `Jobs`.
    ListJobs,
    /// All jobs.
    Jobs(Vec<JobSummary>),
    /// One job's status; answered with `Jobs` of one or `Error`.
    JobStatus(JobId),
    /// Cancels a job; answered with `Ok` or `Error`.
    Cancel(JobId),

    // Worker <-> JobManager
    /// The worker listens for data connections on this port.
    WorkerReady {
        /// Port of its data listener.
        data_port: u16,
    },
    /// Every worker of the job is ready: the data addresses of all of them.
    Start(Vec<PeerAddress>),
    /// Counters of the worker's subtasks so far (sent every second while it runs).
    WorkerProgress(Vec<VertexMetrics>),
    /// The worker's subtasks ended normally.
    WorkerFinished {
        /// Its counters.
        vertices: Vec<VertexMetrics>,
        /// Records of its `collect()` sinks.
        collected: Collected,
    },
    /// A report of the worker's tasks to the checkpoint coordinator.
    Checkpoint {
        /// The worker's attempt (reports of an older attempt are dropped).
        attempt: u32,
        /// The report.
        event: crate::checkpoint::hub::HubEvent,
    },
    /// JobManager to worker: inject barrier `id` at the sources (`last`: the final one).
    TriggerCheckpoint {
        /// Checkpoint id.
        id: u64,
        /// The final checkpoint.
        last: bool,
    },
    /// JobManager to worker: checkpoint `id` completed; sinks commit.
    CheckpointComplete(u64),
    /// Client to JobManager: take a savepoint of a running job into `dir` (the JobManager's
    /// savepoint directory if `None`); with `stop`, cancel the job once it is taken. Answered
    /// with `Savepoint` or `Error`.
    TriggerSavepoint {
        /// The job.
        job: JobId,
        /// Where to put it.
        dir: Option<std::path::PathBuf>,
        /// Stop the job after the savepoint.
        stop: bool,
    },
    /// The savepoint's directory.
    Savepoint(std::path::PathBuf),
    /// A subtask of the worker failed.
    WorkerFailed {
        /// What happened: the root cause, under `operator`'s attribution if there is one.
        error: crate::error::ErrorReport,
        /// The operator and subtask that failed, if the failure is attributed to one.
        operator: Option<(String, usize)>,
    },
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The connection failed or closed mid-frame.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// The announced length exceeds [`MAX_FRAME`].
    #[error("frame of {0} bytes exceeds the limit of {MAX_FRAME}")]
    TooLarge(usize),
    /// The peer answered in HTTP: an address of a REST or web port, not of this protocol.
    #[error(
        "the peer answers in HTTP, not in Hummer's protocol (the address of a REST port, not \
         of a JobManager's RPC port?)"
    )]
    Http,
    /// The bytes are not a message of this protocol.
    #[error("undecodable frame: {0}")]
    Decode(String),
}

/// Encodes a message as a frame.
pub fn encode(message: &Message) -> Vec<u8> {
    // Written through `io::Write`, so byte strings (artifacts of hundreds of MB) are copied as
    // slices: postcard's `Extend` flavour pushes them byte by byte, which held a JobManager
    // thread for seconds per artifact in an unoptimised build. Writing into a Vec cannot fail.
    let mut frame = postcard::to_io(message, vec![0u8; 4]).unwrap_or_else(|_| vec![0u8; 4]);
    let len = (frame.len() - 4) as u32;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    frame
}

/// Decodes a frame body (the bytes after the length).
pub fn decode(body: &[u8]) -> Result<Message, FrameError> {
    postcard::from_bytes(body).map_err(|e| FrameError::Decode(e.to_string()))
}

/// Checks a frame length prefix.
pub fn frame_len(prefix: [u8; 4]) -> Result<usize, FrameError> {
    if &prefix == b"HTTP" {
        return Err(FrameError::Http);
    }
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    Ok(len)
}

/// Blocking frame I/O, for the workers' threads.
pub mod sync_io {
    use std::io::{Read, Write};

    use super::{FrameError, Message, decode, encode, frame_len};

    /// Reads one message.
    pub fn read(stream: &mut impl Read) -> Result<Message, FrameError> {
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix)?;
        let mut body = vec![0u8; frame_len(prefix)?];
        stream.read_exact(&mut body)?;
        decode(&body)
    }

    /// Writes one message.
    pub fn write(stream: &mut impl Write, message: &Message) -> Result<(), FrameError> {
        stream.write_all(&encode(message))?;
        stream.flush()?;
        Ok(())
    }
}

/// Async frame I/O, for the JobManager and TaskManagers.
pub mod async_io {
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    use super::{FrameError, Message, decode, encode, frame_len};

    /// Reads one message.
    pub async fn read(stream: &mut (impl AsyncRead + Unpin)) -> Result<Message, FrameError> {
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).await?;
        let mut body = vec![0u8; frame_len(prefix)?];
        stream.read_exact(&mut body).await?;
        decode(&body)
    }

    /// Writes one message.
    pub async fn write(
        stream: &mut (impl AsyncWrite + Unpin),
        message: &Message,
    ) -> Result<(), FrameError> {
        stream.write_all(&encode(message)).await?;
        stream.flush().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An HTTP answer (a REST port given as the JobManager's address) is named as such, not
    /// read as a frame of 1.2 GB.
    #[test]
    fn an_http_answer_is_named() {
        let err = sync_io::read(&mut &b"HTTP/1.1 400 Bad Request\r\n\r\n"[..]).unwrap_err();
        assert!(matches!(err, FrameError::Http), "{err}");
        assert!(err.to_string().contains("REST port"), "{err}");
    }
    use proptest::prelude::*;

    fn round_trip(m: &Message) -> Message {
        let frame = encode(m);
        let mut cursor = std::io::Cursor::new(frame);
        sync_io::read(&mut cursor).unwrap()
    }

    #[test]
    fn messages_round_trip() {
        let messages = vec![
            Message::Hello {
                version: PROTOCOL_VERSION,
                role: Role::TaskManager(TaskManagerInfo {
                    id: "tm-1".into(),
                    slots: 2,
                    cores: 2,
                    memory_bytes: 1 << 30,
                    data_host: "127.0.0.2".into(),
                    data_networks: vec![("fast".into(), "10.0.0.2".into())],
                    running: vec![],
                }),
            },
            Message::Heartbeat(Resources::default()),
            Message::UploadArtifact {
                sha256: "ab".into(),
                bytes: vec![1, 2, 3],
            },
            Message::WorkerFinished {
                vertices: vec![VertexMetrics {
                    watermarks: vec![(0, 7)],
                    late_records: vec![(0, 2)],
                    partitions: vec![(
                        1,
                        crate::types::metrics::PartitionMetrics {
                            topic: "t".into(),
                            partition: 3,
                            consumed: 10,
                            next_offset: 11,
                            end_offset: 20,
                        },
                    )],
                    name: "v".into(),
                    parallelism: 2,
                    records_in: 3,
                    records_out: 4,
                    backpressured_ns: 5,
                    subtasks: vec![crate::types::metrics::SubtaskRow {
                        subtask: 1,
                        task_manager: "tm".into(),
                        records_in: 3,
                        records_out: 4,
                        busy_ns: 6,
                        idle_ns: 7,
                        backpressured_ns: 5,
                        state_in_memory: 8,
                        state_on_disk: 9,
                        state_disk_bytes: 10,
                        state_bytes_written: 11,
                        state_disk_lookups: 12,
                        state_disk_hits: 13,
                        checkpointed_bytes: 14,
                    }],
                }],
                collected: vec![(3, vec![9, 9])],
            },
        ];
        for m in &messages {
            assert_eq!(&round_trip(m), m);
        }
    }

    proptest! {
        /// Arbitrary bytes never panic the decoder: they decode or give an error.
        #[test]
        fn garbage_frames_are_rejected_not_fatal(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut cursor = std::io::Cursor::new(bytes);
            let _ = sync_io::read(&mut cursor);
        }

        /// A valid frame cut short is an error, never a message.
        #[test]
        fn truncated_frames_are_errors(text in ".{0,64}", cut in 0usize..64) {
            let frame = encode(&Message::Error(text));
            let cut = cut.min(frame.len().saturating_sub(1));
            let mut cursor = std::io::Cursor::new(frame[..cut].to_vec());
            prop_assert!(sync_io::read(&mut cursor).is_err());
        }
    }

    #[test]
    fn oversized_length_prefix_is_refused_before_allocating() {
        let mut cursor = std::io::Cursor::new(vec![0xff, 0xff, 0xff, 0xff, 0]);
        assert!(matches!(
            sync_io::read(&mut cursor),
            Err(FrameError::TooLarge(_))
        ));
    }
}
