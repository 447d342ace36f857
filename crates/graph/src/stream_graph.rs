//! The StreamGraph: the job exactly as the API calls described it.

use std::sync::Arc;

use crate::runtime::factory::{NodeFactory, OneInputNodeFactory};
use crate::runtime::type_ops::TypeOps;
use crate::types::Partitioning;

/// Identifier of a node: its index in [`StreamGraph::nodes`].
pub type NodeId = usize;

/// What a node is, for plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum NodeKind {
    /// Produces records.
    Source,
    /// Transforms records.
    Operator,
    /// Gives records their event timestamps and makes the stream's watermarks
    /// (`assign_timestamps_and_watermarks`): where event time starts.
    TimestampAssigner,
    /// Consumes records.
    Sink,
}

/// Whether a node may be fused with the node before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Chaining {
    /// Fuse whenever the fusion rules allow it.
    Always,
    /// Always start a new chain here (`disable_chaining()`).
    Never,
}

/// The batch-mode form of a keyed aggregation: a combiner before the shuffle and a merge
/// after it, replacing the node's own factory.
#[derive(Clone)]
pub struct CombineRewrite {
    /// The pre-aggregating operator placed before the shuffle.
    pub combiner: Arc<dyn OneInputNodeFactory>,
    /// The type of what the combiner emits.
    pub combiner_out: Arc<dyn TypeOps>,
    /// How the combiner's output is shuffled to the merging operator.
    pub partitioning: Partitioning,
    /// The operator after the shuffle that merges the partial aggregates.
    pub merge: Arc<dyn OneInputNodeFactory>,
}

/// One API call.
#[derive(Clone)]
pub struct StreamNode {
    pub(crate) id: NodeId,
    /// The name shown by `explain()`, in errors and metrics.
    pub name: String,
    pub(crate) kind: NodeKind,
    /// The parallelism set on the node, if any (otherwise the job's default).
    pub parallelism: Option<usize>,
    /// Bounds a cluster's scheduler keeps the parallelism within when it chooses it.
    pub parallelism_bounds: Option<(usize, usize)>,
    /// Whether the node may be fused with its neighbours.
    pub chaining: Chaining,
    /// Creates the node's tasks or operators.
    pub factory: NodeFactory,
    /// The type of the records the node emits.
    pub out_type: Arc<dyn TypeOps>,
    /// The combiner rewrite of a keyed aggregate, where the graph may apply one.
    pub combine: Option<CombineRewrite>,
}

impl StreamNode {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node's kind.
    pub fn kind(&self) -> NodeKind {
        self.kind
    }

    /// Whether chaining to the node before it is allowed.
    pub fn chaining(&self) -> Chaining {
        self.chaining
    }

    /// True for a two-input operator.
    pub fn is_two_input(&self) -> bool {
        matches!(self.factory, NodeFactory::TwoInput(_))
    }

    /// The parallelism set on the node, if any.
    pub fn parallelism(&self) -> Option<usize> {
        self.parallelism
    }

    /// The Rust type of the records the node emits.
    pub fn output_type(&self) -> &'static str {
        self.out_type.type_name()
    }
}

/// A directed edge between two nodes.
#[derive(Clone, Debug)]
pub struct StreamEdge {
    /// The upstream node.
    pub source: NodeId,
    /// The downstream node.
    pub target: NodeId,
    /// Input port of the target: 0, or 1 for the second input of a two-input node.
    pub(crate) input: usize,
    /// How records are distributed over the target's subtasks.
    pub partitioning: Partitioning,
    /// Where the sending end runs if this edge crosses workers (`None`: the job's default).
    pub network_task: Option<crate::channels::network::NetworkTaskMode>,
}

impl StreamEdge {
    /// Producing node.
    pub fn source(&self) -> NodeId {
        self.source
    }
    /// Consuming node.
    pub fn target(&self) -> NodeId {
        self.target
    }
    /// Input port of the consuming node.
    pub fn input(&self) -> usize {
        self.input
    }
    /// How records are distributed.
    pub fn partitioning(&self) -> &Partitioning {
        &self.partitioning
    }
}

/// The graph of API calls.
#[derive(Clone, Default)]
pub struct StreamGraph {
    /// The nodes, in the order they were added (a node's id is its index).
    pub nodes: Vec<StreamNode>,
    /// The edges, in the order they were added.
    pub edges: Vec<StreamEdge>,
}

impl StreamGraph {
    /// Adds a node; returns its id.
    pub fn add_node(
        &mut self,
        name: String,
        kind: NodeKind,
        factory: NodeFactory,
        out_type: Arc<dyn TypeOps>,
    ) -> NodeId {
        let id = self.nodes.len();
        self.nodes.push(StreamNode {
            id,
            name,
            kind,
            parallelism: None,
            parallelism_bounds: None,
            chaining: Chaining::Always,
            factory,
            out_type,
            combine: None,
        });
        id
    }

    /// Adds an edge from `source` to input `input` of `target`.
    pub fn add_edge(
        &mut self,
        source: NodeId,
        target: NodeId,
        input: usize,
        partitioning: Partitioning,
        network_task: Option<crate::channels::network::NetworkTaskMode>,
    ) {
        self.edges.push(StreamEdge {
            source,
            target,
            input,
            partitioning,
            network_task,
        });
    }

    /// Edges into `node`, in the order they were added.
    pub fn inputs_of(&self, node: NodeId) -> impl Iterator<Item = (usize, &StreamEdge)> {
        self.edges
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.target == node)
    }

    /// Edges out of `node`.
    pub fn outputs_of(&self, node: NodeId) -> impl Iterator<Item = (usize, &StreamEdge)> {
        self.edges
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.source == node)
    }
}
