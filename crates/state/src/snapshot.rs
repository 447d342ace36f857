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
//! All integers of the header are big-endian. A snapshot knows its length, so an operator
//! with several tables (a join's two sides) writes them one after the other into one buffer.
//! Writing is one pass over the table into a buffer sized from the previous snapshot
//! ([`SnapshotBuffer`]): no grouping, no intermediate copy.
//!
//! A snapshot that is truncated, has another magic or version, or fails its checksum is
//! refused with a clear error; nothing of it is loaded. Version 1 (grouped entries, no length
//! or watermark, written by earlier builds) is still read.

use std::hash::{BuildHasher, Hash};
use std::ops::Range;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{HummerError, Result, internal};
use crate::key_groups::{key_group_of_hash, key_hash};
use crate::keyed_table::{ChangeLog, KeyedTable, SnapshotEpochs};
use crate::prefetch::in_order_with_prefetch;
use crate::types::{CheckpointId, MIN_WATERMARK, Timestamp};

/// When a table's checkpoint is a delta and when it must be full.
///
/// Restoring a delta needs every snapshot back to the last full one, so the chain is kept
/// short, and a delta is only worth it when most entries did not change.
pub mod incremental {
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
}

/// Decodes checkpointed bytes (a source's position, an operator's state) written with
/// postcard; the error names `what` was being restored.
pub fn decode_checkpointed<P: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<P> {
    postcard::from_bytes(bytes).map_err(|e| HummerError::BadInput {
        input: format!("checkpointed state of {what}"),
        reason: e.to_string(),
    })
}

const MAGIC: &[u8; 4] = b"HMRS";
/// Version of the format written by this build.
pub const FORMAT_VERSION: u16 = 2;
/// The grouped format of earlier builds, still read.
const VERSION_1: u16 = 1;
const HEADER_V1: usize = 4 + 2 + 4 + 8;
const HEADER: usize = 4 + 2 + 4 + 8 + 8 + 8;
/// A delta on an earlier snapshot: version 2's header with the base's checkpoint id after the
/// watermark, and a body of the entries changed since the base (each replaces the key's entry).
const DELTA_VERSION: u16 = 3;
const HEADER_V3: usize = HEADER + 8;

/// Where a version-2 or -3 table's body length sits in its header, and the header's length
/// (a delta's header has its base's checkpoint id before the body length). `None`: another
/// version.
fn layout(version: u16) -> Option<(usize, usize)> {
    match version {
        FORMAT_VERSION => Some((18, HEADER)),
        DELTA_VERSION => Some((26, HEADER_V3)),
        _ => None,
    }
}

/// The big-endian `u64` at `at` (the caller has checked that 8 bytes are there).
fn be_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(b)
}

/// Checksum of the header fields and the body.
fn checksum(fields: &[u8], body: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = foldhash::fast::FixedState::with_seed(0x736e_6170_7368_6f74).build_hasher();
    h.write(fields);
    h.write(body);
    h.finish()
}

fn corrupt(what: &str, reason: String) -> HummerError {
    HummerError::BadInput {
        input: what.to_string(),
        reason,
    }
}

/// Whether `bytes` start like a snapshot of this module (rather than an operator's own
/// encoding of earlier builds).
pub fn is_snapshot(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

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
    last_len: usize,
    last_delta_len: usize,
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
const RECYCLE_MIN: usize = 1 << 20;

/// Buffers kept at most. Each was a snapshot alive at the same time as the state it copied,
/// so keeping them never holds more memory than the checkpoints that wrote them did.
const RECYCLE_MAX: usize = 64;

/// Snapshot buffers given back once their checkpoint was written, for the process's next
/// snapshots.
static RECYCLED: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// Gives a snapshot buffer back once its bytes are written (or sent), for a later snapshot.
pub fn recycle(mut buffer: Vec<u8>) {
    if buffer.capacity() < RECYCLE_MIN {
        return;
    }
    buffer.clear();
    let mut pool = RECYCLED.lock().unwrap_or_else(|p| p.into_inner());
    if pool.len() < RECYCLE_MAX {
        pool.push(buffer);
    }
}

/// An empty buffer of at least `capacity`: for a large snapshot, the smallest recycled one
/// that is large enough. Failing that, a new one with room to grow into (reserved, not
/// touched), and the largest recycled buffer that was too small is let go: growing it would
/// copy all it ever held, and keeping it would hold memory no snapshot uses.
fn take_buffer(capacity: usize) -> Vec<u8> {
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
const HEADROOM: usize = 4;

/// A postcard output that appends to a buffer in place.
struct AppendTo<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for AppendTo<'_> {
    type Output = ();

    #[inline(always)]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }

    #[inline(always)]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Appends one full snapshot (version 2) of `entries` (key groups out of `max_parallelism`)
/// with `watermark` to `out`.
pub fn append_snapshot<'a, K, V>(
    out: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a K, &'a V)>,
    max_parallelism: usize,
    watermark: Timestamp,
) -> Result<()>
where
    K: Hash + Serialize + 'a,
    V: Serialize + 'a,
{
    let open = open_table(out, max_parallelism, watermark, None);
    for (k, v) in entries {
        let g = key_group_of_hash(key_hash(k), max_parallelism) as u32;
        append_entry(out, &(g, k, v))?;
    }
    close_table(out, open);
    Ok(())
}

#[inline]
fn append_entry(out: &mut Vec<u8>, entry: &impl Serialize) -> Result<()> {
    postcard::serialize_with_flavor(entry, AppendTo(out))
        .map_err(|e| internal!("cannot encode a state snapshot: {e}"))
}

/// Where a table being written starts, where its body length goes, and its header's length.
struct OpenTable {
    start: usize,
    len_at: usize,
    header: usize,
}

/// Writes a table's header, its body length and checksum left to [`close_table`].
fn open_table(
    out: &mut Vec<u8>,
    max_parallelism: usize,
    watermark: Timestamp,
    base: Option<CheckpointId>,
) -> OpenTable {
    let start = out.len();
    out.extend_from_slice(MAGIC);
    let version = if base.is_some() {
        DELTA_VERSION
    } else {
        FORMAT_VERSION
    };
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&(max_parallelism as u32).to_be_bytes());
    out.extend_from_slice(&watermark.to_be_bytes());
    if let Some(base) = base {
        out.extend_from_slice(&base.to_be_bytes());
    }
    let len_at = out.len() - start;
    out.extend_from_slice(&[0; 16]); // body length and checksum, once known
    OpenTable {
        start,
        len_at,
        header: out.len() - start,
    }
}

/// Fills in the body length and checksum of the table written since `open`.
fn close_table(out: &mut [u8], open: OpenTable) {
    let OpenTable {
        start,
        len_at,
        header,
    } = open;
    let body_len = (out.len() - start - header) as u64;
    out[start + len_at..start + len_at + 8].copy_from_slice(&body_len.to_be_bytes());
    let (head, body) = out[start..].split_at(header);
    let sum = checksum(&head[4..len_at + 8], body);
    out[start + len_at + 8..start + header].copy_from_slice(&sum.to_be_bytes());
}

/// The checkpoint a snapshot is a delta on (the first delta among the tables of a buffer,
/// read from their headers; all deltas of one operator's snapshot build on the same
/// checkpoint). `None`: every table is full, or the bytes are not snapshots of this module.
/// The bytes are not verified here; a restore verifies them.
pub fn delta_base(bytes: &[u8]) -> Option<CheckpointId> {
    let mut rest = bytes;
    while rest.len() >= HEADER && is_snapshot(rest) {
        let version = u16::from_be_bytes([rest[4], rest[5]]);
        let (len_at, header) = layout(version).filter(|(_, h)| rest.len() >= *h)?;
        if version == DELTA_VERSION {
            return Some(be_u64(rest, 18));
        }
        let next = usize::try_from(be_u64(rest, len_at))
            .ok()
            .and_then(|l| l.checked_add(header))?;
        rest = rest.get(next..)?;
    }
    None
}

/// Writes `entries`, each tagged with its key group (out of `max_parallelism`), in the snapshot
/// format.
pub fn write_snapshot<'a, K, V>(
    entries: impl Iterator<Item = (&'a K, &'a V)>,
    max_parallelism: usize,
) -> Result<Vec<u8>>
where
    K: Hash + Serialize + 'a,
    V: Serialize + 'a,
{
    let mut out = Vec::new();
    append_snapshot(&mut out, entries, max_parallelism, MIN_WATERMARK)?;
    Ok(out)
}

/// One verified snapshot within a buffer of snapshots.
#[derive(Debug, Clone, Copy)]
pub struct TableSnapshot<'a> {
    version: u16,
    /// The watermark written with it (`MIN_WATERMARK` when none was).
    pub watermark: Timestamp,
    body: &'a [u8],
}

impl TableSnapshot<'_> {
    /// Hands every entry whose key group is in `key_groups` to `keep`; `what` names the
    /// snapshot in errors.
    pub fn entries<K: DeserializeOwned, V: DeserializeOwned>(
        &self,
        key_groups: &Range<usize>,
        what: &str,
        mut keep: impl FnMut(K, V),
    ) -> Result<()> {
        let mut removals = 0usize;
        self.changes(key_groups, what, |k, v| match v {
            Some(v) => keep(k, v),
            None => removals += 1,
        })?;
        if removals > 0 {
            return Err(corrupt(
                what,
                format!("a delta removing {removals} keys where whole state was expected"),
            ));
        }
        Ok(())
    }

    /// Whether it is a delta on an earlier snapshot (rather than whole state).
    pub fn is_delta(&self) -> bool {
        self.version == DELTA_VERSION
    }

    /// Hands every entry whose key group is in `key_groups` to `apply`: `(key, Some(value))`
    /// for a key's state, and in a delta `(key, None)` for a key removed since its base
    /// (removals come first); `what` names the snapshot in errors.
    pub fn changes<K: DeserializeOwned, V: DeserializeOwned>(
        &self,
        key_groups: &Range<usize>,
        what: &str,
        mut apply: impl FnMut(K, Option<V>),
    ) -> Result<()> {
        match self.version {
            VERSION_1 => self.grouped_entries(key_groups, what, |k, v| apply(k, Some(v))),
            DELTA_VERSION => {
                self.each_entry(key_groups, what, |(k, v): (K, Option<V>)| apply(k, v))
            }
            _ => self.each_entry(key_groups, what, |(k, v): (K, V)| apply(k, Some(v))),
        }
    }

    /// The entries of a version-1 body (grouped by key group) of `key_groups`, to `keep`.
    fn grouped_entries<K: DeserializeOwned, V: DeserializeOwned>(
        &self,
        key_groups: &Range<usize>,
        what: &str,
        mut keep: impl FnMut(K, V),
    ) -> Result<()> {
        let groups: Vec<(u32, Vec<(K, V)>)> = postcard::from_bytes(self.body)
            .map_err(|e| corrupt(what, format!("undecodable body: {e}")))?;
        for (group, entries) in groups {
            if key_groups.contains(&(group as usize)) {
                entries.into_iter().for_each(|(k, v)| keep(k, v));
            }
        }
        Ok(())
    }

    /// Decodes the body's `(key group, E)` entries one after the other and hands those of
    /// `key_groups` to `f`.
    fn each_entry<E: DeserializeOwned>(
        &self,
        key_groups: &Range<usize>,
        what: &str,
        mut f: impl FnMut(E),
    ) -> Result<()> {
        let mut rest = self.body;
        while !rest.is_empty() {
            let ((group, entry), tail): ((u32, E), &[u8]) = postcard::take_from_bytes(rest)
                .map_err(|e| corrupt(what, format!("undecodable body: {e}")))?;
            if key_groups.contains(&(group as usize)) {
                f(entry);
            }
            rest = tail;
        }
        Ok(())
    }
}

/// Splits a buffer into its snapshots, verifying every one before any entry is read: a buffer
/// with one bad snapshot is refused whole.
pub fn read_snapshots<'a>(bytes: &'a [u8], what: &str) -> Result<Vec<TableSnapshot<'a>>> {
    let mut tables = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() || tables.is_empty() {
        let (table, tail) = read_one(rest, what)?;
        tables.push(table);
        rest = tail;
    }
    Ok(tables)
}

/// The `N` snapshots of a buffer (as [`read_snapshots`]); another number is refused.
pub fn read_tables<'a, const N: usize>(
    bytes: &'a [u8],
    what: &str,
) -> Result<[TableSnapshot<'a>; N]> {
    let tables = read_snapshots(bytes, what)?;
    let found = tables.len();
    tables
        .try_into()
        .map_err(|_| corrupt(what, format!("{found} snapshots where {N} were expected")))
}

fn read_one<'a>(bytes: &'a [u8], what: &str) -> Result<(TableSnapshot<'a>, &'a [u8])> {
    let truncated = |need: usize| {
        corrupt(
            what,
            format!("truncated: {} bytes, {need} expected", bytes.len()),
        )
    };
    if bytes.len() < HEADER_V1 {
        return Err(truncated(HEADER_V1));
    }
    if &bytes[..4] != MAGIC {
        return Err(corrupt(
            what,
            "not a Hummer state snapshot (bad magic)".into(),
        ));
    }
    let version = u16::from_be_bytes([bytes[4], bytes[5]]);
    let be_u64 = |at: usize| be_u64(bytes, at);
    // Per version: the end of the checksummed header fields, where the checksum is, the
    // body's range and the watermark.
    let (fields_end, sum_at, header, end, watermark) = match (version, layout(version)) {
        (VERSION_1, _) => (10, 10, HEADER_V1, bytes.len(), MIN_WATERMARK),
        (_, Some((len_at, header))) => {
            if bytes.len() < header {
                return Err(truncated(header));
            }
            let body_len = be_u64(len_at);
            let end = usize::try_from(body_len)
                .ok()
                .and_then(|l| l.checked_add(header))
                .filter(|&end| end <= bytes.len())
                .ok_or_else(|| truncated(header.saturating_add(body_len as usize)))?;
            (len_at + 8, len_at + 8, header, end, be_u64(10) as i64)
        }
        (other, None) => {
            return Err(corrupt(
                what,
                format!(
                    "format version {other}; this build reads versions {VERSION_1} to {DELTA_VERSION}"
                ),
            ));
        }
    };
    let body = &bytes[header..end];
    if checksum(&bytes[4..fields_end], body) != be_u64(sum_at) {
        return Err(corrupt(
            what,
            "checksum mismatch: the snapshot is damaged".into(),
        ));
    }
    let table = TableSnapshot {
        version,
        watermark,
        body,
    };
    Ok((table, &bytes[end..]))
}

/// Reads a buffer of one snapshot, calling `keep` for every entry whose key group is in
/// `key_groups`; `what` names the snapshot in errors. A bad snapshot is refused before any
/// entry is handed out.
pub fn read_snapshot<K: DeserializeOwned, V: DeserializeOwned>(
    snapshot: &[u8],
    key_groups: Range<usize>,
    what: &str,
    keep: impl FnMut(K, V),
) -> Result<()> {
    let [table] = read_tables(snapshot, what)?;
    table.entries(&key_groups, what, keep)
}

impl<K: Hash + Eq + Clone + Serialize + DeserializeOwned, V: Serialize + DeserializeOwned>
    KeyedTable<K, V>
{
    /// The table's snapshot for checkpoint `checkpoint`: a delta holding only what changed
    /// since the newest completed snapshot it took, or every entry when
    /// [`incremental::delta_possible`] says no.
    pub fn snapshot_for(
        &mut self,
        checkpoint: CheckpointId,
        max_parallelism: usize,
    ) -> Result<Vec<u8>> {
        let delta = incremental::delta_possible(&[self.change_summary()]);
        tracing::debug!(
            checkpoint,
            delta,
            changed = self.changes.changed_since_base(),
            live = self.len(),
            base = ?self.changes.base.map(|b| b.checkpoint),
            pending = self.changes.pending(),
            "keyed table snapshot"
        );
        let mut buffer = self.snapshot_buffer;
        let estimate = buffer.guess_if_first(delta, || self.estimated_snapshot_bytes());
        let bytes = buffer.write_for(delta, estimate, |out| {
            self.append_for(out, checkpoint, max_parallelism, MIN_WATERMARK, delta)
        });
        self.snapshot_buffer = buffer;
        bytes
    }

    /// A guess at the length of a whole snapshot of the table, for a first snapshot's buffer:
    /// the encoded length of a sample of its entries (the first in table order, which is hash
    /// order) times their number.
    pub fn estimated_snapshot_bytes(&self) -> usize {
        const SAMPLE: usize = 64;
        let mut scratch = Vec::new();
        let mut sampled = 0usize;
        for (k, v) in self.iter().take(SAMPLE) {
            if append_entry(&mut scratch, &(0u32, k, v)).is_err() {
                return 0;
            }
            sampled += 1;
        }
        (scratch.len() / sampled.max(1)).saturating_mul(self.len())
    }

    /// What [`incremental::delta_possible`] decides on: the table's change log and size.
    pub fn change_summary(&self) -> (&ChangeLog, usize) {
        (&self.changes, self.len())
    }

    /// Appends the table's snapshot for checkpoint `checkpoint`, with the operator's
    /// `watermark`, to `out`: a delta on its base if `delta` (which
    /// [`incremental::delta_possible`] must have allowed), else whole. Operators with several
    /// tables decide `delta` for all of them at once.
    pub fn append_for(
        &mut self,
        out: &mut Vec<u8>,
        checkpoint: CheckpointId,
        max_parallelism: usize,
        watermark: Timestamp,
        delta: bool,
    ) -> Result<()> {
        self.append_patched(
            out,
            checkpoint,
            max_parallelism,
            watermark,
            delta,
            |_, _| Ok(()),
            |v, _, out| append_entry(out, &*v),
        )
    }

    /// As [`KeyedTable::append_for`], for values that may write their changes themselves: a
    /// whole snapshot shows every value to `whole` (so that it can note that this snapshot
    /// took it) and writes it as it is; a delta (version 3: the keys removed since the base,
    /// then the entries changed since, so that a key removed and added again ends present)
    /// writes each changed value as `patch` encodes it, a restore reading it as `Some(P)` for
    /// the patch type `P` of the operator (`V` itself for [`KeyedTable::append_for`]).
    #[allow(clippy::too_many_arguments)]
    pub fn append_patched(
        &mut self,
        out: &mut Vec<u8>,
        checkpoint: CheckpointId,
        max_parallelism: usize,
        watermark: Timestamp,
        delta: bool,
        mut whole: impl FnMut(&mut V, SnapshotEpochs) -> Result<()>,
        mut patch: impl FnMut(&mut V, SnapshotEpochs, &mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        let base = self.changes.base.filter(|_| delta);
        let epochs = SnapshotEpochs {
            base: base.map(|b| b.epoch),
            at: self.changes.epoch,
        };
        let open = open_table(out, max_parallelism, watermark, base.map(|b| b.checkpoint));
        let group = |k: &K| key_group_of_hash(key_hash(k), max_parallelism) as u32;
        match base {
            Some(base) => {
                for k in self.removed_after(base.epoch) {
                    append_entry(out, &(group(k), k, None::<()>))?;
                }
                let changed = self
                    .slots_for_snapshot()
                    .filter(|(_, _, e)| *e > base.epoch);
                in_order_with_prefetch(
                    changed,
                    |(_, v, _)| &**v,
                    |(k, v, _)| {
                        append_entry(out, &(group(k), k, Some(())))?;
                        patch(v, epochs, out)
                    },
                )?;
            }
            None => {
                in_order_with_prefetch(
                    self.slots_for_snapshot(),
                    |(_, v, _)| &**v,
                    |(k, v, _)| {
                        whole(v, epochs)?;
                        append_entry(out, &(group(k), k, &*v))
                    },
                )?;
            }
        }
        close_table(out, open);
        self.changes
            .taken(checkpoint, base.map_or(0, |b| b.chain + 1));
        Ok(())
    }

    /// Loads the entries of the key groups in `key_groups` from a snapshot (whole state, or a
    /// delta applied on what was restored before it); `what` names the snapshot in errors. A
    /// bad snapshot is refused whole.
    pub fn restore(&mut self, snapshot: &[u8], key_groups: Range<usize>, what: &str) -> Result<()> {
        let [table] = read_tables(snapshot, what)?;
        self.restore_table(&table, key_groups, what)
    }

    /// Loads one verified table of a snapshot, as [`KeyedTable::restore`].
    pub fn restore_table(
        &mut self,
        table: &TableSnapshot<'_>,
        key_groups: Range<usize>,
        what: &str,
    ) -> Result<()> {
        self.restore_table_with(table, key_groups, what, |_, _| {})
    }

    /// Loads one verified table of a snapshot, as [`KeyedTable::restore`], showing every
    /// entry to `seen` as it is loaded.
    pub fn restore_table_with(
        &mut self,
        table: &TableSnapshot<'_>,
        key_groups: Range<usize>,
        what: &str,
        mut seen: impl FnMut(&K, &V),
    ) -> Result<()> {
        self.restore_patched(table, key_groups, what, |k, _, v: V| {
            seen(k, &v);
            Ok(v)
        })
    }

    /// Loads one verified table written by [`KeyedTable::append_patched`]: every entry of
    /// `key_groups` is read as a `P` (a whole value, or in a delta the operator's patch) and
    /// `apply(key, state restored before, P)` gives the key's state; a key a delta removes is
    /// removed. An error of `apply` names what does not fit, and the snapshot is refused.
    pub fn restore_patched<P: DeserializeOwned>(
        &mut self,
        table: &TableSnapshot<'_>,
        key_groups: Range<usize>,
        what: &str,
        mut apply: impl FnMut(&K, Option<V>, P) -> std::result::Result<V, String>,
    ) -> Result<()> {
        self.changes.reset();
        self.tombstones.clear();
        let mut failed = None;
        table.changes(&key_groups, what, |k, change: Option<P>| {
            let before = self.remove(&k);
            if let (Some(p), None) = (change, &failed) {
                match apply(&k, before, p) {
                    Ok(v) => self.insert(k, v),
                    Err(reason) => failed = Some(reason),
                }
            }
        })?;
        failed.map_or(Ok(()), |reason| Err(corrupt(what, reason)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_snapshot_reuses_a_buffer_given_back_empty() {
        // An odd size that no other test's snapshot asks for.
        let size = (3 << 20) + 12_345;
        let mut given = Vec::with_capacity(size);
        given.extend_from_slice(b"old bytes");
        let address = given.as_ptr();
        recycle(given);
        let mut buffer = SnapshotBuffer {
            last_len: size * 2 / 3 - 64,
            last_delta_len: 0,
        };
        let out = buffer
            .write(|out| {
                assert!(out.is_empty(), "a recycled buffer comes back empty");
                assert_eq!(out.as_ptr(), address, "the given-back buffer is reused");
                out.extend_from_slice(b"new");
                Ok(())
            })
            .unwrap();
        assert_eq!(out, b"new");
        // Small buffers are not kept, and small snapshots take fresh ones.
        recycle(Vec::with_capacity(1000));
        assert!(take_buffer(100).capacity() < RECYCLE_MIN);
    }

    /// The estimate from a sample of entries is near the length of the whole snapshot, for
    /// values whose length varies and lies mostly outside the table (strings).
    #[test]
    fn the_estimate_of_a_snapshot_is_near_its_length() {
        let mut table: KeyedTable<u64, String> = KeyedTable::default();
        assert_eq!(table.estimated_snapshot_bytes(), 0);
        for k in 0..20_000u64 {
            table.insert(k, "x".repeat(50 + (k % 100) as usize));
        }
        let estimate = table.estimated_snapshot_bytes() as f64;
        let actual = table.snapshot_for(1, 128).unwrap().len() as f64;
        assert!(
            (estimate / actual - 1.0).abs() < 0.25,
            "estimate {estimate}, actual {actual}"
        );
    }

    /// A first snapshot has room for the caller's estimate at once (it does not grow from
    /// nothing by doubling); later ones go by the snapshots before them.
    #[test]
    fn a_first_snapshot_has_room_for_its_estimate() {
        let mut buffer = SnapshotBuffer::default();
        let estimate = 3 << 20;
        buffer
            .write_for(false, estimate, |out| {
                assert!(out.capacity() >= estimate, "{}", out.capacity());
                out.resize(100, 1);
                Ok(())
            })
            .unwrap();
        buffer
            .write_for(false, estimate, |out| {
                assert!(out.capacity() < RECYCLE_MIN, "{}", out.capacity());
                Ok(())
            })
            .unwrap();
    }

    /// A delta after a large delta has room for it at once, whatever the size of the whole
    /// snapshot before; a whole snapshot is still sized from the last whole one.
    #[test]
    fn deltas_and_whole_snapshots_are_sized_apart() {
        let mut buffer = SnapshotBuffer::default();
        let fill = |n: usize| {
            move |out: &mut Vec<u8>| -> Result<()> {
                out.resize(n, 1);
                Ok(())
            }
        };
        buffer.write_for(false, 0, fill(100)).unwrap();
        buffer.write_for(true, 0, fill(5 << 20)).unwrap();
        buffer
            .write_for(true, 0, |out| {
                assert!(out.capacity() >= (5 << 20) * 3 / 2, "{}", out.capacity());
                Ok(())
            })
            .unwrap();
        buffer
            .write_for(false, 0, |out| {
                assert!(out.capacity() < RECYCLE_MIN, "{}", out.capacity());
                Ok(())
            })
            .unwrap();
    }
    use crate::key_groups::key_groups_of_subtask;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn table(entries: &HashMap<String, u64>) -> KeyedTable<String, u64> {
        let mut t = KeyedTable::default();
        for (k, v) in entries {
            t.insert(k.clone(), *v);
        }
        t
    }

    fn contents(t: &mut KeyedTable<String, u64>) -> HashMap<String, u64> {
        t.drain().collect()
    }

    /// Folds `(key, add)` pairs into a table of sums.
    fn fold(t: &mut KeyedTable<u8, u64>, batch: &[(u8, u64)]) {
        let mut b = batch.to_vec();
        t.fold_batch(
            &mut b,
            |r| r.0,
            |_, sum, r| match sum {
                Some(sum) => {
                    *sum += r.1;
                    None
                }
                None => Some(r.1),
            },
        );
    }

    /// The chain a stored snapshot needs, oldest first, as a restore reads it.
    fn chain_of(stored: &HashMap<CheckpointId, Vec<u8>>, id: CheckpointId) -> Vec<&[u8]> {
        let mut chain = vec![stored[&id].as_slice()];
        while let Some(base) = delta_base(chain[chain.len() - 1]) {
            chain.push(stored[&base].as_slice());
        }
        chain.reverse();
        chain
    }

    #[test]
    fn after_a_completed_checkpoint_only_changed_entries_are_written() {
        let mut t = KeyedTable::<u8, u64>::default();
        fold(&mut t, &(0..200u8).map(|k| (k, 1)).collect::<Vec<_>>());
        let full = t.snapshot_for(1, 128).unwrap();
        assert_eq!(delta_base(&full), None, "the first snapshot is full");
        // Not completed yet: the next one is full too.
        fold(&mut t, &[(7, 5)]);
        assert_eq!(delta_base(&t.snapshot_for(2, 128).unwrap()), None);
        t.checkpoint_complete(2);
        fold(&mut t, &[(7, 5), (9, 1), (7, 1)]);
        let delta = t.snapshot_for(3, 128).unwrap();
        assert_eq!(delta_base(&delta), Some(2));
        let mut entries = Vec::new();
        read_snapshot(&delta, 0..128, "test", |k: u8, v: u64| entries.push((k, v))).unwrap();
        entries.sort_unstable();
        assert_eq!(entries, vec![(7, 12), (9, 2)]);
        assert!(
            delta.len() * 10 < full.len(),
            "{} vs {}",
            delta.len(),
            full.len()
        );
        // Half the table changed: a delta would be no smaller, so it is full again.
        t.checkpoint_complete(3);
        fold(&mut t, &(0..150u8).map(|k| (k, 1)).collect::<Vec<_>>());
        assert_eq!(delta_base(&t.snapshot_for(4, 128).unwrap()), None);
        // A restore starts afresh: full.
        t.checkpoint_complete(4);
        t.restore(&delta, 0..128, "test").unwrap();
        assert_eq!(delta_base(&t.snapshot_for(5, 128).unwrap()), None);
    }

    #[test]
    fn a_delta_carries_removals_before_changes() {
        let mut t = KeyedTable::<u8, u64>::default();
        fold(&mut t, &(0..100u8).map(|k| (k, 1)).collect::<Vec<_>>());
        let full = t.snapshot_for(1, 128).unwrap();
        t.checkpoint_complete(1);
        t.remove(&5);
        t.remove(&6);
        fold(&mut t, &[(6, 9)]);
        let delta = t.snapshot_for(2, 128).unwrap();
        assert_eq!(delta_base(&delta), Some(1));
        let mut restored = KeyedTable::<u8, u64>::default();
        restored.restore(&full, 0..128, "test").unwrap();
        restored.restore(&delta, 0..128, "test").unwrap();
        assert_eq!(restored.get(&5), None, "removed");
        assert_eq!(restored.get(&6), Some(&9), "removed, then added again");
        assert_eq!(restored.len(), 99);
        // A delta with removals is not whole state.
        let err = read_snapshot(&delta, 0..128, "the test delta", |_: u8, _: u64| {});
        assert!(err.unwrap_err().to_string().contains("removing"));
        // Once a later checkpoint completes, the removals are in its snapshot: forgotten.
        t.checkpoint_complete(2);
        assert!(t.tombstones.is_empty());
    }

    #[test]
    fn a_delta_is_damaged_or_whole_like_any_snapshot() {
        let mut t = KeyedTable::<u8, u64>::default();
        fold(&mut t, &(0..100u8).map(|k| (k, 1)).collect::<Vec<_>>());
        t.snapshot_for(1, 128).unwrap();
        t.checkpoint_complete(1);
        fold(&mut t, &[(3, 1)]);
        let mut delta = t.snapshot_for(2, 128).unwrap();
        assert_eq!(delta_base(&delta), Some(1));
        let last = delta.len() - 1;
        delta[last] ^= 1;
        let err = t.restore(&delta, 0..128, "the test delta").unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        assert!(t.restore(&delta[..20], 0..128, "the test delta").is_err());
    }

    proptest! {
        /// Whatever batches and removals come between snapshots and whichever checkpoints
        /// complete, every snapshot's chain (base, deltas, the snapshot) restores exactly the
        /// table as it was at that snapshot, at any new parallelism.
        #[test]
        fn every_chain_restores_the_table_at_its_snapshot(
            steps in proptest::collection::vec(
                (proptest::collection::vec((0u8..60, 1u64..5), 0..40), any::<bool>()), 1..24),
            new_p in 1usize..5,
        ) {
            let max = 128;
            let mut t = KeyedTable::<u8, u64>::default();
            let mut reference: HashMap<u8, u64> = HashMap::new();
            let mut stored: HashMap<CheckpointId, Vec<u8>> = HashMap::new();
            let mut expected: HashMap<CheckpointId, HashMap<u8, u64>> = HashMap::new();
            for (i, (batch, complete)) in steps.iter().enumerate() {
                // A record adding 1 removes its key instead (before the rest of the batch).
                for (k, v) in batch {
                    if *v == 1 {
                        reference.remove(k);
                        t.remove(k);
                    }
                }
                let adds: Vec<(u8, u64)> = batch.iter().copied().filter(|(_, v)| *v != 1).collect();
                for (k, v) in &adds {
                    *reference.entry(*k).or_default() += v;
                }
                fold(&mut t, &adds);
                let id = i as CheckpointId + 1;
                let bytes = t.snapshot_for(id, max).unwrap();
                if let Some(base) = delta_base(&bytes) {
                    prop_assert!(base < id && stored.contains_key(&base));
                }
                stored.insert(id, bytes);
                expected.insert(id, reference.clone());
                if *complete {
                    t.checkpoint_complete(id);
                }
            }
            for (id, want) in &expected {
                let chain = chain_of(&stored, *id);
                let mut got: HashMap<u8, u64> = HashMap::new();
                for s in 0..new_p {
                    let mut r = KeyedTable::<u8, u64>::default();
                    for piece in &chain {
                        r.restore(piece, key_groups_of_subtask(s, max, new_p), "test").unwrap();
                    }
                    for (k, v) in r.drain() {
                        prop_assert!(got.insert(k, v).is_none(), "a key restored twice");
                    }
                }
                prop_assert_eq!(&got, want, "checkpoint {}", id);
            }
        }
    }

    proptest! {
        /// Restored at any parallelism, every entry lands in exactly one subtask, unchanged.
        #[test]
        fn restores_at_any_parallelism_without_loss_or_duplication(
            entries in proptest::collection::hash_map("[a-z]{1,8}", any::<u64>(), 0..200),
            old_p in 1usize..9, new_p in 1usize..9,
        ) {
            let max = 128;
            // The state of `old_p` subtasks, each holding its own key groups.
            let mut snapshots = Vec::new();
            for s in 0..old_p {
                let range = key_groups_of_subtask(s, max, old_p);
                let mine: HashMap<String, u64> = entries
                    .iter()
                    .filter(|(k, _)| range.contains(&key_group_of_hash(key_hash(*k), max)))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                snapshots.push(table(&mine).snapshot_for(1, max).unwrap());
            }
            let mut restored: HashMap<String, u64> = HashMap::new();
            for s in 0..new_p {
                let mut t = KeyedTable::<String, u64>::default();
                for snap in &snapshots {
                    t.restore(snap, key_groups_of_subtask(s, max, new_p), "test").unwrap();
                }
                for (k, v) in contents(&mut t) {
                    prop_assert!(restored.insert(k, v).is_none(), "a key restored twice");
                }
            }
            prop_assert_eq!(restored, entries);
        }

        /// Truncation or any flipped bit is refused, never loaded.
        #[test]
        fn damaged_snapshots_are_refused(
            entries in proptest::collection::hash_map("[a-z]{1,8}", any::<u64>(), 1..50),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
        ) {
            let snap = table(&entries).snapshot_for(1, 128).unwrap();
            let cut = cut.index(snap.len());
            let mut t = KeyedTable::<String, u64>::default();
            prop_assert!(t.restore(&snap[..cut], 0..128, "cut").is_err());
            let mut flipped = snap.clone();
            let i = flip.index(flipped.len());
            flipped[i] ^= 0x10;
            let mut t = KeyedTable::<String, u64>::default();
            prop_assert!(t.restore(&flipped, 0..128, "flipped").is_err());
            prop_assert!(t.is_empty());
        }
    }

    /// Snapshots of earlier builds (version 1: entries grouped by key group; the watermark as
    /// a postcard pair around it) are still read.
    #[test]
    fn reads_version_1_and_the_old_watermark_pair() {
        let entries = HashMap::from([("a".to_string(), 1u64), ("b".to_string(), 2)]);
        let mut groups: std::collections::BTreeMap<u32, Vec<(&String, &u64)>> = Default::default();
        for (k, v) in &entries {
            let g = key_group_of_hash(key_hash(k), 128) as u32;
            groups.entry(g).or_default().push((k, v));
        }
        let groups: Vec<_> = groups.into_iter().collect();
        let body = postcard::to_stdvec(&groups).unwrap();
        let mut v1 = b"HMRS".to_vec();
        v1.extend_from_slice(&1u16.to_be_bytes());
        v1.extend_from_slice(&128u32.to_be_bytes());
        let sum = checksum(&v1[4..10], &body);
        v1.extend_from_slice(&sum.to_be_bytes());
        v1.extend_from_slice(&body);
        let mut t = KeyedTable::<String, u64>::default();
        t.restore(&v1, 0..128, "v1").unwrap();
        assert_eq!(contents(&mut t), entries);

        let pair = postcard::to_stdvec(&(77i64, v1)).unwrap();
        let mut w = OperatorWatermark::default();
        let mut got = HashMap::new();
        read_with_watermark(&pair, 0..128, "pair", &mut w, |k: String, v: u64| {
            got.insert(k, v);
        })
        .unwrap();
        assert_eq!((got, w.get()), (entries, 77));
    }

    /// Several tables in one buffer come back apart, each with its watermark.
    #[test]
    fn tables_in_one_buffer_come_back_apart() {
        let (left, right) = (
            HashMap::from([(1u32, 10u64)]),
            HashMap::from([(2u32, 20u64), (3, 30)]),
        );
        let mut out = Vec::new();
        append_snapshot(&mut out, left.iter(), 128, 5).unwrap();
        append_snapshot(&mut out, right.iter(), 128, 6).unwrap();
        let tables = read_snapshots(&out, "two").unwrap();
        assert_eq!(tables.len(), 2);
        let mut got = vec![HashMap::new(), HashMap::new()];
        for (i, t) in tables.iter().enumerate() {
            t.entries(&(0..128), "two", |k: u32, v: u64| {
                got[i].insert(k, v);
            })
            .unwrap();
        }
        assert_eq!(got, vec![left, right]);
        assert_eq!((tables[0].watermark, tables[1].watermark), (5, 6));
        assert!(read_snapshots(&out[..out.len() - 1], "cut").is_err());
    }

    #[test]
    fn errors_name_the_snapshot_and_the_problem() {
        let mut t = KeyedTable::<String, u64>::default();
        let err = t
            .restore(b"HMRS\x00\x09rest-of-it", 0..128, "chk-7/op-3")
            .unwrap_err();
        assert!(err.to_string().contains("chk-7/op-3"), "{err}");
        let mut v9 = table(&HashMap::from([("a".to_string(), 1)]))
            .snapshot_for(1, 128)
            .unwrap();
        v9[5] = 9;
        let err = t.restore(&v9, 0..128, "old").unwrap_err();
        assert!(err.to_string().contains("format version 9"), "{err}");
    }
}

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
