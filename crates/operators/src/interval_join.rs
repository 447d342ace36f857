//! Interval join of two keyed streams in event time (Flink's `intervalJoin`): a left record
//! at `a` joins every right record of its key at `b` with `a + lower <= b <= a + upper`.
//!
//! Each side keeps its records by key and timestamp only as long as the other side can still
//! bring a match: the watermark removes a left record once it passes `a + upper`, a right
//! record once it passes `b - lower`, so state stays bounded on an endless stream. Records at
//! or below the watermark are late (no future match is certain to be complete for them):
//! they are counted and dropped, as in Flink. A result carries the later of the two
//! timestamps.
//!
//! An outer interval join (SQL's `LEFT`/`RIGHT`/`FULL JOIN` with time bounds) also emits
//! each record of a preserved side that met no record of the other side, when the watermark
//! removes it: by then no match can come ([`IntervalJoin::with_unmatched`]).

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
use crate::types::{Data, Key, KeySelector, NO_TIMESTAMP, Timestamp};
use crate::{Collector, EitherBatch, Operator, OperatorContext};

/// A buffered record, and whether it has met a record of the other side.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Held<V> {
    record: V,
    matched: bool,
}

/// One side's buffered records of a key, by timestamp.
type Times<V> = BTreeMap<Timestamp, Vec<Held<V>>>;

/// A record of an outer interval join's preserved side that met no record of the other side.
pub enum Unmatched<'a, L, R> {
    /// A left record.
    Left(&'a L),
    /// A right record.
    Right(&'a R),
}

/// What an outer interval join emits for a record without a match.
type EmitUnmatched<L, R, O> = Box<dyn FnMut(Unmatched<'_, L, R>, &mut Collector<'_, O>) + Send>;

/// What a pair in the interval must meet besides the key to match: see
/// [`IntervalJoin::with_condition`].
type Condition<L, R> = Box<dyn FnMut(&L, &R) -> bool + Send>;

/// The buffered records of one key.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Buffers<L, R> {
    left: Times<L>,
    right: Times<R>,
}

impl<L, R> Buffers<L, R> {
    /// As a left record sees them: (its side's records, the records it joins).
    fn seen_from_left(&mut self) -> (&mut Times<L>, &mut Times<R>) {
        (&mut self.left, &mut self.right)
    }

    /// As a right record sees them: (its side's records, the records it joins).
    fn seen_from_right(&mut self) -> (&mut Times<R>, &mut Times<L>) {
        (&mut self.right, &mut self.left)
    }
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

impl Side {
    /// The other side's timestamps that a record of this side at `t` joins, for the interval
    /// `lower..=upper`.
    #[inline]
    fn matches(self, t: Timestamp, lower: i64, upper: i64) -> (Timestamp, Timestamp) {
        match self {
            Side::Left => (t.saturating_add(lower), t.saturating_add(upper)),
            Side::Right => (t.saturating_sub(upper), t.saturating_sub(lower)),
        }
    }

    /// The last time a record of this side at `t` can match: when it stops being needed.
    #[inline]
    fn last_match(self, t: Timestamp, lower: i64, upper: i64) -> Timestamp {
        self.matches(t, lower, upper).1
    }
}

/// Joins `l` and `r` with `f` if they meet `condition` (if any); true if they did.
#[inline]
fn pair<L, R, O>(
    f: &mut impl FnMut(&L, &R, &mut Collector<'_, O>),
    condition: &mut Option<Condition<L, R>>,
    l: &L,
    r: &R,
    out: &mut Collector<'_, O>,
) -> bool {
    if condition.as_mut().is_some_and(|c| !c(l, r)) {
        return false;
    }
    f(l, r, out);
    true
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
    /// Which sides' records without a match are emitted (left, right), and how.
    unmatched: Option<(bool, bool, EmitUnmatched<L, R, O>)>,
    /// What a pair must meet besides the key and the interval, if anything.
    condition: Option<Condition<L, R>>,
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
            unmatched: None,
            condition: None,
            _types: std::marker::PhantomData,
        }
    }

    /// Only the pairs in the interval for which `condition(left, right)` holds join; a record
    /// that meets no such pair is unmatched (an SQL outer join's `ON` conditions besides the
    /// key and the times).
    pub fn with_condition(
        mut self,
        condition: impl FnMut(&L, &R) -> bool + Send + 'static,
    ) -> Self {
        self.condition = Some(Box::new(condition));
        self
    }

    /// The outer join: each record of the left (`left`) or right (`right`) side that met no
    /// record of the other side is given to `emit` when the watermark removes it, stamped
    /// with its own timestamp.
    pub fn with_unmatched(
        mut self,
        left: bool,
        right: bool,
        emit: impl FnMut(Unmatched<'_, L, R>, &mut Collector<'_, O>) + Send + 'static,
    ) -> Self {
        self.unmatched = Some((left, right, Box::new(emit)));
        self
    }

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

    /// Joins a record of `side` at `t` with the other side's records of its key that it
    /// matches (each result stamped with the later of the two timestamps), then keeps it
    /// until the watermark passes the last time it can match. `key_of` gives its key,
    /// `sides` a key's records of (its side, the other side), and `join` calls `f` in (left,
    /// right) order.
    #[inline]
    fn on_record<T, U>(
        &mut self,
        (record, t): (T, Timestamp),
        side: Side,
        key_of: impl FnOnce(&Self, &T) -> K,
        sides: impl FnOnce(&mut Buffers<L, R>) -> (&mut Times<T>, &mut Times<U>),
        mut join: impl FnMut(
            &mut F,
            &mut Option<Condition<L, R>>,
            &T,
            &U,
            &mut Collector<'_, O>,
        ) -> bool,
        out: &mut Collector<'_, O>,
    ) -> Result<()> {
        self.check(t)?;
        if t <= self.watermark.get() {
            self.late();
            return Ok(());
        }
        let key = key_of(self, &record);
        let (mine, theirs) = sides(self.keys.upsert(key.clone(), Buffers::default));
        let (from, to) = side.matches(t, self.lower, self.upper);
        let mut matched = false;
        for (&u, others) in theirs.range_mut(from..=to) {
            out.set_timestamp(t.max(u));
            for other in others {
                if join(
                    &mut self.f,
                    &mut self.condition,
                    &record,
                    &other.record,
                    out,
                ) {
                    other.matched = true;
                    matched = true;
                }
            }
        }
        out.clear_timestamp();
        mine.entry(t).or_default().push(Held { record, matched });
        self.cleanup.register(to, (key, side));
        Ok(())
    }

    /// Drops what the watermark has made unmatchable, emitting the records of a preserved
    /// side that met nothing.
    fn clean_up(&mut self, out: &mut Collector<'_, O>) {
        let w = self.watermark.get();
        while let Some((_, (key, side))) = self.cleanup.pop_due(w) {
            let Some(buffers) = self.keys.get_mut(&key) else {
                continue;
            };
            let emit = self.unmatched.as_mut().and_then(|(left, right, emit)| {
                let kept = match side {
                    Side::Left => *left,
                    Side::Right => *right,
                };
                kept.then_some(emit)
            });
            match side {
                // Left records at `a` with `a + upper <= w`.
                Side::Left => {
                    let cut = w.saturating_sub(self.upper).saturating_add(1);
                    let keep = buffers.left.split_off(&cut);
                    let gone = std::mem::replace(&mut buffers.left, keep);
                    if let Some(emit) = emit {
                        emit_unmatched(gone, |l| Unmatched::Left(l), emit, out);
                    }
                }
                Side::Right => {
                    let cut = w.saturating_add(self.lower).saturating_add(1);
                    let keep = buffers.right.split_off(&cut);
                    let gone = std::mem::replace(&mut buffers.right, keep);
                    if let Some(emit) = emit {
                        emit_unmatched(gone, |r| Unmatched::Right(r), emit, out);
                    }
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

/// Gives `emit` each record of `gone` that met nothing, stamped with its time.
fn emit_unmatched<V, L, R, O>(
    gone: Times<V>,
    lane: impl for<'a> Fn(&'a V) -> Unmatched<'a, L, R>,
    emit: &mut EmitUnmatched<L, R, O>,
    out: &mut Collector<'_, O>,
) {
    for (t, records) in gone {
        out.set_timestamp(t);
        for held in records.iter().filter(|h| !h.matched) {
            emit(lane(&held.record), out);
        }
    }
    out.clear_timestamp();
}

impl<L, R, K, O, KL, KR, F> Operator for IntervalJoin<L, R, K, O, KL, KR, F>
where
    L: Data,
    R: Data,
    K: Key,
    O: 'static,
    KL: KeySelector<L, K>,
    KR: KeySelector<R, K>,
    F: FnMut(&L, &R, &mut Collector<'_, O>) + Send + 'static,
{
    type In = (L, R);
    type Out = O;

    fn process(&mut self, batch: EitherBatch<'_, L, R>, out: &mut Collector<'_, O>) -> Result<()> {
        match batch {
            EitherBatch::First(batch) => batch.drain().try_for_each(|l| {
                let join = |f: &mut F, c: &mut _, l: &L, r: &R, out: &mut Collector<'_, O>| {
                    pair(f, c, l, r, out)
                };
                let key_of = |op: &Self, l: &L| (op.left_key)(l);
                self.on_record(l, Side::Left, key_of, Buffers::seen_from_left, join, out)
            }),
            EitherBatch::Second(batch) => batch.drain().try_for_each(|r| {
                let join = |f: &mut F, c: &mut _, r: &R, l: &L, out: &mut Collector<'_, O>| {
                    pair(f, c, l, r, out)
                };
                let key_of = |op: &Self, r: &R| (op.right_key)(r);
                self.on_record(r, Side::Right, key_of, Buffers::seen_from_right, join, out)
            }),
        }
    }

    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, O>) -> Result<()> {
        self.watermark.advance(time);
        self.clean_up(out);
        Ok(())
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new()
            .table("buffers", &mut self.keys)
            .watermark(&mut self.watermark)
    }

    fn restored(&mut self) -> Result<()> {
        let (cleanup, lower, upper) = (&mut self.cleanup, self.lower, self.upper);
        self.keys.for_each_entry(|key, buffers| {
            for &a in buffers.left.keys() {
                let last = Side::Left.last_match(a, lower, upper);
                cleanup.register(last, (key.clone(), Side::Left));
            }
            for &b in buffers.right.keys() {
                let last = Side::Right.last_match(b, lower, upper);
                cleanup.register(last, (key.clone(), Side::Right));
            }
        });
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
            join.process(
                EitherBatch::First(Batch::with_timestamps(&mut vec![rec], &mut vec![i])),
                &mut out,
            )
            .unwrap();
            join.process(
                EitherBatch::Second(Batch::with_timestamps(&mut vec![rec], &mut vec![i])),
                &mut out,
            )
            .unwrap();
            if i % 100 == 99 {
                join.on_watermark(i - 10, &mut out).unwrap();
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

    /// An outer join emits each left and right record without a match once, when the
    /// watermark passes its last possible match, and never a record that matched; with a
    /// condition that the one pair in the interval fails, both its records are unmatched.
    #[test]
    fn records_without_a_match_are_emitted_when_the_watermark_passes_them() {
        for condition in [false, true] {
            let seen = outer_join(condition);
            let expected: Vec<Vec<&str>> = match condition {
                false => vec![vec!["0-5"], vec!["-50"], vec!["100-"]],
                true => vec![vec!["-5"], vec!["-50", "0-"], vec!["100-"]],
            };
            assert_eq!(seen, expected, "condition {condition}");
        }
    }

    fn outer_join(condition: bool) -> Vec<Vec<String>> {
        let ctx = test_context("outer join");
        let join = IntervalJoin::new(
            |l: &(u32, i64)| l.0,
            |r: &(u32, i64)| r.0,
            0,
            10,
            |l: &(u32, i64), r: &(u32, i64), out: &mut Collector<'_, String>| {
                out.collect(format!("{}-{}", l.1, r.1))
            },
            &ctx,
        )
        .with_unmatched(
            true,
            true,
            |u: Unmatched<'_, (u32, i64), (u32, i64)>, out: &mut Collector<'_, String>| {
                out.collect(match u {
                    Unmatched::Left(l) => format!("{}-", l.1),
                    Unmatched::Right(r) => format!("-{}", r.1),
                })
            },
        );
        let mut join = match condition {
            true => join.with_condition(|l: &(u32, i64), r: &(u32, i64)| r.1 - l.1 != 5),
            false => join,
        };
        let mut sink = VecOutput(Vec::new());
        let (mut buf, mut stamps) = (Vec::new(), Vec::new());
        let mut seen = Vec::new();
        // Left at 0 and 100 (key 1), right at 5 (key 1: matches 0) and 50 (key 2: alone).
        let steps: Vec<(bool, (u32, i64))> = vec![
            (true, (1, 0)),
            (true, (1, 100)),
            (false, (1, 5)),
            (false, (2, 50)),
        ];
        for (left, rec) in steps {
            let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
            let (mut records, mut times) = (vec![rec], vec![rec.1]);
            let batch = Batch::with_timestamps(&mut records, &mut times);
            let batch = if left {
                EitherBatch::First(batch)
            } else {
                EitherBatch::Second(batch)
            };
            join.process(batch, &mut out).unwrap();
            out.done().unwrap();
        }
        for w in [9, 60, i64::MAX] {
            let mut out = Collector::new(&mut buf, &mut stamps, &mut sink, 1024);
            join.on_watermark(w, &mut out).unwrap();
            out.done().unwrap();
            let mut emitted = std::mem::take(&mut sink.0);
            emitted.sort();
            seen.push(emitted);
        }
        seen
    }
}
