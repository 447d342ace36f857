//! Checkpoints: where snapshots of a job's state are kept, and how a damaged one is found.
//!
//! Groundwork for exactly-once processing: [`store::CheckpointStore`] writes the snapshot files
//! of a checkpoint into a directory of its own, completes it atomically (its metadata, with a
//! checksum of every file, is written last and the directory renamed into place), keeps the
//! last N, and on recovery walks back from the newest to the first checkpoint that is whole.
//! [`barrier_aligner`] decides when a task with several inputs may snapshot;
//! [`restart_strategy`] decides whether a failed job is restarted from that checkpoint, and when.

pub mod barrier_aligner;
pub mod restart_strategy;
pub mod store;
