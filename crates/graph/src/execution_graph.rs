//! The ExecutionGraph: every job vertex expanded into its parallel subtasks, every job edge
//! into the channels between them.
//!
//! A forward edge between chains of equal parallelism connects subtask *i* to subtask *i*;
//! every other edge connects every producer subtask to every consumer subtask. In the local
//! runtime every channel is a memory channel.

use crate::job_graph::JobGraph;
use crate::types::Partitioning;

/// One parallel instance of a job vertex.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExecutionVertex {
    /// Index of the job vertex.
    pub vertex: usize,
    /// Subtask index within the vertex.
    pub index: usize,
    /// "name (index+1/parallelism)", as Flink names subtasks.
    pub name: String,
}

/// A channel from one subtask to another.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExecutionChannel {
    /// Index of the job edge.
    pub job_edge: usize,
    /// Global index of the producing subtask.
    pub producer: usize,
    /// Global index of the consuming subtask.
    pub consumer: usize,
}

/// All subtasks and channels of a job.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExecutionGraph {
    /// Subtasks, grouped by vertex in vertex order.
    pub subtasks: Vec<ExecutionVertex>,
    /// Global index of subtask 0 of each vertex.
    pub first_subtask: Vec<usize>,
    /// Channels, grouped by job edge, then producer, then consumer.
    pub channels: Vec<ExecutionChannel>,
}

impl ExecutionGraph {
    /// Expands a job graph.
    pub fn from_job_graph(job: &JobGraph) -> ExecutionGraph {
        let mut subtasks = Vec::new();
        let mut first_subtask = Vec::new();
        for v in &job.vertices {
            first_subtask.push(subtasks.len());
            for index in 0..v.parallelism {
                subtasks.push(ExecutionVertex {
                    vertex: v.id,
                    index,
                    name: format!("{} ({}/{})", v.name, index + 1, v.parallelism),
                });
            }
        }
        let mut channels = Vec::new();
        for (job_edge, e) in job.edges.iter().enumerate() {
            let (ps, pt) = (
                job.vertices[e.source].parallelism,
                job.vertices[e.target].parallelism,
            );
            let (s0, t0) = (first_subtask[e.source], first_subtask[e.target]);
            let one_to_one = matches!(e.partitioning, Partitioning::Forward) && ps == pt;
            for p in 0..ps {
                let consumers = if one_to_one { p..p + 1 } else { 0..pt };
                for c in consumers {
                    channels.push(ExecutionChannel {
                        job_edge,
                        producer: s0 + p,
                        consumer: t0 + c,
                    });
                }
            }
        }
        ExecutionGraph {
            subtasks,
            first_subtask,
            channels,
        }
    }
}
