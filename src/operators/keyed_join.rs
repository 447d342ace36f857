//! Keyed two-input join: an unbounded symmetric hash join on equal keys.

use std::collections::HashMap;
use std::marker::PhantomData;

use crate::data::Key;
use crate::error::Result;
use crate::operators::{Collector, TwoInputOperator};

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
            _types: PhantomData,
        }
    }
}

impl<L, R, K, O, KL, KR, F> TwoInputOperator for KeyedJoin<L, R, K, O, KL, KR, F>
where
    L: Send + 'static,
    R: Send + 'static,
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
            }
            self.left.entry(key).or_default().push(l);
        }
        Ok(())
    }

    fn process_batch2(&mut self, batch: &mut Vec<R>, out: &mut Collector<'_, O>) -> Result<()> {
        for r in batch.drain(..) {
            let key = (self.right_key)(&r);
            if let Some(matches) = self.left.get(&key) {
                for l in matches {
                    out.collect((self.f)(&key, l, &r));
                }
            }
            self.right.entry(key).or_default().push(r);
        }
        Ok(())
    }
}
