//! The snapshot format of keyed state: versioned, checksummed, every entry tagged with its key
//! group.
//!
//! A snapshot holds the entries of one keyed-state table, each with the key group of its key,
//! so that a restore can take exactly the key groups a subtask owns at the *new* parallelism:
//! state moves between subtasks in whole key groups and no key is split or lost.
//!
//! This build writes two versions:
//!
//! * **Version 2** ([`FORMAT_VERSION`]), a table's whole state: `b"HMRS"`, format version
//!   (`u16`), number of key groups (`u32`), the operator's watermark (`i64`), body length
//!   (`u64`), a checksum (`u64`) of the fields after the magic and of the body, then the body:
//!   one postcard `(key group, key, value)` after the other, in table order.
//! * **Version 3**, a delta for incremental checkpoints (see [`incremental`] for when one is
//!   written): the same header with the checkpoint id its base was taken in (`u64`) after
//!   the watermark ([`delta_base`] reads it), and a body of what changed since the base: first
//!   `(key group, key, None)` for every key removed, then `(key group, key, Some(value))` for
//!   every key changed or added (the value may be the operator's own patch of the key's
//!   state, such as a window's counts and timers without its unchanged accumulator). A restore
//!   reads a chain of deltas oldest first, each applied on what the ones before restored.
//!
//! * **Version 4**, the part of a table that was on disk when the snapshot was taken (see
//!   [`crate::disk_tier::ColdPart`]): written after the barrier, after all of the operator's
//!   tables, with the index of the table it belongs to where a delta has its base; its body
//!   holds the entries as the disk tier does (see `format::COLD_VERSION`). A restore loads it
//!   after the tables, so that it overrides what their chain holds for its keys (each key
//!   was in memory or on disk at the barrier, not both).
//!
//! All integers of the header are big-endian. A snapshot knows its length, so an operator
//! with several tables (a join's two sides) writes them one after the other into one buffer.
//! Writing is one pass over the table into a buffer sized from the previous snapshot
//! ([`SnapshotBuffer`]): no grouping, no intermediate copy.
//!
//! A snapshot that is truncated, has another magic or version, or fails its checksum is
//! refused with a clear error; nothing of it is loaded. Version 1 (grouped entries, no length
//! or watermark, written by earlier builds) is still read.

mod buffers;
mod format;
pub mod incremental;
mod table;
mod watermark;

use serde::de::DeserializeOwned;

use crate::error::{HummerError, Result};

pub use buffers::{SnapshotBuffer, limit_recycling, recycle};
pub use format::{
    FORMAT_VERSION, TableSnapshot, append_snapshot, delta_base, is_snapshot, read_snapshot,
    read_snapshots, read_tables, write_snapshot,
};
pub(crate) use format::{close_table, open_cold_table};
pub use watermark::OperatorWatermark;

/// Decodes checkpointed bytes (a source's position, an operator's state) written with
/// postcard; the error names `what` was being restored.
pub fn decode_checkpointed<P: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<P> {
    postcard::from_bytes(bytes).map_err(|e| HummerError::BadInput {
        input: format!("checkpointed state of {what}"),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests;
