//! Cluster mode with real processes: a JobManager and TaskManagers started from the `hummer`
//! binary on loopback, jobs submitted by the binary itself.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::cli::BIN;
use common::cluster::{TestCluster, TestClusterBuilder};
use common::eventually;
use hummer::cluster::protocol::{self, Message, Role};

/// A plaintext cluster of `taskmanagers` TaskManagers with `slots` slots each, whose
/// JobManager declares a TaskManager lost after `heartbeat_timeout_ms` without a heartbeat.
fn plaintext(taskmanagers: usize, slots: usize, heartbeat_timeout_ms: u64) -> TestClusterBuilder {
    TestCluster::builder()
        .taskmanagers(taskmanagers)
        .slots(slots)
        .jobmanager_args([
            "--heartbeat-timeout-ms".to_string(),
            heartbeat_timeout_ms.to_string(),
        ])
}

/// Runs `hummer wordcount INPUT --output OUT ARGS...` on the cluster and checks its output
/// against the plain reference count of INPUT.
fn wordcount_matches_reference(cluster: &TestCluster, input: &Path, out: &Path, args: &[&str]) {
    let mut all = vec![
        "wordcount",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let run = cluster.hummer(&all);
    assert!(
        run.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let expected = common::reference_counts(&std::fs::read_to_string(input).unwrap());
    assert_eq!(common::read_counts(out), expected, "{args:?}");
}

/// Submits a streaming WordCount over an endless generated corpus (`rate` lines a second)
/// writing to `out` under the cluster's directory; returns its id once it runs.
fn endless_wordcount(cluster: &TestCluster, rate: &str, parallelism: &str, out: &str) -> String {
    let run = cluster.hummer(&[
        "wordcount",
        "--mode",
        "streaming",
        "--corpus-lines",
        "0",
        "--corpus-rate",
        rate,
        "--parallelism",
        parallelism,
        "--output",
        cluster.dir().join(out).to_str().unwrap(),
    ]);
    let id = submitted_id(&run);
    // Only the setup: on a loaded two-core machine (the other cluster tests run beside
    // this one) deploying once took longer than 10 s.
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    id
}

/// How many jobs REST lists as finished, and the listing.
fn finished_jobs(cluster: &TestCluster) -> (usize, serde_json::Value) {
    let (_, jobs) = cluster.http().get_json("/jobs");
    let finished = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["status"] == "Finished")
        .count();
    (finished, jobs)
}

fn submitted_id(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("submitted job "))
        .unwrap_or_else(|| {
            panic!(
                "no job id: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .trim()
        .to_string()
}

fn corpus(dir: &Path, lines: u64) -> PathBuf {
    let path = dir.join("corpus.txt");
    common::write_corpus(&path, lines);
    path
}

#[test]
fn cluster_wordcount_equals_local_and_is_visible_in_rest() {
    let cluster = plaintext(3, 2, 5_000).start();
    let input = corpus(cluster.dir(), 20_000);
    let (out_cluster, out_local) = (cluster.dir().join("oc"), cluster.dir().join("ol"));
    let run = cluster.hummer_ok(&[
        "wordcount",
        input.to_str().unwrap(),
        "--parallelism",
        "6",
        "--top",
        "3",
        "--output",
        out_cluster.to_str().unwrap(),
    ]);
    let id = submitted_id(&run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("   1. the\t"),
        "top words from the workers' collect sink: {stdout}"
    );
    // The same job with the network senders as tasks of their own.
    wordcount_matches_reference(
        &cluster,
        &input,
        &cluster.dir().join("od"),
        &["--parallelism", "6", "--network-task", "dedicated"],
    );
    let local = Command::new(BIN)
        .args([
            "wordcount",
            input.to_str().unwrap(),
            "--parallelism",
            "6",
            "--output",
        ])
        .arg(&out_local)
        .env_remove("HUMMER_JOBMANAGER")
        .output()
        .unwrap();
    assert!(local.status.success());
    let expected = common::reference_counts(&std::fs::read_to_string(&input).unwrap());
    assert_eq!(common::read_counts(&out_cluster), expected);
    assert_eq!(common::read_counts(&out_local), expected);
    assert_eq!(std::fs::read_dir(&out_cluster).unwrap().count(), 6);

    let (code, overview) = cluster.http().get_json("/overview");
    assert_eq!(code, 200);
    assert_eq!(overview["taskmanagers"], 3);
    assert_eq!(overview["slots-total"], 6);
    assert_eq!(overview["jobs-finished"], 2);
    let (_, tms) = cluster.http().get_json("/taskmanagers");
    assert_eq!(tms["taskmanagers"].as_array().unwrap().len(), 3);
    let (_, job) = cluster.http().get_json(&format!("/jobs/{id}"));
    assert_eq!(job["state"], "Finished");
    let vertices = job["vertices"].as_array().unwrap();
    assert!(vertices.iter().any(|v| v["parallelism"] == 6));
    assert!(vertices[0]["metrics"]["read-records"].as_u64().unwrap() >= 20_000);
    // Subtask i of every vertex shares slot i; slots are dealt round-robin over 3 TaskManagers.
    let placement: Vec<&str> = job["placement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        placement[0..3]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3
    );
    let (_, plan) = cluster.http().get_json(&format!("/jobs/{id}/plan"));
    assert!(plan["plan"]["nodes"].as_array().unwrap().len() >= 2);
    let (code, _) = cluster.http().get_json("/jobs/nope");
    assert_eq!(code, 404);
    let list = cluster.hummer(&["list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains(&id));
}

#[test]
fn cancelled_streaming_job_stops_all_its_workers() {
    let cluster = plaintext(2, 2, 5_000).start();
    let id = endless_wordcount(&cluster, "2000", "3", "out");
    assert_eq!(cluster.workers_running(), 2);
    // Workers report their counters while they run.
    eventually(Duration::from_secs(5), "live counters", || {
        let (_, job) = cluster.http().get_json(&format!("/jobs/{id}"));
        let source = &job["vertices"][0]["metrics"];
        if source["read-records"].as_u64().unwrap_or(0) == 0 {
            return Err(job);
        }
        assert!(source["backpressure-ratio"].as_f64().is_some(), "{job}");
        Ok(())
    });
    cluster.hummer_ok(&["cancel", &id]);
    cluster.wait_for_status(&id, "Cancelled", Duration::from_secs(5));
    eventually(
        Duration::from_secs(5),
        "no workers running",
        || match cluster.workers_running() {
            0 => Ok(()),
            n => Err(format!("{n} workers still running")),
        },
    );
    let again = cluster.hummer(&["cancel", &id]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already ended"));
}

#[test]
fn killed_taskmanager_fails_its_job_and_the_cluster_stays_usable() {
    // The killed TaskManager's connection closes at once; the heartbeat timeout only has to
    // be long enough that the loaded machine (the other cluster tests run beside this one)
    // does not lose a live TaskManager first (2 s did, once, in CI).
    let timeout_ms = 5_000;
    let mut cluster = plaintext(3, 2, timeout_ms).start();
    let id = endless_wordcount(&cluster, "2000", "3", "s");
    cluster.kill_taskmanager(1);
    let took = cluster.wait_for_status(&id, "Failed", Duration::from_millis(timeout_ms + 3_000));
    assert!(
        took < Duration::from_millis(timeout_ms + 2_000),
        "took {took:?}"
    );
    assert!(
        cluster.status(&id).contains("lost"),
        "{}",
        cluster.status(&id)
    );

    let input = corpus(cluster.dir(), 2_000);
    let out = cluster.dir().join("after");
    wordcount_matches_reference(&cluster, &input, &out, &["--parallelism", "4"]);
}

#[test]
fn bad_requests_get_clear_errors_and_the_jobmanager_keeps_serving() {
    let cluster = plaintext(1, 2, 5_000).start();
    // Garbage and truncated frames on the RPC and REST ports.
    for garbage in [
        &b"\xff\xff\xff\xffgarbage"[..],
        b"\x00\x00\x00\x10abc",
        b"GET / HTTP/1.1\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(cluster.rpc()).unwrap();
        s.write_all(garbage).unwrap();
        drop(s);
        let mut r = TcpStream::connect(cluster.rest()).unwrap();
        let _ = r.write_all(garbage);
    }
    // Another protocol version.
    let mut s = TcpStream::connect(cluster.rpc()).unwrap();
    protocol::sync_io::write(
        &mut s,
        &Message::Hello {
            version: 99,
            role: Role::Client,
        },
    )
    .unwrap();
    match protocol::sync_io::read(&mut s).unwrap() {
        Message::Error(e) => assert!(
            e.contains("protocol version 99")
                && e.contains(&format!("speaks version {}", protocol::PROTOCOL_VERSION)),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    // Unknown job id.
    let status = cluster.hummer(&["status", "0123456789abcdef"]);
    assert!(!status.status.success());
    assert!(String::from_utf8_lossy(&status.stderr).contains("no job with id 0123456789abcdef"));
    // A job parallelism above the free slots runs at the free slots...
    let shrunk = cluster.hummer_ok(&["wordcount", "--corpus-lines", "500", "--parallelism", "5"]);
    let (_, job) = cluster
        .http()
        .get_json(&format!("/jobs/{}", submitted_id(&shrunk)));
    assert!(
        job["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["parallelism"] == 2),
        "{job}"
    );
    // ...but an operator set to more slots than the cluster has is refused.
    let mut client = hummer::cluster::client::ClusterClient::connect(&cluster.rpc()).unwrap();
    let artifact = client.upload_artifact(std::fs::read(BIN).unwrap()).unwrap();
    let err = client
        .submit(protocol::SubmitRequest {
            name: "too wide".into(),
            artifact,
            args: vec![],
            fingerprint: String::new(),
            vertices: vec![hummer::scheduler::parallelism::VertexRequest {
                name: "Wide Map".into(),
                explicit: Some(5),
                min: 1,
                max: 128,
            }],
            default_parallelism: 5,
            streaming: false,
            data_network: None,
            queue: false,
            priority: 0,
            env: vec![],
            sql: None,
            recovery: None,
            topology: Default::default(),
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("'Wide Map' is set to parallelism 5 but the cluster has 2 free slots"),
        "{err}"
    );
    // Still serving.
    cluster.hummer_ok(&["list"]);
    cluster.hummer_ok(&["wordcount", "--corpus-lines", "1000", "--parallelism", "2"]);
}

#[test]
fn worker_failures_fail_the_job_not_the_taskmanager() {
    let cluster = plaintext(2, 2, 5_000).start();
    // A user-visible error inside a worker: bad input on one split.
    let bad = cluster.dir().join("bad.txt");
    std::fs::write(&bad, b"good line\nbad \xff line\n").unwrap();
    let run = cluster.hummer(&["wordcount", bad.to_str().unwrap(), "--parallelism", "2"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("bad.txt") && err.contains("invalid UTF-8"),
        "{err}"
    );

    // A submission whose graph fingerprint does not match what the binary builds.
    let mut client = hummer::cluster::client::ClusterClient::connect(&cluster.rpc()).unwrap();
    let artifact = client.upload_artifact(std::fs::read(BIN).unwrap()).unwrap();
    let id = client
        .submit(protocol::SubmitRequest {
            name: "tampered".into(),
            artifact: artifact.clone(),
            args: vec!["wordcount".into(), "--corpus-lines".into(), "10".into()],
            fingerprint: "0".repeat(64),
            vertices: ["a", "b", "c"]
                .iter()
                .map(|n| hummer::scheduler::parallelism::VertexRequest {
                    name: n.to_string(),
                    explicit: Some(1),
                    min: 1,
                    max: 128,
                })
                .collect(),
            default_parallelism: 1,
            streaming: false,
            data_network: None,
            queue: false,
            priority: 0,
            env: vec![],
            sql: None,
            recovery: None,
            topology: Default::default(),
        })
        .unwrap();
    let (summary, _) = client.wait(&id).unwrap();
    assert_eq!(summary.state, protocol::JobStatus::Failed);
    assert!(
        summary
            .error
            .as_ref()
            .is_some_and(|e| e.message.contains("fingerprint mismatch")),
        "{summary:?}"
    );

    // An artifact whose bytes do not match the announced hash is refused.
    let err = client
        .request(&Message::UploadArtifact {
            sha256: "ab".repeat(32),
            bytes: vec![1, 2, 3],
        })
        .unwrap_err();
    assert!(err.to_string().contains("artifact hash mismatch"), "{err}");
    // Submitting an unknown artifact is refused too.
    let err = client
        .submit(protocol::SubmitRequest {
            name: "missing".into(),
            artifact: "cd".repeat(32),
            args: vec![],
            fingerprint: String::new(),
            vertices: vec![],
            default_parallelism: 1,
            streaming: false,
            data_network: None,
            queue: false,
            priority: 0,
            env: vec![],
            sql: None,
            recovery: None,
            topology: Default::default(),
        })
        .unwrap_err();
    assert!(err.to_string().contains("is unknown"), "{err}");

    // Both TaskManagers are still there and run the next job.
    let (_, overview) = cluster.http().get_json("/overview");
    assert_eq!(overview["taskmanagers"], 2);
    cluster.hummer_ok(&["wordcount", "--corpus-lines", "1000", "--parallelism", "4"]);
}

#[test]
fn monitor_samples_reach_rest_and_prometheus_and_survive_a_restart() {
    let mut cluster = plaintext(1, 2, 5_000).start();
    let (_, tms) = cluster.http().get_json("/taskmanagers");
    let tm = tms["taskmanagers"][0]["id"].as_str().unwrap().to_string();
    let samples = eventually(Duration::from_secs(5), "three monitor samples", || {
        let (_, history) = cluster
            .http()
            .get_json(&format!("/taskmanagers/{tm}/monitor"));
        match history["samples"].as_array() {
            Some(samples) if samples.len() >= 3 => Ok(samples.clone()),
            _ => Err(history),
        }
    });
    let s = &samples[0]["sample"];
    assert!(s["cores"].as_f64().unwrap() >= 1.0);
    assert!((0.0..=1.0).contains(&s["cpu"].as_f64().unwrap()));
    assert!(s["total_memory"].as_f64().unwrap() > 1e6);

    // A TaskManager reporting an impossible sample: rejected, counted, never stored.
    let mut fake = TcpStream::connect(cluster.rpc()).unwrap();
    let info = protocol::TaskManagerInfo {
        id: "liar".into(),
        slots: 1,
        cores: 1,
        memory_bytes: 1,
        data_host: "127.0.0.1".into(),
        data_networks: vec![],
        running: vec![],
    };
    protocol::sync_io::write(
        &mut fake,
        &Message::Hello {
            version: protocol::PROTOCOL_VERSION,
            role: Role::TaskManager(info),
        },
    )
    .unwrap();
    assert!(matches!(
        protocol::sync_io::read(&mut fake).unwrap(),
        Message::Registered(0)
    ));
    let mut bad = protocol::Resources {
        seq: 1,
        ..Default::default()
    };
    bad.sample.cpu = f64::NAN;
    protocol::sync_io::write(&mut fake, &Message::Heartbeat(bad)).unwrap();
    let metrics = eventually(Duration::from_secs(5), "a rejected monitor report", || {
        let metrics = cluster.http().get("/metrics").body;
        if metrics.contains("hummer_monitor_reports_rejected 1") {
            Ok(metrics)
        } else {
            Err(metrics)
        }
    });
    assert!(
        metrics.contains(&format!(
            "hummer_taskmanager_cpu_utilisation{{taskmanager=\"{tm}\"}}"
        )),
        "{metrics}"
    );
    assert!(metrics.contains("hummer_taskmanagers 2"), "{metrics}");
    let (code, liar) = cluster.http().get_json("/taskmanagers/liar/monitor");
    assert_eq!(code, 200);
    assert_eq!(liar["samples"].as_array().unwrap().len(), 0);

    // A restarted JobManager still has the history.
    cluster.restart_jobmanager(0);
    let (code, history) = cluster
        .http()
        .get_json(&format!("/taskmanagers/{tm}/monitor"));
    assert_eq!(code, 200, "{history}");
    assert!(history["samples"].as_array().unwrap().len() >= samples.len());
}

/// A TaskManager that registers and heartbeats but reports itself saturated and never starts
/// a worker: jobs placed or queued on it can only run if they are moved.
fn fake_loaded_taskmanager(rpc: &str, id: &str) {
    let mut conn = TcpStream::connect(rpc).unwrap();
    let info = protocol::TaskManagerInfo {
        id: id.into(),
        slots: 1,
        cores: 2,
        memory_bytes: 8 << 30,
        data_host: "127.0.0.9".into(),
        data_networks: vec![],
        running: vec![],
    };
    protocol::sync_io::write(
        &mut conn,
        &Message::Hello {
            version: protocol::PROTOCOL_VERSION,
            role: Role::TaskManager(info),
        },
    )
    .unwrap();
    assert!(matches!(
        protocol::sync_io::read(&mut conn).unwrap(),
        Message::Registered(0)
    ));
    let mut reader = conn.try_clone().unwrap();
    std::thread::spawn(move || while protocol::sync_io::read(&mut reader).is_ok() {});
    std::thread::spawn(move || {
        for seq in 1u64.. {
            let sample = hummer::scheduler::rfts::NodeSample {
                cores: 2.0,
                cpu: 1.0,
                memory: 0.99,
                total_memory: 8e9,
            };
            let hb = Message::Heartbeat(protocol::Resources { seq, sample });
            if protocol::sync_io::write(&mut conn, &hb).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
}

#[test]
fn rfts_moves_a_waiting_job_from_a_loaded_taskmanager_to_an_idle_one() {
    let cluster = plaintext(1, 1, 5_000)
        .jobmanager_args(["--scheduler", "rfts", "--rebalance-interval-ms", "200"])
        .start();
    fake_loaded_taskmanager(&cluster.rpc(), "zz-loaded");
    // Job 1 takes the real TaskManager's slot (slots are dealt in id order), job 2 the
    // loaded one's, where it never starts.
    let endless = |n: &str| {
        let out = cluster.hummer_ok(&[
            "wordcount",
            "--mode",
            "streaming",
            "--corpus-lines",
            "0",
            "--corpus-rate",
            "200",
            "--parallelism",
            "1",
            "--queue",
            "--output",
            cluster.dir().join(n).to_str().unwrap(),
        ]);
        submitted_id(&out)
    };
    let first = endless("e1");
    let _stuck = endless("e2");
    // Two bounded jobs now wait: one in each TaskManager's queue.
    let input = corpus(cluster.dir(), 3_000);
    let batch = |n: &str, priority: &str| {
        cluster
            .client()
            .command(&[])
            .args([
                "wordcount",
                input.to_str().unwrap(),
                "--parallelism",
                "1",
                "--queue",
                "--top",
                "0",
            ])
            .args(["--priority", priority, "--output"])
            .arg(cluster.dir().join(n))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let on_real = batch("b1", "1");
    std::thread::sleep(Duration::from_millis(300));
    let on_loaded = batch("b2", "5");
    // Both clients upload and submit (slow on a loaded machine): wait until both jobs queue.
    let waiting_jobs = || {
        let (_, tms) = cluster.http().get_json("/taskmanagers");
        let waiting: u64 = tms["taskmanagers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["waitingJobs"].as_u64().unwrap())
            .sum();
        (waiting, tms)
    };
    let (waiting, tms) = eventually(Duration::from_secs(15), "two waiting jobs", || {
        let (waiting, tms) = waiting_jobs();
        if waiting >= 2 {
            Ok((waiting, tms))
        } else {
            Err(tms)
        }
    });
    assert_eq!(waiting, 2, "{tms}");
    // Free the real TaskManager: its queued job starts, and RFTS moves the other one over.
    assert!(cluster.hummer(&["cancel", &first]).status.success());
    let expected = common::reference_counts(&std::fs::read_to_string(&input).unwrap());
    for (mut child, out) in [(on_real, "b1"), (on_loaded, "b2")] {
        // The job queued on the loaded TaskManager can only finish if it was moved.
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("job {out} never ran: it was not moved off the loaded TaskManager");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let done = child.wait_with_output().unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        assert_eq!(common::read_counts(&cluster.dir().join(out)), expected);
    }
    let (finished, jobs) = finished_jobs(&cluster);
    assert_eq!(finished, 2, "{jobs}");
}

#[test]
fn a_job_split_into_more_tasks_than_slots_runs_in_waves_under_every_scheduler() {
    for policy in ["round-robin", "fair", "pull", "genetic", "rfts"] {
        let cluster = plaintext(2, 1, 5_000)
            .jobmanager_args(["--scheduler", policy, "--rebalance-interval-ms", "200"])
            .start();
        let input = corpus(cluster.dir(), 5_000);
        let out = cluster.dir().join("tasks");
        wordcount_matches_reference(&cluster, &input, &out, &["--tasks", "5"]);
        let (finished, jobs) = finished_jobs(&cluster);
        assert_eq!(finished, 5, "{policy}: {jobs}");
    }
}

/// Exactly-once in cluster mode: the EventCount job (keyed counts through the exactly-once
/// file sink) loses a TaskManager to `kill -9` and takes an injected panic, at random moments;
/// it restarts from its last checkpoint on the slots that remain (a lower parallelism) and its
/// committed output holds every event exactly once. The seed of each trial is printed;
/// `HUMMER_TRIAL_SEED=<seed>` replays one.
#[test]
fn cluster_jobs_stay_exactly_once_through_a_killed_taskmanager_and_a_panic() {
    for seed in common::trial_seeds(4, 104_729) {
        cluster_trial(seed, "event-count");
    }
}

/// The same trials with event time: tumbling windows counted by the window operator and by
/// event-time timers. Window contents, timers and watermarks are restored from the last
/// checkpoint at the lower parallelism; every window of every key is committed once with its
/// exact count.
#[test]
fn windows_and_timers_stay_exactly_once_through_a_killed_taskmanager_and_a_panic() {
    for seed in common::trial_seeds(2, 7_927) {
        cluster_trial(seed, "window-count");
        cluster_trial(seed, "timer-count");
    }
}

/// The same trials through Kafka (a real broker, tansu): KafkaCount reads the events from a
/// topic and writes its counts through the exactly-once Kafka sink; a TaskManager is killed
/// and a panic injected at random moments; the output topic, read back, holds every event
/// exactly once.
#[test]
fn kafka_jobs_stay_exactly_once_through_a_killed_taskmanager_and_a_panic() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = common::kafka::Broker::start();
    for seed in common::trial_seeds(3, 15_485_863) {
        let topic = format!("events-{seed}");
        let mut rng = common::Rng::new(seed);
        let events = 40_000 + rng.below(40_000);
        let partitions = 1 + rng.below(6);
        produce_events(&broker, &topic, events, partitions);
        let output = format!("counts-{seed}");
        cluster_trial_with(
            seed,
            "kafka-count",
            events,
            &[
                "--brokers",
                &broker.address,
                "--input-topic",
                &topic,
                "--output-topic",
                &output,
                "--bounded",
            ],
        );
    }
}

/// Fills `topic` (created with `partitions`) with `events` numbered events for kafka-count,
/// with `hummer kafka produce`.
fn produce_events(broker: &common::kafka::Broker, topic: &str, events: u64, partitions: u64) {
    let produced = Command::new(BIN)
        .args(["kafka", "produce", "--brokers", &broker.address])
        .args(["--topic", topic, "--events", &events.to_string()])
        .args(["--partitions", &partitions.to_string()])
        .output()
        .unwrap();
    assert!(
        produced.status.success(),
        "{}",
        String::from_utf8_lossy(&produced.stderr)
    );
}

fn cluster_trial(seed: u64, job: &str) {
    let events = 40_000 + common::Rng::new(seed).below(40_000);
    cluster_trial_with(seed, job, events, &[]);
}

fn cluster_trial_with(seed: u64, job: &str, events: u64, extra: &[&str]) {
    // The trial's parameters and failure moments follow from the seed.
    let mut rng = common::Rng::new(seed);
    let mut next = move |n: u64| rng.below(n);
    next(40_000);
    let keys = 1 + next(50);
    let rate = 25_000;
    let fail_at = next(events);
    let kill_after = Duration::from_millis(300 + next(1_200));
    let victim_index = next(3) as usize;
    eprintln!(
        "cluster trial seed {seed} ({job}): {events} events, {keys} keys, panic at event \
         {fail_at}, kill TaskManager {victim_index} after {kill_after:?}"
    );
    // A killed TaskManager's connection closes at once; the heartbeat timeout only has to be
    // long enough that a loaded machine does not lose the others.
    let mut cluster = plaintext(3, 2, 5_000).start();
    let out = cluster.dir().join("out");
    let checkpoints = cluster.dir().join("checkpoints");
    let marker = cluster.dir().join("failed");
    let mut client = cluster
        .client()
        .command(&["run", job, "--parallelism", "6", "--wait", "--verify"])
        .args(["--events", &events.to_string(), "--keys", &keys.to_string()])
        .args([
            "--rate",
            &rate.to_string(),
            "--fail-at",
            &fail_at.to_string(),
        ])
        .args([
            "--checkpoint-interval-ms",
            "100",
            "--restart",
            "fixed-delay:5:200ms",
        ])
        .args(extra)
        .arg("--fail-marker")
        .arg(&marker)
        .arg("--checkpoint-dir")
        .arg(&checkpoints)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = common::cli::submitted_job_id(&mut client);
    let mut stdout = client.stdout.take().unwrap();
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    std::thread::sleep(kill_after);
    cluster.kill_taskmanager(victim_index);

    let status = client.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    client
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        status.success() && rest.contains("every event exactly once"),
        "seed {seed}: {rest}\n{stderr}"
    );
    let summary = cluster.status(&id);
    assert!(summary.contains("restarts: "), "seed {seed}: {summary}");
    assert!(
        summary.contains("completed (final)"),
        "seed {seed}: {summary}"
    );
    // Two slots are gone: the last attempt ran at parallelism 4.
    assert!(
        summary.contains("(parallelism 4)"),
        "seed {seed}: {summary}"
    );
}

/// Savepoints: `hummer savepoint` while the job runs, `hummer stop --savepoint`, then
/// `hummer run --from-savepoint` at a lower parallelism finishes the job exactly once. The
/// checkpoint history is visible in REST and `hummer status`.
#[test]
fn stop_with_savepoint_and_resume_at_a_lower_parallelism_is_exactly_once() {
    let savepoints = tempfile::tempdir().unwrap();
    let cluster = plaintext(2, 2, 2_000)
        .jobmanager_args(["--savepoint-dir", savepoints.path().to_str().unwrap()])
        .start();
    let out = cluster.dir().join("out");
    let checkpoints = cluster.dir().join("checkpoints");
    let (events, keys) = ("60000", "13");
    let (checkpoint_dir, out_dir) = (
        checkpoints.to_str().unwrap().to_string(),
        out.to_str().unwrap().to_string(),
    );
    let job = |extra: &[&'static str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "run",
            "event-count",
            "--events",
            events,
            "--keys",
            keys,
            "--rate",
            "20000",
            "--checkpoint-interval-ms",
            "200",
            "--checkpoint-dir",
            &checkpoint_dir,
            "--out",
            &out_dir,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let id = submitted_id(&cluster.hummer_ok(&as_refs(&job(&["--parallelism", "4"]))));
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(700));

    let taken = cluster.hummer_ok(&["savepoint", &id]);
    let first = String::from_utf8_lossy(&taken.stdout).to_string();
    assert!(first.starts_with("savepoint "), "{first}");
    let (code, history) = cluster.http().get_json(&format!("/jobs/{id}/checkpoints"));
    assert_eq!(code, 200);
    assert!(
        history["counts"]["completed"].as_u64().unwrap() >= 1,
        "{history}"
    );
    let latest = &history["latest"]["completed"];
    let (size, written) = (
        latest["state_size"].as_u64(),
        latest["checkpointed_size"].as_u64(),
    );
    assert!(
        written.is_some_and(|w| w > 0 && size.is_some_and(|s| s >= w)),
        "{history}"
    );
    // Stateful subtasks show what their last snapshot wrote (workers report every second).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (code, details) = cluster.http().get_json(&format!("/jobs/{id}"));
        assert_eq!(code, 200);
        let written: Vec<u64> = details["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|v| v["subtasks"].as_array().cloned().unwrap_or_default())
            .filter_map(|s| s["checkpointed-size"].as_u64())
            .collect();
        if written.iter().any(|&w| w > 0) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{details}");
        std::thread::sleep(Duration::from_millis(200));
    }

    let stopped = cluster.hummer_ok(&["stop", &id, "--savepoint"]);
    let stopped = String::from_utf8_lossy(&stopped.stdout).to_string();
    let path = stopped
        .trim()
        .rsplit_once(" with savepoint ")
        .map(|(_, p)| p.to_string())
        .unwrap_or_else(|| panic!("{stopped}"));
    assert!(
        path.starts_with(savepoints.path().to_str().unwrap()),
        "{path}"
    );
    cluster.wait_for_status(&id, "Cancelled", Duration::from_secs(5));
    let status = cluster.status(&id);
    assert!(status.contains("checkpoints (newest last)"), "{status}");

    let mut resume = job(&["--parallelism", "2", "--wait", "--verify"]);
    resume.extend(["--from-savepoint".to_string(), path.clone()]);
    let resumed = cluster.hummer_ok(&as_refs(&resume));
    let resumed = String::from_utf8_lossy(&resumed.stdout).to_string();
    assert!(resumed.contains("every event exactly once"), "{resumed}");
}

fn as_refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A job whose restart finds no slots (its only TaskManager was killed) does not wait forever:
/// every failed redeployment counts against its restart strategy, then it fails with the
/// reason.
#[test]
fn a_restart_without_slots_fails_the_job_when_the_strategy_is_used_up() {
    let mut cluster = plaintext(1, 2, 5_000).start();
    let run = cluster.hummer_ok(&[
        "run",
        "event-count",
        "--rate",
        "1000",
        "--parallelism",
        "2",
        "--checkpoint-interval-ms",
        "100",
        "--restart",
        "fixed-delay:2:100ms",
        "--checkpoint-dir",
        cluster.dir().join("chk").to_str().unwrap(),
        "--out",
        cluster.dir().join("out").to_str().unwrap(),
    ]);
    let id = submitted_id(&run);
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    cluster.kill_taskmanager(0);
    cluster.wait_for_status(&id, "Failed", Duration::from_secs(10));
    let status = cluster.status(&id);
    assert!(
        status.contains("will not be restarted") && status.contains("restart attempts"),
        "{status}"
    );
}

/// Every subtask's watermark in REST (Flink's shape) and Prometheus: before the first
/// watermark a running job's subtasks show the minimum; a finished bounded job's show the final
/// watermark; a vertex that does not exist is a clear 404.
#[test]
fn subtask_watermarks_are_visible_in_rest_and_prometheus() {
    let cluster = plaintext(2, 2, 5_000).start();
    let input = corpus(cluster.dir(), 2_000);
    let run = cluster.hummer_ok(&[
        "wordcount",
        input.to_str().unwrap(),
        "--parallelism",
        "3",
        "--output",
        cluster.dir().join("w").to_str().unwrap(),
    ]);
    let done = submitted_id(&run);
    let (code, rows) = cluster
        .http()
        .get_json(&format!("/jobs/{done}/vertices/0/watermarks"));
    assert_eq!(code, 200);
    let rows = rows.as_array().expect("an array").clone();
    let ids: Vec<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "0.currentInputWatermark",
            "1.currentInputWatermark",
            "2.currentInputWatermark",
            "0.numLateRecordsDropped",
            "1.numLateRecordsDropped",
            "2.numLateRecordsDropped"
        ]
    );
    let max = i64::MAX.to_string();
    assert!(
        rows[..3].iter().all(|r| r["value"] == max.as_str()),
        "a finished bounded job ends at the final watermark: {rows:?}"
    );
    assert!(
        rows[3..].iter().all(|r| r["value"] == "0"),
        "WordCount has no event time, so no late records: {rows:?}"
    );
    let (code, _) = cluster
        .http()
        .get_json(&format!("/jobs/{done}/vertices/99/watermarks"));
    assert_eq!(code, 404);

    let running = endless_wordcount(&cluster, "500", "2", "s");
    let line = eventually(Duration::from_secs(10), "a watermark gauge", || {
        let metrics = cluster.http().get("/metrics").body;
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("hummer_job_vertex_watermark{{job=\"{running}\"")))
            .map(str::to_string)
            .ok_or(metrics)
    });
    assert!(
        line.ends_with(&format!(" {}", i64::MIN as f64)),
        "an unbounded source without watermarks holds the minimum: {line}"
    );
    let cancel = cluster.hummer(&["cancel", &running]);
    assert!(cancel.status.success());
}

/// A running Kafka job's partitions in REST and Prometheus: per subtask and partition the
/// records consumed, the offset and the lag, while the job runs.
#[test]
fn kafka_partition_lag_and_consumption_reach_rest_and_prometheus() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = common::kafka::Broker::start();
    let cluster = plaintext(1, 2, 5_000).start();
    produce_events(&broker, "metered", 50_000, 3);
    let out = cluster.hummer_ok(&[
        "run",
        "kafka-count",
        "--brokers",
        &broker.address,
        "--input-topic",
        "metered",
        "--output-topic",
        "metered-counts",
        "--rate",
        "5000",
        "--parallelism",
        "2",
        "--checkpoint-interval-ms",
        "200",
        "--checkpoint-dir",
        cluster.dir().join("checkpoints").to_str().unwrap(),
    ]);
    let id = submitted_id(&out);
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    let rows = eventually(Duration::from_secs(20), "three consumed partitions", || {
        let (_, rows) = cluster
            .http()
            .get_json(&format!("/jobs/{id}/vertices/0/partitions"));
        let rows = rows.as_array().cloned().unwrap_or_default();
        let consumed: u64 = rows
            .iter()
            .map(|r| r["records-consumed"].as_u64().unwrap_or(0))
            .sum();
        if rows.len() == 3 && consumed > 0 {
            Ok(rows)
        } else {
            Err(format!("{rows:?}"))
        }
    });
    for r in &rows {
        assert_eq!(r["topic"], "metered");
        let (offset, end, lag) = (
            r["offset"].as_i64().unwrap(),
            r["end-offset"].as_i64().unwrap(),
            r["lag"].as_i64().unwrap(),
        );
        assert!(offset >= 0 && end >= offset && lag == end - offset, "{r}");
    }
    // Rate-limited: most of the input is still ahead of the job.
    let lag: i64 = rows.iter().map(|r| r["lag"].as_i64().unwrap()).sum();
    assert!(lag > 10_000, "{rows:?}");
    let metrics = cluster.http().get("/metrics").body;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("hummer_source_partition_lag{")
                && l.contains("topic=\"metered\"")),
        "{metrics}"
    );
    assert!(metrics.contains("hummer_source_partition_records_consumed{"));
    cluster.hummer_ok(&["cancel", &id]);
}
