//! The snapshot format's tests: round trips, deltas, restores at another parallelism, and
//! the refusal of bad bytes.

use crate::key_groups::{key_group_of_hash, key_hash};
use crate::keyed_table::KeyedTable;
use crate::types::CheckpointId;

use super::buffers::*;
use super::format::*;
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
    let mut got = KeyedTable::<String, u64>::default();
    let mut state = crate::declared::DeclaredState::new()
        .table("pair", &mut got)
        .watermark(&mut w);
    state.restore(&pair, 0..128, "pair").unwrap();
    drop(state);
    assert_eq!((contents(&mut got), w.get()), (entries, 77));
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
