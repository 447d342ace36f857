//! The runtime: task threads, batched channels, shuffles, and the local executor.
//!
//! * [`channel`]: bounded lock-free batch queues between subtasks, parking instead of spinning.
//! * [`record_writer`]: the end of a chain: partitions records into the channels of a shuffle.
//! * [`task`]: the loop of a subtask thread (source, one-input or two-input head).
//! * [`type_ops`]: the typed glue that the type-erased graph uses to build all of the above.
//! * [`executor`]: runs an execution graph in this process, one thread per subtask.

pub mod channel;
pub mod executor;
pub(crate) mod factory;
pub mod local_job;
pub mod metrics;
pub mod record_writer;
pub(crate) mod source_splits;
pub mod task;
pub mod type_ops;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared cancellation flag of a job.
#[derive(Clone, Default, Debug)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// Requests cancellation.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once cancellation was requested.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
