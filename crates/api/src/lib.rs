//! The DataStream API: what a job program is written against.
//!
//! A program creates a [`StreamExecutionEnvironment`], reads sources into [`DataStream`]s,
//! transforms them (`map`, `flat_map`, `filter`, `key_by` -> [`KeyedStream`] aggregations,
//! `union`, `connect` -> [`ConnectedStreams`], keyed joins), adds sinks and calls
//! [`StreamExecutionEnvironment::execute`]. Each call adds a node to the environment's stream
//! graph; nothing runs before `execute`.
//!
//! Layer 9 of 11: builds jobs and hands them to an executor; above `cluster` and `execution`,
//! below `jobs` (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The crates of the layers below, under the module names the code calls them by
// (`crate::state::KeyedTable`): each layer is a crate, so the compiler keeps the
// imports pointing down (docs/architecture.md).
#[allow(unused_imports)]
use hummer_channels as channels;
#[allow(unused_imports)]
use hummer_checkpoint as checkpoint;
#[allow(unused_imports)]
use hummer_cluster as cluster;
#[allow(unused_imports)]
use hummer_connectors as connectors;
#[allow(unused_imports)]
use hummer_execution as execution;
#[allow(unused_imports)]
use hummer_graph as graph;
#[allow(unused_imports)]
use hummer_operators as operators;
#[allow(unused_imports)]
use hummer_runtime as runtime;
#[allow(unused_imports)]
use hummer_scheduler as scheduler;
#[allow(unused_imports)]
use hummer_state as state;
#[allow(unused_imports)]
use hummer_types::{self as types, error};

mod config;
mod connected_streams;
mod data_stream;
mod environment;
mod job_client;
mod job_result;
mod joins;
mod keyed_stream;
mod windowed_stream;

pub use crate::types::RuntimeMode;
pub use config::ExecutionConfig;
pub use connected_streams::ConnectedStreams;
pub use data_stream::{DataStream, DataStreamSink};
pub use environment::StreamExecutionEnvironment;
pub use job_client::JobClient;
pub use job_result::JobResult;
pub use joins::{
    IntervalJoinBuilder, IntervalJoined, JoinEqual, JoinSide, JoinWhere, JoinWindowed,
    JoinedStreams,
};
pub use keyed_stream::KeyedStream;
pub use windowed_stream::{AllWindowedStream, OutputTag, WindowedStream};
