//! Core types: what every layer of the engine speaks.
//!
//! Records ([`Data`], [`Key`]), identifiers ([`NodeId`], [`CheckpointId`]), event time
//! ([`Timestamp`], watermarks), processing time ([`Clock`], [`ProcessingTimeService`]), the
//! [`RuntimeMode`], how an edge distributes records ([`Partitioning`]), what travels through a
//! channel ([`StreamEvent`]), cancellation ([`CancelToken`]), the wake-ups of task threads
//! ([`TaskWaker`]), watermark alignment groups ([`AlignmentGroup`]), a job's shape as
//! monitoring shows it ([`JobTopology`]), the counters tasks keep ([`metrics`]) and the
//! process's one TLS crypto provider ([`crypto`]).
//!
//! Layer 1 of 12, the bottom: depends on no other crate of the workspace. Each layer is a
//! crate, so Cargo refuses an import against the order; `tests/layering.rs` lists the layers
//! and `docs/architecture.md` draws them.

#![warn(missing_docs)]

pub mod error;
pub use error::{HummerError, Result};

mod cancel;
mod clock;
pub mod crypto;
mod data;
mod event;
mod ids;
pub mod metrics;
mod mode;
mod partitioning;
mod time;
pub mod topology;
mod waker;
mod watermark_alignment;

pub use cancel::CancelToken;
pub use clock::{Clock, ManualClock, ProcessingTimeService, SystemClock, epoch_ms};
pub use data::{Data, Key, KeySelector};
pub use event::StreamEvent;
pub use ids::{CheckpointId, NodeId};
pub use mode::RuntimeMode;
pub use partitioning::{BatchRouter, Partitioning};
pub use time::{MAX_WATERMARK, MIN_WATERMARK, NO_TIMESTAMP, Timestamp, WatermarkStatus};
pub use topology::{JobTopology, TopologyEdge};
pub use waker::{PARK_SAFETY_TIMEOUT, TaskWaker};
pub use watermark_alignment::{AlignmentGroup, AlignmentMember};
