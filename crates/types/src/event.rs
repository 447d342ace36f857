//! What travels through a channel between two subtasks.

use crate::{CheckpointId, Timestamp, WatermarkStatus};

/// An event of a channel: records in batches, and the control events that keep their place
/// among them.
#[derive(Debug)]
pub enum StreamEvent<T> {
    /// A batch of records, in order.
    Batch(Vec<T>),
    /// A batch of records with their event timestamps: `timestamps[i]` is `records[i]`'s
    /// ([`crate::NO_TIMESTAMP`] where a record has none). Streams without event time
    /// send plain [`StreamEvent::Batch`]es and pay nothing for timestamps.
    Stamped(Vec<T>, Vec<Timestamp>),
    /// A checkpoint barrier: every record before it belongs to checkpoint `id`'s snapshot,
    /// every record after it to a later one.
    Barrier(CheckpointId),
    /// The producer's watermark: no record with a timestamp at or below it follows on this
    /// channel.
    Watermark(Timestamp),
    /// The producer became idle or active again (see [`WatermarkStatus`]).
    Status(WatermarkStatus),
    /// The producer has no more records: end of a bounded input.
    EndOfInput,
}
