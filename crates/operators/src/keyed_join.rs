//! Keyed two-input join: an unbounded symmetric hash join on equal keys (with a lighter form
//! when one side's key is unique).

use std::marker::PhantomData;

use crate::error::Result;
use crate::state::declared::DeclaredState;
use crate::state::keyed_table::KeyedTable;
use crate::types::{Key, KeySelector};
use crate::{Collector, EitherBatch, Operator};

/// One side's records per key, checkpointed incrementally (see [`KeyedTable`]).
type Table<K, V> = KeyedTable<K, Vec<V>>;

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
    _types: PhantomData<fn() -> O>,
}

impl<L, R, K: Key, O, KL, KR, F> KeyedJoin<L, R, K, O, KL, KR, F> {
    /// Joins on `left_key(l) == right_key(r)`, emitting `f(key, l, r)`.
    pub fn new(left_key: KL, right_key: KR, f: F) -> Self {
        KeyedJoin {
            left_key,
            right_key,
            f,
            left: KeyedTable::default(),
            right: KeyedTable::default(),
            unique_right: false,
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

impl<L, R, K, O, KL, KR, F> Operator for KeyedJoin<L, R, K, O, KL, KR, F>
where
    L: crate::types::Data,
    R: crate::types::Data,
    K: Key,
    O: 'static,
    KL: KeySelector<L, K>,
    KR: KeySelector<R, K>,
    F: FnMut(&K, &L, &R) -> O + Send + 'static,
{
    type In = (L, R);
    type Out = O;

    fn process(&mut self, batch: EitherBatch<'_, L, R>, out: &mut Collector<'_, O>) -> Result<()> {
        match batch {
            EitherBatch::First(batch) => batch.for_each(out, |l, out| {
                let key = (self.left_key)(&l);
                if let Some(matches) = self.right.get(&key) {
                    for r in matches {
                        out.collect((self.f)(&key, &l, r));
                    }
                    if self.unique_right {
                        return Ok(()); // no other right record can come for this key
                    }
                }
                self.left.upsert(key, Vec::new).push(l);
                Ok(())
            }),
            EitherBatch::Second(batch) => batch.for_each(out, |r, out| {
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
                self.right.upsert(key, Vec::new).push(r);
                Ok(())
            }),
        }
    }

    /// Both sides' records, each a table checkpointed incrementally.
    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new()
            .table("left", &mut self.left)
            .table("right", &mut self.right)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, Checkpointed, VecOutput};

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
        let mut out = VecOutput(Vec::new());
        let mut buf = Vec::new();
        let mut stamps = Vec::new();
        let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
        before
            .process(
                EitherBatch::First(Batch::new(&mut vec![(1, 10), (2, 20)])),
                &mut c,
            )
            .unwrap();
        before
            .process(EitherBatch::Second(Batch::new(&mut vec![(3, 300)])), &mut c)
            .unwrap();
        c.done().unwrap();
        let snapshot = before.snapshot_state(1, 128).unwrap().unwrap();

        let mut after = join();
        after.restore_state(&snapshot, 0..128).unwrap();
        let mut out = VecOutput(Vec::new());
        let mut buf = Vec::new();
        let mut stamps = Vec::new();
        let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
        after
            .process(EitherBatch::Second(Batch::new(&mut vec![(1, 100)])), &mut c)
            .unwrap();
        after
            .process(EitherBatch::First(Batch::new(&mut vec![(3, 30)])), &mut c)
            .unwrap();
        c.done().unwrap();
        let mut got = out.0;
        got.sort();
        assert_eq!(got, vec![(10, 100), (30, 300)]);
        assert!(after.restore_state(b"garbage", 0..128).is_err());
    }

    /// One side's records per key, sorted by key.
    type Side = Vec<(u32, Vec<(u32, u32)>)>;

    /// Both sides' contents, sorted.
    fn contents(op: &Join) -> (Side, Side) {
        let side = |t: &Table<u32, (u32, u32)>| {
            let mut v: Vec<_> = t.iter().map(|(k, v)| (*k, v.clone())).collect();
            v.sort();
            v
        };
        (side(&op.left), side(&op.right))
    }

    proptest::proptest! {
        /// Snapshots taken anywhere in a run of both sides (a unique right key, so left records
        /// also leave the state), with any checkpoints completing, each restore through their
        /// chain of deltas to exactly the state at the snapshot.
        #[test]
        fn every_chain_of_join_snapshots_restores_the_state_at_its_snapshot(
            steps in proptest::collection::vec(
                (proptest::collection::vec((proptest::bool::ANY, 0u32..300, 0u32..9), 0..30),
                 proptest::bool::ANY),
                1..16),
        ) {
            let mut op = join().with_unique_right();
            let mut stored = std::collections::HashMap::new();
            let mut expected = Vec::new();
            let mut out = VecOutput(Vec::new());
            let (mut buf, mut stamps) = (Vec::new(), Vec::new());
            let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
            let mut next_right = 0u32;
            for (i, (records, complete)) in steps.iter().enumerate() {
                for (left, key, v) in records {
                    if *left {
                        op.process(EitherBatch::First(Batch::new(&mut vec![(*key, *v)])), &mut c).unwrap();
                    } else if next_right < 300 {
                        // Right keys are unique: 0, 1, 2, ... each once. Left records with a
                        // higher key wait, and leave the state when their right comes.
                        op.process(EitherBatch::Second(Batch::new(&mut vec![(next_right, *v)])), &mut c).unwrap();
                        next_right += 1;
                    }
                }
                let id = i as u64 + 1;
                let bytes = op.snapshot_state(id, 128).unwrap().unwrap();
                stored.insert(id, bytes);
                expected.push((id, contents(&op)));
                if *complete {
                    op.checkpoint_complete(id).unwrap();
                }
            }
            c.done().unwrap();
            for (id, want) in expected {
                let mut chain = vec![stored[&id].clone()];
                while let Some(base) = crate::state::snapshot::delta_base(&chain[chain.len() - 1]) {
                    chain.push(stored[&base].clone());
                }
                let mut restored = join().with_unique_right();
                for piece in chain.iter().rev() {
                    restored.restore_state(piece, 0..128).unwrap();
                }
                proptest::prop_assert_eq!(contents(&restored), want, "checkpoint {}", id);
            }
        }

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
                let mut out = VecOutput(Vec::new());
                let (mut buf, mut stamps) = (Vec::new(), Vec::new());
                let mut c = Collector::new(&mut buf, &mut stamps, &mut out, 64);
                let (mut l, mut r) = (lefts.iter(), rights.iter());
                for left_first in order.iter().chain(std::iter::repeat_n(&true, 130)) {
                    match if *left_first { l.next().map(Ok) } else { r.next().map(Err) } {
                        Some(Ok(x)) => op.process(EitherBatch::First(Batch::new(&mut vec![*x])), &mut c).unwrap(),
                        Some(Err(x)) => op.process(EitherBatch::Second(Batch::new(&mut vec![*x])), &mut c).unwrap(),
                        None => {}
                    }
                }
                for x in r {
                    op.process(EitherBatch::Second(Batch::new(&mut vec![*x])), &mut c).unwrap();
                }
                c.done().unwrap();
                got[j] = out.0;
                got[j].sort();
            }
            proptest::prop_assert_eq!(&got[0], &got[1]);
            for (key, _) in unique.left.iter() {
                proptest::prop_assert!(unique.right.get(key).is_none(), "a matched left record was kept");
            }
        }
    }
}
