//! Placement of a job's subtasks on TaskManager slots, and of waiting jobs in queues.
//!
//! A [`Scheduler`] gets the job's vertices (with their parallelism) and the free slots of every
//! TaskManager, and returns the TaskManager of every subtask. Slots are shared between vertices
//! as in Flink: subtask *i* of every vertex goes to slot *i* of the job, so a job needs as many
//! slots as its largest vertex parallelism. A job that has to wait for slots goes where
//! [`Scheduler::queue_for`] says, and [`Scheduler::rebalance`] may move waiting jobs between
//! queues at every interval. The strategies: [`RoundRobin`] (Flink's default), [`Fair`],
//! [`Pull`] (one shared queue, dynamic assignment), [`Genetic`], and [`Rfts`] (the paper).
//!
//! Also here: [`parallelism`] (each vertex's parallelism from its bounds and the free slots)
//! and [`simulator`] (the strategies on simulated clusters).
//!
//! Layer 2 of 12, beside `image`, `state` and `channels`: depends on `types` only (the layers
//! are listed in `tests/layering.rs`); pure placement decisions, no I/O.

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_types::error;

mod fair;
pub(crate) mod genetic;
pub mod parallelism;
mod pull;
pub mod rfts;
mod round_robin;
pub mod simulator;

pub use fair::Fair;
pub use genetic::Genetic;
pub use pull::Pull;
pub use rfts::Rfts;
pub use round_robin::RoundRobin;

use crate::rfts::NodeSample;

/// A TaskManager as the queueing decisions see it.
#[derive(Clone, Debug)]
pub struct TaskManagerLoad {
    /// Its id.
    pub id: String,
    /// Its slots.
    pub slots: usize,
    /// Slots used by running jobs.
    pub used: usize,
    /// Jobs waiting in its queue: (job id, priority).
    pub waiting: Vec<(String, i32)>,
    /// Its latest monitor sample, if any.
    pub sample: Option<NodeSample>,
}

/// Where a job that has to wait for slots waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// In this TaskManager's queue.
    Queue(String),
    /// In the shared queue that any free slot takes from.
    Shared,
}

/// The scheduler named `name`: round-robin, fair, pull, genetic or rfts.
pub fn by_name(name: &str) -> crate::error::Result<Box<dyn Scheduler>> {
    Ok(match name {
        "round-robin" => Box::new(RoundRobin),
        "fair" => Box::new(Fair),
        "pull" => Box::new(Pull),
        "genetic" => Box::new(Genetic::default()),
        "rfts" => Box::new(Rfts::default()),
        other => {
            return Err(crate::error::HummerError::Config(format!(
                "unknown scheduler '{other}': expected round-robin, fair, pull, genetic or rfts"
            )));
        }
    })
}

/// Free slots of one TaskManager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotOffer {
    /// TaskManager id.
    pub task_manager: String,
    /// Slots not used by running jobs.
    pub free: usize,
}

/// Why a job cannot be placed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlacementError {
    /// Not enough free slots.
    #[error(
        "the job needs {needed} slots but the cluster has {free} free slots on {task_managers} \
         TaskManagers: lower the job's parallelism, add TaskManagers or slots, or submit it to \
         wait in a queue (`--queue`, `env.set_queue_when_busy(true, priority)`)"
    )]
    NotEnoughSlots {
        /// Slots the job needs.
        needed: usize,
        /// Free slots in the cluster.
        free: usize,
        /// TaskManagers registered.
        task_managers: usize,
    },
    /// A vertex is set to a parallelism above the free slots.
    #[error(
        "'{vertex}' is set to parallelism {parallelism} but the cluster has {free} free slots: \
         lower it, or add TaskManagers or slots"
    )]
    ParallelismAboveFreeSlots {
        /// The vertex.
        vertex: String,
        /// Its parallelism.
        parallelism: usize,
        /// Free slots in the cluster.
        free: usize,
    },
    /// A vertex's lower bound cannot be met.
    #[error(
        "'{vertex}' needs a parallelism of at least {min} but only {limit} slots can be given to \
         it (job parallelism {total}, {free} free slots)"
    )]
    BelowMinimumParallelism {
        /// The vertex.
        vertex: String,
        /// Its lower bound.
        min: usize,
        /// What it could get.
        limit: usize,
        /// The job's parallelism.
        total: usize,
        /// Free slots in the cluster.
        free: usize,
    },
}

/// Decides where subtasks run.
pub trait Scheduler: Send + Sync {
    /// Name, for logs and REST.
    fn name(&self) -> &'static str;

    /// The TaskManager of every job slot (`slots` of them). Default: dealt in turn over the
    /// TaskManagers with free slots (round-robin).
    fn place_slots(
        &self,
        slots: usize,
        offers: &[SlotOffer],
    ) -> Result<Vec<String>, PlacementError> {
        round_robin::deal(slots, offers)
    }

    /// The TaskManager of every subtask, in execution-graph order (vertex by vertex, subtask
    /// by subtask), with subtask *i* of each vertex in job slot *i*.
    fn place(
        &self,
        vertex_parallelism: &[usize],
        offers: &[SlotOffer],
    ) -> Result<Vec<String>, PlacementError> {
        let needed = vertex_parallelism.iter().copied().max().unwrap_or(0);
        let slots = self.place_slots(needed, offers)?;
        Ok(vertex_parallelism
            .iter()
            .flat_map(|&p| slots[..p].iter().cloned())
            .collect())
    }

    /// Where a job that has to wait for slots waits. Default: the TaskManagers' queues in turn.
    fn queue_for(&self, task_managers: &[TaskManagerLoad]) -> Waiting {
        round_robin::next_queue(task_managers)
    }

    /// How the scheduler sees the TaskManagers now (their loads and regions, in the order
    /// given), for monitoring. Default: nothing to show.
    fn assess(&self, task_managers: &[TaskManagerLoad]) -> Option<rfts::Assessment> {
        let _ = task_managers;
        None
    }

    /// Moves of waiting jobs between queues, `(job, to TaskManager)`, decided at every
    /// rebalancing interval (round `round`). Default: none.
    fn rebalance(&self, task_managers: &[TaskManagerLoad], round: u64) -> Vec<(String, String)> {
        let _ = (task_managers, round);
        Vec::new()
    }
}
