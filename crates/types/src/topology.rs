//! The shape of a job as monitoring shows it: its chains with their operators, and the edges
//! between chains with their partitioning.
//!
//! The client sends it with a submission (the JobManager never builds the job graph itself),
//! and the JobManager serves it to the dashboard with the parallelism it chose.

use serde::{Deserialize, Serialize};

/// Every chain of a job and the shuffles between them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobTopology {
    /// The chains, in vertex order: each chain's operator names, head first.
    pub vertices: Vec<Vec<String>>,
    /// The edges between chains.
    pub edges: Vec<TopologyEdge>,
}

/// An edge between two chains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologyEdge {
    /// Producing vertex.
    pub source: usize,
    /// Consuming vertex.
    pub target: usize,
    /// How records are distributed, as [`crate::Partitioning::name`] says it.
    pub partitioning: String,
}

impl JobTopology {
    /// The partitioning of `edge` once the vertices run with `parallelism`: a forward edge
    /// between vertices of different parallelism rebalances
    /// ([`crate::Partitioning::forward_possible`]).
    pub fn partitioning_with(&self, edge: &TopologyEdge, parallelism: &[usize]) -> String {
        let forward = crate::Partitioning::Forward.name();
        match (parallelism.get(edge.source), parallelism.get(edge.target)) {
            (Some(&s), Some(&t))
                if edge.partitioning == forward && !crate::Partitioning::forward_possible(s, t) =>
            {
                crate::Partitioning::Rebalance.name().to_string()
            }
            _ => edge.partitioning.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_edges_between_different_parallelism_rebalance() {
        let edge = |p: &str| TopologyEdge {
            source: 0,
            target: 1,
            partitioning: p.into(),
        };
        let t = JobTopology {
            vertices: vec![vec!["a".into()], vec!["b".into()]],
            edges: vec![edge("FORWARD")],
        };
        assert_eq!(t.partitioning_with(&t.edges[0], &[2, 2]), "FORWARD");
        assert_eq!(t.partitioning_with(&t.edges[0], &[2, 3]), "REBALANCE");
        assert_eq!(t.partitioning_with(&edge("HASH"), &[2, 3]), "HASH");
        // Unknown parallelism (not placed yet): as submitted.
        assert_eq!(t.partitioning_with(&t.edges[0], &[]), "FORWARD");
    }
}
