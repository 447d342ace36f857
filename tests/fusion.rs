//! Property tests of the fusion rules: on random pipelines, a stream edge lies inside a chain
//! exactly when the rules allow it (forward, equal parallelism, single-input one-input target,
//! chaining not disabled), and the execution graph has the channels the partitioning implies.

use std::collections::HashMap;

use hummer::graph::ExecutionGraph;
use hummer::graph::stream_graph::Chaining;
use hummer::prelude::*;
use hummer::types::Partitioning;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Map(Option<usize>),
    Filter(Option<usize>),
    Rebalance,
    KeyCount(Option<usize>),
    UnionWithNew(Option<usize>),
    NoChain,
    JoinWithNew,
}

fn step() -> impl Strategy<Value = Step> {
    let p = proptest::option::of(1usize..5);
    prop_oneof![
        p.clone().prop_map(Step::Map),
        p.clone().prop_map(Step::Filter),
        Just(Step::Rebalance),
        p.clone().prop_map(Step::KeyCount),
        p.prop_map(Step::UnionWithNew),
        Just(Step::NoChain),
        Just(Step::JoinWithNew),
    ]
}

fn build(env: &StreamExecutionEnvironment, steps: &[Step]) {
    let set = |s: DataStream<u64>, p: &Option<usize>| match p {
        Some(p) => s.set_parallelism(*p),
        None => s,
    };
    let mut s = env.add_source(GeneratorSource::new(|i| i).with_count(10));
    for st in steps {
        s = match st {
            Step::Map(p) => set(s.map(|x: u64| x + 1), p),
            Step::Filter(p) => set(s.filter(|_: &u64| true), p),
            Step::Rebalance => s.rebalance(),
            Step::KeyCount(p) => set(s.key_by(|x: &u64| x % 5).count().map(|(_, c)| c), p),
            Step::UnionWithNew(p) => {
                let other = set(env.from_collection(vec![1u64]), &None);
                set(s.union(&[other]), p)
            }
            Step::NoChain => s.map(|x: u64| x).disable_chaining(),
            Step::JoinWithNew => {
                let other = env.from_collection(vec![1u64]);
                s.key_by(|x: &u64| *x)
                    .join(&other.key_by(|x: &u64| *x), |_, a: &u64, b: &u64| a + b)
            }
        };
    }
    s.collect();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn edges_are_fused_exactly_when_the_rules_allow(
        steps in proptest::collection::vec(step(), 0..10),
        parallelism in 1usize..5,
        batch in any::<bool>(),
    ) {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(parallelism);
        env.set_runtime_mode(if batch { RuntimeMode::Batch } else { RuntimeMode::Streaming });
        build(&env, &steps);
        let job = env.job_graph().unwrap();
        let graph = job.stream_graph();
        let mut inputs: HashMap<usize, usize> = HashMap::new();
        for e in &graph.edges {
            *inputs.entry(e.target()).or_default() += 1;
        }
        for e in &graph.edges {
            let (s, t) = (e.source(), e.target());
            let target = &graph.nodes[t];
            let allowed = matches!(e.partitioning(), Partitioning::Forward)
                && job.node_parallelism(s) == job.node_parallelism(t)
                && inputs[&t] == 1
                && !target.is_two_input()
                && target.kind() != hummer::graph::stream_graph::NodeKind::Source
                && target.chaining() == Chaining::Always;
            prop_assert_eq!(job.vertex_of(s) == job.vertex_of(t), allowed,
                "edge {} -> {} ({:?})", graph.nodes[s].name(), target.name(), e.partitioning());
        }
        for v in &job.vertices {
            for &n in &v.nodes {
                prop_assert_eq!(job.node_parallelism(n), v.parallelism);
            }
        }
        // Batch mode puts a combiner before every keyed count's shuffle, fused to its input.
        let combiners = graph.nodes.iter().filter(|n| n.name().starts_with("Combine(")).count();
        let counts = steps.iter().filter(|s| matches!(s, Step::KeyCount(_))).count();
        prop_assert_eq!(combiners, if batch { counts } else { 0 });

        let exec = ExecutionGraph::from_job_graph(&job);
        let subtasks: usize = job.vertices.iter().map(|v| v.parallelism).sum();
        prop_assert_eq!(exec.subtasks.len(), subtasks);
        let channels: usize = job.edges.iter().map(|e| {
            let (ps, pt) = (job.vertices[e.source].parallelism, job.vertices[e.target].parallelism);
            if matches!(e.partitioning, Partitioning::Forward) && ps == pt { ps } else { ps * pt }
        }).sum();
        prop_assert_eq!(exec.channels.len(), channels);
    }
}

#[test]
fn random_pipelines_run_to_the_expected_record_counts() {
    // Fused or not, a map/filter/rebalance pipeline loses and duplicates nothing.
    for p in [1, 3] {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(p);
        let out = env
            .add_source(GeneratorSource::new(|i| i).with_count(50_000))
            .map(|x: u64| x * 2)
            .rebalance()
            .filter(|x: &u64| !x.is_multiple_of(3))
            .map(|x: u64| x)
            .disable_chaining()
            .set_parallelism(2)
            .collect();
        let mut result = env.execute("pipeline").unwrap();
        let mut got = result.collected(&out).unwrap();
        got.sort();
        let expected: Vec<u64> = (0..50_000u64)
            .map(|x| x * 2)
            .filter(|x| x % 3 != 0)
            .collect();
        assert_eq!(got, expected);
    }
}
