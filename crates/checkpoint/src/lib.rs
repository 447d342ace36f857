//! Checkpoints: consistent snapshots of a running job, and where they are kept.
//!
//! Flink's asynchronous barrier snapshots (after Chandy-Lamport). The coordinator
//! ([`coordinator`]) injects numbered barriers at the sources through the tasks' [`hub`]; they
//! flow with the records; a task with several inputs aligns them ([`barrier_aligner`]); every
//! task copies its state into a [`crate::state::task_state::TaskSnapshot`] when the barrier
//! passes and acknowledges it; once every task has, the checkpoint is written to the
//! [`store`] (on a [`backend`]: a directory or an object store) and completed, and
//! transactional sinks commit. Which checkpoint a restarted job restores, and whether it
//! restarts at all, is the job controller's decision (`crate::execution::controller`).
//!
//! * [`coordinator`]: when to trigger a checkpoint, when one is complete, its history.
//! * [`hub`]: the tasks' side in one process (triggers, acknowledgements, completions).
//! * [`barrier_aligner`]: when a task with several inputs may take its snapshot.
//! * [`store`]: checkpoint directories: writing, completing, retention, verification.
//! * [`backend`]: the storage under a store: a local directory or an object store.
//! * [`shared`]: operator state as immutable files that tasks write and checkpoints share.
//! * [`chains`]: task files of incremental checkpoints, read with the deltas they build on.
//! * `direct_write` (private): large checkpoint files written past the page cache.
//!
//! Layer 3 of 12, beside `operators`: depends on `types` and `state` only; below everything
//! that runs tasks (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_state as state;
use hummer_types::{self as types, error};

pub mod backend;
pub mod barrier_aligner;
pub mod chains;
pub mod coordinator;
mod direct_write;
pub mod hub;
pub mod shared;
pub mod store;
