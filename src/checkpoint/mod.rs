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
//! Layer 4 of 15: above `types` and `state`, below everything that runs tasks (see
//! `crate::types`).

pub mod backend;
pub mod barrier_aligner;
pub mod chains;
pub mod coordinator;
mod direct_write;
pub mod hub;
pub mod store;
