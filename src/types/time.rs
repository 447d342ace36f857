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
