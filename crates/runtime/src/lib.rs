//! The tasks: what one subtask thread runs.
//!
//! * [`task`]: the loop of a subtask thread (source, one-input or two-input head): inputs,
//!   flushing, parking, barrier alignment and acknowledgements.
//! * [`chain`]: operators fused into one task, calling each other through [`crate::operators::Output`].
//! * [`record_writer`]: the end of a chain: partitions records into the channels of a shuffle.
//! * [`factory`]: how a graph node becomes a running operator instance.
//! * [`type_ops`]: the typed glue that the type-erased graph uses to build all of the above.
//! * [`watermark_valve`]: a task's watermark as the minimum over its input channels.
//! * `source_splits`: the splits a source subtask reads, each with its own watermark.
//!
//! Layer 5 of 12: below `graph` and `execution`; depends on `types`, `state`, `channels`,
//! `checkpoint`, `operators` and `connectors` only (the layers are listed in
//! `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_channels as channels;
use hummer_checkpoint as checkpoint;
use hummer_connectors as connectors;
use hummer_operators as operators;
use hummer_state as state;
use hummer_types::{self as types, error};

pub(crate) mod chain;
pub mod factory;
pub mod record_writer;
pub(crate) mod source_splits;
pub mod task;
pub mod type_ops;
pub(crate) mod watermark_valve;
