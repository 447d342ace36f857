//! `KeyedStream<T, K, KS>`: a stream partitioned by a key, and its keyed operations.

use std::marker::PhantomData;
use std::ops::AddAssign;
use std::sync::Arc;

use crate::graph::stream_graph::{CombineRewrite, NodeKind};
use crate::operators::keyed_aggregate::{
    Aggregation, Count, FieldAggregate, KeyedAggregate, MergeAggregate, PartialAggregate, Reduce,
};
use crate::operators::keyed_join::KeyedJoin;
use crate::operators::keyed_process::KeyedProcess;
use crate::operators::keyed_process_function::{KeyedProcessFunction, KeyedProcessOperator};
use crate::operators::window::{CountTrigger, GlobalWindows, PurgingTrigger, WindowAssigner};
use crate::operators::{Collector, Operator};
use crate::runtime::factory::{NodeFactory, OperatorFactory};
use crate::runtime::type_ops::type_ops;
use crate::state::key_groups::subtask_of_key;
use crate::state::{ListState, MapState, ValueState};
use crate::types::{BatchRouter, Partitioning};
use crate::types::{Data, Key};
use crate::{DataStream, MakeOperator, UserFn, WindowedStream};

/// A stream whose records are routed by the key `KS` extracts (Flink's `KeyedStream`).
///
/// Every keyed operation shuffles by key group, so all records of one key meet in one subtask
/// and per-key state is consistent.
pub struct KeyedStream<T, K, KS> {
    pub(crate) stream: DataStream<T>,
    pub(crate) key_of: KS,
    _key: PhantomData<fn() -> K>,
}

/// A router sending each record to the subtask that owns its key.
fn router<T: 'static, K: Key>(key_of: impl Fn(&T) -> K + Send + Sync + 'static) -> BatchRouter<T> {
    Arc::new(
        move |records: &[T], channels: usize, max_parallelism: usize, out: &mut Vec<u32>| {
            out.clear();
            out.extend(
                records
                    .iter()
                    .map(|r| subtask_of_key(&key_of(r), max_parallelism, channels) as u32),
            );
        },
    )
}

impl<T, K, KS> KeyedStream<T, K, KS>
where
    T: Data,
    K: Key,
    KS: Fn(&T) -> K + UserFn,
{
    pub(crate) fn new(stream: DataStream<T>, key_of: KS) -> Self {
        KeyedStream {
            stream,
            key_of,
            _key: PhantomData,
        }
    }

    /// A custom operator on the keyed stream (Flink's `keyBy().transform()`): the records
    /// reach its subtasks partitioned by key, so it may keep keyed state (declared in its
    /// [`Operator::state`], which the runtime snapshots by key group).
    pub fn transform<O: Data, Op>(&self, name: &str, make: impl MakeOperator<Op>) -> DataStream<O>
    where
        Op: Operator<In = (T,), Out = O>,
    {
        self.stream
            .with_partitioning(self.hash_partitioning())
            .transform(name, make)
    }

    /// Connects two keyed streams with the same key (Flink's keyed `connect`): both are
    /// partitioned by their keys, so a record of either input reaches the subtask of its key,
    /// and a two-input operator on them ([`crate::ConnectedStreams::transform`]) may keep
    /// keyed state.
    pub fn connect<U: Data, KU>(
        &self,
        other: &KeyedStream<U, K, KU>,
    ) -> crate::ConnectedStreams<T, U>
    where
        KU: Fn(&U) -> K + UserFn,
    {
        crate::ConnectedStreams::new(
            self.stream.with_partitioning(self.hash_partitioning()),
            other.stream.with_partitioning(other.hash_partitioning()),
        )
    }

    /// Runs a [`KeyedProcessFunction`]: per-key state and timers in event and processing
    /// time (see [`crate::operators::keyed_process_function`]).
    pub fn process_function<F: KeyedProcessFunction<K, T>>(&self, f: F) -> DataStream<F::Out> {
        let ks = self.key_of.clone();
        self.stream
            .with_partitioning(self.hash_partitioning())
            .transform("KeyedProcessFunction", move |ctx| {
                Ok(KeyedProcessOperator::new(ks.clone(), f.clone(), ctx))
            })
    }

    /// Joins with another keyed stream on the key and a bounded time difference (Flink's
    /// `intervalJoin`); set the bounds with `between`.
    pub fn interval_join<U, KU>(
        &self,
        other: &KeyedStream<U, K, KU>,
    ) -> crate::IntervalJoinBuilder<T, U, K, KS, KU>
    where
        U: Data,
        KU: Fn(&U) -> K + UserFn,
    {
        crate::IntervalJoinBuilder::new(
            KeyedStream::new(self.stream.clone(), self.key_of.clone()),
            KeyedStream::new(other.stream.clone(), other.key_of.clone()),
        )
    }

    /// Cuts each key's records into windows (Flink's `window`).
    pub fn window<A: WindowAssigner>(&self, assigner: A) -> WindowedStream<T, K, KS, A> {
        WindowedStream::new(
            KeyedStream::new(self.stream.clone(), self.key_of.clone()),
            assigner,
        )
    }

    /// Windows of `count` records per key, each emitted when full (Flink's `countWindow`).
    pub fn count_window(&self, count: u64) -> WindowedStream<T, K, KS, GlobalWindows> {
        self.window(GlobalWindows::create())
            .trigger(PurgingTrigger::of(CountTrigger::of(count)))
    }

    pub(crate) fn hash_partitioning(&self) -> Partitioning {
        Partitioning::hash(router::<T, K>(self.key_of.clone()))
    }

    /// Adds a keyed aggregation: streaming form on the node, batch form (combiner + merge) as
    /// its rewrite.
    fn aggregate<A: Aggregation<T, K>>(&self, name: &str, agg: A) -> DataStream<A::Out> {
        let (ks, a) = (self.key_of.clone(), agg.clone());
        let keyed = self
            .stream
            .with_partitioning(self.hash_partitioning())
            .transform(name, move |ctx| {
                Ok(KeyedAggregate::new(ks.clone(), a.clone(), ctx.mode))
            });
        let (ks, a) = (self.key_of.clone(), agg.clone());
        let combiner = Arc::new(OperatorFactory::new(move |_| {
            Ok(PartialAggregate::new(ks.clone(), a.clone()))
        }));
        let merge = Arc::new(OperatorFactory::new(move |ctx| {
            Ok(MergeAggregate::<T, K, A>::new(agg.clone(), ctx.mode))
        }));
        let rewrite = CombineRewrite {
            combiner,
            combiner_out: type_ops::<(K, A::Acc)>(),
            partitioning: Partitioning::hash(router::<(K, A::Acc), K>(|pair: &(K, A::Acc)| {
                pair.0.clone()
            })),
            merge,
        };
        keyed.env.state.borrow_mut().graph.nodes[keyed.node].combine = Some(rewrite);
        keyed
    }

    /// Number of records per key: `(key, count)` (the paper's groupByCount).
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_runtime_mode(RuntimeMode::Streaming).set_parallelism(1);
    /// let out = env.from_collection(vec!['a', 'b', 'a']).key_by(|c: &char| *c).count().collect();
    /// let mut result = env.execute("count").unwrap();
    /// // Streaming mode: an update per record.
    /// assert_eq!(result.collected(&out).unwrap(), vec![('a', 1), ('b', 1), ('a', 2)]);
    /// ```
    pub fn count(&self) -> DataStream<(K, u64)> {
        self.aggregate("Count", Count)
    }

    /// Sum of `field` per key: `(key, sum)`.
    pub fn sum<N, F>(&self, field: F) -> DataStream<(K, N)>
    where
        N: Data + AddAssign,
        F: Fn(&T) -> N + UserFn,
    {
        self.aggregate("Sum", FieldAggregate::sum(field))
    }

    /// Smallest `field` per key: `(key, min)`.
    pub fn min<V: Data + Ord>(&self, field: impl Fn(&T) -> V + UserFn) -> DataStream<(K, V)> {
        self.aggregate("Min", FieldAggregate::extreme(field, false))
    }

    /// Largest `field` per key: `(key, max)`.
    pub fn max<V: Data + Ord>(&self, field: impl Fn(&T) -> V + UserFn) -> DataStream<(K, V)> {
        self.aggregate("Max", FieldAggregate::extreme(field, true))
    }

    /// Combines the records of each key with an associative function.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let out = env
    ///     .from_collection(vec![("x".to_string(), 2), ("y".into(), 5), ("x".into(), 3)])
    ///     .key_by(|r: &(String, i32)| r.0.clone())
    ///     .reduce(|a, b| (a.0, a.1.max(b.1)))
    ///     .collect();
    /// let mut result = env.execute("reduce").unwrap();
    /// let mut out = result.collected(&out).unwrap();
    /// out.sort();
    /// // Batch mode (all sources bounded): one final record per key.
    /// assert_eq!(out, vec![("x".to_string(), 3), ("y".to_string(), 5)]);
    /// ```
    pub fn reduce<F>(&self, f: F) -> DataStream<T>
    where
        F: Fn(T, T) -> T + UserFn,
    {
        self.aggregate("Reduce", Reduce { f })
    }

    /// Calls `f(key, record, state, out)` for every record, with a [`ValueState`] of type `S`
    /// per key (Flink's `KeyedProcessFunction`). The state is part of checkpoints, so `S` is
    /// [`Data`] (serialisable).
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// // Emit each key's running total, but only every second record of the key.
    /// let out = env
    ///     .from_collection(vec![('a', 1), ('a', 2), ('b', 5), ('a', 3), ('a', 4)])
    ///     .key_by(|r: &(char, i32)| r.0)
    ///     .process(|key: &char, r: (char, i32), state: &mut ValueState<(u32, i32)>, out: &mut Collector<(char, i32)>| {
    ///         let (n, total) = state.get_or_insert_with(|| (0, 0));
    ///         *n += 1;
    ///         *total += r.1;
    ///         if *n % 2 == 0 {
    ///             out.collect((*key, *total));
    ///         }
    ///     })
    ///     .collect();
    /// let mut result = env.execute("process").unwrap();
    /// assert_eq!(result.collected(&out).unwrap(), vec![('a', 3), ('a', 10)]);
    /// ```
    pub fn process<S, O, F>(&self, f: F) -> DataStream<O>
    where
        S: Data,
        O: Data,
        F: FnMut(&K, T, &mut ValueState<'_, S>, &mut Collector<'_, O>) + UserFn,
    {
        let ks = self.key_of.clone();
        self.stream
            .with_partitioning(self.hash_partitioning())
            .transform("KeyedProcess", move |_| {
                Ok(KeyedProcess::new(ks.clone(), f.clone()))
            })
    }

    /// Like [`KeyedStream::process`] with a list of values per key ([`ListState`]).
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// // Emit the last three values of each key whenever three have arrived.
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_parallelism(2).set_runtime_mode(RuntimeMode::Streaming);
    /// let out = env
    ///     .from_collection((0..9u32).collect())
    ///     .key_by(|v: &u32| v % 3)
    ///     .process_list(|_key: &u32, v: u32, list: &mut ListState<u32>, out: &mut Collector<Vec<u32>>| {
    ///         list.add(v);
    ///         if list.get().len() == 3 {
    ///             out.collect(list.take());
    ///         }
    ///     })
    ///     .collect();
    /// let mut result = env.execute("lists").unwrap();
    /// let mut got = result.collected(&out).unwrap();
    /// got.sort();
    /// assert_eq!(got, vec![vec![0, 3, 6], vec![1, 4, 7], vec![2, 5, 8]]);
    /// ```
    pub fn process_list<E, O, F>(&self, mut f: F) -> DataStream<O>
    where
        E: Data,
        O: Data,
        F: FnMut(&K, T, &mut ListState<'_, E>, &mut Collector<'_, O>) + UserFn,
    {
        self.process(
            move |key: &K,
                  record: T,
                  state: &mut ValueState<'_, Vec<E>>,
                  out: &mut Collector<'_, O>| {
                f(key, record, &mut ListState::new(state.slot()), out)
            },
        )
    }

    /// Like [`KeyedStream::process`] with a map per key ([`MapState`]).
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// // Count the distinct pages each user visited; emit when it grows.
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_runtime_mode(RuntimeMode::Streaming);
    /// let visits = vec![("ann", "a"), ("ann", "b"), ("ann", "a"), ("bob", "a")];
    /// let out = env
    ///     .from_collection(visits.into_iter().map(|(u, p)| (u.to_string(), p.to_string())).collect())
    ///     .key_by(|v: &(String, String)| v.0.clone())
    ///     .process_map(|user: &String, v: (String, String), pages: &mut MapState<String, u32>, out: &mut Collector<(String, usize)>| {
    ///         if pages.put(v.1, 1).is_none() {
    ///             out.collect((user.clone(), pages.len()));
    ///         }
    ///     })
    ///     .collect();
    /// let mut result = env.execute("maps").unwrap();
    /// let mut got = result.collected(&out).unwrap();
    /// got.sort();
    /// assert_eq!(got, vec![("ann".to_string(), 1), ("ann".to_string(), 2), ("bob".to_string(), 1)]);
    /// ```
    pub fn process_map<MK, MV, O, F>(&self, mut f: F) -> DataStream<O>
    where
        MK: Key,
        MV: Data,
        O: Data,
        F: FnMut(&K, T, &mut MapState<'_, MK, MV>, &mut Collector<'_, O>) + UserFn,
    {
        self.process(
            move |key: &K,
                  record: T,
                  state: &mut ValueState<'_, std::collections::HashMap<MK, MV>>,
                  out: &mut Collector<'_, O>| {
                f(key, record, &mut MapState::new(state.slot()), out)
            },
        )
    }

    /// Inner join with another stream keyed by the same key type: emits `f(key, left, right)`
    /// for every pair of records with equal keys, as soon as the second of the pair arrives.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let users = env.from_collection(vec![(1u32, "ann".to_string()), (2, "bob".into())]);
    /// let orders = env.from_collection(vec![(1u32, 30u64), (1, 12), (3, 7)]);
    /// let out = users
    ///     .key_by(|u: &(u32, String)| u.0)
    ///     .join(&orders.key_by(|o: &(u32, u64)| o.0), |_, u, o| (u.1.clone(), o.1))
    ///     .collect();
    /// let mut result = env.execute("join").unwrap();
    /// let mut out = result.collected(&out).unwrap();
    /// out.sort();
    /// assert_eq!(out, vec![("ann".to_string(), 12), ("ann".to_string(), 30)]);
    /// ```
    pub fn join<U, KU, O, F>(&self, other: &KeyedStream<U, K, KU>, f: F) -> DataStream<O>
    where
        U: Data,
        KU: Fn(&U) -> K + UserFn,
        O: Data,
        F: FnMut(&K, &T, &U) -> O + UserFn,
    {
        self.join_as(other, f, false)
    }

    /// The inner join of [`KeyedStream::join`] where `other`'s key is unique: each key comes
    /// at most once on that side, like a table's primary key (an auction's id). A record of
    /// this side is then kept only until its match arrives (none can follow it), so the state
    /// holds `other` and this side's records still waiting, not every record of this side.
    /// (If a key did come twice on `other`, records of this side matched by the first would
    /// not be joined with the second.)
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let orders = env.from_collection(vec![(1u32, 30u64), (1, 12), (3, 7)]);
    /// let users = env.from_collection(vec![(1u32, "ann".to_string()), (2, "bob".into())]);
    /// let out = orders
    ///     .key_by(|o: &(u32, u64)| o.0)
    ///     .join_with_unique(&users.key_by(|u: &(u32, String)| u.0), |_, o, u| (u.1.clone(), o.1))
    ///     .collect();
    /// let mut result = env.execute("join").unwrap();
    /// let mut out = result.collected(&out).unwrap();
    /// out.sort();
    /// assert_eq!(out, vec![("ann".to_string(), 12), ("ann".to_string(), 30)]);
    /// ```
    pub fn join_with_unique<U, KU, O, F>(
        &self,
        other: &KeyedStream<U, K, KU>,
        f: F,
    ) -> DataStream<O>
    where
        U: Data,
        KU: Fn(&U) -> K + UserFn,
        O: Data,
        F: FnMut(&K, &T, &U) -> O + UserFn,
    {
        self.join_as(other, f, true)
    }

    fn join_as<U, KU, O, F>(
        &self,
        other: &KeyedStream<U, K, KU>,
        f: F,
        unique_right: bool,
    ) -> DataStream<O>
    where
        U: Data,
        KU: Fn(&U) -> K + UserFn,
        O: Data,
        F: FnMut(&K, &T, &U) -> O + UserFn,
    {
        let (kl, kr) = (self.key_of.clone(), other.key_of.clone());
        let factory = NodeFactory::TwoInput(Arc::new(OperatorFactory::new(move |_| {
            let join = KeyedJoin::new(kl.clone(), kr.clone(), f.clone());
            Ok(if unique_right {
                join.with_unique_right()
            } else {
                join
            })
        })));
        let env = &self.stream.env;
        let id = env.add_node(
            "KeyedJoin".into(),
            NodeKind::Operator,
            factory,
            type_ops::<O>(),
        );
        env.add_edge(
            self.stream.node,
            id,
            0,
            self.hash_partitioning(),
            self.stream.network_task,
        );
        env.add_edge(
            other.stream.node,
            id,
            1,
            other.hash_partitioning(),
            other.stream.network_task,
        );
        DataStream::new(env.clone(), id)
    }
}
