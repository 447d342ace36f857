//! Exactly-once under failures, in the local runtime.
//!
//! A replayable source of N numbered events over K keys feeds a keyed counter (its count is
//! keyed state) that writes `event key count` lines through the exactly-once file sink.
//! Failures are injected at random events (a panic inside the counter); the job restarts from
//! its last checkpoint. When it ends, the committed output must hold every event exactly once,
//! and per key the counts 1..=n: nothing lost, nothing duplicated, state restored.
//!
//! Every trial prints its seed; `HUMMER_TRIAL_SEED=<seed>` replays one trial.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hummer::checkpoint::coordinator::{CheckpointConfig, CheckpointStatus};
use hummer::execution::restart_strategy::RestartStrategy;
use hummer::prelude::*;

mod common;
use common::{Rng, trial_seeds};

#[derive(Debug, Clone)]
struct Trial {
    seed: u64,
    events: u64,
    keys: u64,
    parallelism: usize,
    /// Events at which the counter panics (each once).
    failures: Vec<u64>,
}

impl Trial {
    fn from_seed(seed: u64) -> Trial {
        let mut rng = Rng::new(seed);
        let events = 4_000 + rng.below(16_000);
        let failures = (0..1 + rng.below(3)).map(|_| rng.below(events)).collect();
        Trial {
            seed,
            events,
            keys: 1 + rng.below(40),
            parallelism: 1 + rng.below(3) as usize,
            failures,
        }
    }
}

fn checkpoint_config(dir: &Path) -> CheckpointConfig {
    let mut c = CheckpointConfig::new(Duration::from_millis(20), dir);
    c.retain = 2;
    c
}

/// Panics at each of the `fail_at` events, once each (shared by every subtask and attempt).
fn fail_once_at(fail_at: Vec<u64>) -> impl Fn(u64) + Clone + Send + Sync + 'static {
    let fired: Arc<Vec<AtomicBool>> =
        Arc::new(fail_at.iter().map(|_| AtomicBool::new(false)).collect());
    move |e| {
        if let Some(i) = fail_at.iter().position(|f| *f == e)
            && !fired[i].swap(true, Ordering::SeqCst)
        {
            panic!("injected failure at event {e}");
        }
    }
}

/// Builds the counting job; `fail_at` events panic the counter once each.
fn counting_job(
    env: &StreamExecutionEnvironment,
    events: u64,
    keys: u64,
    fail_at: Vec<u64>,
    out: &Path,
) {
    let fail = fail_once_at(fail_at);
    env.add_source(
        GeneratorSource::new(|i| i)
            .with_count(events)
            .with_rate(150_000.0),
    )
    .key_by(move |e: &u64| e % keys)
    .process(
        move |key: &u64, e: u64, count: &mut ValueState<u64>, out: &mut Collector<String>| {
            fail(e);
            let n = count.get_or_insert_with(|| 0);
            *n += 1;
            out.collect(format!("{e} {key} {n}"));
        },
    )
    .name("counter")
    .write_text_file(out);
}

/// Checks the committed output: every event once, per key the counts 1..=n (the EventCount
/// job's own check).
fn verify(out: &Path, events: u64, keys: u64, label: &str) {
    let verdict = hummer::jobs::event_count::verify(out, events, keys)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(verdict.is_exactly_once(), "{label}: {verdict:?}");
}

fn run_trial(trial: &Trial, root: &Path) {
    let label = format!("trial seed {} ({trial:?})", trial.seed);
    eprintln!("{label}");
    let out = root.join(format!("out-{}", trial.seed));
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(trial.parallelism)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&root.join("checkpoints")))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::from_millis(5),
        });
    counting_job(&env, trial.events, trial.keys, trial.failures.clone(), &out);
    let result = env
        .execute("exactly-once trial")
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let distinct: std::collections::BTreeSet<u64> = trial.failures.iter().copied().collect();
    // Failures close together may fall into one attempt (a second subtask panics before the
    // first failure has stopped it): one restart then covers both.
    assert!(
        (1..=distinct.len()).contains(&(result.restarts as usize)),
        "{label}: {} restarts",
        result.restarts
    );
    assert!(
        result
            .checkpoints
            .iter()
            .any(|c| c.is_final && c.status == CheckpointStatus::Completed),
        "{label}: the final checkpoint completed"
    );
    verify(&out, trial.events, trial.keys, &label);
}

#[test]
fn randomized_failures_keep_the_output_exactly_once() {
    let root = tempfile::tempdir().unwrap();
    for seed in trial_seeds(16, 7919) {
        run_trial(&Trial::from_seed(seed), root.path());
    }
}

/// The only run directory under `dir`.
fn run_dir(dir: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn a_failed_job_restored_at_a_lower_parallelism_completes_exactly_once() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let checkpoints = root.path().join("checkpoints");
    let (events, keys) = (30_000, 17);

    // Parallelism 3, no restarts: the job fails at event 24,000, after some checkpoints.
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(3)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&checkpoints))
        .set_restart_strategy(RestartStrategy::None);
    counting_job(&env, events, keys, vec![24_000], &out);
    let err = env.execute("rescale, first run").err().unwrap().to_string();
    assert!(
        err.contains("counter") && err.contains("injected failure"),
        "{err}"
    );

    // Parallelism 2 from the failed run's last checkpoint.
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&root.path().join("checkpoints-2")))
        .set_restore_from(Some(run_dir(&checkpoints)));
    counting_job(&env, events, keys, vec![], &out);
    env.execute("rescale, second run").unwrap();
    verify(&out, events, keys, "restored at parallelism 2");
}

#[test]
fn a_restore_into_a_different_job_names_the_operators_that_do_not_match() {
    let root = tempfile::tempdir().unwrap();
    let checkpoints = root.path().join("checkpoints");
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&checkpoints));
    counting_job(&env, 20_000, 5, vec![], &root.path().join("out"));
    env.execute("first").unwrap();

    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_restore_from(Some(run_dir(&checkpoints)));
    env.add_source(GeneratorSource::new(|i| i).with_count(10))
        .key_by(|e: &u64| e % 3)
        .count()
        .name("another counter")
        .map(|(k, n): (u64, u64)| format!("{k} {n}"))
        .write_text_file(root.path().join("out-2"));
    let err = env.execute("second").err().unwrap().to_string();
    assert!(
        err.contains("does not match") && err.contains("another counter"),
        "{err}"
    );
}

#[test]
fn a_damaged_checkpoint_is_skipped_and_the_one_before_restored() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let checkpoints = root.path().join("checkpoints");
    let (events, keys) = (30_000, 11);
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&checkpoints))
        .set_restart_strategy(RestartStrategy::None);
    counting_job(&env, events, keys, vec![27_000], &out);
    assert!(env.execute("first run").is_err());

    // Flip one byte in a snapshot of the newest checkpoint.
    let run = run_dir(&checkpoints);
    let mut ids: Vec<u64> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids.len(), 2, "two checkpoints retained: {ids:?}");
    let newest = run.join(format!("chk-{}", ids[1]));
    let victim = std::fs::read_dir(&newest)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("task-")
        })
        .unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&victim, bytes).unwrap();

    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&root.path().join("checkpoints-2")))
        .set_restore_from(Some(run));
    counting_job(&env, events, keys, vec![], &out);
    env.execute("second run").unwrap();
    verify(
        &out,
        events,
        keys,
        "restored from the checkpoint before the damaged one",
    );
}

#[test]
fn list_and_map_state_are_restored_after_a_failure() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let (events, keys) = (20_000u64, 8u64);
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&root.path().join("checkpoints")))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 3,
            delay: Duration::from_millis(5),
        });
    let fired = Arc::new(AtomicBool::new(false));
    // Lists of five events per key; a map per key counts the lists emitted by parity of
    // their first event. Both are state that must survive the panic at event 13,000.
    env.add_source(
        GeneratorSource::new(|i| i)
            .with_count(events)
            .with_rate(150_000.0),
    )
    .key_by(move |e: &u64| e % keys)
    .process_list(
        move |_key: &u64, e: u64, list: &mut ListState<u64>, out: &mut Collector<Vec<u64>>| {
            if e == 13_000 && !fired.swap(true, Ordering::SeqCst) {
                panic!("injected failure");
            }
            list.add(e);
            if list.get().len() == 5 {
                out.collect(list.take());
            }
        },
    )
    .key_by(move |l: &Vec<u64>| l[0] % keys)
    .process_map(
        |key: &u64, l: Vec<u64>, seen: &mut MapState<bool, u64>, out: &mut Collector<String>| {
            let parity = l[0].is_multiple_of(2);
            let n = seen.entry_or_insert(parity, 0);
            *n += 1;
            let joined: Vec<String> = l.iter().map(u64::to_string).collect();
            out.collect(format!("{key} {parity} {} {}", *n, joined.join(",")));
        },
    )
    .write_text_file(&out);
    let result = env.execute("list and map state").unwrap();
    assert_eq!(result.restarts, 1);
    let mut seen = vec![0u32; events as usize];
    let mut counters: BTreeMap<(u64, bool), Vec<u64>> = BTreeMap::new();
    for entry in std::fs::read_dir(&out).unwrap().flatten() {
        if !entry.file_name().to_string_lossy().starts_with("part-") {
            continue;
        }
        for line in std::fs::read_to_string(entry.path()).unwrap().lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let (key, parity, n) = (f[0].parse().unwrap(), f[1] == "true", f[2].parse().unwrap());
            counters.entry((key, parity)).or_default().push(n);
            let list: Vec<u64> = f[3].split(',').map(|e| e.parse().unwrap()).collect();
            assert_eq!(list.len(), 5, "{line}");
            for e in list {
                seen[e as usize] += 1;
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n == 1),
        "every event in exactly one list"
    );
    // The map counted the lists of each (key, parity) 1, 2, ..., n: each count once.
    let mut lists = 0;
    for ((key, parity), mut ns) in counters {
        ns.sort_unstable();
        lists += ns.len() as u64;
        assert!(
            ns.iter().copied().eq(1..=ns.len() as u64),
            "counts of ({key}, {parity}): {ns:?}"
        );
    }
    assert_eq!(lists, events / 5);
}

/// The event-time reference job (tumbling windows counted by the window operator or by
/// timers) under random panics: every window of every key is committed once, with its count.
fn run_windowed_trial(seed: u64, variant: hummer::jobs::window_count::Variant, root: &Path) {
    use hummer::jobs::window_count::{WindowCount, verify};
    let mut rng = Rng::new(seed);
    let events = 4_000 + rng.below(16_000);
    let keys = 1 + rng.below(30);
    let parallelism = 1 + rng.below(3) as usize;
    let fail_at: Vec<u64> = (0..1 + rng.below(3)).map(|_| rng.below(events)).collect();
    let label = format!(
        "{variant:?} trial seed {seed}: {events} events, {keys} keys, p={parallelism}, fail at {fail_at:?}"
    );
    eprintln!("{label}");
    let out = root.join(format!("out-{variant:?}-{seed}"));
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_auto_watermark_interval(Duration::from_millis(5))
        .set_checkpoint_config(checkpoint_config(
            &root.join(format!("checkpoints-{variant:?}")),
        ))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::from_millis(5),
        });
    WindowCount {
        events,
        keys,
        rate: Some(150_000.0),
        out: out.clone(),
        variant,
        fail_at: fail_at.clone(),
        fail_marker: None,
    }
    .build(&env)
    .unwrap();
    let result = env
        .execute("windowed trial")
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(result.restarts >= 1, "{label}: no restart");
    let verdict = verify(&out, events, keys).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(verdict.is_exactly_once(), "{label}: {verdict:?}");
}

#[test]
fn randomized_failures_keep_windows_and_timers_exactly_once() {
    let root = tempfile::tempdir().unwrap();
    for seed in trial_seeds(6, 6151) {
        run_windowed_trial(
            seed,
            hummer::jobs::window_count::Variant::Windows,
            root.path(),
        );
        run_windowed_trial(
            seed,
            hummer::jobs::window_count::Variant::Timers,
            root.path(),
        );
    }
}

/// Windows and timers are keyed state: a job that failed at parallelism 3 resumes from its
/// checkpoint at parallelism 2 (window contents, timers and the watermark redistributed by
/// key group) and commits every window once.
#[test]
fn windows_and_timers_restored_at_another_parallelism_are_exactly_once() {
    use hummer::jobs::window_count::{Variant, WindowCount, verify};
    for variant in [Variant::Windows, Variant::Timers] {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        let checkpoints = root.path().join("checkpoints");
        let (events, keys) = (30_000, 23);
        let job = |fail_at: Vec<u64>| WindowCount {
            events,
            keys,
            rate: Some(100_000.0),
            out: out.clone(),
            variant,
            fail_at,
            fail_marker: None,
        };
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(3)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(checkpoint_config(&checkpoints))
            .set_restart_strategy(RestartStrategy::None);
        job(vec![24_000]).build(&env).unwrap();
        let err = env.execute("rescale, first run").err().unwrap().to_string();
        assert!(err.contains("injected failure"), "{variant:?}: {err}");

        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(2)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(checkpoint_config(&root.path().join("checkpoints-2")))
            .set_restore_from(Some(run_dir(&checkpoints)));
        job(vec![]).build(&env).unwrap();
        env.execute("rescale, second run").unwrap();
        let verdict = verify(&out, events, keys).unwrap();
        assert!(verdict.is_exactly_once(), "{variant:?}: {verdict:?}");
    }
}

/// Builds a job whose keyed state is checkpointed incrementally: a running count per key over
/// many keys (`.count()`, an update per event), so that between two checkpoints only a few of
/// them change. `fail_at` events panic the map in front of it once each.
fn incremental_counting_job(
    env: &StreamExecutionEnvironment,
    events: u64,
    keys: u64,
    fail_at: Vec<u64>,
    out: &Path,
) {
    let fail = fail_once_at(fail_at);
    env.add_source(
        GeneratorSource::new(|i| i)
            .with_count(events)
            .with_rate(200_000.0),
    )
    .map(move |e: u64| {
        fail(e);
        e
    })
    .key_by(move |e: &u64| e % keys)
    .count()
    .name("many-key counter")
    .map(|(k, n): (u64, u64)| format!("{k} {n}"))
    .write_text_file(out);
}

/// Checks the committed `key count` updates: per key exactly the counts 1..=n, n being how
/// many of the events have that key.
fn verify_counts(out: &Path, events: u64, keys: u64, label: &str) {
    let mut seen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![out.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                dirs.push(path);
            } else if !name.starts_with('.') && !name.starts_with('_') {
                files.push(path);
            }
        }
    }
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let (k, n) = line.split_once(' ').expect("a `key count` line");
            seen.entry(k.parse().unwrap())
                .or_default()
                .push(n.parse().unwrap());
        }
    }
    for k in 0..keys.min(events) {
        let want = events / keys + u64::from(k < events % keys);
        let mut got = seen.remove(&k).unwrap_or_default();
        got.sort_unstable();
        assert!(
            got.iter().copied().eq(1..=want),
            "{label}: key {k} has counts {got:?}, 1..={want} expected"
        );
    }
    assert!(
        seen.is_empty(),
        "{label}: unexpected keys {:?}",
        seen.keys()
    );
}

/// Whether any checkpoint under `dir` builds on another (was written incrementally): it
/// shares a state file written for an earlier checkpoint.
fn some_checkpoint_is_incremental(dir: &Path) -> bool {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if entry.file_name() == "_metadata"
                && std::fs::read(&path).is_ok_and(|m| shares_earlier_state(&m))
            {
                return true;
            }
        }
    }
    false
}

/// Whether checkpoint metadata `json` lists a shared state file (named `<checkpoint>-...`)
/// written for an earlier checkpoint than its own.
fn shares_earlier_state(json: &[u8]) -> bool {
    let Ok(metadata) = serde_json::from_slice::<serde_json::Value>(json) else {
        return false;
    };
    let id = metadata["id"].as_u64().unwrap_or(0);
    metadata["shared"].as_object().is_some_and(|files| {
        files.keys().any(|f| {
            f.split_once('-')
                .and_then(|(c, _)| c.parse::<u64>().ok())
                .is_some_and(|c| c < id)
        })
    })
}

/// Incremental checkpoints under failures, and restored at another parallelism: a failure
/// restores the chain of deltas its checkpoint builds on; the output stays exactly once.
#[test]
fn randomized_failures_keep_incrementally_checkpointed_state_exactly_once() {
    let root = tempfile::tempdir().unwrap();
    for seed in trial_seeds(6, 104_729) {
        let mut rng = Rng::new(seed);
        let events = 60_000 + rng.below(90_000);
        let keys = 20_000 + rng.below(40_000);
        let parallelism = 1 + rng.below(3) as usize;
        // Every failure at an event of the first source subtask (the generator deals events
        // out by index modulo the parallelism), which meets them one after the other: each
        // ends an attempt of its own (two subtasks failing in one attempt would leave a
        // restart unused, and the first run would not end failed).
        let p = parallelism as u64;
        let mut failures: Vec<u64> = (0..1 + rng.below(3))
            .map(|_| (events / 4 + rng.below(events / 2)) / p * p)
            .collect();
        failures.sort_unstable();
        failures.dedup();
        let rescale_to = 1 + rng.below(3) as usize;
        let label = format!(
            "trial seed {seed}: {events} events, {keys} keys, parallelism {parallelism}, \
             failures at {failures:?}, then restored at parallelism {rescale_to}"
        );
        eprintln!("{label}");
        let dir = root.path().join(format!("trial-{seed}"));
        let (out, checkpoints) = (dir.join("out"), dir.join("checkpoints"));

        // Restarts from its own checkpoints until its last failure, which ends the run.
        // Every checkpoint is kept, so that the check below sees the deltas of all attempts:
        // the first snapshot after a restore is whole, so the newest few may all be whole.
        let mut config = checkpoint_config(&checkpoints);
        config.retain = 10_000;
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(parallelism)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(config)
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: failures.len() as u32 - 1,
                delay: Duration::from_millis(5),
            });
        incremental_counting_job(&env, events, keys, failures.clone(), &out);
        let first = env.execute("incremental, first run");
        assert!(
            first.is_err(),
            "{label}: the last failure ends the first run"
        );
        assert!(
            some_checkpoint_is_incremental(&checkpoints),
            "{label}: no checkpoint was a delta"
        );

        // The same job, restored at another parallelism from the newest checkpoint.
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(rescale_to)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(checkpoint_config(&dir.join("checkpoints-2")))
            .set_restore_from(Some(run_dir(&checkpoints)));
        incremental_counting_job(&env, events, keys, vec![], &out);
        env.execute("incremental, restored")
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        verify_counts(&out, events, keys, &label);
    }
}

/// Output that a bounded job makes at its end of input (here processing-time windows, which
/// only the end fires) reaches an exactly-once sink once: operators end at the final
/// checkpoint's barrier, before their snapshot, so that output is covered by the final
/// checkpoint (before, it came after it and the sink refused it).
#[test]
fn output_made_at_the_end_of_input_reaches_an_exactly_once_sink_once() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let (events, keys) = (3000u64, 7u64);
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(checkpoint_config(&root.path().join("checkpoints")));
    env.add_source(
        GeneratorSource::new(|i| i)
            .with_count(events)
            .with_rate(60_000.0),
    )
    .key_by(move |e: &u64| e % keys)
    // A year long: no window ends while the job runs.
    .window(TumblingProcessingTimeWindows::of(Duration::from_secs(
        365 * 24 * 3600,
    )))
    .aggregate(CountAggregate)
    .map(|WindowResult { key, value: n, .. }: WindowResult<u64, u64>| format!("{key}\t{n}"))
    .write_text_file(&out);
    let result = env.execute("ends at the final barrier").unwrap();
    assert!(
        result
            .checkpoints
            .iter()
            .any(|c| c.is_final && c.status == CheckpointStatus::Completed),
        "the final checkpoint completed"
    );
    let counts = common::read_counts(&out);
    let expected: std::collections::HashMap<String, u64> = (0..keys)
        .map(|k| {
            (
                k.to_string(),
                (0..events).filter(|e| e % keys == k).count() as u64,
            )
        })
        .collect();
    assert_eq!(counts, expected);
}
