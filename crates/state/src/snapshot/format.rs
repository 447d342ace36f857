//! The bytes of a snapshot: header, checksum, entries tagged with their key group; writing and
//! reading one table (the format is described in the parent module).

use std::hash::{BuildHasher, Hash};
use std::ops::Range;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::disk_tier::run_file::split_entry;
use crate::error::{HummerError, Result, internal};
use crate::key_groups::{key_group_of_hash, key_hash};
use crate::types::{CheckpointId, MIN_WATERMARK, Timestamp};

pub(super) const MAGIC: &[u8; 4] = b"HMRS";
/// Version of the format written by this build.
pub const FORMAT_VERSION: u16 = 2;
/// The grouped format of earlier builds, still read.
pub(super) const VERSION_1: u16 = 1;
pub(super) const HEADER_V1: usize = 4 + 2 + 4 + 8;
pub(super) const HEADER: usize = 4 + 2 + 4 + 8 + 8 + 8;
/// A delta on an earlier snapshot: version 2's header with the base's checkpoint id after the
/// watermark, and a body of the entries changed since the base (each replaces the key's entry).
pub(super) const DELTA_VERSION: u16 = 3;
pub(super) const HEADER_V3: usize = HEADER + 8;
/// The part of a table on disk (see [`crate::disk_tier::ColdPart`]): version 3's header with
/// the index of the operator's table it belongs to in place of the base, and a body of
/// entries as the disk tier writes them: `[key length u32][value length u32][key][value]`
/// (little-endian lengths), the key with its key group first (`u32`, big-endian), the value
/// with the epoch of its last change first.
pub(super) const COLD_VERSION: u16 = 4;

/// Where a version-2 or -3 table's body length sits in its header, and the header's length
/// (a delta's header has its base's checkpoint id before the body length). `None`: another
/// version.
pub(super) fn layout(version: u16) -> Option<(usize, usize)> {
    match version {
        FORMAT_VERSION => Some((18, HEADER)),
        DELTA_VERSION | COLD_VERSION => Some((26, HEADER_V3)),
        _ => None,
    }
}

/// The big-endian `u64` at `at` (the caller has checked that 8 bytes are there).
pub(super) fn be_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(b)
}

/// Checksum of the header fields and the body.
pub(super) fn checksum(fields: &[u8], body: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = foldhash::fast::FixedState::with_seed(0x736e_6170_7368_6f74).build_hasher();
    h.write(fields);
    h.write(body);
    h.finish()
}

pub(super) fn corrupt(what: &str, reason: String) -> HummerError {
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

/// A postcard output that appends to a buffer in place.
pub(super) struct AppendTo<'a>(&'a mut Vec<u8>);

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
pub(super) fn append_entry(out: &mut Vec<u8>, entry: &impl Serialize) -> Result<()> {
    postcard::serialize_with_flavor(entry, AppendTo(out))
        .map_err(|e| internal!("cannot encode a state snapshot: {e}"))
}

/// Where a table being written starts, where its body length goes, and its header's length.
pub(crate) struct OpenTable {
    start: usize,
    len_at: usize,
    header: usize,
}

/// Writes a table's header, its body length and checksum left to [`close_table`].
pub(super) fn open_table(
    out: &mut Vec<u8>,
    max_parallelism: usize,
    watermark: Timestamp,
    base: Option<CheckpointId>,
) -> OpenTable {
    match base {
        Some(base) => open_versioned(out, DELTA_VERSION, max_parallelism, watermark, Some(base)),
        None => open_versioned(out, FORMAT_VERSION, max_parallelism, watermark, None),
    }
}

/// Writes the header of the cold part of the operator's table `table` (see
/// [`COLD_VERSION`]), its body length and checksum left to [`close_table`].
pub(crate) fn open_cold_table(
    out: &mut Vec<u8>,
    max_parallelism: usize,
    watermark: Timestamp,
    table: u32,
) -> OpenTable {
    let table = Some(u64::from(table));
    open_versioned(out, COLD_VERSION, max_parallelism, watermark, table)
}

/// A header of `version`, with `extra` (a delta's base, a cold part's table) after the
/// watermark.
fn open_versioned(
    out: &mut Vec<u8>,
    version: u16,
    max_parallelism: usize,
    watermark: Timestamp,
    extra: Option<u64>,
) -> OpenTable {
    let start = out.len();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&(max_parallelism as u32).to_be_bytes());
    out.extend_from_slice(&watermark.to_be_bytes());
    if let Some(extra) = extra {
        out.extend_from_slice(&extra.to_be_bytes());
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
pub(crate) fn close_table(out: &mut [u8], open: OpenTable) {
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
    /// A delta's base checkpoint; a cold part's table.
    extra: u64,
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

    /// For the part of a table that was on disk ([`crate::disk_tier::ColdPart`]): the index
    /// of the operator's table it belongs to.
    pub fn cold_part_of(&self) -> Option<usize> {
        (self.version == COLD_VERSION).then_some(self.extra as usize)
    }

    /// The entries of a cold part whose key group is in `key_groups`, as the disk tier
    /// holds them (key, value), to `f`; `what` names the snapshot in errors.
    pub fn cold_entries(
        &self,
        key_groups: &Range<usize>,
        what: &str,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        if self.version != COLD_VERSION {
            return Err(corrupt(
                what,
                "entries where a cold part was expected".into(),
            ));
        }
        let mut rest = self.body;
        while !rest.is_empty() {
            let bad = || corrupt(what, "a truncated entry of a cold part".into());
            let (key, value, tail) = split_entry(rest).ok_or_else(bad)?;
            let group = key.first_chunk::<4>().map(|g| u32::from_be_bytes(*g));
            if key_groups.contains(&(group.ok_or_else(bad)? as usize)) {
                f(key, value)?;
            }
            rest = tail;
        }
        Ok(())
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
            COLD_VERSION => Err(corrupt(
                what,
                "a cold part where the entries of a table were expected".into(),
            )),
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

pub(super) fn read_one<'a>(bytes: &'a [u8], what: &str) -> Result<(TableSnapshot<'a>, &'a [u8])> {
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
                    "format version {other}; this build reads versions {VERSION_1} to {COLD_VERSION}"
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
    let extra = if header == HEADER_V3 { be_u64(18) } else { 0 };
    let table = TableSnapshot {
        version,
        watermark,
        extra,
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
