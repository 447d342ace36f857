//! The JobManager's view of the cluster: TaskManagers, their slots, and the queues of jobs
//! waiting for slots; and the scheduler that places jobs on them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::liveness::{HeardClock, Watchdog};

use tokio::sync::mpsc::UnboundedSender;

use crate::protocol::{JobId, Message, Resources, TaskManagerInfo};
use crate::scheduler::{Scheduler, SlotOffer, TaskManagerLoad};

/// A registered TaskManager.
pub struct TaskManagerEntry {
    /// What it offers.
    pub info: TaskManagerInfo,
    /// Its connection's mailbox.
    pub mailbox: UnboundedSender<Message>,
    /// When its connection was last heard from (stamped by its reader, without the lock).
    pub heard: HeardClock,
    /// Last resource sample.
    pub resources: Resources,
    /// Slots used by running jobs.
    pub used_slots: usize,
}

/// TaskManagers, slots and queues.
pub struct ClusterState {
    /// TaskManagers by id.
    pub task_managers: BTreeMap<String, TaskManagerEntry>,
    /// Placement strategy.
    pub scheduler: Box<dyn Scheduler>,
    /// Monitor samples of every TaskManager.
    pub monitor: super::monitor::MonitorStore,
    /// Jobs waiting for free slots, per TaskManager.
    pub queues: BTreeMap<String, Vec<JobId>>,
    /// The queue every TaskManager takes from, for schedulers that pull.
    pub shared_queue: Vec<JobId>,
    /// Time spent deciding placements, queues and migrations.
    pub scheduler_time: Duration,
    /// Rebalancing rounds so far.
    pub rebalance_round: u64,
    /// The scheduler's migrations and rounds, for monitoring.
    pub scheduling: super::scheduling_log::SchedulingLog,
}

impl ClusterState {
    /// A cluster without TaskManagers.
    pub fn new(scheduler: Box<dyn Scheduler>, monitor: super::monitor::MonitorStore) -> Self {
        ClusterState {
            task_managers: BTreeMap::new(),
            scheduler,
            monitor,
            queues: BTreeMap::new(),
            shared_queue: Vec::new(),
            scheduler_time: Duration::ZERO,
            rebalance_round: 0,
            scheduling: Default::default(),
        }
    }

    /// Free slots of every TaskManager (or of one).
    pub fn offers(&self, only: Option<&str>) -> Vec<SlotOffer> {
        self.task_managers
            .values()
            .filter(|tm| only.is_none_or(|o| o == tm.info.id))
            .map(|tm| SlotOffer {
                task_manager: tm.info.id.clone(),
                free: tm.info.slots.saturating_sub(tm.used_slots),
            })
            .collect()
    }

    /// The TaskManagers as queueing decisions see them; `priority` gives a waiting job's.
    pub fn loads(&self, priority: impl Fn(&str) -> Option<i32>) -> Vec<TaskManagerLoad> {
        self.task_managers
            .values()
            .map(|t| TaskManagerLoad {
                id: t.info.id.clone(),
                slots: t.info.slots,
                used: t.used_slots,
                waiting: self
                    .queues
                    .get(&t.info.id)
                    .map(|q| {
                        q.iter()
                            .map(|id| (id.clone(), priority(id).unwrap_or(0)))
                            .collect()
                    })
                    .unwrap_or_default(),
                sample: self.monitor.latest(&t.info.id).map(|r| r.sample.clone()),
            })
            .collect()
    }

    /// Gives back `slots` slots of TaskManager `tm`.
    pub fn release(&mut self, tm: &str, slots: usize) {
        if let Some(t) = self.task_managers.get_mut(tm) {
            t.used_slots = t.used_slots.saturating_sub(slots);
        }
    }

    /// Takes a job out of every queue.
    pub fn dequeue(&mut self, job: &str) {
        for q in self.queues.values_mut() {
            q.retain(|j| j != job);
        }
        self.shared_queue.retain(|j| j != job);
    }

    /// TaskManagers the watchdog finds lost at `now`.
    pub fn expired_task_managers(&self, watchdog: &Watchdog, now: Instant) -> Vec<String> {
        self.task_managers
            .values()
            .filter(|t| watchdog.is_lost(t.heard.last(), now))
            .map(|t| t.info.id.clone())
            .collect()
    }
}
