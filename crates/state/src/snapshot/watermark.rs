//! The watermark an event-time operator checkpoints with its keyed state, and how it is
//! restored at any parallelism.

use std::hash::Hash;
use std::ops::Range;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::types::{MIN_WATERMARK, Timestamp};

use super::buffers::SnapshotBuffer;
use super::decode_checkpointed;
use super::format::*;

/// The watermark an event-time operator (windows, timers) has seen, checkpointed with its
/// keyed state so that a restored job neither fires early nor drops as late what was on time.
#[derive(Debug, Clone, Copy)]
pub struct OperatorWatermark {
    current: Timestamp,
    restored: bool,
    /// While restoring: the minimum over the old subtasks restored before the last one.
    others: Timestamp,
    /// While restoring: the last old subtask's watermark (its newest piece's).
    last: Timestamp,
}

impl Default for OperatorWatermark {
    fn default() -> Self {
        OperatorWatermark {
            current: MIN_WATERMARK,
            restored: false,
            others: Timestamp::MAX,
            last: Timestamp::MAX,
        }
    }
}

impl OperatorWatermark {
    /// The current watermark.
    #[inline]
    pub fn get(&self) -> Timestamp {
        self.current
    }

    /// Moves to `watermark` if it is ahead; never goes back.
    pub fn advance(&mut self, watermark: Timestamp) {
        self.current = self.current.max(watermark);
    }

    /// Takes a restored subtask's watermark: after a restore the operator starts at the
    /// minimum over the old subtasks whose state it took (at a new parallelism a subtask may
    /// hold keys of several), which every record it now sees was judged against before.
    pub fn restore(&mut self, watermark: Timestamp) {
        self.restore_piece(watermark, false);
    }

    /// Takes the watermark of one piece of a restored subtask's state: a whole snapshot starts
    /// another old subtask; a delta, the next piece of the same one, replaces its watermark
    /// (the state it completes was snapshotted at that later watermark).
    pub fn restore_piece(&mut self, watermark: Timestamp, delta: bool) {
        if !delta && self.restored {
            self.others = self.others.min(self.last);
        }
        self.last = watermark;
        self.restored = true;
        self.current = self.others.min(self.last);
    }
}

/// Writes keyed state (as [`write_snapshot`]) with the operator's watermark, into a buffer
/// sized by `buffer`.
pub fn write_with_watermark<'a, K, V>(
    watermark: &OperatorWatermark,
    entries: impl Iterator<Item = (&'a K, &'a V)>,
    max_parallelism: usize,
    buffer: &mut SnapshotBuffer,
) -> Result<Vec<u8>>
where
    K: Hash + Serialize + 'a,
    V: Serialize + 'a,
{
    buffer.write(|out| append_snapshot(out, entries, max_parallelism, watermark.get()))
}

/// Reads what [`write_with_watermark`] wrote: restores the watermark into `watermark` and
/// hands the entries of `key_groups` to `keep`. (Earlier builds wrote the watermark and a
/// version-1 snapshot as a postcard pair; that is read too.)
pub fn read_with_watermark<K: DeserializeOwned, V: DeserializeOwned>(
    snapshot: &[u8],
    key_groups: Range<usize>,
    what: &str,
    watermark: &mut OperatorWatermark,
    keep: impl FnMut(K, V),
) -> Result<()> {
    if !is_snapshot(snapshot) {
        let (w, keyed): (Timestamp, Vec<u8>) = decode_checkpointed(what, snapshot)?;
        read_snapshot(&keyed, key_groups, what, keep)?;
        watermark.restore(w);
        return Ok(());
    }
    let [table] = read_tables(snapshot, what)?;
    table.entries(&key_groups, what, keep)?;
    watermark.restore(table.watermark);
    Ok(())
}
