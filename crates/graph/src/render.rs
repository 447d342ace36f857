//! The three graphs as text (for people), JSON (for tools) and Graphviz DOT (for pictures).

use std::fmt::Write;

use serde_json::{Value, json};

use crate::execution_graph::ExecutionGraph;
use crate::job_graph::JobGraph;
use crate::stream_graph::StreamGraph;

/// A Rust type's name without its module paths, as people write it:
/// `alloc::vec::Vec<hummer_sql::value::Value>` is `Vec<Value>`.
pub fn short_type_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut segment = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            segment.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            // `segment` was a module: dropped.
            chars.next();
            segment.clear();
        } else {
            out.push_str(&segment);
            segment.clear();
            out.push(c);
        }
    }
    out.push_str(&segment);
    out
}

/// Human-readable plan: the stream graph as written, the fused job graph, the subtasks.
pub fn to_text(stream: &StreamGraph, job: &JobGraph, exec: &ExecutionGraph) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "== StreamGraph ({} nodes) ==", stream.nodes.len());
    for n in &stream.nodes {
        let p = n
            .parallelism
            .map_or("default".to_string(), |p| p.to_string());
        let _ = writeln!(
            s,
            "  [{}] {} ({:?}, parallelism {p}) -> {}",
            n.id,
            n.name,
            n.kind,
            short_type_name(n.output_type())
        );
        for (_, e) in stream.inputs_of(n.id) {
            write_input(&mut s, e.source, &e.partitioning, e.input);
        }
    }
    let _ = writeln!(
        s,
        "== JobGraph ({} chains, {:?} mode) ==",
        job.vertices.len(),
        job.mode
    );
    for v in &job.vertices {
        let _ = writeln!(s, "  [{}] {} (parallelism {})", v.id, v.name, v.parallelism);
        for e in job.edges.iter().filter(|e| e.target == v.id) {
            write_input(&mut s, e.source, &e.partitioning, e.input);
        }
    }
    let _ = writeln!(
        s,
        "== ExecutionGraph ({} subtasks, {} channels) ==",
        exec.subtasks.len(),
        exec.channels.len()
    );
    for (i, t) in exec.subtasks.iter().enumerate() {
        let inputs = exec.channels.iter().filter(|c| c.consumer == i).count();
        let outputs = exec.channels.iter().filter(|c| c.producer == i).count();
        let _ = writeln!(s, "  #{i} {} ({inputs} in, {outputs} out)", t.name);
    }
    s
}

/// One input line of a node or chain in [`to_text`]: where it comes from, how, and on which
/// input port.
fn write_input(
    s: &mut String,
    source: impl std::fmt::Display,
    partitioning: &crate::types::Partitioning,
    input: usize,
) {
    let _ = writeln!(s, "        <- [{source}] {partitioning:?} input {input}");
}

/// The three graphs as one JSON document.
pub fn to_json(stream: &StreamGraph, job: &JobGraph, exec: &ExecutionGraph) -> Value {
    let nodes: Vec<Value> = stream
        .nodes
        .iter()
        .map(|n| {
            json!({
                "id": n.id, "name": n.name, "kind": n.kind, "parallelism": n.parallelism,
                "chaining": n.chaining, "output_type": n.output_type(),
            })
        })
        .collect();
    let edges: Vec<Value> = stream
        .edges
        .iter()
        .map(|e| json!({"source": e.source, "target": e.target, "input": e.input, "partitioning": e.partitioning.name()}))
        .collect();
    let job_edges: Vec<Value> = job
        .edges
        .iter()
        .map(|e| json!({"source": e.source, "target": e.target, "input": e.input, "partitioning": e.partitioning.name()}))
        .collect();
    json!({
        "stream_graph": {"nodes": nodes, "edges": edges},
        "job_graph": {"mode": job.mode, "vertices": job.vertices, "edges": job_edges},
        "execution_graph": exec,
    })
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The job graph as Graphviz DOT: one cluster per chain holding its fused operators, one
/// arrow per shuffle labelled with its partitioning.
pub fn to_dot(job: &JobGraph) -> String {
    let mut s = String::from("digraph hummer {\n  rankdir=LR;\n  node [shape=box];\n");
    for v in &job.vertices {
        let _ = writeln!(
            s,
            "  subgraph cluster_{} {{\n    label=\"chain {} (parallelism {})\";",
            v.id, v.id, v.parallelism
        );
        for &n in &v.nodes {
            let _ = writeln!(
                s,
                "    n{n} [label=\"{}\"];",
                dot_escape(&job.stream.nodes[n].name)
            );
        }
        s.push_str("  }\n");
    }
    for e in &job.stream.edges {
        let chained = job.vertex_of[e.source] == job.vertex_of[e.target];
        let style = if chained {
            "style=dashed, label=\"fused\""
        } else {
            ""
        };
        let label = if chained {
            String::new()
        } else {
            format!("label=\"{}\"", e.partitioning.name())
        };
        let _ = writeln!(s, "  n{} -> n{} [{style}{label}];", e.source, e.target);
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_lose_their_module_paths() {
        assert_eq!(
            short_type_name("alloc::vec::Vec<hummer_sql::value::Value>"),
            "Vec<Value>"
        );
        assert_eq!(
            short_type_name("(alloc::string::String, u64, core::option::Option<i32>)"),
            "(String, u64, Option<i32>)"
        );
        assert_eq!(short_type_name("()"), "()");
    }
}
