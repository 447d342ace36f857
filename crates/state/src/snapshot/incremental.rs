//! When a table's checkpoint is a delta and when it must be full.
//!
//! Restoring a delta needs every snapshot back to the last full one, so the chain is kept
//! short, and a delta is only worth it when most entries did not change.

use crate::keyed_table::{ChangeLog, Taken};

/// Deltas on one full snapshot, at most: a restore reads them all.
pub const MAX_CHAIN: u32 = 16;
/// Snapshots taken since the base without completing: past this, the base is taken to
/// be lost (its checkpoint may have been dropped) and a full snapshot starts afresh.
pub const MAX_PENDING: usize = 4;

/// What the decision for one table's next snapshot goes by.
#[derive(Debug, Clone, Copy)]
pub struct ChangeSummary {
    /// The completed snapshot a delta would build on.
    pub(crate) base: Option<Taken>,
    /// Snapshots taken since the base that did not complete.
    pub(crate) pending: usize,
    /// Entries a delta would write whole.
    pub changed: u64,
    /// Entries the table holds.
    pub live: usize,
}

impl ChangeLog {
    /// The summary of a table of `live` entries whose delta writes `changed` entries whole
    /// ([`ChangeLog::changed_since_base`] for most tables; fewer for tables whose values
    /// write their own changes as small patches, see [`ChangeLog::rewritten`]).
    pub fn summary(&self, live: usize, changed: u64) -> ChangeSummary {
        ChangeSummary {
            base: self.base,
            pending: self.pending(),
            changed,
            live,
        }
    }
}

/// Whether the next snapshot of an operator's tables may be a delta: every table has a
/// completed base, all of the same checkpoint; the chain is below its limit; fewer than
/// [`MAX_PENDING`] snapshots since the base went uncompleted; and at most half of the
/// entries changed (else a delta would be about as large as a full snapshot).
pub fn delta_possible(tables: &[ChangeSummary]) -> bool {
    let mut base = None;
    let (mut changed, mut live) = (0u64, 0u64);
    for table in tables {
        let Some(b) = table.base else {
            return false;
        };
        if *base.get_or_insert(b.checkpoint) != b.checkpoint
            || b.chain + 1 > MAX_CHAIN
            || table.pending >= MAX_PENDING
        {
            return false;
        }
        changed += table.changed;
        live += table.live as u64;
    }
    base.is_some() && changed.saturating_mul(2) <= live
}
