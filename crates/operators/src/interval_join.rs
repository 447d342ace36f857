//! Interval join of two keyed streams in event time (Flink's `intervalJoin`): a left record
//! at `a` joins every right record of its key at `b` with `a + lower <= b <= a + upper`.
//!
//! Each side keeps its records by key and timestamp only as long as the other side can still
//! bring a match: the watermark removes a left record once it passes `a + upper`, a right
//! record once it passes `b - lower`, so state stays bounded on an endless stream. Records at
//! or below the watermark are late (no future match is certain to be complete for them):
//! they are counted and dropped, as in Flink. A result carries the later of the two
//! timestamps.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::error::{HummerError, Result};
use crate::state::declared::DeclaredState;
use crate::state::keyed_table::KeyedTable;
use crate::state::snapshot::OperatorWatermark;
use crate::state::timer_queue::TimerQueue;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{Data, Key, NO_TIMESTAMP, Timestamp};
use crate::{Collector, Operator, OperatorContext, TwoInputBatch};

/// The buffered records of one key.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Buffers<L, R> {
    left: BTreeMap<Timestamp, Vec<L>>,
    right: BTreeMap<Timestamp, Vec<R>>,
}

impl<L, R> Default for Buffers<L, R> {
    fn default() -> Self {
        Buffers {
            left: BTreeMap::new(),
            right: BTreeMap::new(),
        }
    }
}

/// Which side a cleanup timer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Side {
    Left,
    Right,
}

/// Joins two keyed streams on key equality and a bounded time difference.
pub struct IntervalJoin<L, R, K, O, KL, KR, F> {
    left_key: KL,
    right_key: KR,
    lower: i64,
    upper: i64,
    f: F,
    name: String,
    keys: KeyedTable<K, Buffers<L, R>>,
    cleanup: TimerQueue<(K, Side)>,
    watermark: OperatorWatermark,
    metrics: Arc<SubtaskMetrics>,
    _types: std::marker::PhantomData<fn() -> O>,
}

impl<L, R, K: Key, O, KL, KR, F> IntervalJoin<L, R, K, O, KL, KR, F> {
    /// Joins `left` at `a` with `right` at `b` where `a + lower <= b <= a + upper`, emitting
    /// what `f(left, right, out)` collects.
    pub fn new(
        left_key: KL,
        right_key: KR,
        lower: i64,
        upper: i64,
        f: F,
        ctx: &OperatorContext,
    ) -> Self {
        IntervalJoin {
            left_key,
            right_key,
            lower,
            upper,
            f,
            name: ctx.name.clone(),
            keys: KeyedTable::default(),
            cleanup: TimerQueue::default(),
            watermark: OperatorWatermark::default(),
            metrics: ctx.metrics.clone(),
            _types: std::marker::PhantomData,
        }
    }
}

impl<L, R, K, O, KL, KR, F> IntervalJoin<L, R, K, O, KL, KR, F>
where
    L: Data,
    R: Data,
    K: Key,
    O: 'static,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    F: FnMut(&L, &R, &mut Collector<'_, O>) + Send + 'static,
{
    fn check(&self, ts: Timestamp) -> Result<()> {
        if ts == NO_TIMESTAMP {
            return Err(HummerError::BadInput {
                input: format!("a record of interval join '{}'", self.name),
                reason: "it has no timestamp: assign timestamps with \
                         assign_timestamps_and_watermarks"
                    .into(),
            });
        }
        Ok(())
    }

    fn late(&self) {
        self.metrics.late_records.fetch_add(1, Ordering::Relaxed);
    }

    fn on_left(&mut self, l: L, a: Timestamp, out: &mut Collector<'_, O>) -> Result<()> {
        self.check(a)?;
        if a <= self.watermark.get() {
            self.late();
            return Ok(());
        }
        let key = (self.left_key)(&l);
        let buffers = self.keys.upsert(key.clone(), Buffers::default);
        let (from, to) = (a.saturating_add(self.lower), a.saturating_add(self.upper));
        for (&b, rights) in buffers.right.range(from..=to) {
            out.set_timestamp(a.max(b));
            for r in rights {
                (self.f)(&l, r, out);
            }
        }
        out.clear_timestamp();
        buffers.left.entry(a).or_default().push(l);
        self.cleanup
            .register(a.saturating_add(self.upper), (key, Side::Left));
        Ok(())
    }

    fn on_right(&mut self, r: R, b: Timestamp, out: &mut Collector<'_, O>) -> Result<()> {
        self.check(b)?;
        if b <= self.watermark.get() {
            self.late();
            return Ok(());
        }
        let key = (self.right_key)(&r);
        let buffers = self.keys.upsert(key.clone(), Buffers::default);
        let (from, to) = (b.saturating_sub(self.upper), b.saturating_sub(self.lower));
        for (&a, lefts) in buffers.left.range(from..=to) {
            out.set_timestamp(a.max(b));
            for l in lefts {
                (self.f)(l, &r, out);
            }
        }
        out.clear_timestamp();
        buffers.right.entry(b).or_default().push(r);
        self.cleanup
            .register(b.saturating_sub(self.lower), (key, Side::Right));
        Ok(())
    }

    /// Drops what the watermark has made unmatchable.
    fn clean_up(&mut self) {
        let w = self.watermark.get();
        while let Some((_, (key, side))) = self.cleanup.pop_due(w) {
            let Some(buffers) = self.keys.get_mut(&key) else {
                continue;
            };
            match side {
                // Left records at `a` with `a + upper <= w`.
                Side::Left => {
                    let keep = buffers
                        .left
                        .split_off(&(w.saturating_sub(self.upper).saturating_add(1)));
                    buffers.left = keep;
                }
                Side::Right => {
                    let keep = buffers
                        .right
                        .split_off(&(w.saturating_add(self.lower).saturating_add(1)));
                    buffers.right = keep;
                }
            }
            if buffers.left.is_empty() && buffers.right.is_empty() {
                self.keys.remove(&key);
            }
        }
    }

    /// Records buffered (for tests of bounded state).
    pub fn buffered(&self) -> usize {
        self.keys
            .iter()
            .map(|(_, b)| {
                b.left.values().map(Vec::len).sum::<usize>()
                    + b.right.values().map(Vec::len).sum::<usize>()
            })
            .sum()
    }
}

impl<L, R, K, O, KL, KR, F> Operator for IntervalJoin<L, R, K, O, KL, KR, F>
where
    L: Data,
    R: Data,
    K: Key,
    O: 'static,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    F: FnMut(&L, &R, &mut Collector<'_, O>) + Send + 'static,
{
    type In = (L, R);
    type Out = O;

    fn process_batch(
        &mut self,
        batch: TwoInputBatch<'_, L, R>,
        out: &mut Collector<'_, O>,
    ) -> Result<()> {
        match batch {
            TwoInputBatch::First(batch) => {
                batch.drain().try_for_each(|(l, a)| self.on_left(l, a, out))
            }
            TwoInputBatch::Second(batch) => batch
                .drain()
                .try_for_each(|(r, b)| self.on_right(r, b, out)),
        }
    }

    fn process_watermark(
        &mut self,
        watermark: Timestamp,
        _out: &mut Collector<'_, O>,
    ) -> Result<()> {
        self.watermark.advance(watermark);
        self.clean_up();
        Ok(())
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new()
            .table("buffers", &mut self.keys)
            .watermark(&mut self.watermark)
    }

    fn restored(&mut self) -> Result<()> {
        let (cleanup, lower, upper) = (&mut self.cleanup, self.lower, self.upper);
        for (key, buffers) in self.keys.iter() {
            for &a in buffers.left.keys() {
                cleanup.register(a.saturating_add(upper), (key.clone(), Side::Left));
            }
            for &b in buffers.right.keys() {
                cleanup.register(b.saturating_sub(lower), (key.clone(), Side::Right));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, VecOutput, test_context};

    /// An endless stream (here 200,000 records a side over 1,000 keys): the watermark keeps
    /// the buffered records to those within the join interval of it.
    #[test]
    fn state_stays_bounded_on_a_long_stream() {
        let ctx = test_context("join");
        let mut join = IntervalJoin::new(
            |l: &(u32, i64)| l.0,
            |r: &(u32, i64)| r.0,
            -50,
            50,
            |_: &(u32, i64), _: &(u32, i64), out: &mut Collector<'_, u32>| out.collect(1),
            &ctx,
        );
        let mut sink = VecOutput(Vec::new());
        let (mut buf, mut stamps) = (Vec::new(), Vec::new());
        let mut peak = 0;
        let mut matches = 0;
        for i in 0..200_000i64 {
            let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
            let rec = ((i % 1_000) as u32, i);
            join.process_batch(
                TwoInputBatch::First(Batch::with_timestamps(&mut vec![rec], &mut vec![i])),
                &mut out,
            )
            .unwrap();
            join.process_batch(
                TwoInputBatch::Second(Batch::with_timestamps(&mut vec![rec], &mut vec![i])),
                &mut out,
            )
            .unwrap();
            if i % 100 == 99 {
                join.process_watermark(i - 10, &mut out).unwrap();
            }
            out.done().unwrap();
            matches += sink.0.len();
            sink.0.clear();
            peak = peak.max(join.buffered());
        }
        // Each side keeps at most the records within 50 ms (plus one watermark step) of the
        // watermark: a few hundred, never the 400,000 seen.
        assert!(peak <= 2 * (50 + 10 + 100 + 1), "peak buffered {peak}");
        assert_eq!(
            matches, 200_000,
            "each record meets its twin on the other side"
        );
    }
}
