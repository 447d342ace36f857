//! Where an operator instance runs.

use std::time::Duration;

use crate::types::{ProcessingTimeService, RuntimeMode};

/// Where an operator instance runs: its name and its place among its parallel subtasks.
#[derive(Clone, Debug)]
pub struct OperatorContext {
    /// The operator's name (as in `explain()`).
    pub name: String,
    /// Zero-based index of this subtask.
    pub subtask: usize,
    /// Number of parallel subtasks of this operator.
    pub parallelism: usize,
    /// Number of key groups of the job.
    pub max_parallelism: usize,
    /// The mode the job runs in (decides when keyed aggregations emit).
    pub mode: RuntimeMode,
    /// Records per batch handed downstream.
    pub batch_size: usize,
    /// The operator's stream node id: its identity in checkpoints and savepoints.
    pub node: usize,
    /// Whether the job takes checkpoints (transactional sinks then commit per checkpoint).
    pub checkpointing: bool,
    /// The task's processing time: its clock, and where an operator asks to be called back
    /// (processing-time windows and timers, periodic watermarks).
    pub time: ProcessingTimeService,
    /// How often periodic watermarks are emitted (Flink's `autoWatermarkInterval`).
    pub auto_watermark_interval: Duration,
    /// The subtask's counters (an event-time operator counts the late records it drops).
    pub metrics: std::sync::Arc<crate::types::metrics::SubtaskMetrics>,
    /// With a budget for state: where keyed tables move their cold entries (see
    /// [`crate::state::disk_tier`]); `None`: all state stays in memory.
    pub disk_tier: Option<std::sync::Arc<crate::state::disk_tier::DiskTier>>,
}

impl OperatorContext {
    /// The key groups this subtask owns.
    pub fn key_groups(&self) -> std::ops::Range<usize> {
        crate::state::key_groups::key_groups_of_subtask(
            self.subtask,
            self.max_parallelism,
            self.parallelism,
        )
    }
}
