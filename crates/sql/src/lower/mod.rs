//! Lowering: a plan's nodes as Hummer's own operators, one file per operator (the planner
//! that builds the plan from a query comes with issue 31's next steps).

pub mod calc;
pub mod group_aggregate;
pub mod join;
pub mod per_key;
pub mod rank;

pub use calc::Calc;
