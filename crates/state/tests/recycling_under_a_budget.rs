//! Under a memory budget for state, the snapshot buffers of past checkpoints are kept only
//! up to a share of the budget. (A test process of its own: the limit is the process's.)

use hummer_state::disk_tier::{Budget, DiskTier};
use hummer_state::snapshot::{SnapshotBuffer, recycle};

/// The capacity of the buffer a snapshot of about `len` bytes is written into: that of a
/// buffer given back, or a new one's (with room to grow into, several times `len`).
fn written_into(len: usize) -> usize {
    SnapshotBuffer::default()
        .write_for(false, len, |out| {
            out.push(1);
            Ok(())
        })
        .expect("a snapshot")
        .capacity()
}

#[test]
fn a_budget_keeps_no_snapshot_buffer_larger_than_its_share() {
    let dir = tempfile::tempdir().expect("a directory");
    // A sixteenth of 64 MiB: 4 MiB of buffers may be kept.
    let _tier = DiskTier::new(Budget::Bytes(64 << 20), Some(dir.path())).expect("a tier");
    recycle(Vec::with_capacity(16 << 20));
    assert_ne!(
        written_into(10 << 20),
        16 << 20,
        "a buffer of 16 MiB was kept under a budget of 64 MiB"
    );
    recycle(Vec::with_capacity(2 << 20));
    assert_eq!(
        written_into(1 << 20),
        2 << 20,
        "a buffer within the share is reused"
    );
}
