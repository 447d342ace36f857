//! Keyed state: key groups and the per-key state handles given to user functions.

pub mod key_groups;
pub mod keyed_table;
pub mod snapshot;
mod value_state;

pub use value_state::ValueState;
