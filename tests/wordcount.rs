//! End-to-end WordCount: the engine's result equals a plain reference, at parallelism 1, 2
//! and 4, in batch and streaming mode, through the API and through the `hummer` binary.

mod common;

use std::collections::HashMap;
use std::process::Command;

use hummer::jobs::wordcount::word_counts;
use hummer::prelude::*;

fn run_api(path: &std::path::Path, parallelism: usize, mode: RuntimeMode) -> HashMap<String, u64> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism).set_runtime_mode(mode);
    let counts = word_counts(&env.read_text_file(path)).collect();
    let mut result = env.execute("wordcount").unwrap();
    assert_eq!(result.mode, mode);
    let mut out: HashMap<String, u64> = HashMap::new();
    for (w, c) in result.collected(&counts).unwrap() {
        let e = out.entry(w.to_string()).or_insert(0);
        if mode == RuntimeMode::Batch {
            assert_eq!(*e, 0, "batch mode emitted '{w}' twice");
        }
        *e = (*e).max(c);
    }
    out
}

#[test]
fn wordcount_matches_reference_at_parallelism_1_2_4_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.txt");
    common::write_corpus(&input, 20_000);
    let expected = common::reference_counts(&std::fs::read_to_string(&input).unwrap());
    assert!(expected.len() > 1000);
    for parallelism in [1, 2, 4] {
        for mode in [RuntimeMode::Batch, RuntimeMode::Streaming] {
            let got = run_api(&input, parallelism, mode);
            assert!(
                got == expected,
                "mismatch at parallelism {parallelism}, {mode:?}"
            );
        }
    }
}

#[test]
fn streaming_mode_emits_one_update_per_word() {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    let lines = vec!["a b a".to_string(), "B a".to_string()];
    let counts = word_counts(&env.from_collection(lines)).collect();
    let mut result = env.execute("updates").unwrap();
    let mut updates: Vec<(String, u64)> = result
        .collected(&counts)
        .unwrap()
        .into_iter()
        .map(|(w, c)| (w.to_string(), c))
        .collect();
    updates.sort();
    let expected: Vec<(String, u64)> = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)]
        .iter()
        .map(|(w, c)| (w.to_string(), *c))
        .collect();
    assert_eq!(updates, expected);
}

#[test]
fn cli_writes_part_files_equal_to_reference() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    common::write_corpus(&input.join("a.txt"), 3_000);
    std::fs::write(input.join("b.txt"), "Extra WORDS, extra words!\n").unwrap();
    let out = dir.path().join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_hummer"))
        .args(["wordcount", "--parallelism", "3", "--top", "3", "--output"])
        .arg(&out)
        .arg(&input)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(
        stdout.contains("records") && stdout.contains("MB/s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("   1. the\t"),
        "top words missing: {stdout}"
    );
    let mut text = std::fs::read_to_string(input.join("a.txt")).unwrap();
    text.push_str(&std::fs::read_to_string(input.join("b.txt")).unwrap());
    assert_eq!(common::read_counts(&out), common::reference_counts(&text));
    let parts = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(parts, 3, "one part file per sink subtask");
}

#[test]
fn cli_runs_on_the_generated_corpus_without_input() {
    let out = Command::new(env!("CARGO_BIN_EXE_hummer"))
        .args(["wordcount", "--corpus-lines", "5000", "--top", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("5000 records"), "{stdout}");
    assert!(stdout.contains("   1. the\t"), "{stdout}");
}

#[test]
fn cli_rejects_bad_arguments_and_missing_input() {
    let bin = env!("CARGO_BIN_EXE_hummer");
    let bad_mode = Command::new(bin)
        .args(["wordcount", "--mode", "sideways"])
        .output()
        .unwrap();
    assert!(!bad_mode.status.success());
    assert!(String::from_utf8_lossy(&bad_mode.stderr).contains("sideways"));

    let zero = Command::new(bin)
        .args(["wordcount", "--parallelism", "0"])
        .output()
        .unwrap();
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--parallelism must be at least 1"));

    let missing = Command::new(bin)
        .args(["wordcount", "/nonexistent/corpus.txt"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/corpus.txt"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}

#[test]
fn cli_explains_the_fused_plan() {
    let out = Command::new(env!("CARGO_BIN_EXE_hummer"))
        .args(["wordcount", "--explain", "--parallelism", "2"])
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(plan.contains("== JobGraph"), "{plan}");
    // The combiner is fused into the tokenizer's chain, before the hash shuffle.
    assert!(
        plan.contains("-> Tokenize -> Combine(Count) (parallelism 2)"),
        "{plan}"
    );
    let dot = Command::new(env!("CARGO_BIN_EXE_hummer"))
        .args(["wordcount", "--explain-format", "dot"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&dot.stdout).starts_with("digraph hummer"));
}
