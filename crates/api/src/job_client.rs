//! What `execute_async()` returns: a handle on a started job, wherever it runs.

use std::collections::HashMap;
use std::time::Instant;

use crate::JobResult;
use crate::error::Result;
use crate::execution::{JobHandle, SharedCollectSlot};
use crate::types::{NodeId, RuntimeMode};

/// A running job: wait for its result or cancel it. Can be sent to another thread.
pub struct JobClient {
    job_name: String,
    mode: RuntimeMode,
    started: Instant,
    handle: Box<dyn JobHandle>,
    source_vertices: Vec<bool>,
    collect_slots: Vec<(NodeId, SharedCollectSlot)>,
}

impl JobClient {
    pub(crate) fn new(
        job_name: &str,
        mode: RuntimeMode,
        started: Instant,
        handle: Box<dyn JobHandle>,
        source_vertices: Vec<bool>,
        collect_slots: Vec<(NodeId, SharedCollectSlot)>,
    ) -> Self {
        JobClient {
            job_name: job_name.to_string(),
            mode,
            started,
            handle,
            source_vertices,
            collect_slots,
        }
    }

    /// Cancels the job; `wait` then returns [`crate::error::HummerError::Cancelled`].
    pub fn cancel(&self) {
        self.handle.cancel();
    }

    /// Whether the job has ended, so that [`JobClient::wait`] returns at once (`None` where
    /// it cannot be told without waiting: a cluster job).
    pub fn is_finished(&self) -> Option<bool> {
        self.handle.is_finished()
    }

    /// The job's id in the cluster (`None` for a local job).
    pub fn job_id(&self) -> Option<&str> {
        self.handle.job_id()
    }

    /// The live counters per vertex while the job runs (records, watermarks, late records),
    /// for a local job without checkpoints; `None` elsewhere (a cluster's REST API has them).
    pub fn metrics(&self) -> Option<Vec<crate::types::metrics::VertexMetrics>> {
        self.handle.metrics()
    }

    /// The mode the job runs in.
    pub fn mode(&self) -> RuntimeMode {
        self.mode
    }

    /// Waits for the job's end. Every task thread has exited when this returns.
    pub fn wait(self) -> Result<JobResult> {
        let outcome = self.handle.wait()?;
        let source_records = outcome
            .vertices
            .iter()
            .zip(&self.source_vertices)
            .filter(|(_, is_source)| **is_source)
            .map(|(v, _)| v.records_in)
            .sum();
        let collected: HashMap<_, _> = self
            .collect_slots
            .iter()
            .map(|(node, slot)| (*node, slot.take()))
            .collect();
        Ok(JobResult {
            job_name: self.job_name,
            mode: self.mode,
            duration: self.started.elapsed(),
            vertices: outcome.vertices,
            source_records,
            checkpoints: outcome.checkpoints,
            restarts: outcome.restarts,
            collected,
        })
    }
}
