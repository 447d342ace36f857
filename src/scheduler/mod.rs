//! Placement of a job's subtasks on TaskManager slots.
//!
//! A [`Scheduler`] gets the job's vertices (with their parallelism) and the free slots of every
//! TaskManager, and returns the TaskManager of every subtask. Slots are shared between vertices
//! as in Flink: subtask *i* of every vertex goes to slot *i* of the job, so a job needs as many
//! slots as its largest vertex parallelism. Other strategies (fair, genetic, RFTS) plug in
//! behind the same trait.

pub mod parallelism;
pub mod rfts;
mod round_robin;
pub mod simulator;

pub use round_robin::RoundRobin;

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
        "the job needs {needed} slots but the cluster has {free} free slots on {task_managers} TaskManagers"
    )]
    NotEnoughSlots {
        /// Slots the job needs.
        needed: usize,
        /// Free slots in the cluster.
        free: usize,
        /// TaskManagers registered.
        task_managers: usize,
    },
}

/// Decides where subtasks run.
pub trait Scheduler: Send + Sync {
    /// Name, for logs and REST.
    fn name(&self) -> &'static str;

    /// The TaskManager of every job slot (`slots` of them).
    fn place_slots(
        &self,
        slots: usize,
        offers: &[SlotOffer],
    ) -> Result<Vec<String>, PlacementError>;

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
}
