//! The buffers snapshots are written into: sized from the last snapshot, and recycled across
//! checkpoints so that a large snapshot is not written into fresh pages each time.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Result;

/// Remembers how long an operator's last snapshots were, so that the next one is written into
/// a buffer with room for it at once: a snapshot of gigabytes grown by doubling would be copied
/// several times over, into fresh pages each time. The buffer is one given back by an earlier
/// checkpoint when there is one ([`recycle`]): its pages are resident already, where a fresh
/// one's must each be faulted in and zeroed by the kernel (which, with the copies, cost more
/// than the encoding itself). A whole snapshot is sized from the last whole one; a delta from
/// the larger of the last delta and the last whole snapshot (a delta sized from a small whole
/// snapshot taken early in the job grew by doubling at every checkpoint, and a first delta
/// sized from no delta at all would too).
#[derive(Debug, Default, Clone, Copy)]
pub struct SnapshotBuffer {
    pub(super) last_len: usize,
    pub(super) last_delta_len: usize,
}

impl SnapshotBuffer {
    /// The room a snapshot gets from the ones before it (0: there were none). Room reserved
    /// and not written costs nothing, so a delta gets room for the larger of the last delta
    /// and the last whole snapshot (its first delta after a whole one has no delta to go by).
    fn room(&self, delta: bool) -> usize {
        if delta {
            self.last_delta_len.max(self.last_len)
        } else {
            self.last_len
        }
    }

    /// `guess()` if the next snapshot (`delta` or whole) has none before it to be sized from,
    /// else 0: an estimate for [`SnapshotBuffer::write_for`] costs only the first snapshot.
    pub fn guess_if_first(&self, delta: bool, guess: impl FnOnce() -> usize) -> usize {
        if self.room(delta) == 0 { guess() } else { 0 }
    }

    /// Writes a whole snapshot (`delta` false) or a delta as [`SnapshotBuffer::write`] does,
    /// sized as the type says; the first one from `estimate`, the caller's guess at its
    /// length ([`SnapshotBuffer::guess_if_first`], [`KeyedTable::estimated_snapshot_bytes`]),
    /// so that it does not grow from nothing by doubling, copying what it holds into fresh
    /// pages each time.
    pub fn write_for(
        &mut self,
        delta: bool,
        estimate: usize,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    ) -> Result<Vec<u8>> {
        let room = match self.room(delta) {
            0 => estimate,
            room => room,
        };
        let mut out = take_buffer(room + room / 2 + 64);
        fill(&mut out)?;
        if delta {
            self.last_delta_len = out.len();
        } else {
            self.last_len = out.len();
        }
        Ok(out)
    }

    /// Runs `fill` on an empty buffer with room for a snapshot half again as large as the last,
    /// and remembers the length of what it wrote. (Room not written is only reserved: untouched
    /// pages cost nothing.)
    pub fn write(&mut self, fill: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<Vec<u8>> {
        self.write_for(false, 0, fill)
    }
}

/// Buffers smaller than this are not worth keeping.
pub(super) const RECYCLE_MIN: usize = 1 << 20;

/// Buffers kept at most. Each was a snapshot alive at the same time as the state it copied,
/// so keeping them never holds more memory than the checkpoints that wrote them did.
pub(super) const RECYCLE_MAX: usize = 64;

/// Snapshot buffers given back once their checkpoint was written, for the process's next
/// snapshots.
static RECYCLED: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// The most bytes of buffers kept (no limit unless [`limit_recycling`] set one).
static RECYCLED_BYTES_MAX: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Keeps at most `bytes` of snapshot buffers for later checkpoints, from now on: a process
/// with a memory budget for state (the disk tier sets it) cannot hold a past checkpoint's
/// gigabytes beside its state.
pub fn limit_recycling(bytes: u64) {
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    RECYCLED_BYTES_MAX.store(bytes, Ordering::Relaxed);
    let mut pool = RECYCLED.lock().unwrap_or_else(|p| p.into_inner());
    pool.clear();
}

/// Gives a snapshot buffer back once its bytes are written (or sent), for a later snapshot.
pub fn recycle(mut buffer: Vec<u8>) {
    if buffer.capacity() < RECYCLE_MIN {
        return;
    }
    buffer.clear();
    let mut pool = RECYCLED.lock().unwrap_or_else(|p| p.into_inner());
    let kept: usize = pool.iter().map(Vec::capacity).sum();
    let room = RECYCLED_BYTES_MAX.load(Ordering::Relaxed);
    if pool.len() < RECYCLE_MAX && kept.saturating_add(buffer.capacity()) <= room {
        pool.push(buffer);
    }
}

/// An empty buffer of at least `capacity`: for a large snapshot, the smallest recycled one
/// that is large enough. Failing that, a new one with room to grow into (reserved, not
/// touched), and the largest recycled buffer that was too small is let go: growing it would
/// copy all it ever held, and keeping it would hold memory no snapshot uses.
pub(super) fn take_buffer(capacity: usize) -> Vec<u8> {
    if capacity < RECYCLE_MIN / 2 {
        return Vec::with_capacity(capacity);
    }
    let mut pool = RECYCLED.lock().unwrap_or_else(|p| p.into_inner());
    let fits = pool
        .iter()
        .enumerate()
        .filter(|(_, b)| b.capacity() >= capacity)
        .min_by_key(|(_, b)| b.capacity())
        .map(|(i, _)| i);
    if let Some(i) = fits {
        return pool.swap_remove(i);
    }
    let outgrown = pool
        .iter()
        .enumerate()
        .max_by_key(|(_, b)| b.capacity())
        .map(|(i, _)| i);
    if let Some(i) = outgrown {
        drop(pool.swap_remove(i));
    }
    drop(pool);
    // Address space only: the pages a snapshot never writes are never touched. The headroom
    // lets the buffer serve later, larger snapshots once recycled, whose pages up to its last
    // length are then resident already; where the address space is refused, the room asked.
    let mut buffer = Vec::new();
    if buffer
        .try_reserve_exact(capacity.saturating_mul(HEADROOM))
        .is_err()
    {
        buffer.reserve_exact(capacity);
    }
    buffer
}

/// How many times the room a snapshot asked for a new large buffer reserves.
pub(super) const HEADROOM: usize = 4;
