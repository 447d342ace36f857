//! Keyed state: key groups, snapshots, and the per-key state handles given to user functions
//! ([`ValueState`], [`ListState`], [`MapState`]). All of it is kept in memory per key group
//! and checkpointed with the job, so it is restored after a failure, also at another
//! parallelism.
//!
//! * [`declared`]: the state an operator declares (its tables and watermark) and the one
//!   place that snapshots, restores and redistributes it.
//! * [`disk_tier`]: with a memory budget for state, the cold entries of keyed tables on
//!   local disk (an embedded LSM tree), read back when their key comes again.
//! * [`key_groups`]: keys to key groups, key groups to subtasks.
//! * [`keyed_table`]: the per-subtask table from key to state that keyed operators fold
//!   batches into, snapshotted whole or as a delta.
//! * [`snapshot`]: the snapshot format of keyed state (versioned, checksummed, every entry
//!   tagged with its key group), one file per job: `format`, `buffers` (sized and recycled),
//!   `incremental` (when a snapshot may be a delta), `table` (a keyed table's snapshots and
//!   restores), `watermark` (an operator's checkpointed watermark).
//! * [`task_state`]: what a task hands the coordinator at a barrier, and what it gets back on a
//!   restore.
//! * [`timer_queue`]: timers of keyed operators, per time domain, earliest first.
//! * [`UnionList`]: operator state that belongs to no key, restored whole on every subtask.
//! * [`TopN`]: a bounded top-N of one key's entries, packed in one allocation.
//! * The state handles of user functions: [`ValueState`], [`ListState`], [`MapState`]; and
//!   [`GrowSet`], a set that only grows, checkpointed as what was added since.
//! * `prefetch` (private): prefetching entries' heap data ahead of their encoding.
//!
//! Layer 2 of 12, beside `scheduler`, `image` and `channels`: depends on `types` only (the
//! layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_types::{self as types, error};

pub mod declared;
pub mod disk_tier;
mod grow_set;
pub mod key_groups;
pub mod keyed_table;
mod list_state;
mod map_state;
mod prefetch;
pub mod snapshot;
pub mod task_state;
pub mod timer_queue;
mod top_n;
mod union_list;
mod value_state;

pub use grow_set::GrowSet;
pub use keyed_table::SnapshotEpochs;
pub use list_state::ListState;
pub use map_state::MapState;
pub use top_n::{Ranking, TopN};
pub use union_list::UnionList;
pub use value_state::ValueState;
