//! Operator semantics through the public API, in batch and streaming mode.

use std::collections::HashMap;

use hummer::prelude::*;

fn env(parallelism: usize, mode: RuntimeMode) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism).set_runtime_mode(mode);
    env
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn stateless_chain_keeps_order_at_parallelism_one() {
    let env = env(1, RuntimeMode::Batch);
    let out = env
        .from_collection((0..10_000u32).collect())
        .map(|x: u32| x * 3)
        .filter(|x: &u32| x.is_multiple_of(2))
        .flat_map(|x: u32| [x, x + 1])
        .collect();
    let mut result = env.execute("chain").unwrap();
    let expected: Vec<u32> = (0..10_000u32)
        .map(|x| x * 3)
        .filter(|x| x % 2 == 0)
        .flat_map(|x| [x, x + 1])
        .collect();
    assert_eq!(result.collected(&out).unwrap(), expected);
}

#[test]
fn keyed_aggregations_give_final_values_in_batch_and_updates_in_streaming() {
    let data: Vec<(u32, i64)> = (0..5_000)
        .map(|i| (i % 7, (i as i64 * 37) % 101 - 50))
        .collect();
    let mut sums: HashMap<u32, i64> = HashMap::new();
    let mut mins: HashMap<u32, i64> = HashMap::new();
    let mut maxs: HashMap<u32, i64> = HashMap::new();
    for (k, v) in &data {
        *sums.entry(*k).or_default() += v;
        mins.entry(*k)
            .and_modify(|m| *m = (*m).min(*v))
            .or_insert(*v);
        maxs.entry(*k)
            .and_modify(|m| *m = (*m).max(*v))
            .or_insert(*v);
    }
    for mode in [RuntimeMode::Batch, RuntimeMode::Streaming] {
        for parallelism in [1, 3] {
            let env = env(parallelism, mode);
            let keyed = env
                .from_collection(data.clone())
                .rebalance()
                .key_by(|r: &(u32, i64)| r.0);
            let sum = keyed.sum(|r: &(u32, i64)| r.1).collect();
            let min = keyed.min(|r: &(u32, i64)| r.1).collect();
            let max = keyed.max(|r: &(u32, i64)| r.1).collect();
            let count = keyed.count().collect();
            let reduce = keyed.reduce(|a, b| (a.0, a.1 + b.1)).collect();
            let mut result = env.execute("aggregations").unwrap();
            let sum = result.collected(&sum).unwrap();
            let count = result.collected(&count).unwrap();
            let reduce = result.collected(&reduce).unwrap();
            if mode == RuntimeMode::Batch {
                assert_eq!(sum.len(), 7, "one final value per key");
                assert_eq!(count.len(), 7);
            } else {
                assert_eq!(sum.len(), data.len(), "one update per record");
                assert_eq!(reduce.len(), data.len());
            }
            // The last update of each key is its final value.
            let last = |v: Vec<(u32, i64)>| -> HashMap<u32, i64> { v.into_iter().collect() };
            if mode == RuntimeMode::Batch {
                assert_eq!(last(sum), sums);
                assert_eq!(last(reduce), sums);
                assert_eq!(last(result.collected(&min).unwrap()), mins);
                assert_eq!(last(result.collected(&max).unwrap()), maxs);
            } else {
                // Updates of one key arrive in order, so per key the sums only move by the
                // records' values and the counts grow by one.
                let mut counts_seen: HashMap<u32, u64> = HashMap::new();
                for (k, c) in &count {
                    let prev = counts_seen.insert(*k, *c).unwrap_or(0);
                    assert_eq!(*c, prev + 1, "count updates of key {k} out of order");
                }
                let finals: HashMap<u32, i64> = sum.into_iter().collect();
                assert_eq!(finals, sums);
            }
        }
    }
}

#[test]
fn keyed_process_keeps_state_per_key_across_subtasks() {
    let env = env(3, RuntimeMode::Streaming);
    let out = env
        .from_collection((0..3_000u64).map(|i| (i % 10, i)).collect())
        .rebalance()
        .key_by(|r: &(u64, u64)| r.0)
        .process(
            |key: &u64,
             r: (u64, u64),
             seen: &mut ValueState<u64>,
             out: &mut Collector<(u64, u64)>| {
                let n = seen.get_or_insert_with(|| 0);
                *n += 1;
                assert_eq!(*key, r.0);
                if *n == 300 {
                    out.collect((*key, *n));
                    seen.clear();
                }
            },
        )
        .collect();
    let mut result = env.execute("process").unwrap();
    let got = sorted(result.collected(&out).unwrap());
    let expected: Vec<(u64, u64)> = (0..10).map(|k| (k, 300)).collect();
    assert_eq!(got, expected);
}

#[test]
fn union_connect_and_join_combine_inputs() {
    for mode in [RuntimeMode::Batch, RuntimeMode::Streaming] {
        let env = env(2, mode);
        let a = env.from_collection(vec![1i64, 2, 3]);
        let b = env.from_collection(vec![10i64, 20]);
        let c = env.from_collection(vec![100i64]);
        let union = a.union(&[b.clone(), c]).collect();
        let co = a
            .connect(&env.from_collection(vec!["x".to_string()]))
            .co_flat_map(
                |n: i64| vec![n.to_string(); n as usize],
                |s: String| vec![s],
            )
            .collect();
        let orders = env.from_collection(vec![(1u32, 5u64), (2, 7), (1, 9), (4, 1)]);
        let names = env.from_collection(vec![
            (1u32, "one".to_string()),
            (2, "two".into()),
            (3, "three".into()),
        ]);
        let joined = orders
            .key_by(|o: &(u32, u64)| o.0)
            .join(
                &names.key_by(|n: &(u32, String)| n.0),
                |k: &u32, o: &(u32, u64), n: &(u32, String)| (*k, n.1.clone(), o.1),
            )
            .collect();
        let mut result = env.execute("inputs").unwrap();
        assert_eq!(
            sorted(result.collected(&union).unwrap()),
            vec![1, 2, 3, 10, 20, 100]
        );
        assert_eq!(
            sorted(result.collected(&co).unwrap()),
            vec!["1", "2", "2", "3", "3", "3", "x"]
        );
        assert_eq!(
            sorted(result.collected(&joined).unwrap()),
            vec![
                (1, "one".to_string(), 5),
                (1, "one".to_string(), 9),
                (2, "two".to_string(), 7)
            ]
        );
    }
}

#[test]
fn broadcast_reaches_every_subtask_and_rebalance_spreads() {
    let env = env(1, RuntimeMode::Batch);
    let src = env.from_collection((0..4_000u32).collect());
    let broadcast = src.broadcast().map(|x: u32| x).set_parallelism(3).collect();
    let rebalanced = src.rebalance().map(|x: u32| x).set_parallelism(3).collect();
    let mut result = env.execute("partitioning").unwrap();
    let b = result.collected(&broadcast).unwrap();
    assert_eq!(b.len(), 3 * 4_000);
    let r = result.collected(&rebalanced).unwrap();
    assert_eq!(sorted(r), (0..4_000u32).collect::<Vec<_>>());
    // Per-operator parallelism shows in the plan.
    assert_eq!(
        result
            .vertices
            .iter()
            .filter(|v| v.parallelism == 3)
            .count(),
        2
    );
}

#[test]
fn generator_source_is_exact_at_any_parallelism() {
    for p in [1, 2, 5] {
        let env = env(p, RuntimeMode::Automatic);
        let out = env
            .add_source(GeneratorSource::new(|i| i).with_count(10_001))
            .collect();
        let mut result = env.execute("generator").unwrap();
        assert_eq!(result.mode, RuntimeMode::Batch);
        assert_eq!(
            sorted(result.collected(&out).unwrap()),
            (0..10_001u64).collect::<Vec<_>>()
        );
        assert_eq!(result.source_records, 10_001);
    }
}

#[test]
fn text_file_sink_commits_one_part_per_subtask() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // A stale part of an earlier run at higher parallelism must not survive.
    std::fs::write(out.join("part-7"), "stale\n").unwrap();
    let env = env(2, RuntimeMode::Batch);
    env.from_collection((0..100u32).collect())
        .rebalance()
        .map(|x: u32| x)
        .write_text_file(&out);
    env.execute("sink").unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names, vec!["part-0", "part-1"]);
    let mut all: Vec<u32> = names
        .iter()
        .flat_map(|n| {
            std::fs::read_to_string(out.join(n))
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect::<Vec<u32>>()
        })
        .collect();
    all.sort();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
}

#[test]
fn explain_shows_fusion_and_formats() {
    let env = env(2, RuntimeMode::Batch);
    env.from_collection(vec!["a".to_string()])
        .map(|s: String| s)
        .set_parallelism(1)
        .rebalance()
        .filter(|_: &String| true)
        .map(|s: String| s.len())
        .print();
    let text = env.explain().unwrap();
    // Equal parallelism and a forward edge fuse; the rebalance starts a new chain.
    assert!(
        text.contains("[0] Collection Source -> Map (parallelism 1)"),
        "{text}"
    );
    assert!(
        text.contains("Filter -> Map -> Print (parallelism 2)"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&env.explain_json().unwrap()).unwrap();
    assert_eq!(json["job_graph"]["vertices"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["execution_graph"]["subtasks"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert!(env.explain_dot().unwrap().contains("label=\"REBALANCE\""));
}
