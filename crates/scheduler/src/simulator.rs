//! A discrete-event simulator of a batch job on a heterogeneous cluster, to compare placement
//! strategies on the same seeds without a real cluster.
//!
//! Nodes have a number of slots (cores), a speed (work per second per slot) and a background
//! load that changes at random times (a share of the speed taken by other work). A job is a set
//! of tasks with sizes (work) and priorities. A [`Strategy`] places the tasks into per-node
//! queues at the start, and may move *waiting* tasks every monitor interval (RFTS does);
//! the pull-based strategy instead keeps one queue from which any free slot takes the next
//! task (Flink's dynamic split assignment). A running task progresses at its node's current
//! effective speed; the simulator jumps from event to event (a task ending, a load change, a
//! monitor tick).

use std::time::Instant;

use crate::rfts::gso::SplitMix64;
use crate::rfts::{self, NodeSample, RftsConfig, WaitingTask};

/// A simulated node.
#[derive(Clone, Debug)]
pub struct SimNode {
    /// Parallel slots.
    pub cores: usize,
    /// Work per second per slot, without background load.
    pub speed: f64,
    /// Total memory (bytes), for the monitor.
    pub memory: f64,
    /// Background load over time: `(from_time, share_of_speed_taken)`, sorted by time.
    pub background: Vec<(f64, f64)>,
}

impl SimNode {
    fn background_at(&self, t: f64) -> f64 {
        self.background
            .iter()
            .take_while(|(from, _)| *from <= t)
            .last()
            .map_or(0.0, |(_, b)| *b)
    }
}

/// A simulated task.
#[derive(Clone, Debug)]
pub struct SimTask {
    /// Work it needs.
    pub size: f64,
    /// Higher runs (and moves) first.
    pub priority: i32,
}

/// A cluster and a job, generated from a seed.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The nodes.
    pub nodes: Vec<SimNode>,
    /// The tasks.
    pub tasks: Vec<SimTask>,
    /// Monitor interval (seconds of simulated time).
    pub monitor_interval: f64,
}

impl Scenario {
    /// `nodes` heterogeneous nodes (1-8 cores, speed 0.5-2, background load changing a few
    /// times) and `tasks` tasks (sizes 1-20, priorities 0-3), all from `seed`.
    pub fn generate(nodes: usize, tasks: usize, seed: u64) -> Scenario {
        let mut rng = SplitMix64::new(seed);
        let nodes = (0..nodes)
            .map(|_| {
                let mut t = 0.0;
                let mut background = Vec::new();
                for _ in 0..4 {
                    background.push((t, rng.next_f64() * 0.7));
                    t += 20.0 + rng.next_f64() * 200.0;
                }
                SimNode {
                    cores: 1 + rng.below(8),
                    speed: 0.5 + rng.next_f64() * 1.5,
                    memory: (4 + rng.below(60)) as f64 * 1e9,
                    background,
                }
            })
            .collect();
        let tasks = (0..tasks)
            .map(|_| SimTask {
                size: 1.0 + rng.next_f64() * 19.0,
                priority: rng.below(4) as i32,
            })
            .collect();
        Scenario {
            nodes,
            tasks,
            monitor_interval: 10.0,
        }
    }
}

/// A placement strategy.
pub trait Strategy {
    /// Name, for tables and plots.
    fn name(&self) -> &'static str;
    /// The node of every task at the start (`None`: a pull-based strategy keeps one queue).
    fn assign(&mut self, scenario: &Scenario) -> Option<Vec<usize>>;
    /// Moves of waiting tasks at a monitor tick: `(task, to node)`.
    fn rebalance(&mut self, _view: &ClusterView<'_>) -> Vec<(usize, usize)> {
        Vec::new()
    }
}

/// What a strategy sees at a monitor tick.
pub struct ClusterView<'a> {
    /// Monitor samples per node.
    pub samples: &'a [NodeSample],
    /// Tasks per node (running and waiting).
    pub tasks: &'a [usize],
    /// Waiting tasks per node.
    pub waiting: &'a [Vec<WaitingTask>],
    /// Tick number.
    pub tick: u64,
}

/// The outcome of one simulation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimResult {
    /// Strategy.
    pub strategy: String,
    /// Time until the last task ended.
    pub makespan: f64,
    /// Tasks per second of simulated time.
    pub throughput: f64,
    /// Wall time spent inside the strategy, seconds.
    pub scheduler_seconds: f64,
    /// Waiting tasks moved.
    pub migrations: usize,
    /// Tasks that ran to completion.
    pub completed: usize,
}

/// A task on a slot: the work it still needs.
struct Running {
    remaining: f64,
}

/// Runs `strategy` on `scenario`.
#[allow(clippy::needless_range_loop)] // nodes index several parallel vectors
pub fn simulate(scenario: &Scenario, strategy: &mut dyn Strategy) -> SimResult {
    let n = scenario.nodes.len();
    let mut scheduler_time = 0.0;
    let timed = |time: &mut f64, f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        *time += t.elapsed().as_secs_f64();
    };
    let mut assignment = None;
    timed(&mut scheduler_time, &mut || {
        assignment = strategy.assign(scenario)
    });
    let mut queues: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut shared: Vec<usize> = Vec::new();
    let mut by_priority: Vec<usize> = (0..scenario.tasks.len()).collect();
    // Highest priority at the end (taken first with `pop`); stable by id otherwise.
    by_priority.sort_by_key(|&t| (scenario.tasks[t].priority, std::cmp::Reverse(t)));
    match &assignment {
        Some(nodes) => {
            for &t in &by_priority {
                queues[nodes[t].min(n - 1)].push(t);
            }
        }
        None => shared = by_priority,
    }
    let mut running: Vec<Vec<Running>> = (0..n).map(|_| Vec::new()).collect();
    let mut now = 0.0;
    let mut done = 0;
    let mut migrations = 0;
    let mut tick = 0u64;
    let mut next_tick = scenario.monitor_interval;
    let total = scenario.tasks.len();
    loop {
        // Fill free slots.
        for j in 0..n {
            while running[j].len() < scenario.nodes[j].cores {
                let next = if assignment.is_some() {
                    queues[j].pop()
                } else {
                    shared.pop()
                };
                let Some(task) = next else { break };
                running[j].push(Running {
                    remaining: scenario.tasks[task].size,
                });
            }
        }
        if done == total {
            break;
        }
        // The next event: a task ending, a background change or a monitor tick.
        let rate = |j: usize, t: f64| {
            let node = &scenario.nodes[j];
            (node.speed * (1.0 - node.background_at(t))).max(1e-9)
        };
        let mut next = next_tick;
        for j in 0..n {
            for r in &running[j] {
                next = next.min(now + r.remaining / rate(j, now));
            }
            for &(from, _) in &scenario.nodes[j].background {
                if from > now {
                    next = next.min(from);
                    break;
                }
            }
        }
        let dt = next - now;
        for j in 0..n {
            let speed = rate(j, now);
            for r in &mut running[j] {
                r.remaining -= dt * speed;
            }
            let before = running[j].len();
            running[j].retain(|r| r.remaining > 1e-9);
            done += before - running[j].len();
        }
        now = next;
        if now >= next_tick {
            tick += 1;
            next_tick += scenario.monitor_interval;
            let samples: Vec<NodeSample> = (0..n)
                .map(|j| {
                    let node = &scenario.nodes[j];
                    let bg = node.background_at(now);
                    let busy = running[j].len() as f64 / node.cores as f64;
                    NodeSample {
                        cores: node.cores as f64,
                        cpu: (bg + busy * (1.0 - bg)).min(1.0),
                        memory: (0.2 + 0.6 * busy).min(1.0),
                        total_memory: node.memory,
                    }
                })
                .collect();
            let tasks: Vec<usize> = (0..n).map(|j| running[j].len() + queues[j].len()).collect();
            let waiting: Vec<Vec<WaitingTask>> = queues
                .iter()
                .map(|q| {
                    q.iter()
                        .map(|&t| WaitingTask {
                            id: t,
                            priority: scenario.tasks[t].priority,
                        })
                        .collect()
                })
                .collect();
            let view = ClusterView {
                samples: &samples,
                tasks: &tasks,
                waiting: &waiting,
                tick,
            };
            let mut moves = Vec::new();
            timed(&mut scheduler_time, &mut || {
                moves = strategy.rebalance(&view)
            });
            for (task, to) in moves {
                if let Some(from) = queues.iter().position(|q| q.contains(&task))
                    && to < n
                    && from != to
                {
                    queues[from].retain(|&t| t != task);
                    queues[to].push(task);
                    // Keep the queue ordered: highest priority last.
                    queues[to].sort_by_key(|&t| (scenario.tasks[t].priority, std::cmp::Reverse(t)));
                    migrations += 1;
                }
            }
        }
    }
    SimResult {
        strategy: strategy.name().to_string(),
        makespan: now,
        throughput: total as f64 / now.max(1e-9),
        scheduler_seconds: scheduler_time,
        migrations,
        completed: done,
    }
}

/// Flink's default: tasks dealt to nodes in turn.
pub struct RoundRobinStrategy;

impl Strategy for RoundRobinStrategy {
    fn name(&self) -> &'static str {
        "round-robin"
    }
    fn assign(&mut self, scenario: &Scenario) -> Option<Vec<usize>> {
        Some(
            (0..scenario.tasks.len())
                .map(|t| t % scenario.nodes.len())
                .collect(),
        )
    }
}

/// Tasks in proportion to each node's slots (blind to speed and load).
pub struct FairStrategy;

impl Strategy for FairStrategy {
    fn name(&self) -> &'static str {
        "fair"
    }
    fn assign(&mut self, scenario: &Scenario) -> Option<Vec<usize>> {
        let slots: Vec<usize> = scenario.nodes.iter().map(|n| n.cores).collect();
        let mut given = vec![0usize; slots.len()];
        Some(
            (0..scenario.tasks.len())
                .map(|_| {
                    // The node with the fewest tasks per slot so far.
                    let j = (0..slots.len())
                        .min_by(|&a, &b| {
                            (given[a] as f64 / slots[a] as f64)
                                .total_cmp(&(given[b] as f64 / slots[b] as f64))
                        })
                        .unwrap_or(0);
                    given[j] += 1;
                    j
                })
                .collect(),
        )
    }
}

/// Pull-based dynamic assignment: one queue, any free slot takes the next task.
pub struct PullStrategy;

impl Strategy for PullStrategy {
    fn name(&self) -> &'static str {
        "pull-based"
    }
    fn assign(&mut self, _scenario: &Scenario) -> Option<Vec<usize>> {
        None
    }
}

/// A genetic algorithm over assignments, minimising the makespan estimated from the nodes'
/// speed and background load at the start. Its first population holds a greedy
/// longest-task-first assignment on the same estimate (so it is never worse than that
/// heuristic) and random ones; elitist selection, one-point crossover, 1 % mutation.
pub struct GeneticStrategy {
    /// Seed of its random choices.
    pub seed: u64,
    /// Population size.
    pub population: usize,
    /// Generations.
    pub generations: usize,
}

impl Strategy for GeneticStrategy {
    fn name(&self) -> &'static str {
        "genetic"
    }
    fn assign(&mut self, scenario: &Scenario) -> Option<Vec<usize>> {
        let mut rng = SplitMix64::new(self.seed);
        let n = scenario.nodes.len();
        let capacity: Vec<f64> = scenario
            .nodes
            .iter()
            .map(|node| node.cores as f64 * node.speed * (1.0 - node.background_at(0.0)).max(0.05))
            .collect();
        let cost = |a: &[usize]| {
            let mut work = vec![0.0; n];
            for (t, &j) in a.iter().enumerate() {
                work[j] += scenario.tasks[t].size;
            }
            work.iter()
                .zip(&capacity)
                .map(|(w, c)| w / c)
                .fold(0.0, f64::max)
        };
        Some(crate::genetic::evolve(
            vec![longest_first(scenario, &capacity)],
            crate::genetic::Evolution {
                population: self.population,
                generations: self.generations,
                choices: n,
                mutation: 0.01,
            },
            &mut rng,
            cost,
        ))
    }
}

/// Greedy assignment: tasks by size, largest first, each to the node that would finish it
/// earliest given `capacity` (work per second).
fn longest_first(scenario: &Scenario, capacity: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scenario.tasks.len()).collect();
    order.sort_by(|&a, &b| scenario.tasks[b].size.total_cmp(&scenario.tasks[a].size));
    let mut work = vec![0.0; capacity.len()];
    let mut assignment = vec![0; scenario.tasks.len()];
    for t in order {
        let size = scenario.tasks[t].size;
        let j = (0..capacity.len())
            .min_by(|&a, &b| {
                ((work[a] + size) / capacity[a]).total_cmp(&((work[b] + size) / capacity[b]))
            })
            .unwrap_or(0);
        work[j] += size;
        assignment[t] = j;
    }
    assignment
}

/// RFTS: round-robin at the start, then every monitor tick the waiting tasks of overloaded
/// nodes move to under-saturated ones ([`rfts::plan_migrations`]).
pub struct RftsStrategy {
    /// Parameters.
    pub config: RftsConfig,
    /// Seed of the glowworm search.
    pub seed: u64,
}

impl Strategy for RftsStrategy {
    fn name(&self) -> &'static str {
        "rfts"
    }
    fn assign(&mut self, scenario: &Scenario) -> Option<Vec<usize>> {
        RoundRobinStrategy.assign(scenario)
    }
    fn rebalance(&mut self, view: &ClusterView<'_>) -> Vec<(usize, usize)> {
        rfts::plan_migrations(
            view.samples,
            view.tasks,
            view.waiting,
            &self.config,
            self.seed ^ view.tick,
        )
        .into_iter()
        .map(|m| (m.task, m.to))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once_under_every_strategy() {
        let scenario = Scenario::generate(12, 400, 3);
        let total_work: f64 = scenario.tasks.iter().map(|t| t.size).sum();
        let strategies: Vec<Box<dyn Strategy>> = vec![
            Box::new(RoundRobinStrategy),
            Box::new(FairStrategy),
            Box::new(PullStrategy),
            Box::new(GeneticStrategy {
                seed: 1,
                population: 20,
                generations: 20,
            }),
            Box::new(RftsStrategy {
                config: RftsConfig::default(),
                seed: 1,
            }),
        ];
        for mut s in strategies {
            let r = simulate(&scenario, s.as_mut());
            // No schedule can beat all the work spread over all the speed there is.
            let fastest: f64 = scenario
                .nodes
                .iter()
                .map(|n| n.cores as f64 * n.speed)
                .sum();
            assert!(r.makespan >= total_work / fastest * 0.999, "{r:?}");
            assert!((r.throughput - 400.0 / r.makespan).abs() < 1e-9);
            assert_eq!(r.completed, 400, "{r:?}");
        }
    }

    #[test]
    fn rfts_beats_round_robin_on_a_skewed_cluster_and_is_deterministic() {
        let mut wins = 0;
        for seed in 0..5 {
            let scenario = Scenario::generate(30, 1500, seed);
            let rr = simulate(&scenario, &mut RoundRobinStrategy);
            let mut rfts = RftsStrategy {
                config: RftsConfig::default(),
                seed,
            };
            let a = simulate(&scenario, &mut rfts);
            let b = simulate(
                &scenario,
                &mut RftsStrategy {
                    config: RftsConfig::default(),
                    seed,
                },
            );
            assert_eq!(a.makespan, b.makespan);
            assert!(a.migrations > 0);
            if a.makespan < rr.makespan {
                wins += 1;
            }
        }
        assert!(
            wins >= 4,
            "RFTS beat round-robin on {wins} of 5 skewed clusters"
        );
    }

    #[test]
    fn two_hundred_nodes_and_ten_thousand_tasks_complete() {
        let scenario = Scenario::generate(200, 10_000, 11);
        let r = simulate(
            &scenario,
            &mut RftsStrategy {
                config: RftsConfig::default(),
                seed: 11,
            },
        );
        assert_eq!(r.completed, 10_000);
    }
}
