//! Pull-based dynamic assignment: one shared queue; a TaskManager with a free slot takes the
//! next waiting job (as Flink's batch runtime hands out input splits).

use crate::{Scheduler, TaskManagerLoad, Waiting};

/// One queue, pulled from by free slots.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pull;

impl Scheduler for Pull {
    fn name(&self) -> &'static str {
        "pull"
    }

    fn queue_for(&self, _task_managers: &[TaskManagerLoad]) -> Waiting {
        Waiting::Shared
    }
}
