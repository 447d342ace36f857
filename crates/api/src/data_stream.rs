//! `DataStream<T>`: a stream of records of type `T` and its transformations.

use std::fmt::{Debug, Display};
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::connectors::collect::{CollectHandle, CollectSink, LatestSink, LatestSlot};
use crate::connectors::print::PrintSink;
use crate::connectors::text_file_sink::TextFileSink;
use crate::error::Result;
use crate::graph::stream_graph::{Chaining, NodeId, NodeKind};
use crate::operators::filter::Filter;
use crate::operators::flat_map::FlatMap;
use crate::operators::map::Map;
use crate::operators::sink::{Sink, SinkOperator};
use crate::operators::timestamps::TimestampsAndWatermarks;
use crate::operators::union::Union;
use crate::operators::{Operator, OperatorContext, WatermarkStrategy};
use crate::runtime::factory::{NodeFactory, OperatorFactory};
use crate::runtime::type_ops::{type_ops, unit_type_ops};
use crate::types::Partitioning;
use crate::types::{Data, Key};
use crate::{ConnectedStreams, KeyedStream, MakeOperator, StreamExecutionEnvironment, UserFn};

/// A stream of `T` records: the output of one node of the job, and how the next node reads it
/// (forward by default; see [`DataStream::rebalance`], [`DataStream::broadcast`]).
pub struct DataStream<T> {
    pub(crate) env: StreamExecutionEnvironment,
    pub(crate) node: NodeId,
    pub(crate) partitioning: Partitioning,
    pub(crate) network_task: Option<crate::channels::network::NetworkTaskMode>,
    _types: PhantomData<fn() -> T>,
}

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        DataStream {
            env: self.env.clone(),
            node: self.node,
            partitioning: self.partitioning.clone(),
            network_task: self.network_task,
            _types: PhantomData,
        }
    }
}

impl<T: Data> DataStream<T> {
    pub(crate) fn new(env: StreamExecutionEnvironment, node: NodeId) -> Self {
        DataStream {
            env,
            node,
            partitioning: Partitioning::Forward,
            network_task: None,
            _types: PhantomData,
        }
    }

    /// The environment this stream belongs to.
    pub fn env(&self) -> &StreamExecutionEnvironment {
        &self.env
    }

    /// Adds a one-input node reading this stream.
    fn add_consumer(
        &self,
        name: String,
        kind: NodeKind,
        factory: NodeFactory,
        out_type: Arc<dyn crate::runtime::type_ops::TypeOps>,
    ) -> NodeId {
        let id = self.env.add_node(name, kind, factory, out_type);
        self.env.add_edge(
            self.node,
            id,
            0,
            self.partitioning.clone(),
            self.network_task,
        );
        id
    }

    /// The node of the stream graph this stream's records come from (streams of one node are
    /// the same records, however they are then partitioned).
    pub fn node_id(&self) -> NodeId {
        self.node
    }

    /// A custom operator (Flink's `transform`), made by `make` for every subtask: it sees the
    /// stream in batches ([`Operator::process`]) and, through the same trait's other
    /// hooks, each with a default, its watermarks, the end of its input and checkpoints.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// # use hummer::operators::{Batch, Operator, OperatorContext};
    /// /// Counts what it sees and emits the count at the end of its input.
    /// struct Count(u64);
    /// impl Operator for Count {
    ///     type In = (String,);
    ///     type Out = u64;
    ///     fn process(&mut self, batch: Batch<'_, String>, _: &mut Collector<'_, u64>) -> Result<()> {
    ///         self.0 += batch.len() as u64;
    ///         Ok(())
    ///     }
    ///     fn end_of_input(&mut self, out: &mut Collector<'_, u64>) -> Result<()> {
    ///         out.collect(self.0);
    ///         Ok(())
    ///     }
    /// }
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_parallelism(1);
    /// let out = env
    ///     .from_collection(vec!["a".to_string(), "b".into()])
    ///     .transform("Count", |_: &OperatorContext| Ok(Count(0)))
    ///     .collect();
    /// let mut result = env.execute("transform").unwrap();
    /// assert_eq!(result.collected(&out).unwrap(), vec![2]);
    /// ```
    pub fn transform<O: Data, Op>(&self, name: &str, make: impl MakeOperator<Op>) -> DataStream<O>
    where
        Op: Operator<In = (T,), Out = O>,
    {
        let factory = NodeFactory::OneInput(Arc::new(OperatorFactory::new(make)));
        let id = self.add_consumer(
            name.to_string(),
            NodeKind::Operator,
            factory,
            type_ops::<O>(),
        );
        DataStream::new(self.env.clone(), id)
    }

    /// Gives every record an event timestamp and makes the stream's watermarks, as `strategy`
    /// says (Flink's `assignTimestampsAndWatermarks`). Upstream watermarks are replaced; the
    /// end of a bounded input still ends event time (a final watermark at the maximum).
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// use std::time::Duration;
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_parallelism(1);
    /// let counts = env
    ///     .from_collection(vec![('a', 1_000i64), ('a', 4_000), ('b', 12_000), ('a', 13_000)])
    ///     .assign_timestamps_and_watermarks(
    ///         WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(2))
    ///             .with_timestamp_assigner(|r: &(char, i64), _| r.1),
    ///     )
    ///     .key_by(|r: &(char, i64)| r.0)
    ///     .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
    ///     .aggregate(CountAggregate)
    ///     .collect();
    /// let mut result = env.execute("tumbling count").unwrap();
    /// let mut rows = result.collected(&counts).unwrap();
    /// rows.sort();
    /// // Key, window and count: the window's bounds are part of every result.
    /// let rows: Vec<_> = rows.into_iter().map(|r| (r.key, r.window, r.value)).collect();
    /// assert_eq!(rows, vec![
    ///     ('a', TimeWindow::new(0, 10_000), 2),
    ///     ('a', TimeWindow::new(10_000, 20_000), 1),
    ///     ('b', TimeWindow::new(10_000, 20_000), 1),
    /// ]);
    /// ```
    pub fn assign_timestamps_and_watermarks(
        &self,
        strategy: WatermarkStrategy<T>,
    ) -> DataStream<T> {
        let factory = NodeFactory::OneInput(Arc::new(OperatorFactory::new(
            move |ctx: &OperatorContext| {
                Ok(TimestampsAndWatermarks::new(
                    &strategy,
                    ctx.time.clone(),
                    ctx.auto_watermark_interval,
                ))
            },
        )));
        let id = self.add_consumer(
            "Timestamps/Watermarks".to_string(),
            NodeKind::TimestampAssigner,
            factory,
            type_ops::<T>(),
        );
        DataStream::new(self.env.clone(), id)
    }

    /// Joins with `other` in windows (Flink's window join):
    /// `a.join(&b).where_key(ka).equal_to(kb).window(assigner).apply(f)`.
    pub fn join<U: Data>(&self, other: &DataStream<U>) -> crate::JoinedStreams<T, U> {
        crate::JoinedStreams::new(self.clone(), other.clone())
    }

    /// Cuts the whole stream into windows, without keys (Flink's `windowAll`): one subtask
    /// computes every window.
    pub fn window_all<A: crate::operators::window::WindowAssigner>(
        &self,
        assigner: A,
    ) -> crate::AllWindowedStream<T, A> {
        crate::AllWindowedStream::new(self, assigner)
    }

    /// One output record per input record.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let out = env.from_collection(vec![1, 2, 3]).map(|x: i32| x * 10).collect();
    /// let mut result = env.execute("map").unwrap();
    /// assert_eq!(result.collected(&out).unwrap(), vec![10, 20, 30]);
    /// ```
    pub fn map<O: Data, F>(&self, f: F) -> DataStream<O>
    where
        F: FnMut(T) -> O + UserFn,
    {
        self.transform("Map", move |_| Ok(Map::new(f.clone())))
    }

    /// Any number of output records per input record: `f` returns an iterator (or anything
    /// iterable), whose items are emitted in order.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let out = env.from_collection(vec![2u32, 0, 3]).flat_map(|n: u32| 0..n).collect();
    /// let mut result = env.execute("flat_map").unwrap();
    /// assert_eq!(result.collected(&out).unwrap(), vec![0, 1, 0, 1, 2]);
    /// ```
    pub fn flat_map<It, F>(&self, f: F) -> DataStream<It::Item>
    where
        It: IntoIterator + 'static,
        It::Item: Data,
        F: FnMut(T) -> It + UserFn,
    {
        self.transform("FlatMap", move |_| Ok(FlatMap::new(f.clone())))
    }

    /// Keeps the records for which `predicate` is true.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let out = env.from_collection((1..=6).collect()).filter(|x: &i32| x % 2 == 0).collect();
    /// let mut result = env.execute("filter").unwrap();
    /// assert_eq!(result.collected(&out).unwrap(), vec![2, 4, 6]);
    /// ```
    pub fn filter<F>(&self, predicate: F) -> DataStream<T>
    where
        F: FnMut(&T) -> bool + UserFn,
    {
        self.transform("Filter", move |_| Ok(Filter::new(predicate.clone())))
    }

    /// Partitions the stream by key: records with equal keys go to the same subtask of the
    /// next operator (through the key's key group).
    pub fn key_by<K: Key, KS>(&self, key_of: KS) -> KeyedStream<T, K, KS>
    where
        KS: Fn(&T) -> K + UserFn,
    {
        KeyedStream::new(self.clone(), key_of)
    }

    /// Merges this stream with others of the same type.
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// let a = env.from_collection(vec![1, 2]);
    /// let b = env.from_collection(vec![3]);
    /// let out = a.union(&[b]).collect();
    /// let mut result = env.execute("union").unwrap();
    /// let mut all = result.collected(&out).unwrap();
    /// all.sort();
    /// assert_eq!(all, vec![1, 2, 3]);
    /// ```
    pub fn union(&self, others: &[DataStream<T>]) -> DataStream<T> {
        let factory =
            NodeFactory::OneInput(Arc::new(OperatorFactory::new(|_: &OperatorContext| {
                Ok(Union::<T>::default())
            })));
        let id = self
            .env
            .add_node("Union".into(), NodeKind::Operator, factory, type_ops::<T>());
        for s in std::iter::once(self).chain(others) {
            self.env
                .add_edge(s.node, id, 0, s.partitioning.clone(), s.network_task);
        }
        DataStream::new(self.env.clone(), id)
    }

    /// Connects two streams for a two-input operator (`co_map`, `co_flat_map`).
    pub fn connect<U: Data>(&self, other: &DataStream<U>) -> ConnectedStreams<T, U> {
        ConnectedStreams::new(self.clone(), other.clone())
    }

    /// The next operator reads this stream round-robin over its subtasks.
    pub fn rebalance(&self) -> DataStream<T> {
        self.with_partitioning(Partitioning::Rebalance)
    }

    /// Every subtask of the next operator reads every record.
    pub fn broadcast(&self) -> DataStream<T> {
        self.with_partitioning(Partitioning::Broadcast)
    }

    pub(crate) fn with_partitioning(&self, partitioning: Partitioning) -> DataStream<T> {
        DataStream {
            partitioning,
            ..self.clone()
        }
    }

    /// Where the sending end of this stream's next edge runs when the edge crosses workers in
    /// cluster mode (overrides the job's default, see
    /// [`StreamExecutionEnvironment::set_network_task_mode`]).
    pub fn network_task(&self, mode: crate::channels::network::NetworkTaskMode) -> DataStream<T> {
        DataStream {
            network_task: Some(mode),
            ..self.clone()
        }
    }

    /// The operator that produces this stream, and the nodes that only unpack its output
    /// (a window's results and late records), which share its parallelism.
    fn producer_group(&self) -> (NodeId, Vec<NodeId>) {
        let state = self.env.state.borrow();
        let producer = state.unpacks.get(&self.node).copied().unwrap_or(self.node);
        let mut group: Vec<NodeId> = state
            .unpacks
            .iter()
            .filter(|(_, p)| **p == producer)
            .map(|(n, _)| *n)
            .collect();
        group.push(producer);
        (producer, group)
    }

    /// Sets the parallelism of the operator that produces this stream.
    pub fn set_parallelism(self, parallelism: usize) -> Self {
        let (_, group) = self.producer_group();
        for n in group {
            self.env.state.borrow_mut().graph.nodes[n].parallelism = Some(parallelism);
        }
        self
    }

    /// Bounds the parallelism a cluster may choose for the operator that produces this stream
    /// when it sets none itself (see [`crate::scheduler::parallelism`]).
    pub fn set_parallelism_bounds(self, min: usize, max: usize) -> Self {
        let (_, group) = self.producer_group();
        for n in group {
            self.env.state.borrow_mut().graph.nodes[n].parallelism_bounds = Some((min, max));
        }
        self
    }

    /// Names the operator that produces this stream (shown in plans and errors).
    pub fn name(self, name: &str) -> Self {
        let (producer, _) = self.producer_group();
        self.env.state.borrow_mut().graph.nodes[producer].name = name.to_string();
        self
    }

    /// Starts a new chain at the operator that produces this stream (no fusion with the
    /// operator before it).
    pub fn disable_chaining(self) -> Self {
        let (producer, _) = self.producer_group();
        self.env.state.borrow_mut().graph.nodes[producer].chaining = Chaining::Never;
        self
    }

    /// The records an operator of this stream sent to the side output `tag` (for a window,
    /// the late records routed there with `side_output_late_data`).
    pub fn get_side_output<U: Data>(&self, tag: &crate::OutputTag<U>) -> Result<DataStream<U>> {
        let state = self.env.state.borrow();
        match state.side_outputs.get(&(self.node, tag.name().to_string())) {
            Some((node, ty)) if *ty == std::any::TypeId::of::<U>() => {
                Ok(DataStream::new(self.env.clone(), *node))
            }
            Some(_) => Err(crate::error::HummerError::Config(format!(
                "side output '{}' holds records of another type than {}",
                tag.name(),
                std::any::type_name::<U>()
            ))),
            None => Err(crate::error::HummerError::Config(format!(
                "this stream has no side output '{}' (set it with side_output_late_data)",
                tag.name()
            ))),
        }
    }

    /// Writes into a [`Sink`].
    pub fn add_sink<S: Sink<T>>(&self, sink: S) -> DataStreamSink {
        let name = sink.name();
        let sink: Arc<dyn Sink<T>> = Arc::new(sink);
        let factory = NodeFactory::OneInput(Arc::new(OperatorFactory::new(move |ctx| {
            SinkOperator::create(&sink, ctx)
        })));
        let id = self.add_consumer(name, NodeKind::Sink, factory, unit_type_ops());
        DataStreamSink {
            env: self.env.clone(),
            node: id,
        }
    }

    /// Prints every record (`{:?}`) to standard output, prefixed by `subtask> ` when the
    /// sink is parallel.
    pub fn print(&self) -> DataStreamSink
    where
        T: Debug,
    {
        self.add_sink(PrintSink::default())
    }

    /// Writes every record (`{}`) as a line into `dir/part-<subtask>`.
    pub fn write_text_file(&self, dir: impl Into<PathBuf>) -> DataStreamSink
    where
        T: Display,
    {
        self.add_sink(TextFileSink::new(dir))
    }

    /// Gathers the records in memory; take them from the [`crate::JobResult`].
    pub fn collect(&self) -> CollectHandle<T> {
        let buffer = Arc::new(Mutex::new(Vec::<T>::new()));
        let sink = CollectSink {
            buffer: buffer.clone(),
        };
        self.add_collecting_sink(sink, buffer)
    }

    /// Keeps only the last record each subtask received (the current value of an updated
    /// result, in constant memory); take them from the [`crate::JobResult`].
    ///
    /// ```
    /// # use hummer::prelude::*;
    /// let env = StreamExecutionEnvironment::local();
    /// env.set_parallelism(1).set_runtime_mode(RuntimeMode::Streaming);
    /// let total = env
    ///     .from_collection((1..=100u64).collect())
    ///     .key_by(|_: &u64| 0u8)
    ///     .sum(|x: &u64| *x)
    ///     .collect_latest();
    /// let mut result = env.execute("running sum").unwrap();
    /// assert_eq!(result.collected(&total).unwrap(), vec![(0, 5050)]);
    /// ```
    pub fn collect_latest(&self) -> CollectHandle<T> {
        let slot = Arc::new(LatestSlot::<T>::default());
        self.add_collecting_sink(LatestSink { slot: slot.clone() }, slot)
    }

    /// Adds `sink`, which gathers records into `slot`, and registers the slot for the
    /// [`crate::JobResult`] to take them from.
    fn add_collecting_sink<S: Sink<T>>(
        &self,
        sink: S,
        slot: crate::execution::SharedCollectSlot,
    ) -> CollectHandle<T> {
        let sink = self.add_sink(sink);
        self.env
            .state
            .borrow_mut()
            .collect_slots
            .push((sink.node, slot));
        CollectHandle::new(sink.node)
    }
}

/// The end of a stream: a sink node, whose name and parallelism can be set.
pub struct DataStreamSink {
    env: StreamExecutionEnvironment,
    node: NodeId,
}

impl DataStreamSink {
    /// Sets the sink's parallelism.
    pub fn set_parallelism(self, parallelism: usize) -> Self {
        self.env.state.borrow_mut().graph.nodes[self.node].parallelism = Some(parallelism);
        self
    }

    /// Names the sink.
    pub fn name(self, name: &str) -> Self {
        self.env.state.borrow_mut().graph.nodes[self.node].name = name.to_string();
        self
    }
}
