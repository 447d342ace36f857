//! Event time: timestamps and watermarks.
//!
//! A timestamp is milliseconds since the Unix epoch, as in Flink. A watermark `w` on a stream
//! says that no record with a timestamp below `w` follows it; it only ever moves forward.

/// Milliseconds since the Unix epoch.
pub type Timestamp = i64;

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
