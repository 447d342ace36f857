//! Execution: running a translated job, and the rules of its life cycle.
//!
//! * [`Executor`]: runs a [`JobSubmission`] and returns one [`JobHandle`], whatever runs it:
//!   [`local::LocalExecutor`] (threads in this process, supervised when the job recovers from
//!   failures), or the cluster's executors (`crate::cluster::executor`).
//! * [`task_threads`]: starts the subtasks of an execution graph in this process, one thread per
//!   subtask, with the channels a [`crate::channels::ChannelAllocator`] makes.
//! * [`controller`]: the job controller, one per job, an explicit state machine used by the
//!   local supervised runtime and by the JobManager alike.
//! * [`recovery`]: what a job asked for (checkpoints, restart strategy, restore point) and
//!   the rule that turns it into a recovery policy.
//! * [`restart_strategy`]: whether, and after how long, a failed job restarts.
//! * [`supervised`]: a local job that takes checkpoints and restarts after failures.
//!
//! Layer 7 of 12: above `graph` and `runtime`, below `cluster` and `api` (the layers are listed
//! in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_channels as channels;
use hummer_checkpoint as checkpoint;
use hummer_connectors as connectors;
use hummer_graph as graph;
use hummer_operators as operators;
use hummer_runtime as runtime;
use hummer_state as state;
use hummer_types::{self as types, error};

pub mod controller;
pub mod local;
pub mod recovery;
pub mod restart_strategy;
pub mod supervised;
pub mod task_threads;

use std::sync::Arc;

use crate::checkpoint::coordinator::CheckpointStats;
use crate::connectors::collect::CollectSlot;
use crate::error::Result;
use crate::graph::execution_graph::ExecutionGraph;
use crate::graph::job_graph::JobGraph;
use crate::types::NodeId;
use crate::types::metrics::{JobProgress, VertexMetrics};

use recovery::RecoverySettings;
use task_threads::RuntimeConfig;

/// A `collect()` sink's records, shared by the job and the client that waits for it.
pub type SharedCollectSlot = Arc<dyn CollectSlot + Send + Sync>;

/// A translated job, ready to run.
pub struct JobSubmission {
    /// The name given to `execute`.
    pub name: String,
    /// The fused chains.
    pub job: JobGraph,
    /// The subtasks and channels.
    pub exec: ExecutionGraph,
    /// The three graphs as JSON (a cluster checks workers against its fingerprint).
    pub plan_json: String,
    /// Batch size, channel capacity, buffer timeout, network tasks.
    pub runtime: RuntimeConfig,
    /// Progress counters of the bounded inputs.
    pub progress: Arc<JobProgress>,
    /// Checkpoints, restart strategy and restore point as the program asked for them.
    pub recovery: RecoverySettings,
    /// The job's `collect()` sinks.
    pub collect_slots: Vec<(NodeId, SharedCollectSlot)>,
}

/// What a finished job reports, wherever it ran.
#[derive(Default)]
pub struct JobOutcome {
    /// Counters per job vertex (of the last attempt).
    pub vertices: Vec<VertexMetrics>,
    /// Every checkpoint of every attempt, oldest first.
    pub checkpoints: Vec<CheckpointStats>,
    /// Restarts after failures.
    pub restarts: u32,
}

/// A job started by an [`Executor`]: wait for its end, or cancel it.
pub trait JobHandle: Send {
    /// Cancels the job; `wait` then returns [`crate::error::HummerError::Cancelled`].
    fn cancel(&self);
    /// The job's id in a cluster (`None` for a local job).
    fn job_id(&self) -> Option<&str> {
        None
    }
    /// Waits for the job's end. Every task thread of a local job has exited when this
    /// returns; a cluster job's `collect()` records are in the submission's slots.
    fn wait(self: Box<Self>) -> Result<JobOutcome>;
    /// Whether the job has ended, so that `wait` returns at once; `None` where the handle
    /// cannot tell without waiting (a cluster job).
    fn is_finished(&self) -> Option<bool> {
        None
    }
    /// The live counters per vertex (records, backpressure, watermarks, late records), where
    /// the handle has them at hand: a local job without supervision. Cluster jobs report
    /// them through the JobManager's REST API.
    fn metrics(&self) -> Option<Vec<VertexMetrics>> {
        None
    }
}

/// Runs jobs somewhere: in this process, or in a cluster.
pub trait Executor {
    /// Starts the job and returns at once with its handle. Bad inputs, settings and graphs
    /// fail here, before anything runs.
    fn execute(&self, job: JobSubmission) -> Result<Box<dyn JobHandle>>;
}
