//! Graph translation: StreamGraph -> JobGraph -> ExecutionGraph.
//!
//! * [`stream_graph`]: one node per API call; edges carry a partitioning.
//! * [`job_graph`]: operator fusion. Nodes linked by a forward edge with equal parallelism,
//!   where the downstream node has a single input, are fused into one chain (a job vertex);
//!   in batch mode keyed aggregations get a map-side combiner fused before their shuffle.
//! * [`execution_graph`]: every vertex expanded to its parallel subtasks and every edge to the
//!   channels between them.
//! * [`render`]: the three graphs as text, JSON and Graphviz DOT (`env.explain()`).
//!
//! Layer 6 of 12: above `runtime` (nodes carry the factories and typed glue that build tasks)
//! and `scheduler`, below `execution` (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_channels as channels;
use hummer_checkpoint as checkpoint;
use hummer_runtime as runtime;
use hummer_scheduler as scheduler;
use hummer_types::{self as types, error};

pub mod execution_graph;
pub mod job_graph;
pub mod render;
pub mod stream_graph;

pub use execution_graph::ExecutionGraph;
pub use job_graph::JobGraph;
pub use stream_graph::StreamGraph;
