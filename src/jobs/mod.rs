//! Built-in jobs, written against the public API only. The `hummer` command line runs them;
//! the programs under `examples/` call the same code.
//!
//! Layer 11 of 11, the top: built on the public API only (`api`, and the public items of
//! `connectors`, `operators`, `state` and `types`; the layers are listed in `crate::types`).

pub mod corpus;
pub mod event_count;
pub mod kafka_count;
pub mod latency;
pub mod nexmark;
pub mod window_count;
pub mod wordcount;
pub mod words;
