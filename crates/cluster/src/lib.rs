//! Cluster mode: a JobManager, TaskManagers, and job binaries shipped to workers.
//!
//! * [`protocol`]: the control-plane messages and their framing.
//! * [`jobmanager`]: accepts TaskManagers, clients and workers; keeps the cluster view; places
//!   jobs with a [`crate::scheduler::Scheduler`]; detects lost TaskManagers by heartbeat; serves
//!   REST.
//! * [`taskmanager`]: registers its slots, heartbeats, fetches job artifacts (cached by
//!   sha256) and starts them as worker processes.
//! * [`worker`]: a job binary started by a TaskManager rebuilds its graph, checks its
//!   fingerprint and runs the subtasks placed on it, with remote channels to its peers.
//! * [`ha`]: high availability of the JobManager: leader election and the job store.
//! * [`client`]: submission of the running binary as a job, and job queries.
//! * [`executor`]: the executors of a client (submit to a JobManager) and of a worker.
//!
//! The control plane is async (tokio): one task per connection with a mailbox for outgoing
//! messages. Data moves on dedicated TCP connections between workers
//! ([`crate::channels::network`]).
//!
//! Layer 8 of 12: above `execution` (the JobManager drives each job through its job controller)
//! and `scheduler`, below `api` (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_channels as channels;
use hummer_checkpoint as checkpoint;
use hummer_connectors as connectors;
use hummer_execution as execution;
use hummer_graph as graph;
use hummer_scheduler as scheduler;
use hummer_state as state;
use hummer_types::{self as types, error};

pub mod client;
pub mod executor;
pub mod ha;
pub mod jobmanager;
pub mod protocol;
pub mod taskmanager;
pub mod worker;

/// Environment variable naming the JobManager a job program submits to.
pub const JOBMANAGER_ENV: &str = "HUMMER_JOBMANAGER";

/// Environment variable holding a worker's deploy spec (JSON), set by the TaskManager.
pub const WORKER_ENV: &str = "HUMMER_WORKER";

/// Environment variables of a worker's share of its TaskManager's budget for keyed state
/// (bytes) and the directory of its disk tier, set by the TaskManager.
pub const STATE_MEMORY_ENV: &str = "HUMMER_STATE_MEMORY";
/// See [`STATE_MEMORY_ENV`].
pub const STATE_DIR_ENV: &str = "HUMMER_STATE_DIR";
