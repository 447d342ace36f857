//! Glowworm swarm optimisation (Krishnanand and Ghose), as RFTS uses it to choose the node a
//! waiting task moves to.
//!
//! Every candidate node is a point in a small feature space (its capacity and its load). A
//! swarm of glowworms starts on random candidates. In every iteration each glowworm updates its
//! luciferin, `l_i = (1 - rho) * l_i + gamma * J(x_i)` where `J` is the fitness of the
//! candidate nearest to it; it looks for neighbours inside its decision radius that glow
//! brighter, picks one with probability proportional to the luciferin difference, moves a step
//! `s` towards it, and adapts its radius, `r_i = min(r_s, max(0, r_i + beta * (n_t - |N_i|)))`.
//! The answer is the candidate nearest to the brightest glowworm at the end. With a fixed seed
//! the search is deterministic.

use serde::{Deserialize, Serialize};

/// GSO parameters (defaults from the GSO literature).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GsoConfig {
    /// Glowworms in the swarm.
    pub glowworms: usize,
    /// Iterations.
    pub iterations: usize,
    /// Luciferin decay.
    pub rho: f64,
    /// Luciferin gain.
    pub gamma: f64,
    /// Step size.
    pub step: f64,
    /// Radius adaptation rate.
    pub beta: f64,
    /// Desired number of neighbours.
    pub neighbours: usize,
    /// Sensor range: the largest decision radius.
    pub sensor_range: f64,
    /// Initial luciferin.
    pub initial_luciferin: f64,
}

impl Default for GsoConfig {
    fn default() -> Self {
        GsoConfig {
            glowworms: 16,
            iterations: 30,
            rho: 0.4,
            gamma: 0.6,
            step: 0.03,
            beta: 0.08,
            neighbours: 5,
            sensor_range: 1.0,
            initial_luciferin: 5.0,
        }
    }
}

/// A node a task may move to.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Node index.
    pub node: usize,
    /// Its features (normalised by the caller as it sees fit).
    pub position: [f64; 2],
    /// Higher is better.
    pub fitness: f64,
}

/// A small deterministic random generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_f64() * n as f64) as usize % n.max(1)
    }
}

fn distance(a: [f64; 2], b: [f64; 2]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

/// The candidate nearest to a point.
fn nearest(candidates: &[Candidate], p: [f64; 2]) -> usize {
    (0..candidates.len())
        .min_by(|&a, &b| {
            distance(candidates[a].position, p).total_cmp(&distance(candidates[b].position, p))
        })
        .unwrap_or(0)
}

/// Chooses a candidate's node by glowworm swarm search. Panics never; with one candidate it
/// is the answer.
pub fn choose(candidates: &[Candidate], cfg: &GsoConfig, rng: &mut SplitMix64) -> usize {
    match candidates.len() {
        0 => return 0,
        1 => return candidates[0].node,
        _ => {}
    }
    let n = cfg.glowworms.max(1);
    let mut pos: Vec<[f64; 2]> = (0..n)
        .map(|_| candidates[rng.below(candidates.len())].position)
        .collect();
    let mut luciferin = vec![cfg.initial_luciferin; n];
    let mut radius = vec![cfg.sensor_range; n];
    for _ in 0..cfg.iterations {
        for i in 0..n {
            let fitness = candidates[nearest(candidates, pos[i])].fitness;
            luciferin[i] = (1.0 - cfg.rho) * luciferin[i] + cfg.gamma * fitness;
        }
        let snapshot = pos.clone();
        for i in 0..n {
            let neighbours: Vec<usize> = (0..n)
                .filter(|&j| {
                    j != i
                        && luciferin[j] > luciferin[i]
                        && distance(snapshot[i], snapshot[j]) < radius[i]
                })
                .collect();
            if let Some(j) = pick(&neighbours, &luciferin, i, rng) {
                let d = distance(snapshot[i], snapshot[j]);
                if d > 0.0 {
                    for k in 0..2 {
                        pos[i][k] += cfg.step * (snapshot[j][k] - snapshot[i][k]) / d;
                    }
                }
            }
            radius[i] = cfg.sensor_range.min(
                (radius[i] + cfg.beta * (cfg.neighbours as f64 - neighbours.len() as f64)).max(0.0),
            );
        }
    }
    let brightest = (0..n)
        .max_by(|&a, &b| luciferin[a].total_cmp(&luciferin[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    candidates[nearest(candidates, pos[brightest])].node
}

/// A neighbour chosen with probability proportional to how much brighter it is.
fn pick(neighbours: &[usize], luciferin: &[f64], i: usize, rng: &mut SplitMix64) -> Option<usize> {
    let total: f64 = neighbours
        .iter()
        .map(|&j| luciferin[j] - luciferin[i])
        .sum();
    if neighbours.is_empty() || total <= 0.0 {
        return None;
    }
    let mut r = rng.next_f64() * total;
    for &j in neighbours {
        r -= luciferin[j] - luciferin[i];
        if r <= 0.0 {
            return Some(j);
        }
    }
    neighbours.last().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates() -> Vec<Candidate> {
        (0..8)
            .map(|i| Candidate {
                node: 10 + i,
                position: [i as f64 / 8.0, (8 - i) as f64 / 8.0],
                fitness: if i == 5 { 1.0 } else { 0.1 + i as f64 * 0.01 },
            })
            .collect()
    }

    #[test]
    fn deterministic_for_a_fixed_seed() {
        let c = candidates();
        let cfg = GsoConfig::default();
        let a = choose(&c, &cfg, &mut SplitMix64::new(42));
        let b = choose(&c, &cfg, &mut SplitMix64::new(42));
        assert_eq!(a, b);
    }

    #[test]
    fn finds_the_fittest_candidate_most_of_the_time() {
        let c = candidates();
        let cfg = GsoConfig::default();
        let hits = (0..50)
            .filter(|&seed| choose(&c, &cfg, &mut SplitMix64::new(seed)) == 15)
            .count();
        assert!(hits >= 35, "the fittest node was chosen {hits} times of 50");
    }
}
