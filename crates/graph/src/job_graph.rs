//! The JobGraph: the stream graph with its operators fused into chains.
//!
//! Translation resolves what the API left open, then fuses:
//!
//! 1. **Runtime mode**: `Automatic` becomes `Batch` when every source is bounded, else
//!    `Streaming`; `Batch` with an unbounded source is an error.
//! 2. **Parallelism** of every node: its own setting or the job's default, within the source's
//!    limit and the number of key groups.
//! 3. **Combiners** (batch mode): a keyed aggregation fed by a node `U` becomes
//!    `U -> combine (fused to U) -> hash shuffle -> merge`, so only partial results cross the
//!    shuffle.
//! 4. **Forward edges** between nodes of different parallelism become rebalance edges (as in
//!    Flink).
//! 5. **Fusion**: a node joins its upstream node's chain when it has exactly one input edge,
//!    that edge is forward, both have the same parallelism, the node is a one-input operator and
//!    chaining is not disabled on it. Everything else starts a new chain.

use crate::error::{HummerError, Result};
use crate::runtime::factory::NodeFactory;
use crate::stream_graph::{Chaining, NodeId, NodeKind, StreamGraph};
use crate::types::Partitioning;
use crate::types::RuntimeMode;

/// Settings that translation needs from the environment.
#[derive(Clone, Debug)]
pub struct TranslateConfig {
    /// Parallelism of nodes that set none.
    pub default_parallelism: usize,
    /// Number of key groups; upper bound of every parallelism.
    pub max_parallelism: usize,
    /// Requested runtime mode.
    pub mode: RuntimeMode,
}

/// A chain of fused operators, run as one task per subtask.
#[derive(Clone, Debug, serde::Serialize)]
pub struct JobVertex {
    /// Index in [`JobGraph::vertices`].
    pub id: usize,
    /// The chain's operator names joined with " -> ".
    pub name: String,
    /// Number of parallel subtasks.
    pub parallelism: usize,
    /// Stream nodes of the chain, head first, in topological order.
    pub nodes: Vec<NodeId>,
}

/// A shuffle (or a forward connection between chains that could not be fused).
#[derive(Clone, Debug)]
pub struct JobEdge {
    /// Index of the stream edge this job edge carries.
    pub stream_edge: usize,
    /// Producing vertex.
    pub source: usize,
    /// Consuming vertex.
    pub target: usize,
    /// Input port of the consuming chain head.
    pub input: usize,
    /// Effective partitioning.
    pub partitioning: Partitioning,
}

/// The fused graph, ready to be expanded into subtasks.
#[derive(Clone)]
pub struct JobGraph {
    /// The stream graph the job graph was translated from.
    pub stream: StreamGraph,
    /// Streaming, or batch over bounded inputs.
    pub mode: RuntimeMode,
    /// The number of key groups: the most subtasks a keyed operator can have.
    pub max_parallelism: usize,
    /// Resolved parallelism per stream node.
    pub node_parallelism: Vec<usize>,
    /// Vertex of every stream node.
    pub vertex_of: Vec<usize>,
    /// The vertices (chains of fused operators), in topological order.
    pub vertices: Vec<JobVertex>,
    /// The edges between vertices.
    pub edges: Vec<JobEdge>,
}

impl JobGraph {
    /// The resolved runtime mode (never `Automatic`).
    pub fn mode(&self) -> RuntimeMode {
        self.mode
    }

    /// The operators as a checkpoint records them (to check a restore against).
    pub fn graph_info(&self) -> crate::checkpoint::coordinator::GraphInfo {
        crate::checkpoint::coordinator::GraphInfo {
            max_parallelism: self.max_parallelism,
            operators: self
                .stream
                .nodes
                .iter()
                .enumerate()
                .map(|(node, n)| crate::checkpoint::coordinator::OperatorInfo {
                    node,
                    name: n.name.clone(),
                    parallelism: self.node_parallelism[node],
                })
                .collect(),
        }
    }

    /// Whether each vertex (in vertex order) is headed by a source: the one rule for "is this
    /// a source" (checkpoints count source subtasks, results count source records).
    pub fn source_vertices(&self) -> Vec<bool> {
        self.vertices
            .iter()
            .map(|v| {
                matches!(
                    self.stream.nodes[v.nodes[0]].factory,
                    NodeFactory::Source(_)
                )
            })
            .collect()
    }

    /// Number of subtasks that run a source (the chains headed by one).
    pub fn source_subtasks(&self) -> usize {
        self.vertices
            .iter()
            .zip(self.source_vertices())
            .filter(|(_, source)| *source)
            .map(|(v, _)| v.parallelism)
            .sum()
    }

    /// What a scheduler needs to choose each vertex's parallelism: its explicit setting, if
    /// any of its operators has one, and the bounds of its operators (intersected, and capped
    /// by source limits and the number of key groups).
    pub fn vertex_requests(&self) -> Vec<crate::scheduler::parallelism::VertexRequest> {
        self.vertices
            .iter()
            .map(|v| {
                let mut min = 1;
                let mut max = self.max_parallelism;
                let mut explicit = None;
                for &n in &v.nodes {
                    let node = &self.stream.nodes[n];
                    if let Some(p) = node.parallelism {
                        explicit = Some(p);
                    }
                    if let Some((lo, hi)) = node.parallelism_bounds {
                        min = min.max(lo);
                        max = max.min(hi);
                    }
                    if let NodeFactory::Source(s) = &node.factory {
                        max = max.min(s.max_parallelism().unwrap_or(usize::MAX));
                    }
                }
                // A node added by translation (a combiner) follows its chain.
                crate::scheduler::parallelism::VertexRequest {
                    name: v.name.clone(),
                    explicit,
                    min,
                    max,
                }
            })
            .collect()
    }

    /// The chains with their operators' names and the edges between them, for monitoring.
    pub fn topology(&self) -> crate::types::JobTopology {
        crate::types::JobTopology {
            vertices: self
                .vertices
                .iter()
                .map(|v| {
                    v.nodes
                        .iter()
                        .map(|&n| self.stream.nodes[n].name.clone())
                        .collect()
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .map(|e| crate::types::TopologyEdge {
                    source: e.source,
                    target: e.target,
                    partitioning: e.partitioning.name().to_string(),
                })
                .collect(),
        }
    }

    /// Sets the parallelism of every vertex (as a cluster's scheduler chose it): forward edges
    /// between vertices that now differ become rebalance edges.
    pub fn with_vertex_parallelism(mut self, parallelism: &[usize]) -> Result<JobGraph> {
        if parallelism.len() != self.vertices.len() {
            return Err(HummerError::InvalidGraph(format!(
                "{} parallelism values for {} vertices",
                parallelism.len(),
                self.vertices.len()
            )));
        }
        for (v, &p) in self.vertices.iter_mut().zip(parallelism) {
            if p == 0 || p > self.max_parallelism {
                return Err(HummerError::InvalidGraph(format!(
                    "parallelism {p} for '{}' is outside 1..={}",
                    v.name, self.max_parallelism
                )));
            }
            v.parallelism = p;
            for &n in &v.nodes {
                self.node_parallelism[n] = p;
            }
        }
        for e in &mut self.edges {
            if matches!(e.partitioning, Partitioning::Forward)
                && !Partitioning::forward_possible(
                    self.vertices[e.source].parallelism,
                    self.vertices[e.target].parallelism,
                )
            {
                e.partitioning = Partitioning::Rebalance;
                self.stream.edges[e.stream_edge].partitioning = Partitioning::Rebalance;
            }
        }
        Ok(self)
    }

    /// The resolved parallelism of a stream node.
    pub fn node_parallelism(&self, node: NodeId) -> usize {
        self.node_parallelism[node]
    }

    /// The vertex (chain) a stream node was fused into.
    pub fn vertex_of(&self, node: NodeId) -> usize {
        self.vertex_of[node]
    }

    /// The stream graph after translation (with combiners inserted in batch mode).
    pub fn stream_graph(&self) -> &StreamGraph {
        &self.stream
    }

    /// Translates a stream graph.
    pub fn from_stream_graph(graph: &StreamGraph, cfg: &TranslateConfig) -> Result<JobGraph> {
        validate_shape(graph)?;
        if cfg.max_parallelism == 0 {
            return Err(HummerError::Config(
                "max parallelism must be at least 1".into(),
            ));
        }
        let mode = resolve_mode(graph, cfg.mode)?;
        let mut stream = graph.clone();
        let mut node_parallelism = resolve_parallelism(&stream, cfg)?;
        if mode == RuntimeMode::Batch {
            insert_combiners(&mut stream, &mut node_parallelism);
        }
        for edge in &mut stream.edges {
            if matches!(edge.partitioning, Partitioning::Forward)
                && node_parallelism[edge.source] != node_parallelism[edge.target]
            {
                edge.partitioning = Partitioning::Rebalance;
            }
        }
        let order = topological_order(&stream)?;
        let (vertex_of, vertices) = fuse(&stream, &order, &node_parallelism);
        let edges = stream
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| vertex_of[e.source] != vertex_of[e.target])
            .map(|(i, e)| JobEdge {
                stream_edge: i,
                source: vertex_of[e.source],
                target: vertex_of[e.target],
                input: e.input,
                partitioning: e.partitioning.clone(),
            })
            .collect();
        Ok(JobGraph {
            stream,
            mode,
            max_parallelism: cfg.max_parallelism,
            node_parallelism,
            vertex_of,
            vertices,
            edges,
        })
    }
}

fn validate_shape(graph: &StreamGraph) -> Result<()> {
    if graph.nodes.is_empty() {
        return Err(HummerError::InvalidGraph(
            "the job has no operators: add a source and a sink before execute()".into(),
        ));
    }
    for node in &graph.nodes {
        let ports: Vec<usize> = graph.inputs_of(node.id).map(|(_, e)| e.input).collect();
        let ok = match node.factory {
            NodeFactory::Source(_) => ports.is_empty(),
            NodeFactory::OneInput(_) => !ports.is_empty() && ports.iter().all(|&p| p == 0),
            NodeFactory::TwoInput(_) => ports.contains(&0) && ports.contains(&1),
        };
        if !ok {
            return Err(HummerError::InvalidGraph(format!(
                "operator '{}' has inputs on ports {ports:?}, which does not fit its kind",
                node.name
            )));
        }
    }
    Ok(())
}

fn resolve_mode(graph: &StreamGraph, requested: RuntimeMode) -> Result<RuntimeMode> {
    let unbounded: Vec<&str> = graph
        .nodes
        .iter()
        .filter(|n| matches!(&n.factory, NodeFactory::Source(s) if !s.is_bounded()))
        .map(|n| n.name.as_str())
        .collect();
    match requested {
        RuntimeMode::Automatic if unbounded.is_empty() => Ok(RuntimeMode::Batch),
        RuntimeMode::Automatic => Ok(RuntimeMode::Streaming),
        RuntimeMode::Batch if !unbounded.is_empty() => Err(HummerError::InvalidGraph(format!(
            "batch mode needs bounded sources, but {} unbounded: {}",
            if unbounded.len() == 1 {
                "this one is"
            } else {
                "these are"
            },
            unbounded.join(", ")
        ))),
        mode => Ok(mode),
    }
}

fn resolve_parallelism(graph: &StreamGraph, cfg: &TranslateConfig) -> Result<Vec<usize>> {
    graph
        .nodes
        .iter()
        .map(|node| {
            let limit = match &node.factory {
                NodeFactory::Source(s) => s.max_parallelism(),
                _ => None,
            };
            let p = match (node.parallelism, limit) {
                (Some(p), Some(l)) if p > l => {
                    return Err(HummerError::InvalidGraph(format!(
                        "source '{}' supports parallelism of at most {l}, but {p} was set",
                        node.name
                    )));
                }
                (Some(p), _) => p,
                (None, Some(l)) => cfg.default_parallelism.min(l),
                (None, None) => cfg.default_parallelism,
            };
            if p == 0 || p > cfg.max_parallelism {
                return Err(HummerError::InvalidGraph(format!(
                    "operator '{}' has parallelism {p}; it must be between 1 and the max \
                     parallelism {}",
                    node.name, cfg.max_parallelism
                )));
            }
            Ok(p)
        })
        .collect()
}

/// Rewrites every keyed aggregation into combiner -> shuffle -> merge.
fn insert_combiners(stream: &mut StreamGraph, parallelism: &mut Vec<usize>) {
    let candidates: Vec<NodeId> = stream
        .nodes
        .iter()
        .filter(|n| n.combine.is_some())
        .map(|n| n.id)
        .collect();
    for node in candidates {
        let Some(rewrite) = stream.nodes[node].combine.take() else {
            continue;
        };
        let inputs: Vec<usize> = stream.inputs_of(node).map(|(i, _)| i).collect();
        let [edge] = inputs[..] else {
            // Keyed aggregations have exactly one input; leave anything else untouched.
            continue;
        };
        let upstream = stream.edges[edge].source;
        let name = format!("Combine({})", stream.nodes[node].name);
        let combiner = stream.add_node(
            name,
            NodeKind::Operator,
            NodeFactory::OneInput(rewrite.combiner),
            rewrite.combiner_out,
        );
        parallelism.push(parallelism[upstream]);
        stream.edges[edge].target = combiner;
        stream.edges[edge].partitioning = Partitioning::Forward;
        let network_task = stream.edges[edge].network_task.take();
        stream.add_edge(combiner, node, 0, rewrite.partitioning, network_task);
        stream.nodes[node].factory = NodeFactory::OneInput(rewrite.merge);
    }
}

fn topological_order(stream: &StreamGraph) -> Result<Vec<NodeId>> {
    let n = stream.nodes.len();
    let mut indegree = vec![0usize; n];
    for e in &stream.edges {
        indegree[e.target] += 1;
    }
    let mut ready: Vec<NodeId> = (0..n).rev().filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(node) = ready.pop() {
        order.push(node);
        let mut next: Vec<NodeId> = Vec::new();
        for (_, e) in stream.outputs_of(node) {
            indegree[e.target] -= 1;
            if indegree[e.target] == 0 {
                next.push(e.target);
            }
        }
        next.sort_unstable_by(|a, b| b.cmp(a));
        ready.extend(next);
    }
    if order.len() != n {
        return Err(HummerError::InvalidGraph("the graph has a cycle".into()));
    }
    Ok(order)
}

/// Assigns every node to a chain; returns the vertex of each node and the vertices.
fn fuse(
    stream: &StreamGraph,
    order: &[NodeId],
    parallelism: &[usize],
) -> (Vec<usize>, Vec<JobVertex>) {
    let mut vertex_of = vec![usize::MAX; stream.nodes.len()];
    let mut vertices: Vec<JobVertex> = Vec::new();
    for &node in order {
        let inputs: Vec<_> = stream.inputs_of(node).map(|(_, e)| e).collect();
        let chained_to = match inputs[..] {
            [edge]
                if matches!(edge.partitioning, Partitioning::Forward)
                    && parallelism[edge.source] == parallelism[node]
                    && matches!(stream.nodes[node].factory, NodeFactory::OneInput(_))
                    && stream.nodes[node].chaining == Chaining::Always =>
            {
                Some(vertex_of[edge.source])
            }
            _ => None,
        };
        let vertex = chained_to.unwrap_or_else(|| {
            vertices.push(JobVertex {
                id: vertices.len(),
                name: String::new(),
                parallelism: parallelism[node],
                nodes: Vec::new(),
            });
            vertices.len() - 1
        });
        vertex_of[node] = vertex;
        vertices[vertex].nodes.push(node);
    }
    for v in &mut vertices {
        v.name = v
            .nodes
            .iter()
            .map(|&n| stream.nodes[n].name.as_str())
            .collect::<Vec<_>>()
            .join(" -> ");
    }
    (vertex_of, vertices)
}
