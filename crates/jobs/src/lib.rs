//! Built-in jobs, written against the public API only. The `hummer` command line runs them;
//! the programs under `examples/` call the same code.
//!
//! Layer 10 of 12, below only `sql` and the `hummer` facade and its binary: built on the public API
//! (`api`, and the public items of `connectors`, `operators`, `state` and `types`; the layers
//! are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_api as api;
use hummer_connectors as connectors;
use hummer_operators as operators;
use hummer_state as state;
use hummer_types::{self as types, error};

pub mod corpus;
pub mod event_count;
pub mod kafka_count;
pub mod latency;
pub mod nexmark;
pub mod window_count;
pub mod wordcount;
pub mod words;
