//! Keyed state: key groups, snapshots, and the per-key state handles given to user functions
//! ([`ValueState`], [`ListState`], [`MapState`]). All of it is kept in memory per key group
//! and checkpointed with the job, so it is restored after a failure, also at another
//! parallelism.
//!
//! Layer 3 of 15: imports only `error` and `types` (see `crate::types`).

mod grow_set;
pub mod key_groups;
pub mod keyed_table;
mod list_state;
mod map_state;
mod prefetch;
pub mod snapshot;
pub mod task_state;
pub mod timer_queue;
mod value_state;

pub use grow_set::GrowSet;
pub use keyed_table::SnapshotEpochs;
pub use list_state::ListState;
pub use map_state::MapState;
pub use value_state::ValueState;
