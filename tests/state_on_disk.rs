//! State larger than memory (issue 32), end to end through the `hummer` binary: jobs whose
//! keyed state outgrows a small `--state-memory` give the results of the same jobs with all
//! state in memory, exactly once through a failure and a restore, and leave no files behind.

mod common;

use std::path::Path;
use std::process::Command;

use common::cli::BIN;

/// Runs `hummer ARGS`: whether it succeeded, and its standard error.
fn hummer(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).args(args).output().expect("hummer runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The lines of every part file under `dir`, sorted.
fn lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("an output directory")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).expect("a part file");
        lines.extend(text.lines().map(String::from));
    }
    lines.sort();
    lines
}

fn spilled(stderr: &str) -> bool {
    stderr.contains("entries moved out of memory")
}

/// Nexmark's stateful queries with a budget of one MiB give, line for line, what they give
/// with their state in memory; the joins, final tables and windows that outgrow it say they
/// moved entries to disk, and the state directory is empty afterwards.
#[test]
fn nexmark_queries_over_a_small_budget_equal_the_runs_in_memory() {
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("state");
    for (query, must_spill) in [
        ("q3", false),
        ("q4", false),
        ("q5", false),
        ("q7", false),
        ("q9", false),
        ("q18", true),
        ("q19", true),
        ("q20", true),
    ] {
        let in_memory = dir.path().join(format!("{query}-memory"));
        let on_disk = dir.path().join(format!("{query}-disk"));
        let run = |out: &Path, budget: &[&str]| {
            let mut args = vec!["nexmark", "--query", query, "--events", "200000", "-p", "2"];
            let out = out.to_str().expect("a UTF-8 path");
            args.extend(["--output", out]);
            args.extend(budget);
            let (ok, stderr) = hummer(&args);
            assert!(ok, "{query} {budget:?} failed: {stderr}");
            stderr
        };
        run(&in_memory, &[]);
        let stderr = run(
            &on_disk,
            &[
                "--state-memory",
                "1m",
                "--state-dir",
                state.to_str().expect("a UTF-8 path"),
            ],
        );
        let expected = lines(&in_memory);
        assert!(
            !expected.is_empty(),
            "{query}: an empty result tests nothing"
        );
        assert!(
            lines(&on_disk) == expected,
            "{query}: the result with state on disk differs from the one in memory"
        );
        assert!(
            !must_spill || spilled(&stderr),
            "{query}: nothing was moved to disk: {stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(&state)
            .expect("the state directory")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{query} left {left:?}");
    }
}

/// The exactly-once reference job (a keyed count per event, 100,000 keys) with a budget far
/// below its state, checkpoints every 50 ms and a failure half way: the committed output
/// holds every event exactly once, with per key the counts 1..n (`--verify`), so the entries
/// on disk were in the checkpoints and came back on the restore.
#[test]
fn exactly_once_with_state_on_disk_through_a_failure() {
    let dir = tempfile::tempdir().expect("a directory");
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (ok, stderr) = hummer(&[
        "run",
        "event-count",
        "--events",
        "300000",
        "--keys",
        "100000",
        "--rate",
        "150000",
        "-p",
        "2",
        "--checkpoint-interval-ms",
        "50",
        "--restart",
        "fixed-delay:3:100ms",
        "--fail-at",
        "200000",
        "--fail-marker",
        &path("failed"),
        "--checkpoint-dir",
        &path("checkpoints"),
        "--out",
        &path("out"),
        "--verify",
        "--state-memory",
        "1m",
        "--state-dir",
        &path("state"),
    ]);
    assert!(
        ok,
        "the job failed or its output is not exactly once: {stderr}"
    );
    assert!(spilled(&stderr), "nothing was moved to disk: {stderr}");
    assert!(
        std::path::Path::new(&path("failed.200000")).exists(),
        "the failure was injected"
    );
}

/// An SQL job whose per-key state outgrows one MiB (a regular join of every bid with its
/// auction, and an updating count per bidder) writes, with the budget, the same rows as
/// without it: the join's sides and the aggregation's groups go to disk and come back.
#[test]
fn sql_joins_and_aggregations_over_a_small_budget_equal_the_runs_in_memory() {
    let dir = tempfile::tempdir().expect("a directory");
    let script = |out: &Path| {
        format!(
            "SET 'parallelism.default' = '2';\n\
                          CREATE TABLE datagen ({})\n\
             WITH ('connector' = 'nexmark', 'events.num' = '150000');\n\
             CREATE VIEW auction AS SELECT auction.id, auction.seller, auction.category\n\
               FROM datagen WHERE event_type = 1;\n\
             CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price\n\
               FROM datagen WHERE event_type = 2;\n\
             CREATE TABLE joined (auction BIGINT, bidder BIGINT, price BIGINT, seller BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE TABLE per_bidder (bidder BIGINT, n BIGINT, top BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             INSERT INTO joined SELECT b.auction, b.bidder, b.price, a.seller\n\
               FROM bid AS b JOIN auction AS a ON b.auction = a.id;\n\
             INSERT INTO per_bidder SELECT bidder, COUNT(*), MAX(price) FROM bid GROUP BY bidder;",
            common::sql::NEXMARK_COLUMNS,
            out.join("joined").display(),
            out.join("per_bidder").display()
        )
    };
    let run = |name: &str, budget: &[&str]| {
        let out = dir.path().join(name);
        let script = script(&out);
        let mut args = vec!["sql", "-e", script.as_str()];
        args.extend(budget);
        let (ok, stderr) = hummer(&args);
        assert!(ok, "{name} failed: {stderr}");
        let per_bidder =
            common::sql::apply_debezium(&out.join("per_bidder"), &["bidder", "n", "top"]);
        (lines(&out.join("joined")), per_bidder, stderr)
    };
    let (joined, per_bidder, _) = run("memory", &[]);
    let (joined_disk, per_bidder_disk, stderr) = run("disk", &["--state-memory", "1m"]);
    assert!(
        joined.len() > 1000,
        "{} joined rows test little",
        joined.len()
    );
    assert!(joined_disk == joined, "the join differs with state on disk");
    // The final tables: the changes in between depend on how the two source subtasks'
    // bids interleave, with the budget or without.
    assert!(
        per_bidder.len() > 100,
        "{} bidders test little",
        per_bidder.len()
    );
    assert!(
        per_bidder_disk == per_bidder,
        "the aggregation's final table differs with state on disk"
    );
    assert!(spilled(&stderr), "nothing was moved to disk: {stderr}");
}
