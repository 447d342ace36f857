//! Operators: the contract every operator implements, and the operators themselves.
//!
//! An operator transforms batches: [`Operator::process`] receives a [`Batch`] of input
//! records and emits output records into a [`Collector`], which hands them to the operator's
//! [`Output`]; the other hooks of the same trait (watermarks, timers, end of input,
//! checkpoints) have defaults. How operators are fused into chains and called (guarded, so that a
//! panic names the operator and subtask) is the runtime's business (`crate::runtime::chain`);
//! this layer knows nothing of tasks, channels or graphs.
//!
//! One operator per file: [`map`], [`flat_map`], [`filter`], [`keyed_aggregate`],
//! [`keyed_process`] (with [`keyed_process_function`] for timers), [`keyed_join`],
//! [`interval_join`], [`co_map`], [`union`], [`sink`], [`timestamps`] (with
//! [`watermark_strategy`]), and [`window`] (assigners, triggers, the window operator).
//!
//! Layer 3 of 12, beside `checkpoint`: depends on `types` and `state` only (the layers are
//! listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_state as state;
use hummer_types::{self as types, error};

pub mod co_map;
mod collector;
mod context;
pub mod filter;
pub mod flat_map;
pub mod interval_join;
pub mod keyed_aggregate;
pub mod keyed_join;
pub mod keyed_process;
pub mod keyed_process_function;
mod keyed_timers;
pub mod map;
mod operator;
pub mod output;
pub mod sink;
pub mod timestamps;
pub mod union;
pub mod watermark_strategy;
pub mod window;

pub use collector::Collector;
pub use context::OperatorContext;
pub use keyed_timers::TimeDomain;
pub use operator::{Batch, Checkpointed, Drain, EitherBatch, Inputs, Operator};
pub use output::{Control, Discard, Output, VecOutput};
pub use watermark_strategy::{WatermarkGenerator, WatermarkOutput, WatermarkStrategy};

/// Test support: a disk tier that keeps `entries` entries of a table in memory (its own
/// directory, removed with it), and the counters of the subtask it is given to.
#[cfg(test)]
pub(crate) fn test_tier(
    entries: usize,
) -> (
    crate::state::disk_tier::TierUse,
    std::sync::Arc<crate::types::metrics::SubtaskMetrics>,
) {
    use crate::state::disk_tier::{Budget, DiskTier, TierUse};
    let counters = std::sync::Arc::new(crate::types::metrics::SubtaskMetrics::default());
    let tier = TierUse {
        tier: DiskTier::new(Budget::Entries(entries), None).expect("a tier"),
        max_parallelism: 128,
        counters: counters.clone(),
    };
    (tier, counters)
}

/// Test support: asserts that a table with room for 16 entries (a [`test_tier`]) holds most
/// of `all` entries on disk: at most 17 in memory (a new key joins after the table made
/// room, one over its limit).
#[cfg(test)]
pub(crate) fn assert_mostly_on_disk(all: usize, in_memory: usize) {
    assert!(
        all > 900 && in_memory <= 17,
        "{all} keys, {in_memory} in memory"
    );
}

/// Test support: runs `fire` (the final watermark, which fires every timer left) and
/// asserts that it read no key back from disk one by one (the subtask's `counters`).
#[cfg(test)]
pub(crate) fn fires_without_read_backs<R>(
    counters: &crate::types::metrics::SubtaskMetrics,
    fire: impl FnOnce() -> R,
) -> R {
    use std::sync::atomic::Ordering;
    let hits = || counters.state.disk_hits.load(Ordering::Relaxed);
    let before = hits();
    let fired = fire();
    assert_eq!(
        hits(),
        before,
        "the final watermark read keys back one by one"
    );
    fired
}

/// Test support: the context of subtask 0 of 1 of an operator called `name`.
#[cfg(test)]
pub(crate) fn test_context(name: &str) -> OperatorContext {
    OperatorContext {
        name: name.into(),
        subtask: 0,
        parallelism: 1,
        max_parallelism: 128,
        mode: crate::types::RuntimeMode::Streaming,
        batch_size: 64,
        node: 0,
        checkpointing: false,
        time: Default::default(),
        auto_watermark_interval: std::time::Duration::from_millis(200),
        metrics: Default::default(),
        disk_tier: None,
    }
}
