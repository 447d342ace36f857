//! Lowering: the plan's nodes as Hummer's own operators, one file per operator. The keyed
//! ones keep their state in tables the runtime owns ([`per_key`], or a keyed process
//! function's value and timers), so checkpoints, restore and rescaling cover them.

pub mod calc;
pub mod changelog_normalize;
pub mod final_table;
pub mod group_aggregate;
pub mod join;
pub mod limit;
pub mod lookup_join;
pub mod multiset;
pub mod over_aggregate;
pub mod per_key;
pub mod rank;
pub mod rowtime;
pub mod semi_join;
pub mod set_all;
pub mod sort_order;
pub mod temporal_join;
pub mod temporal_sort;
pub mod window_join;
pub mod window_rank;

pub use calc::Calc;

use hummer_operators::keyed_process_function::ProcessContext;

use crate::changelog::Change;
use crate::value::Row;

/// The context of a keyed process function of the plan: keyed by a row of the key's
/// columns, keeping `S` per key, emitting changes.
pub type RowContext<'a, 'b, S> = ProcessContext<'a, 'b, Row, S, Change>;
