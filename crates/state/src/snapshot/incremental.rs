//! When a table's checkpoint is a delta and when it must be full.
//!
//! Restoring a delta needs every snapshot back to the last full one, so the chain is kept
//! short, and a delta is only worth it when most entries did not change.

use crate::keyed_table::ChangeLog;

/// Deltas on one full snapshot, at most: a restore reads them all.
pub const MAX_CHAIN: u32 = 16;
/// Snapshots taken since the base without completing: past this, the base is taken to
/// be lost (its checkpoint may have been dropped) and a full snapshot starts afresh.
pub const MAX_PENDING: usize = 4;

/// Whether the next snapshot of an operator's tables (each with its change log and
/// number of entries) may be a delta: every table has a completed base, all of the same
/// checkpoint; the chain is below its limit; fewer than [`MAX_PENDING`] snapshots since
/// the base went uncompleted; and at most half of the entries changed (else a delta would
/// be about as large as a full snapshot).
pub fn delta_possible(tables: &[(&ChangeLog, usize)]) -> bool {
    delta_possible_by(tables, ChangeLog::changed_since_base)
}

/// [`delta_possible`] with the entries a delta would write whole counted by `changed`
/// (for tables whose changed values are mostly written as small patches, the entries
/// that are not).
pub fn delta_possible_by(
    tables: &[(&ChangeLog, usize)],
    changed_of: fn(&ChangeLog) -> u64,
) -> bool {
    let mut base = None;
    let (mut changed, mut live) = (0u64, 0u64);
    for (changes, len) in tables {
        let Some(b) = changes.base else {
            return false;
        };
        if *base.get_or_insert(b.checkpoint) != b.checkpoint
            || b.chain + 1 > MAX_CHAIN
            || changes.pending() >= MAX_PENDING
        {
            return false;
        }
        changed += changed_of(changes);
        live += *len as u64;
    }
    base.is_some() && changed.saturating_mul(2) <= live
}
