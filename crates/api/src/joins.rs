//! Time-bounded joins: the interval join of two keyed streams, and the window join
//! (`join(..).where_key(..).equal_to(..).window(..).apply(..)`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::graph::stream_graph::NodeKind;
use crate::operators::Collector;
use crate::operators::interval_join::IntervalJoin;
use crate::operators::window::{TimeWindow, WindowAssigner};
use crate::runtime::factory::{NodeFactory, OperatorFactory};
use crate::runtime::type_ops::type_ops;
use crate::types::{Data, Key};
use crate::{DataStream, KeyedStream, UserFn};

/// `left.interval_join(right)` before its bounds are set.
pub struct IntervalJoinBuilder<L, R, K, KL, KR> {
    left: KeyedStream<L, K, KL>,
    right: KeyedStream<R, K, KR>,
}

/// An interval join with its bounds, waiting for its function.
pub struct IntervalJoined<L, R, K, KL, KR> {
    builder: IntervalJoinBuilder<L, R, K, KL, KR>,
    lower: i64,
    upper: i64,
}

// Setting the bounds only stores them: the key functions are bounded where the join is built.
impl<L, R, K, KL, KR> IntervalJoinBuilder<L, R, K, KL, KR> {
    pub(crate) fn new(left: KeyedStream<L, K, KL>, right: KeyedStream<R, K, KR>) -> Self {
        IntervalJoinBuilder { left, right }
    }

    /// A left record at `a` joins right records at `b` with `a + lower <= b <= a + upper`
    /// (milliseconds; negative bounds look back in time).
    ///
    /// Panics if `lower > upper` (an empty interval is a mistake in the job).
    pub fn between(self, lower: i64, upper: i64) -> IntervalJoined<L, R, K, KL, KR> {
        assert!(
            lower <= upper,
            "interval join bounds: lower {lower} > upper {upper}"
        );
        IntervalJoined {
            builder: self,
            lower,
            upper,
        }
    }
}

impl<L, R, K, KL, KR> IntervalJoined<L, R, K, KL, KR>
where
    L: Data,
    R: Data,
    K: Key,
    KL: Fn(&L) -> K + UserFn,
    KR: Fn(&R) -> K + UserFn,
{
    /// Calls `f(left, right, out)` for every matching pair; results carry the later of the
    /// two timestamps.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_parallelism(1);
    /// let stamp = |r: &(u8, i64), _| r.1;
    /// let clicks = env.from_collection(vec![(1u8, 1_000i64), (2, 5_000)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(stamp));
    /// let buys = env.from_collection(vec![(1u8, 1_500i64), (1, 9_000), (2, 5_100)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(stamp));
    /// // A buy within 2 s after a click of the same user.
    /// let out = clicks
    ///     .key_by(|c: &(u8, i64)| c.0)
    ///     .interval_join(&buys.key_by(|b: &(u8, i64)| b.0))
    ///     .between(0, 2_000)
    ///     .process(|c: &(u8, i64), b: &(u8, i64), out: &mut Collector<(u8, i64)>| out.collect((c.0, b.1 - c.1)))
    ///     .collect();
    /// let mut result = env.execute("interval join").unwrap();
    /// let mut rows = result.collected(&out).unwrap();
    /// rows.sort();
    /// assert_eq!(rows, vec![(1, 500), (2, 100)]);
    /// ```
    pub fn process<O, F>(self, f: F) -> DataStream<O>
    where
        O: Data,
        F: FnMut(&L, &R, &mut Collector<'_, O>) + UserFn,
    {
        let IntervalJoinBuilder { left, right } = self.builder;
        let (kl, kr, lower, upper) = (
            left.key_of.clone(),
            right.key_of.clone(),
            self.lower,
            self.upper,
        );
        let factory = NodeFactory::TwoInput(Arc::new(OperatorFactory::new(move |ctx| {
            Ok(IntervalJoin::new(
                kl.clone(),
                kr.clone(),
                lower,
                upper,
                f.clone(),
                ctx,
            ))
        })));
        let env = &left.stream.env;
        let id = env.add_node(
            format!("IntervalJoin [{lower}, {upper}] ms"),
            NodeKind::Operator,
            factory,
            type_ops::<O>(),
        );
        env.add_edge(
            left.stream.node,
            id,
            0,
            left.hash_partitioning(),
            left.stream.network_task,
        );
        env.add_edge(
            right.stream.node,
            id,
            1,
            right.hash_partitioning(),
            right.stream.network_task,
        );
        DataStream::new(env.clone(), id)
    }
}

/// A record of either side of a window join.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum JoinSide<L, R> {
    /// From the first stream.
    Left(L),
    /// From the second stream.
    Right(R),
}

/// `a.join(b)`: a window join being set up (Flink's `JoinedStreams`).
pub struct JoinedStreams<L, R> {
    left: DataStream<L>,
    right: DataStream<R>,
}

/// A window join with its left key.
pub struct JoinWhere<L, R, KL> {
    joined: JoinedStreams<L, R>,
    left_key: KL,
}

/// A window join with both keys.
pub struct JoinEqual<L, R, KL, KR> {
    joined: JoinedStreams<L, R>,
    left_key: KL,
    right_key: KR,
}

/// A window join with its windows, waiting for its function.
pub struct JoinWindowed<L, R, KL, KR, A> {
    equal: JoinEqual<L, R, KL, KR>,
    assigner: A,
}

impl<L: Data, R: Data> JoinedStreams<L, R> {
    pub(crate) fn new(left: DataStream<L>, right: DataStream<R>) -> Self {
        JoinedStreams { left, right }
    }

    /// The key of the first stream's records.
    pub fn where_key<K: Key, KL>(self, key: KL) -> JoinWhere<L, R, KL>
    where
        KL: Fn(&L) -> K + UserFn,
    {
        JoinWhere {
            joined: self,
            left_key: key,
        }
    }
}

impl<L: Data, R: Data, KL: UserFn> JoinWhere<L, R, KL> {
    /// The key of the second stream's records, compared with the first's.
    pub fn equal_to<K: Key, KR>(self, key: KR) -> JoinEqual<L, R, KL, KR>
    where
        KL: Fn(&L) -> K,
        KR: Fn(&R) -> K + UserFn,
    {
        JoinEqual {
            joined: self.joined,
            left_key: self.left_key,
            right_key: key,
        }
    }
}

impl<L: Data, R: Data, KL, KR> JoinEqual<L, R, KL, KR> {
    /// The windows both streams are cut into.
    pub fn window<A: WindowAssigner>(self, assigner: A) -> JoinWindowed<L, R, KL, KR, A> {
        JoinWindowed {
            equal: self,
            assigner,
        }
    }
}

impl<L, R, K, KL, KR, A> JoinWindowed<L, R, KL, KR, A>
where
    L: Data,
    R: Data,
    K: Key,
    KL: Fn(&L) -> K + UserFn,
    KR: Fn(&R) -> K + UserFn,
    A: WindowAssigner,
{
    /// Emits `f(left, right)` for every pair of records with equal keys in the same window,
    /// when the window fires; results carry the window's last timestamp. A window's state is
    /// dropped when it closes.
    pub fn apply<O, F>(self, f: F) -> DataStream<O>
    where
        O: Data,
        F: Fn(&L, &R) -> O + UserFn,
    {
        let JoinEqual {
            joined,
            left_key,
            right_key,
        } = self.equal;
        let left = joined.left.map(JoinSide::<L, R>::Left);
        let right = joined.right.map(JoinSide::<L, R>::Right);
        left.union(&[right])
            .key_by(move |s: &JoinSide<L, R>| match s {
                JoinSide::Left(l) => left_key(l),
                JoinSide::Right(r) => right_key(r),
            })
            .window(self.assigner)
            .process(
                move |_: &K,
                      _: &TimeWindow,
                      records: &[JoinSide<L, R>],
                      out: &mut Collector<'_, O>| {
                    for l in records.iter().filter_map(|s| match s {
                        JoinSide::Left(l) => Some(l),
                        JoinSide::Right(_) => None,
                    }) {
                        for r in records.iter().filter_map(|s| match s {
                            JoinSide::Right(r) => Some(r),
                            JoinSide::Left(_) => None,
                        }) {
                            out.collect(f(l, r));
                        }
                    }
                },
            )
            .name("Window join")
    }
}
