//! How the records of an edge are distributed over the consumer's subtasks.

use std::any::Any;
use std::sync::Arc;

/// Computes the target channel of every record of a batch (one dynamic call per batch):
/// `(records, channels, max_parallelism, targets_out)`.
pub type BatchRouter<T> = Arc<dyn Fn(&[T], usize, usize, &mut Vec<u32>) + Send + Sync>;

/// How the records of an edge are distributed over the consumer's subtasks.
#[derive(Clone)]
pub enum Partitioning {
    /// Subtask *i* feeds subtask *i* (equal parallelism; becomes `Rebalance` otherwise).
    Forward,
    /// Batches go round-robin to all consumers.
    Rebalance,
    /// Every consumer gets every record.
    Broadcast,
    /// Records go to the subtask owning their key's key group.
    Hash {
        /// A [`BatchRouter<T>`] for the edge's record type, type-erased.
        router: Arc<dyn Any + Send + Sync>,
    },
}

impl Partitioning {
    /// Name used in plans.
    pub fn name(&self) -> &'static str {
        match self {
            Partitioning::Forward => "FORWARD",
            Partitioning::Rebalance => "REBALANCE",
            Partitioning::Broadcast => "BROADCAST",
            Partitioning::Hash { .. } => "HASH",
        }
    }

    /// Whether a forward edge can stay forward between a producer of parallelism `source` and
    /// a consumer of parallelism `target` (subtask *i* feeds subtask *i*); if not, it
    /// rebalances.
    pub fn forward_possible(source: usize, target: usize) -> bool {
        source == target
    }

    /// A hash partitioning from a typed router.
    pub fn hash<T: 'static>(router: BatchRouter<T>) -> Self {
        Partitioning::Hash {
            router: Arc::new(router),
        }
    }
}

impl std::fmt::Debug for Partitioning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
