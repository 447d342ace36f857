//! Genetic: at every rebalancing interval a genetic algorithm re-assigns all waiting jobs to
//! queues, minimising the estimated time until the last queue drains: per TaskManager, its
//! running and waiting jobs over its capacity, the capacity being its cores times its idle CPU
//! share from the latest monitor sample (a TaskManager without a sample counts as its slots).

use std::cell::RefCell;

use crate::rfts::gso::SplitMix64;
use crate::{Scheduler, TaskManagerLoad};

/// A genetic algorithm over the assignment of waiting jobs.
#[derive(Debug)]
pub struct Genetic {
    /// Individuals per generation.
    pub population: usize,
    /// Generations per round.
    pub generations: usize,
    seed: u64,
}

impl Default for Genetic {
    fn default() -> Self {
        Genetic {
            population: 24,
            generations: 30,
            seed: 0x5eed,
        }
    }
}

/// Sizes of a genetic search.
pub(crate) struct Evolution {
    /// Individuals per generation.
    pub(crate) population: usize,
    /// Generations.
    pub(crate) generations: usize,
    /// Values a gene can take (`0..choices`).
    pub(crate) choices: usize,
    /// Chance of each gene to mutate in a child.
    pub(crate) mutation: f64,
}

/// Elitist genetic search over assignments (one gene per item, its value a choice): `seeds`
/// start the population, random individuals fill it; each generation keeps the better half and
/// replaces the rest by one-point crossovers of kept ones, with mutation. Returns the best.
pub(crate) fn evolve(
    seeds: Vec<Vec<usize>>,
    shape: Evolution,
    rng: &mut SplitMix64,
    cost: impl Fn(&[usize]) -> f64,
) -> Vec<usize> {
    let genes = seeds.first().map_or(0, Vec::len);
    let mut population = seeds;
    while population.len() < shape.population.max(2) {
        population.push((0..genes).map(|_| rng.below(shape.choices)).collect());
    }
    for _ in 0..shape.generations {
        population.sort_by(|a, b| cost(a).total_cmp(&cost(b)));
        let elite = population.len() / 2;
        for k in elite..population.len() {
            let (a, b) = (rng.below(elite), rng.below(elite));
            let cut = rng.below(genes.max(1));
            let mut child: Vec<usize> = population[a][..cut]
                .iter()
                .chain(&population[b][cut..])
                .copied()
                .collect();
            for gene in child.iter_mut() {
                if rng.next_f64() < shape.mutation {
                    *gene = rng.below(shape.choices);
                }
            }
            population[k] = child;
        }
    }
    population.sort_by(|a, b| cost(a).total_cmp(&cost(b)));
    population.swap_remove(0)
}

thread_local! {
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

impl Scheduler for Genetic {
    fn name(&self) -> &'static str {
        "genetic"
    }

    fn rebalance(&self, tms: &[TaskManagerLoad], round: u64) -> Vec<(String, String)> {
        let jobs: Vec<(usize, &String)> = tms
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.waiting.iter().map(move |(id, _)| (i, id)))
            .collect();
        if jobs.is_empty() || tms.len() < 2 {
            return Vec::new();
        }
        let capacity: Vec<f64> = tms
            .iter()
            .map(|t| match &t.sample {
                Some(s) => (s.cores * (1.0 - s.cpu).max(0.05)).max(1e-3),
                None => t.slots.max(1) as f64,
            })
            .collect();
        let cost = |genes: &[usize]| {
            SCRATCH.with(|scratch| {
                let mut load = scratch.borrow_mut();
                load.clear();
                load.extend(tms.iter().map(|t| t.used as f64));
                for &g in genes {
                    load[g] += 1.0;
                }
                load.iter()
                    .zip(&capacity)
                    .map(|(l, c)| l / c)
                    .fold(0.0, f64::max)
            })
        };
        let mut rng = SplitMix64::new(self.seed ^ round);
        let current: Vec<usize> = jobs.iter().map(|(i, _)| *i).collect();
        let best = evolve(
            vec![current.clone()],
            Evolution {
                population: self.population,
                generations: self.generations,
                choices: tms.len(),
                mutation: 0.1,
            },
            &mut rng,
            cost,
        );
        // Move only if it is better than staying.
        if cost(&best) >= cost(&current) {
            return Vec::new();
        }
        jobs.iter()
            .zip(&best)
            .filter(|((from, _), to)| from != *to)
            .map(|((_, id), &to)| ((*id).clone(), tms[to].id.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfts::NodeSample;
    use crate::{Fair, Pull, Waiting};

    fn tm(id: &str, used: usize, waiting: usize, cpu: f64) -> TaskManagerLoad {
        TaskManagerLoad {
            id: id.into(),
            slots: 2,
            used,
            waiting: (0..waiting).map(|i| (format!("{id}-job{i}"), 0)).collect(),
            sample: Some(NodeSample {
                cores: 2.0,
                cpu,
                memory: 0.5,
                total_memory: 8e9,
            }),
        }
    }

    #[test]
    fn genetic_moves_waiting_jobs_off_an_overloaded_task_manager() {
        let tms = vec![tm("busy", 2, 6, 0.95), tm("idle", 0, 0, 0.05)];
        let moves = Genetic::default().rebalance(&tms, 1);
        assert!(!moves.is_empty());
        assert!(
            moves
                .iter()
                .all(|(job, to)| job.starts_with("busy") && to == "idle"),
            "{moves:?}"
        );
        // Deterministic per round.
        assert_eq!(moves, Genetic::default().rebalance(&tms, 1));
        // Nothing to gain on a balanced cluster.
        let balanced = vec![tm("a", 2, 1, 0.5), tm("b", 2, 1, 0.5)];
        assert!(Genetic::default().rebalance(&balanced, 1).is_empty());
    }

    #[test]
    fn fair_and_pull_choose_their_queues() {
        let tms = vec![tm("a", 2, 3, 0.5), tm("b", 1, 0, 0.5)];
        assert_eq!(Fair.queue_for(&tms), Waiting::Queue("b".into()));
        assert_eq!(Pull.queue_for(&tms), Waiting::Shared);
    }
}
