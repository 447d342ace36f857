//! The snapshot format of keyed state: versioned, checksummed, grouped by key group.
//!
//! A snapshot holds the entries of one keyed-state table, grouped by the key group of each
//! key, so that a restore can take exactly the key groups a subtask owns at the *new*
//! parallelism: state moves between subtasks in whole key groups and no key is split or lost.
//!
//! Layout: `b"HMRS"`, format version (`u16`, big-endian), number of key groups used to group
//! (`u32`), a 64-bit checksum of those two fields and the body, then the body: postcard of
//! `Vec<(key_group: u32, Vec<(K, V)>)>`. A snapshot that is truncated, has another magic or
//! version, or fails its checksum is refused with a clear error; nothing of it is loaded.
//! (The exactly-once issue builds checkpoints out of these.)

use std::hash::{BuildHasher, Hash};
use std::ops::Range;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{HummerError, Result, internal};
use crate::state::key_groups::{key_group_of_hash, key_hash};
use crate::state::keyed_table::KeyedTable;

/// Decodes checkpointed bytes (a source's position, an operator's state) written with
/// postcard; the error names `what` was being restored.
pub(crate) fn decode_checkpointed<P: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<P> {
    postcard::from_bytes(bytes).map_err(|e| HummerError::BadInput {
        input: format!("checkpointed state of {what}"),
        reason: e.to_string(),
    })
}

const MAGIC: &[u8; 4] = b"HMRS";
/// Version of the format written by this build.
pub const FORMAT_VERSION: u16 = 1;
const HEADER: usize = 4 + 2 + 4 + 8;

/// Checksum of the version and key-group fields and the body.
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

/// Writes `entries`, grouped by key group (out of `max_parallelism`), in the snapshot format.
pub fn write_snapshot<'a, K, V>(
    entries: impl Iterator<Item = (&'a K, &'a V)>,
    max_parallelism: usize,
) -> Result<Vec<u8>>
where
    K: Hash + Serialize + 'a,
    V: Serialize + 'a,
{
    let mut by_group: std::collections::BTreeMap<u32, Vec<(&K, &V)>> = Default::default();
    for (k, v) in entries {
        let g = key_group_of_hash(key_hash(k), max_parallelism) as u32;
        by_group.entry(g).or_default().push((k, v));
    }
    let groups: Vec<(u32, Vec<(&K, &V)>)> = by_group.into_iter().collect();
    let body = postcard::to_stdvec(&groups)
        .map_err(|e| internal!("cannot encode a state snapshot: {e}"))?;
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_be_bytes());
    out.extend_from_slice(&(max_parallelism as u32).to_be_bytes());
    let sum = checksum(&out[4..10], &body);
    out.extend_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Reads a snapshot, calling `keep` for every entry whose key group is in `key_groups`; `what`
/// names the snapshot in errors. A bad snapshot is refused before any entry is handed out.
pub fn read_snapshot<K: DeserializeOwned, V: DeserializeOwned>(
    snapshot: &[u8],
    key_groups: Range<usize>,
    what: &str,
    mut keep: impl FnMut(K, V),
) -> Result<()> {
    if snapshot.len() < HEADER {
        return Err(corrupt(
            what,
            format!(
                "truncated: {} bytes, the header alone has {HEADER}",
                snapshot.len()
            ),
        ));
    }
    if &snapshot[..4] != MAGIC {
        return Err(corrupt(
            what,
            "not a Hummer state snapshot (bad magic)".into(),
        ));
    }
    let version = u16::from_be_bytes([snapshot[4], snapshot[5]]);
    if version != FORMAT_VERSION {
        return Err(corrupt(
            what,
            format!("format version {version}; this build reads version {FORMAT_VERSION}"),
        ));
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&snapshot[10..18]);
    let body = &snapshot[HEADER..];
    if checksum(&snapshot[4..10], body) != u64::from_be_bytes(sum) {
        return Err(corrupt(
            what,
            "checksum mismatch: the snapshot is damaged".into(),
        ));
    }
    let groups: Vec<(u32, Vec<(K, V)>)> =
        postcard::from_bytes(body).map_err(|e| corrupt(what, format!("undecodable body: {e}")))?;
    for (group, entries) in groups {
        if key_groups.contains(&(group as usize)) {
            for (k, v) in entries {
                keep(k, v);
            }
        }
    }
    Ok(())
}

impl<K: Hash + Eq + Serialize + DeserializeOwned, V: Serialize + DeserializeOwned>
    KeyedTable<K, V>
{
    /// Writes every entry, grouped by key group (out of `max_parallelism`).
    pub fn snapshot(&self, max_parallelism: usize) -> Result<Vec<u8>> {
        write_snapshot(self.iter(), max_parallelism)
    }

    /// Loads the entries of the key groups in `key_groups` from a snapshot; `what` names the
    /// snapshot in errors. A bad snapshot is refused whole.
    pub fn restore(&mut self, snapshot: &[u8], key_groups: Range<usize>, what: &str) -> Result<()> {
        read_snapshot(snapshot, key_groups, what, |k, v| self.insert(k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::key_groups::key_groups_of_subtask;
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
                snapshots.push(table(&mine).snapshot(max).unwrap());
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
            let snap = table(&entries).snapshot(128).unwrap();
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

    #[test]
    fn errors_name_the_snapshot_and_the_problem() {
        let mut t = KeyedTable::<String, u64>::default();
        let err = t
            .restore(b"HMRS\x00\x09rest-of-it", 0..128, "chk-7/op-3")
            .unwrap_err();
        assert!(err.to_string().contains("chk-7/op-3"), "{err}");
        let mut v2 = table(&HashMap::from([("a".to_string(), 1)]))
            .snapshot(128)
            .unwrap();
        v2[5] = 2;
        let err = t.restore(&v2, 0..128, "old").unwrap_err();
        assert!(err.to_string().contains("format version 2"), "{err}");
    }
}

/// The watermark an event-time operator (windows, timers) has seen, checkpointed with its
/// keyed state so that a restored job neither fires early nor drops as late what was on time.
#[derive(Debug, Clone, Copy)]
pub struct OperatorWatermark {
    current: crate::types::Timestamp,
    restored: bool,
}

impl Default for OperatorWatermark {
    fn default() -> Self {
        OperatorWatermark {
            current: crate::types::MIN_WATERMARK,
            restored: false,
        }
    }
}

impl OperatorWatermark {
    /// The current watermark.
    #[inline]
    pub fn get(&self) -> crate::types::Timestamp {
        self.current
    }

    /// Moves to `watermark` if it is ahead; never goes back.
    pub fn advance(&mut self, watermark: crate::types::Timestamp) {
        self.current = self.current.max(watermark);
    }

    /// Takes a restored subtask's watermark: after a restore the operator starts at the
    /// minimum over the old subtasks whose state it took (at a new parallelism a subtask may
    /// hold keys of several), which every record it now sees was judged against before.
    pub fn restore(&mut self, watermark: crate::types::Timestamp) {
        self.current = if self.restored {
            self.current.min(watermark)
        } else {
            watermark
        };
        self.restored = true;
    }
}

/// Writes keyed state (as [`write_snapshot`]) with the operator's watermark.
pub fn write_with_watermark<'a, K, V>(
    watermark: &OperatorWatermark,
    entries: impl Iterator<Item = (&'a K, &'a V)>,
    max_parallelism: usize,
) -> Result<Vec<u8>>
where
    K: Hash + Serialize + 'a,
    V: Serialize + 'a,
{
    let keyed = write_snapshot(entries, max_parallelism)?;
    postcard::to_stdvec(&(watermark.get(), keyed))
        .map_err(|e| internal!("cannot encode a state snapshot: {e}"))
}

/// Reads what [`write_with_watermark`] wrote: restores the watermark into `watermark` and
/// hands the entries of `key_groups` to `keep`.
pub fn read_with_watermark<K: DeserializeOwned, V: DeserializeOwned>(
    snapshot: &[u8],
    key_groups: Range<usize>,
    what: &str,
    watermark: &mut OperatorWatermark,
    keep: impl FnMut(K, V),
) -> Result<()> {
    let (w, keyed): (crate::types::Timestamp, Vec<u8>) = decode_checkpointed(what, snapshot)?;
    read_snapshot(&keyed, key_groups, what, keep)?;
    watermark.restore(w);
    Ok(())
}
