//! Built-in jobs, written against the public API only. The `hummer` command line runs them;
//! the programs under `examples/` call the same code.
//!
//! Layer 14 of 15: built on the public API only (see `crate::types`).

pub mod corpus;
pub mod event_count;
pub mod kafka_count;
pub mod latency;
pub mod nexmark;
pub mod window_count;
pub mod wordcount;
pub mod words;
