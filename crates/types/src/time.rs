//! Event time: timestamps and watermarks.
//!
//! A timestamp is milliseconds since the Unix epoch, as in Flink. A watermark `w` on a stream
//! says, as Flink's does, that no record with a timestamp at or below `w` follows it (so an
//! event-time window `[start, end)` is complete once the watermark reaches `end - 1`); it
//! only ever moves forward.

/// Milliseconds since the Unix epoch.
pub type Timestamp = i64;

/// The timestamp of a record that has none (Flink's `Long.MIN_VALUE` marker): records of a
/// stream without event time, or made where no timestamp was assigned.
pub const NO_TIMESTAMP: Timestamp = Timestamp::MIN;

/// The watermark before any is known: everything may still come.
pub const MIN_WATERMARK: Timestamp = Timestamp::MIN;

/// The watermark at the end of a bounded input: nothing follows.
pub const MAX_WATERMARK: Timestamp = Timestamp::MAX;

/// Whether a stream currently holds watermarks back (Flink's `WatermarkStatus`).
///
/// An idle stream (a source split with no data for a while, a task all of whose inputs are
/// idle) does not hold back the watermark of the tasks it feeds; it becomes active again
/// before it sends records or watermarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WatermarkStatus {
    /// Records and watermarks flow; the stream's watermark counts.
    Active,
    /// Nothing flows for now; the stream's watermark does not hold others back.
    Idle,
}
