//! # Hummer
//!
//! A distributed stream processing engine in the Dataflow model. A job is a Rust program
//! written against the DataStream API ([`api`]); it is translated into a stream graph, fused
//! into chains ([`graph`]) and run by the [`runtime`] over batched lock-free channels, in
//! batch mode (bounded input, final results) or streaming mode (updates as records arrive).
//!
//! ```
//! use hummer::jobs::wordcount::{Word, Words};
//! use hummer::prelude::*;
//!
//! let env = StreamExecutionEnvironment::local();
//! let counts = env
//!     .from_collection(vec!["To be, or not to be".to_string()])
//!     .flat_map(Words::new)
//!     .key_by(|w: &Word| w.clone())
//!     .count()
//!     .collect();
//! let mut result = env.execute("wordcount").unwrap();
//! let mut counts = result.collected(&counts).unwrap();
//! counts.sort();
//! assert_eq!(counts[0], (Word::from("be"), 2));
//! ```
//!
//! The modules, lowest layer first. A module imports only from lower layers; modules of one
//! layer do not import each other (checked by `tests/layering.rs`). `docs/architecture.md` is
//! a map of the code.
//!
//! * 1 [`error`]: [`HummerError`], the one error type of the crate.
//! * 2 [`types`]: records, ids, event time, the events of a channel, cancellation, wake-ups.
//! * 2 [`scheduler`]: placement of subtasks on TaskManager slots (round-robin, RFTS, ...).
//! * 2 [`image`]: a job binary packed as a bootable VM image, and booted with qemu.
//! * 3 [`state`]: key groups, keyed state tables and handles, timers, the snapshot format.
//! * 3 [`channels`]: memory rings, network channels with credits, mutual TLS.
//! * 4 [`checkpoint`]: the checkpoint coordinator, barrier alignment, checkpoint storage.
//! * 4 [`operators`]: the operator contract and the built-in operators, windows included.
//! * 5 [`connectors`]: sources and sinks (collections, files, sockets, generators, Kafka).
//! * 6 [`runtime`]: what a subtask thread runs: task loops, fused chains, record writers.
//! * 7 [`graph`]: StreamGraph -> JobGraph (fused chains) -> ExecutionGraph (subtasks).
//! * 8 [`execution`]: executors (local, supervised) and the job controller's state machine.
//! * 9 [`cluster`]: JobManager, TaskManager, worker processes, client, high availability.
//! * 10 [`api`]: the DataStream API that job programs are written against.
//! * 11 [`jobs`]: built-in jobs (WordCount, EventCount, Nexmark, ...) on the public API.
//! * 12 [`sql`]: Flink SQL scripts: statements, the DDL, the session (`hummer sql`).

#![warn(missing_docs)]

pub use hummer_api as api;
pub use hummer_channels as channels;
pub use hummer_checkpoint as checkpoint;
pub use hummer_cluster as cluster;
pub use hummer_connectors as connectors;
pub use hummer_execution as execution;
pub use hummer_graph as graph;
pub use hummer_image as image;
pub use hummer_jobs as jobs;
pub use hummer_operators as operators;
pub use hummer_runtime as runtime;
pub use hummer_scheduler as scheduler;
pub use hummer_sql as sql;
pub use hummer_state as state;
pub use hummer_types as types;
pub use hummer_types::error;

pub use error::{HummerError, Result};

/// Everything a job program needs: `use hummer::prelude::*;`.
pub mod prelude {
    pub use crate::api::{
        AllWindowedStream, ConnectedStreams, DataStream, DataStreamSink, ExecutionConfig,
        JobClient, JobResult, KeyedStream, OutputTag, RuntimeMode, StreamExecutionEnvironment,
        WindowedStream,
    };
    pub use crate::connectors::collect::CollectHandle;
    pub use crate::connectors::generator::GeneratorSource;
    pub use crate::connectors::{Source, SourceContext, SourceReader, SourceStatus};
    pub use crate::error::{HummerError, Result};
    pub use crate::operators::sink::{Sink, SinkWriter};
    pub use crate::operators::window::{
        AggregateFunction, CountAggregate, CountTrigger, EventTimeSessionWindows, GlobalWindows,
        ProcessingTimeSessionWindows, PurgingTrigger, SlidingEventTimeWindows,
        SlidingProcessingTimeWindows, TimeWindow, Trigger, TriggerResult, TumblingEventTimeWindows,
        TumblingProcessingTimeWindows, WindowResult,
    };
    pub use crate::operators::{Collector, WatermarkGenerator, WatermarkOutput, WatermarkStrategy};
    pub use crate::state::{ListState, MapState, ValueState};
    pub use crate::types::{Data, Key, ManualClock, Timestamp};
}

/// The README's code blocks, compiled as doctests so that they stay correct.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
