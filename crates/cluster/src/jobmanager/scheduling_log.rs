//! What the scheduler decided over time, for the dashboard's scheduling view: the waiting jobs
//! it moved between TaskManagers, and how it saw the TaskManagers (RFTS regions and loads) at
//! every rebalancing round.

use std::collections::VecDeque;

use serde::Serialize;

use crate::scheduler::TaskManagerLoad;
use crate::scheduler::rfts::{Assessment, Region};

/// Migrations and rounds kept (the newest).
pub const KEPT: usize = 720;

/// A waiting job moved from one TaskManager's queue to another's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MigrationRecord {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The rebalancing round that moved it.
    pub round: u64,
    /// The job.
    pub job: String,
    /// The TaskManager it left.
    pub from: String,
    /// The TaskManager it went to.
    pub to: String,
}

/// One TaskManager as a round saw it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskManagerView {
    /// Its id.
    pub id: String,
    /// Its region.
    pub region: Region,
    /// Its load.
    pub load: f64,
    /// Jobs waiting in its queue.
    pub waiting: usize,
}

/// The cluster as one rebalancing round saw it (before its moves).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoundRecord {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The round.
    pub round: u64,
    /// The cluster's load.
    pub cluster_load: f64,
    /// Every TaskManager.
    pub task_managers: Vec<TaskManagerView>,
}

/// The last [`KEPT`] migrations and rounds.
#[derive(Debug, Default)]
pub struct SchedulingLog {
    migrations: VecDeque<MigrationRecord>,
    rounds: VecDeque<RoundRecord>,
}

fn push_bounded<T>(q: &mut VecDeque<T>, item: T) {
    if q.len() == KEPT {
        q.pop_front();
    }
    q.push_back(item);
}

impl SchedulingLog {
    /// Records how round `round` saw the TaskManagers `tms` (as `assessment` rates them).
    pub fn round(&mut self, round: u64, tms: &[TaskManagerLoad], assessment: &Assessment) {
        let task_managers = tms
            .iter()
            .zip(&assessment.load)
            .zip(&assessment.region)
            .map(|((t, load), region)| TaskManagerView {
                id: t.id.clone(),
                region: *region,
                load: *load,
                waiting: t.waiting.len(),
            })
            .collect();
        push_bounded(
            &mut self.rounds,
            RoundRecord {
                at_ms: crate::types::epoch_ms(),
                round,
                cluster_load: assessment.cluster_load,
                task_managers,
            },
        );
    }

    /// Records that round `round` moved `job` from `from` to `to`.
    pub fn migration(&mut self, round: u64, job: &str, from: &str, to: &str) {
        push_bounded(
            &mut self.migrations,
            MigrationRecord {
                at_ms: crate::types::epoch_ms(),
                round,
                job: job.to_string(),
                from: from.to_string(),
                to: to.to_string(),
            },
        );
    }

    /// The migrations, oldest first.
    pub fn migrations(&self) -> impl DoubleEndedIterator<Item = &MigrationRecord> {
        self.migrations.iter()
    }

    /// The rounds, oldest first.
    pub fn rounds(&self) -> impl DoubleEndedIterator<Item = &RoundRecord> {
        self.rounds.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_records() {
        let mut log = SchedulingLog::default();
        for round in 0..(KEPT as u64 + 5) {
            log.migration(round, "job", "a", "b");
        }
        let rounds: Vec<u64> = log.migrations().map(|m| m.round).collect();
        assert_eq!(rounds.len(), KEPT);
        assert_eq!(rounds[0], 5);
        assert_eq!(*rounds.last().unwrap(), KEPT as u64 + 4);
    }
}
