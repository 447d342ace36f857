//! RFTS: resource-feedback task scheduling (the second seed paper).
//!
//! Every TaskManager's monitor reports its CPU cores, CPU utilisation, memory utilisation and
//! total memory. From these the JobManager computes, per node *j*:
//!
//! * `Metric_j = C1 * Core_j * w1_j + C2 * (1 - w2_j) * w3_j`, with cores and total memory
//!   normalised by the cluster's largest node, so `Metric_j` lies in `[0, C1 + C2]` (its
//!   capacity for work). `w1` is the CPU term: the paper writes the CPU utilisation itself,
//!   which rewards busy nodes; [`CpuTerm::Idle`] (the default) uses `1 - utilisation`, and
//!   [`CpuTerm::PaperLiteral`] keeps the paper's form.
//! * `Load_j = TaskNum_j / Metric_j`: tasks per unit of capacity.
//! * The cluster load `C_Load`, which the paper uses without a formula: here the coefficient of
//!   variation of the loads (standard deviation over mean), 0 for a perfectly balanced
//!   cluster, so "balanced enough" is `C_Load < beta`.
//! * Each node's deviation `delta_j = (Load_j - mean) / mean` (also unspecified in the paper:
//!   the relative distance from the cluster average) and `offset_j = delta_j - beta`.
//! * Regions by offset: UP (`>= h_threshold`), LP (`[0, h_threshold)`), NS
//!   (`[l_threshold, 0)`), DS (`< l_threshold`).
//!
//! While `C_Load >= beta`, the waiting tasks of the UP nodes (nodes by load, descending; tasks
//! by priority, descending) move to DS nodes chosen by a glowworm swarm search ([`gso`]).

pub mod gso;

use serde::{Deserialize, Serialize};

/// A monitor report of one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeSample {
    /// CPU cores.
    pub cores: f64,
    /// CPU utilisation, `0..=1`.
    pub cpu: f64,
    /// Memory utilisation, `0..=1`.
    pub memory: f64,
    /// Total memory, bytes.
    pub total_memory: f64,
}

/// What is wrong with a monitor report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadSample {
    /// No CPU cores, or not a number.
    #[error("{0} CPU cores: a node needs at least one")]
    Cores(f64),
    /// No memory, or not a number.
    #[error("total memory {0} bytes is not positive")]
    TotalMemory(f64),
    /// A utilisation outside `[0, 1]`.
    #[error("{resource} utilisation {value} is not a number between 0 and 1")]
    Utilisation {
        /// `CPU` or `memory`.
        resource: &'static str,
        /// The value reported.
        value: f64,
    },
}

impl NodeSample {
    /// Checks a report before it reaches the scheduler; the error says what is wrong.
    pub fn validate(&self) -> Result<(), BadSample> {
        let unit = |resource: &'static str, value: f64| {
            if value.is_finite() && (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(BadSample::Utilisation { resource, value })
            }
        };
        if !(self.cores.is_finite() && self.cores > 0.0) {
            return Err(BadSample::Cores(self.cores));
        }
        if !(self.total_memory.is_finite() && self.total_memory > 0.0) {
            return Err(BadSample::TotalMemory(self.total_memory));
        }
        unit("CPU", self.cpu)?;
        unit("memory", self.memory)
    }
}

/// How CPU utilisation enters `Metric`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuTerm {
    /// `1 - utilisation`: idle CPU is capacity (the default).
    #[default]
    Idle,
    /// The utilisation itself, as printed in the paper.
    PaperLiteral,
}

/// RFTS parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RftsConfig {
    /// Weight of the CPU term.
    pub c1: f64,
    /// Weight of the memory term.
    pub c2: f64,
    /// Cluster-load threshold: balanced when `C_Load < beta`.
    pub beta: f64,
    /// Offset from which a node is UP.
    pub h_threshold: f64,
    /// Offset below which a node is DS.
    pub l_threshold: f64,
    /// CPU term form.
    pub cpu_term: CpuTerm,
    /// Glowworm swarm parameters.
    pub gso: gso::GsoConfig,
}

impl Default for RftsConfig {
    fn default() -> Self {
        RftsConfig {
            c1: 0.6,
            c2: 0.4,
            beta: 0.1,
            h_threshold: 0.83,
            l_threshold: -0.27,
            cpu_term: CpuTerm::Idle,
            gso: gso::GsoConfig::default(),
        }
    }
}

/// The four regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Region {
    /// Overloaded: gives tasks away.
    Up,
    /// Lightly over the threshold.
    Lp,
    /// Near saturation from below.
    Ns,
    /// Under-saturated: receives tasks.
    Ds,
}

impl Region {
    /// The paper's name of the region: `UP`, `LP`, `NS` or `DS`.
    pub fn name(self) -> &'static str {
        match self {
            Region::Up => "UP",
            Region::Lp => "LP",
            Region::Ns => "NS",
            Region::Ds => "DS",
        }
    }
}

/// `Metric_j` of every node (see the module doc).
pub fn metrics(nodes: &[NodeSample], cfg: &RftsConfig) -> Vec<f64> {
    let max_cores = nodes
        .iter()
        .map(|n| n.cores)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let max_mem = nodes
        .iter()
        .map(|n| n.total_memory)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    nodes
        .iter()
        .map(|n| {
            let w1 = match cfg.cpu_term {
                CpuTerm::Idle => 1.0 - n.cpu,
                CpuTerm::PaperLiteral => n.cpu,
            };
            cfg.c1 * (n.cores / max_cores) * w1
                + cfg.c2 * (1.0 - n.memory) * (n.total_memory / max_mem)
        })
        .collect()
}

/// Smallest capacity used as a divisor, so a saturated node has a large, finite load.
const MIN_METRIC: f64 = 1e-3;

/// `Load_j = TaskNum_j / Metric_j`.
pub fn loads(tasks: &[usize], metrics: &[f64]) -> Vec<f64> {
    tasks
        .iter()
        .zip(metrics)
        .map(|(&t, &m)| t as f64 / m.max(MIN_METRIC))
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// `C_Load`: the coefficient of variation of the loads (0 when balanced or idle).
pub fn cluster_load(loads: &[f64]) -> f64 {
    let m = mean(loads);
    if m <= 0.0 {
        return 0.0;
    }
    let var = loads.iter().map(|l| (l - m).powi(2)).sum::<f64>() / loads.len() as f64;
    var.sqrt() / m
}

/// `offset_j = delta_j - beta` with `delta_j = (Load_j - mean) / mean`.
pub fn offsets(loads: &[f64], beta: f64) -> Vec<f64> {
    let m = mean(loads);
    loads
        .iter()
        .map(|l| if m > 0.0 { (l - m) / m } else { 0.0 } - beta)
        .collect()
}

/// The region of every offset.
pub fn regions(offsets: &[f64], h_threshold: f64, l_threshold: f64) -> Vec<Region> {
    offsets
        .iter()
        .map(|&o| {
            if o >= h_threshold {
                Region::Up
            } else if o >= 0.0 {
                Region::Lp
            } else if o >= l_threshold {
                Region::Ns
            } else {
                Region::Ds
            }
        })
        .collect()
}

/// The nodes as one RFTS round sees them.
#[derive(Clone, Debug, PartialEq)]
pub struct Assessment {
    /// `Load_j` of every node.
    pub load: Vec<f64>,
    /// `C_Load`: the cluster's imbalance.
    pub cluster_load: f64,
    /// The region of every node.
    pub region: Vec<Region>,
}

/// The loads, the cluster's load and the regions of nodes of metrics `metric` (from
/// [`metrics`]) running `tasks[j]` tasks each.
pub fn assess(metric: &[f64], tasks: &[usize], cfg: &RftsConfig) -> Assessment {
    let load = loads(tasks, metric);
    let offs = offsets(&load, cfg.beta);
    Assessment {
        cluster_load: cluster_load(&load),
        region: regions(&offs, cfg.h_threshold, cfg.l_threshold),
        load,
    }
}

/// A task waiting for a slot on a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitingTask {
    /// Task id.
    pub id: usize,
    /// Higher moves first.
    pub priority: i32,
}

/// A decision to move a waiting task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// Task id.
    pub task: usize,
    /// Node it leaves.
    pub from: usize,
    /// Node it goes to.
    pub to: usize,
}

/// One RFTS round: moves waiting tasks from UP nodes to DS nodes until the cluster is balanced
/// (`C_Load < beta`) or no move is possible. `tasks[j]` counts all tasks of node `j` (running
/// and waiting); `waiting[j]` are the ones that may move. Deterministic for a given `seed`.
pub fn plan_migrations(
    nodes: &[NodeSample],
    tasks: &[usize],
    waiting: &[Vec<WaitingTask>],
    cfg: &RftsConfig,
    seed: u64,
) -> Vec<Migration> {
    let metric = metrics(nodes, cfg);
    let mut tasks = tasks.to_vec();
    let mut waiting: Vec<Vec<WaitingTask>> = waiting.to_vec();
    for w in &mut waiting {
        // Highest priority last, so `pop` takes it.
        w.sort_by_key(|t| (t.priority, std::cmp::Reverse(t.id)));
    }
    let mut rng = gso::SplitMix64::new(seed);
    let mut moves = Vec::new();
    // Each move takes one waiting task: the loop ends.
    loop {
        let Assessment {
            load,
            cluster_load,
            region,
        } = assess(&metric, &tasks, cfg);
        if cluster_load < cfg.beta {
            break;
        }
        let mut up: Vec<usize> = (0..nodes.len())
            .filter(|&j| region[j] == Region::Up && !waiting[j].is_empty())
            .collect();
        up.sort_by(|&a, &b| load[b].total_cmp(&load[a]).then(a.cmp(&b)));
        let ds: Vec<usize> = (0..nodes.len())
            .filter(|&j| region[j] == Region::Ds)
            .collect();
        let (Some(&from), false) = (up.first(), ds.is_empty()) else {
            break;
        };
        let candidates: Vec<gso::Candidate> = ds
            .iter()
            .map(|&j| gso::Candidate {
                node: j,
                position: [metric[j], load[j]],
                // Brighter for lower load after taking one more task.
                fitness: 1.0 / (1.0 + (tasks[j] + 1) as f64 / metric[j].max(MIN_METRIC)),
            })
            .collect();
        let to = gso::choose(&candidates, &cfg.gso, &mut rng);
        let Some(task) = waiting[from].pop() else {
            break;
        };
        tasks[from] -= 1;
        tasks[to] += 1;
        moves.push(Migration {
            task: task.id,
            from,
            to,
        });
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cores: f64, cpu: f64, memory: f64, total: f64) -> NodeSample {
        NodeSample {
            cores,
            cpu,
            memory,
            total_memory: total,
        }
    }

    #[test]
    fn regions_of_the_papers_worked_example() {
        let offsets = [0.91, -0.09, -0.12, -0.58, -0.31, 0.87];
        let r = regions(&offsets, 0.83, -0.27);
        let members = |want: Region| -> Vec<usize> {
            (0..6).filter(|&i| r[i] == want).map(|i| i + 1).collect()
        };
        assert_eq!(members(Region::Up), vec![1, 6]);
        assert_eq!(members(Region::Ns), vec![2, 3]);
        assert_eq!(members(Region::Ds), vec![4, 5]);
        assert!(members(Region::Lp).is_empty());
    }

    #[test]
    fn formulas_against_hand_computed_values() {
        let cfg = RftsConfig {
            c1: 0.6,
            c2: 0.4,
            ..RftsConfig::default()
        };
        let nodes = [node(4.0, 0.5, 0.25, 16.0), node(2.0, 0.0, 0.5, 8.0)];
        // Node 0: 0.6 * 1.0 * 0.5 + 0.4 * 0.75 * 1.0 = 0.6; node 1: 0.6 * 0.5 * 1 + 0.4 * 0.5 * 0.5 = 0.4.
        let m = metrics(&nodes, &cfg);
        assert!(
            (m[0] - 0.6).abs() < 1e-12 && (m[1] - 0.4).abs() < 1e-12,
            "{m:?}"
        );
        let literal = metrics(
            &nodes,
            &RftsConfig {
                cpu_term: CpuTerm::PaperLiteral,
                ..cfg.clone()
            },
        );
        // Node 1 is idle: the literal form gives its CPU no weight at all.
        assert!((literal[1] - 0.1).abs() < 1e-12, "{literal:?}");
        let l = loads(&[6, 2], &m);
        assert!((l[0] - 10.0).abs() < 1e-9 && (l[1] - 5.0).abs() < 1e-9);
        // Mean 7.5, standard deviation 2.5.
        assert!((cluster_load(&l) - 2.5 / 7.5).abs() < 1e-12);
        let o = offsets(&l, 0.1);
        assert!(
            (o[0] - (2.5 / 7.5 - 0.1)).abs() < 1e-12 && (o[1] - (-2.5 / 7.5 - 0.1)).abs() < 1e-12
        );
    }

    #[test]
    fn bad_reports_are_rejected_with_a_reason() {
        assert!(node(4.0, 0.5, 0.5, 1.0).validate().is_ok());
        for (report, reason) in [
            (node(0.0, 0.5, 0.5, 1.0), "cores"),
            (node(4.0, -0.1, 0.5, 1.0), "CPU utilisation"),
            (node(4.0, f64::NAN, 0.5, 1.0), "NaN"),
            (node(4.0, 0.5, 1.5, 1.0), "memory"),
        ] {
            let err = report.validate().unwrap_err().to_string();
            assert!(err.contains(reason), "{err}");
        }
    }

    #[test]
    fn a_skewed_cluster_is_rebalanced_deterministically() {
        let nodes: Vec<NodeSample> = (0..6).map(|_| node(2.0, 0.2, 0.3, 8.0)).collect();
        let tasks: Vec<usize> = vec![12, 2, 2, 2, 2, 12];
        let waiting: Vec<Vec<WaitingTask>> = tasks
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                (0..n.saturating_sub(2))
                    .map(|i| WaitingTask {
                        id: j * 100 + i,
                        priority: (i % 3) as i32,
                    })
                    .collect()
            })
            .collect();
        let cfg = RftsConfig::default();
        let moves = plan_migrations(&nodes, &tasks, &waiting, &cfg, 7);
        assert!(!moves.is_empty());
        assert_eq!(moves, plan_migrations(&nodes, &tasks, &waiting, &cfg, 7));
        let mut after = tasks.clone();
        for m in &moves {
            assert!(
                m.from == 0 || m.from == 5,
                "only overloaded nodes give tasks: {m:?}"
            );
            after[m.from] -= 1;
            after[m.to] += 1;
        }
        let m = metrics(&nodes, &cfg);
        assert!(cluster_load(&loads(&after, &m)) < cluster_load(&loads(&tasks, &m)));
        // The first task to leave a node is one of its highest priority.
        let first = moves.iter().find(|m| m.from == 0).unwrap();
        assert_eq!(
            waiting[0]
                .iter()
                .find(|t| t.id == first.task)
                .unwrap()
                .priority,
            2
        );
    }
}

/// RFTS as a [`crate::Scheduler`]: round-robin placement and queues (Flink's
/// default), and at every interval the waiting jobs of overloaded TaskManagers move to
/// under-saturated ones ([`plan_migrations`]).
#[derive(Debug, Default)]
pub struct Rfts {
    /// Parameters.
    pub config: RftsConfig,
}

/// The TaskManagers' latest samples; `None` until every one has sent one (there is nothing
/// to decide on before).
fn samples_of(tms: &[crate::TaskManagerLoad]) -> Option<Vec<NodeSample>> {
    tms.iter().map(|t| t.sample.clone()).collect()
}

/// The tasks of every TaskManager as RFTS counts them: running and waiting.
fn tasks_of(tms: &[crate::TaskManagerLoad]) -> Vec<usize> {
    tms.iter().map(|t| t.used + t.waiting.len()).collect()
}

impl crate::Scheduler for Rfts {
    fn name(&self) -> &'static str {
        "rfts"
    }

    fn assess(&self, tms: &[crate::TaskManagerLoad]) -> Option<Assessment> {
        let samples = samples_of(tms)?;
        Some(assess(
            &metrics(&samples, &self.config),
            &tasks_of(tms),
            &self.config,
        ))
    }

    fn rebalance(&self, tms: &[crate::TaskManagerLoad], round: u64) -> Vec<(String, String)> {
        let Some(samples) = samples_of(tms) else {
            return Vec::new();
        };
        let mut ids: Vec<&String> = Vec::new();
        let waiting: Vec<Vec<WaitingTask>> = tms
            .iter()
            .map(|t| {
                t.waiting
                    .iter()
                    .map(|(id, priority)| {
                        ids.push(id);
                        WaitingTask {
                            id: ids.len() - 1,
                            priority: *priority,
                        }
                    })
                    .collect()
            })
            .collect();
        plan_migrations(&samples, &tasks_of(tms), &waiting, &self.config, round)
            .into_iter()
            .map(|m| (ids[m.task].clone(), tms[m.to].id.clone()))
            .collect()
    }
}
