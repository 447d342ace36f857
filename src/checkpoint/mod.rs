//! Checkpoints: consistent snapshots of a running job, and recovery from them.
//!
//! Flink's asynchronous barrier snapshots (after Chandy-Lamport). The coordinator
//! ([`coordinator`]) injects numbered barriers at the sources; they flow with the records; a
//! task with several inputs aligns them ([`barrier_aligner`]); every task copies its state into
//! a [`task_state::TaskSnapshot`] when the barrier passes and acknowledges it; once every task
//! has, the checkpoint is written to the [`store`] and completed, and transactional sinks
//! commit. On a failure, the [`restart_strategy`] decides whether and when the job restarts from
//! the newest whole checkpoint, with its sources rewound.

pub mod barrier_aligner;
pub mod coordinator;
pub mod hub;
pub mod restart_strategy;
pub mod storage;
pub mod store;
pub mod task_state;

pub use barrier_aligner::CheckpointId;
