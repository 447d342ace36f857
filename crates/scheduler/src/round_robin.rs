//! Round-robin placement (Flink's default and the Hummer paper's): job slots are dealt to the
//! TaskManagers in turn, so the subtasks of one vertex spread over as many TaskManagers as
//! possible.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{PlacementError, Scheduler, SlotOffer, TaskManagerLoad, Waiting};

/// Deals slots to TaskManagers in turn, skipping those without free slots; waiting jobs go to
/// the TaskManagers' queues in turn.
#[derive(Debug, Default)]
pub struct RoundRobin;

static TURN: AtomicUsize = AtomicUsize::new(0);

/// Deals `slots` job slots to the offers in turn, skipping those without free slots.
pub(crate) fn deal(slots: usize, offers: &[SlotOffer]) -> Result<Vec<String>, PlacementError> {
    let free: usize = offers.iter().map(|o| o.free).sum();
    if slots > free {
        return Err(PlacementError::NotEnoughSlots {
            needed: slots,
            free,
            task_managers: offers.len(),
        });
    }
    let mut left: Vec<usize> = offers.iter().map(|o| o.free).collect();
    let mut placed = Vec::with_capacity(slots);
    let mut next = 0;
    while placed.len() < slots {
        if left[next] > 0 {
            left[next] -= 1;
            placed.push(offers[next].task_manager.clone());
        }
        next = (next + 1) % offers.len();
    }
    Ok(placed)
}

/// The next queue in turn.
pub(crate) fn next_queue(task_managers: &[TaskManagerLoad]) -> Waiting {
    match task_managers.len() {
        0 => Waiting::Shared,
        n => Waiting::Queue(
            task_managers[TURN.fetch_add(1, Ordering::Relaxed) % n]
                .id
                .clone(),
        ),
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn offers(free: &[usize]) -> Vec<SlotOffer> {
        free.iter()
            .enumerate()
            .map(|(i, &f)| SlotOffer {
                task_manager: format!("tm{i}"),
                free: f,
            })
            .collect()
    }

    #[test]
    fn spreads_a_vertex_over_task_managers() {
        let placed = RoundRobin.place(&[3, 1], &offers(&[2, 2, 2])).unwrap();
        assert_eq!(placed, vec!["tm0", "tm1", "tm2", "tm0"]);
    }

    #[test]
    fn refuses_jobs_larger_than_the_free_slots() {
        let err = RoundRobin.place(&[7], &offers(&[2, 2, 2])).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "the job needs 7 slots but the cluster has 6 free slots on 3 TaskManagers: "
            ),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn never_exceeds_a_task_managers_free_slots(
            free in proptest::collection::vec(0usize..5, 1..6),
            parallelism in proptest::collection::vec(1usize..8, 1..5),
        ) {
            let o = offers(&free);
            match RoundRobin.place(&parallelism, &o) {
                Ok(placement) => {
                    prop_assert_eq!(placement.len(), parallelism.iter().sum::<usize>());
                    let slots = RoundRobin.place_slots(*parallelism.iter().max().unwrap(), &o).unwrap();
                    for (i, offer) in o.iter().enumerate() {
                        let used = slots.iter().filter(|t| **t == offer.task_manager).count();
                        prop_assert!(used <= free[i]);
                    }
                }
                Err(PlacementError::NotEnoughSlots { needed, free: f, .. }) => {
                    prop_assert!(needed > f);
                }
                Err(other) => prop_assert!(false, "placement cannot fail with {other}"),
            }
        }
    }
}
