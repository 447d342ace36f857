//! `ConnectedStreams<A, B>`: two streams feeding one two-input operator.

use std::sync::Arc;

use crate::graph::stream_graph::NodeKind;
use crate::operators::Operator;
use crate::operators::co_map::CoFlatMap;
use crate::runtime::factory::{NodeFactory, OperatorFactory};
use crate::runtime::type_ops::type_ops;
use crate::types::Data;
use crate::{DataStream, MakeOperator, UserFn};

/// Two streams, possibly of different types, processed by one operator with a function per
/// input (Flink's `ConnectedStreams`).
pub struct ConnectedStreams<A, B> {
    first: DataStream<A>,
    second: DataStream<B>,
}

impl<A: Data, B: Data> ConnectedStreams<A, B> {
    pub(crate) fn new(first: DataStream<A>, second: DataStream<B>) -> Self {
        ConnectedStreams { first, second }
    }

    /// One output per input record: `f1` for the first stream, `f2` for the second.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let numbers = env.from_collection(vec![1, 2]);
    /// let words = env.from_collection(vec!["three".to_string()]);
    /// let out = numbers
    ///     .connect(&words)
    ///     .co_map(|n: i32| n.to_string(), |w: String| w.to_uppercase())
    ///     .collect();
    /// let mut result = env.execute("co_map").unwrap();
    /// let mut out = result.collected(&out).unwrap();
    /// out.sort();
    /// assert_eq!(out, vec!["1", "2", "THREE"]);
    /// ```
    pub fn co_map<O, F1, F2>(&self, f1: F1, f2: F2) -> DataStream<O>
    where
        O: Data,
        F1: FnMut(A) -> O + UserFn,
        F2: FnMut(B) -> O + UserFn,
    {
        let (mut f1, mut f2) = (f1, f2);
        self.co_flat_map(move |a| Some(f1(a)), move |b| Some(f2(b)))
            .name("CoMap")
    }

    /// Any number of outputs per input record.
    pub fn co_flat_map<It1, It2, F1, F2>(&self, f1: F1, f2: F2) -> DataStream<It1::Item>
    where
        It1: IntoIterator + 'static,
        It1::Item: Data,
        It2: IntoIterator<Item = It1::Item> + 'static,
        F1: FnMut(A) -> It1 + UserFn,
        F2: FnMut(B) -> It2 + UserFn,
    {
        self.transform("CoFlatMap", move |_| {
            Ok(CoFlatMap::new(f1.clone(), f2.clone()))
        })
    }

    /// A custom two-input operator (Flink's `ConnectedStreams.transform`): `make` builds one
    /// per subtask; each input keeps its partitioning (keyed, when the streams were connected
    /// as keyed streams, see [`crate::KeyedStream::connect`]).
    pub fn transform<O: Data, Op>(&self, name: &str, make: impl MakeOperator<Op>) -> DataStream<O>
    where
        Op: Operator<In = (A, B), Out = O>,
    {
        let factory = NodeFactory::TwoInput(Arc::new(OperatorFactory::new(make)));
        let env = &self.first.env;
        let id = env.add_node(
            name.to_string(),
            NodeKind::Operator,
            factory,
            type_ops::<O>(),
        );
        env.add_edge(
            self.first.node,
            id,
            0,
            self.first.partitioning.clone(),
            self.first.network_task,
        );
        env.add_edge(
            self.second.node,
            id,
            1,
            self.second.partitioning.clone(),
            self.second.network_task,
        );
        DataStream::new(env.clone(), id)
    }
}
