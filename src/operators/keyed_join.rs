//! Keyed two-input join: an unbounded symmetric hash join on equal keys (with a lighter form
//! when one side's key is unique).

use std::collections::HashMap;
use std::marker::PhantomData;

use crate::error::Result;
use crate::operators::{Collector, TwoInputOperator};
use crate::state::snapshot::{
    SnapshotBuffer, append_snapshot, decode_checkpointed, is_snapshot, read_snapshot, read_tables,
};
use crate::types::{Key, MIN_WATERMARK};

type Table<K, V> = HashMap<K, Vec<V>, foldhash::fast::RandomState>;

/// Inner join of two keyed streams (a regular streaming join, as Flink SQL's).
///
/// Each side keeps every record it has seen, grouped by key. A record arriving on one side is
/// joined with all records of the other side under the same key, then stored. Every pair of
/// matching records is therefore emitted exactly once, when the later of the two arrives, in
/// both streaming and batch mode. State grows with the inputs: use it on bounded inputs or
/// bounded key spaces.
pub struct KeyedJoin<L, R, K, O, KL, KR, F> {
    left_key: KL,
    right_key: KR,
    f: F,
    left: Table<K, L>,
    right: Table<K, R>,
    /// The right side's key is unique: a left record is kept only until its match arrives.
    unique_right: bool,
    snapshot_buffer: SnapshotBuffer,
    _types: PhantomData<fn() -> O>,
}

impl<L, R, K: Key, O, KL, KR, F> KeyedJoin<L, R, K, O, KL, KR, F> {
    /// Joins on `left_key(l) == right_key(r)`, emitting `f(key, l, r)`.
    pub fn new(left_key: KL, right_key: KR, f: F) -> Self {
        KeyedJoin {
            left_key,
            right_key,
            f,
            left: HashMap::default(),
            right: HashMap::default(),
            unique_right: false,
            snapshot_buffer: SnapshotBuffer::default(),
            _types: PhantomData,
        }
    }

    /// The right side's key is unique (each key at most once, a primary key): left records
    /// that found their match are not stored, and waiting ones are dropped when it comes.
    pub fn with_unique_right(mut self) -> Self {
        self.unique_right = true;
        self
    }
}

impl<L, R, K, O, KL, KR, F> TwoInputOperator for KeyedJoin<L, R, K, O, KL, KR, F>
where
    L: crate::types::Data,
    R: crate::types::Data,
    K: Key,
    O: 'static,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    F: FnMut(&K, &L, &R) -> O + Send + 'static,
{
    type In1 = L;
    type In2 = R;
    type Out = O;

    fn process_batch1(&mut self, batch: &mut Vec<L>, out: &mut Collector<'_, O>) -> Result<()> {
        for l in batch.drain(..) {
            let key = (self.left_key)(&l);
            if let Some(matches) = self.right.get(&key) {
                for r in matches {
                    out.collect((self.f)(&key, &l, r));
                }
                if self.unique_right {
                    continue; // no other right record can come for this key
                }
            }
            self.left.entry(key).or_default().push(l);
        }
        Ok(())
    }

    fn process_batch2(&mut self, batch: &mut Vec<R>, out: &mut Collector<'_, O>) -> Result<()> {
        for r in batch.drain(..) {
            let key = (self.right_key)(&r);
            let waiting = if self.unique_right {
                self.left.remove(&key)
            } else {
                None
            };
            if let Some(matches) = waiting.as_ref().or_else(|| self.left.get(&key)) {
                for l in matches {
                    out.collect((self.f)(&key, l, &r));
                }
            }
            self.right.entry(key).or_default().push(r);
        }
        Ok(())
    }

    /// Both sides' records: the left table's snapshot, then the right's, in one buffer.
    fn snapshot_state(
        &mut self,
        _checkpoint: crate::types::CheckpointId,
        max_parallelism: usize,
    ) -> Result<Option<Vec<u8>>> {
        let (left, right) = (&self.left, &self.right);
        self.snapshot_buffer
            .write(|out| {
                append_snapshot(out, left.iter(), max_parallelism, MIN_WATERMARK)?;
                append_snapshot(out, right.iter(), max_parallelism, MIN_WATERMARK)
            })
            .map(Some)
    }

    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        const WHAT: &str = "keyed join state";
        let (l, r) = (&mut self.left, &mut self.right);
        let add_left = |k, v: Vec<L>| l.entry(k).or_default().extend(v);
        let add_right = |k, v: Vec<R>| r.entry(k).or_default().extend(v);
        if !is_snapshot(snapshot) {
            // Earlier builds wrote the two sides as a postcard pair.
            let (left, right): (Vec<u8>, Vec<u8>) = decode_checkpointed(WHAT, snapshot)?;
            read_snapshot(&left, key_groups.clone(), WHAT, add_left)?;
            return read_snapshot(&right, key_groups, WHAT, add_right);
        }
        let [left, right] = read_tables(snapshot, WHAT)?;
        left.entries(&key_groups, WHAT, add_left)?;
        right.entries(&key_groups, WHAT, add_right)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::Gather;

    type Join = KeyedJoin<
        (u32, u32),
        (u32, u32),
        u32,
        (u32, u32),
        fn(&(u32, u32)) -> u32,
        fn(&(u32, u32)) -> u32,
        fn(&u32, &(u32, u32), &(u32, u32)) -> (u32, u32),
    >;

    fn join() -> Join {
        KeyedJoin::new(|l| l.0, |r| r.0, |_, l, r| (l.1, r.1))
    }

    /// A restored join still matches records that arrive later with the ones it stored.
    #[test]
    fn a_restored_join_remembers_both_sides() {
        let mut before = join();
        let mut out = Gather(Vec::new());
        let mut buf = Vec::new();
        let mut stamps = Vec::new();
        let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
        before
            .process_batch1(&mut vec![(1, 10), (2, 20)], &mut c)
            .unwrap();
        before.process_batch2(&mut vec![(3, 300)], &mut c).unwrap();
        c.done().unwrap();
        let snapshot = before.snapshot_state(1, 128).unwrap().unwrap();

        let mut after = join();
        after.restore_state(&snapshot, 0..128).unwrap();
        let mut out = Gather(Vec::new());
        let mut buf = Vec::new();
        let mut stamps = Vec::new();
        let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
        after.process_batch2(&mut vec![(1, 100)], &mut c).unwrap();
        after.process_batch1(&mut vec![(3, 30)], &mut c).unwrap();
        c.done().unwrap();
        let mut got = out.0;
        got.sort();
        assert_eq!(got, vec![(10, 100), (30, 300)]);
        assert!(after.restore_state(b"garbage", 0..128).is_err());
    }

    proptest::proptest! {
        /// With a unique right key, any interleaving of the two sides gives the regular
        /// join's pairs, and no left record outlives the arrival of its match.
        #[test]
        fn a_unique_right_side_joins_like_the_regular_join(
            lefts in proptest::collection::vec((0u32..8, 0u32..1000), 0..60),
            rights in proptest::sample::subsequence((0u32..8).collect::<Vec<_>>(), 0..8),
            order in proptest::collection::vec(proptest::bool::ANY, 0..70),
        ) {
            let rights: Vec<(u32, u32)> = rights.into_iter().map(|k| (k, 100 + k)).collect();
            let (mut regular, mut unique) = (join(), join().with_unique_right());
            let mut got = [Vec::new(), Vec::new()];
            for (j, op) in [&mut regular, &mut unique].into_iter().enumerate() {
                let mut out = Gather(Vec::new());
                let (mut buf, mut stamps) = (Vec::new(), Vec::new());
                let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
                let (mut l, mut r) = (lefts.iter(), rights.iter());
                for left_first in order.iter().chain(std::iter::repeat_n(&true, 130)) {
                    match if *left_first { l.next().map(Ok) } else { r.next().map(Err) } {
                        Some(Ok(x)) => op.process_batch1(&mut vec![*x], &mut c).unwrap(),
                        Some(Err(x)) => op.process_batch2(&mut vec![*x], &mut c).unwrap(),
                        None => {}
                    }
                }
                for x in r {
                    op.process_batch2(&mut vec![*x], &mut c).unwrap();
                }
                c.done().unwrap();
                got[j] = out.0;
                got[j].sort();
            }
            proptest::prop_assert_eq!(&got[0], &got[1]);
            for key in unique.left.keys() {
                proptest::prop_assert!(!unique.right.contains_key(key), "a matched left record was kept");
            }
        }
    }
}
