//! Fair: slots as round-robin places them; a waiting job joins the queue with the fewest jobs
//! (running and waiting) per slot.

use crate::{Scheduler, TaskManagerLoad, Waiting};

/// Queues in proportion to slots.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fair;

impl Scheduler for Fair {
    fn name(&self) -> &'static str {
        "fair"
    }

    fn queue_for(&self, task_managers: &[TaskManagerLoad]) -> Waiting {
        let share = |t: &TaskManagerLoad| (t.used + t.waiting.len()) as f64 / t.slots.max(1) as f64;
        task_managers
            .iter()
            .min_by(|a, b| share(a).total_cmp(&share(b)))
            .map_or(Waiting::Shared, |t| Waiting::Queue(t.id.clone()))
    }
}
