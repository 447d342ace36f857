//! What `execute()` returns.

use std::any::Any;
use std::collections::HashMap;
use std::time::Duration;

use crate::connectors::collect::CollectHandle;
use crate::error::{HummerError, Result, internal};
use crate::types::NodeId;
use crate::types::RuntimeMode;
use crate::types::metrics::VertexMetrics;

/// The outcome of a finished job.
pub struct JobResult {
    /// The name given to `execute`.
    pub job_name: String,
    /// The mode the job ran in.
    pub mode: RuntimeMode,
    /// Wall time from start to the end of the last task.
    pub duration: Duration,
    /// Record counts per job vertex (chain).
    pub vertices: Vec<VertexMetrics>,
    /// Records produced by all sources (in the last attempt, after restarts).
    pub source_records: u64,
    /// The job's checkpoints, oldest first (empty without checkpoints).
    pub checkpoints: Vec<crate::checkpoint::coordinator::CheckpointStats>,
    /// Restarts after failures.
    pub restarts: u32,
    pub(crate) collected: HashMap<NodeId, Box<dyn Any + Send>>,
}

impl JobResult {
    /// Takes the records gathered by a `collect()` sink (in no particular order across
    /// subtasks; in order within one subtask).
    pub fn collected<T: 'static>(&mut self, handle: &CollectHandle<T>) -> Result<Vec<T>> {
        let records = self.collected.remove(&handle.node).ok_or_else(|| {
            HummerError::Config(
                "no collected records for this handle: taken already, or it belongs to another job"
                    .into(),
            )
        })?;
        records
            .downcast::<Vec<T>>()
            .map(|b| *b)
            .map_err(|_| internal!("collected records of another type"))
    }
}
