//! Core types: what every layer of the engine speaks.
//!
//! Records ([`Data`], [`Key`]), identifiers ([`NodeId`], [`CheckpointId`]), event time
//! ([`Timestamp`], watermarks), the [`RuntimeMode`], how an edge distributes records ([`Partitioning`]), what travels through a
//! channel ([`StreamEvent`]), cancellation ([`CancelToken`]), the wake-ups of task threads
//! ([`TaskWaker`]) and the counters tasks keep ([`metrics`]).
//!
//! Layer 2 of 15, the bottom one with `error`: it imports nothing of the crate but
//! [`crate::error`]. The layers
//! above it, each importing only from the ones before it (checked by `tests/layering.rs`):
//! `error`, `types` → `state` → `checkpoint` → `scheduler` → `operators` → `connectors` →
//! `channels` → `runtime` → `graph` → `execution` → `cluster` → `api` → `jobs` → `image`.

mod cancel;
mod clock;
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
pub use data::{Data, Key};
pub use event::StreamEvent;
pub use ids::{CheckpointId, NodeId};
pub use mode::RuntimeMode;
pub use partitioning::{BatchRouter, Partitioning};
pub use time::{MAX_WATERMARK, MIN_WATERMARK, NO_TIMESTAMP, Timestamp, WatermarkStatus};
pub use topology::{JobTopology, TopologyEdge};
pub use waker::{PARK_SAFETY_TIMEOUT, TaskWaker};
pub use watermark_alignment::{AlignmentGroup, AlignmentMember};
