//! What travels through a channel between two subtasks.

use crate::types::{CheckpointId, Timestamp, WatermarkStatus};

/// An event of a channel: records in batches, and the control events that keep their place
/// among them.
#[derive(Debug)]
pub enum StreamEvent<T> {
    /// A batch of records, in order.
    Batch(Vec<T>),
    /// A checkpoint barrier: every record before it belongs to checkpoint `id`'s snapshot,
    /// every record after it to a later one.
    Barrier(CheckpointId),
    /// The producer's watermark: no record with a timestamp below it follows on this channel.
    Watermark(Timestamp),
    /// The producer became idle or active again (see [`WatermarkStatus`]).
    Status(WatermarkStatus),
    /// The producer has no more records: end of a bounded input.
    EndOfInput,
}
