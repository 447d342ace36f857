//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use hummer::jobs::corpus;

pub mod browser;
pub mod cli;
pub mod cluster;
pub mod eventually;
pub mod heavy;
pub mod http;
pub mod kafka;
pub mod netns;
pub mod sql;

pub use eventually::eventually;

/// Writes `lines` lines of the generated corpus into `path`.
pub fn write_corpus(path: &Path, lines: u64) {
    corpus::write_file(path, lines).unwrap();
}

/// Word counts computed the plain way: lowercase, split on anything outside [a-z0-9].
pub fn reference_counts(text: &str) -> HashMap<String, u64> {
    let mut counts = HashMap::new();
    for word in text
        .to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| !w.is_empty())
    {
        *counts.entry(word.to_string()).or_insert(0) += 1;
    }
    counts
}

/// Reads `word<TAB>count` part files of a directory into a map.
pub fn read_counts(dir: &Path) -> HashMap<String, u64> {
    let mut counts = HashMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            !name.ends_with(".inprogress"),
            "uncommitted part file {name}"
        );
        if !name.starts_with("part-") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let (w, c) = line.split_once('\t').expect("word<TAB>count");
            let c: u64 = c.parse().unwrap();
            // Streaming output holds running counts: the last (largest) is the total.
            let e = counts.entry(w.to_string()).or_insert(0);
            *e = (*e).max(c);
        }
    }
    counts
}

/// The seeded generator of randomized trials (the engine's SplitMix64), so that a trial is
/// replayable from its seed.
pub struct Rng(hummer::scheduler::rfts::gso::SplitMix64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(hummer::scheduler::rfts::gso::SplitMix64::new(seed))
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }
}

/// The seeds of `count` randomized trials (from the clock, `stride` apart), or the one in
/// `HUMMER_TRIAL_SEED` to replay a trial.
pub fn trial_seeds(count: u64, stride: u64) -> Vec<u64> {
    match std::env::var("HUMMER_TRIAL_SEED") {
        Ok(s) => vec![s.parse().expect("HUMMER_TRIAL_SEED must be a number")],
        Err(_) => {
            let base = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            (0..count).map(|i| base.wrapping_add(i * stride)).collect()
        }
    }
}
