//! The DataStream API: what a job program is written against.
//!
//! A program creates a [`StreamExecutionEnvironment`], reads sources into [`DataStream`]s,
//! transforms them (`map`, `flat_map`, `filter`, `key_by` -> [`KeyedStream`] aggregations,
//! `union`, `connect` -> [`ConnectedStreams`], keyed joins), adds sinks and calls
//! [`StreamExecutionEnvironment::execute`]. Each call adds a node to the environment's stream
//! graph; nothing runs before `execute`.
//!
//! Layer 9 of 12: builds jobs and hands them to an executor; above `cluster` and `execution`,
//! below `jobs` (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_channels as channels;
use hummer_checkpoint as checkpoint;
use hummer_cluster as cluster;
use hummer_connectors as connectors;
use hummer_execution as execution;
use hummer_graph as graph;
use hummer_operators as operators;
use hummer_runtime as runtime;
use hummer_state as state;
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

/// What the API asks of a user's function or key selector besides its signature: every
/// subtask runs a clone of it, on a task thread of its own (`Clone + Send + Sync + 'static`).
pub trait UserFn: Clone + Send + Sync + 'static {}

impl<F: Clone + Send + Sync + 'static> UserFn for F {}

pub use crate::runtime::factory::MakeOperator;
