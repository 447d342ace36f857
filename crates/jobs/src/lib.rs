//! Built-in jobs, written against the public API only. The `hummer` command line runs them;
//! the programs under `examples/` call the same code.
//!
//! Layer 10 of 11, below only the `hummer` facade and its binary: built on the public API
//! (`api`, and the public items of `connectors`, `operators`, `state` and `types`; the layers
//! are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The crates of the layers below, under the module names the code calls them by
// (`crate::state::KeyedTable`): each layer is a crate, so the compiler keeps the
// imports pointing down (docs/architecture.md).
#[allow(unused_imports)]
use hummer_api as api;
#[allow(unused_imports)]
use hummer_connectors as connectors;
#[allow(unused_imports)]
use hummer_operators as operators;
#[allow(unused_imports)]
use hummer_state as state;
#[allow(unused_imports)]
use hummer_types::{self as types, error};

pub mod corpus;
pub mod event_count;
pub mod kafka_count;
pub mod latency;
pub mod nexmark;
pub mod window_count;
pub mod wordcount;
pub mod words;
