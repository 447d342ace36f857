//! Built-in jobs, written against the public API only. The `hummer` command line runs them;
//! the programs under `examples/` call the same code.

pub mod corpus;
pub mod event_count;
pub mod latency;
pub mod wordcount;
pub mod words;
