//! The Kafka source and sink against a real Kafka-protocol broker (tansu, started per test on
//! a free loopback port; see `common/kafka.rs`).
//!
//! Every failure trial prints its seed; `HUMMER_TRIAL_SEED=<seed>` replays one trial.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hummer::checkpoint::coordinator::CheckpointConfig;
use hummer::connectors::kafka::{
    DeliveryGuarantee, KafkaConfig, KafkaSink, KafkaSource, Partitioner, StartingOffsets,
    StringDeserializer, StringSerializer, create_topic,
};
use hummer::execution::restart_strategy::RestartStrategy;
use hummer::jobs::kafka_count::KafkaCount;
use hummer::prelude::*;

mod common;
use common::kafka::Broker;
use common::{Rng, trial_seeds};

fn config(broker: &Broker) -> KafkaConfig {
    KafkaConfig::new(&broker.address)
}

/// Writes `lines` into `topic` (spread over its partitions) with an at-least-once job.
fn produce(broker: &Broker, topic: &str, lines: Vec<String>) {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2);
    env.from_collection(lines).add_sink(
        KafkaSink::builder()
            .bootstrap_servers(&broker.address)
            .topic(topic)
            .serializer(StringSerializer)
            .partitioner(Partitioner::RoundRobin)
            .build::<String>()
            .unwrap(),
    );
    env.execute("produce").unwrap();
}

/// Everything in `topic`, read with a bounded source at `parallelism`, and the partitions
/// the source reports in its metrics.
fn read_all(
    broker: &Broker,
    topic: &str,
    parallelism: usize,
) -> (
    Vec<String>,
    Vec<(usize, hummer::types::metrics::PartitionMetrics)>,
) {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism);
    let out = env
        .add_source(
            KafkaSource::builder()
                .bootstrap_servers(&broker.address)
                .topics([topic])
                .bounded()
                .deserializer(StringDeserializer)
                .build()
                .unwrap(),
        )
        .collect();
    let mut result = env.execute("read back").unwrap();
    let partitions = result
        .vertices
        .iter()
        .flat_map(|v| v.partitions.clone())
        .collect();
    (result.collected(&out).unwrap(), partitions)
}

#[test]
fn a_bounded_source_reads_every_record_once_at_any_parallelism() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&config(&broker), "numbers", 4).unwrap();
    let lines: Vec<String> = (0..20_000).map(|i| format!("record {i}")).collect();
    produce(&broker, "numbers", lines.clone());
    let mut want = lines;
    want.sort();
    for parallelism in [1, 3, 6] {
        let (mut got, partitions) = read_all(&broker, "numbers", parallelism);
        got.sort();
        assert_eq!(got.len(), want.len(), "parallelism {parallelism}");
        assert!(got == want, "parallelism {parallelism}: records differ");
        // Each partition read by one subtask, all of it, nothing left behind.
        assert_eq!(partitions.len(), 4, "{partitions:?}");
        assert_eq!(
            partitions.iter().map(|(_, p)| p.consumed).sum::<u64>(),
            20_000
        );
        assert!(
            partitions
                .iter()
                .all(|(_, p)| p.lag() == 0 && p.next_offset == p.end_offset)
        );
        assert!(partitions.iter().all(|(s, p)| *s
            == hummer::connectors::kafka::source::owner_of("numbers", p.partition, parallelism)));
    }
}

#[test]
fn starting_offsets_latest_and_by_timestamp_skip_what_came_before() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&config(&broker), "log", 2).unwrap();
    produce(
        &broker,
        "log",
        (0..100).map(|i| format!("old {i}")).collect(),
    );
    std::thread::sleep(Duration::from_millis(50));
    let cut = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    std::thread::sleep(Duration::from_millis(50));
    produce(
        &broker,
        "log",
        (0..50).map(|i| format!("new {i}")).collect(),
    );
    let read = |start: StartingOffsets| {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(2);
        let out = env
            .add_source(
                KafkaSource::builder()
                    .bootstrap_servers(&broker.address)
                    .topics(["log"])
                    .starting_offsets(start)
                    .bounded()
                    .deserializer(StringDeserializer)
                    .build()
                    .unwrap(),
            )
            .collect();
        let mut result = env.execute("read").unwrap();
        result.collected(&out).unwrap()
    };
    assert!(read(StartingOffsets::Latest).is_empty());
    let since = read(StartingOffsets::Timestamp(cut));
    assert_eq!(since.len(), 50, "{since:?}");
    assert!(since.iter().all(|l| l.starts_with("new ")));
    assert_eq!(read(StartingOffsets::Earliest).len(), 150);
}

#[test]
fn bad_input_gets_errors_that_name_it() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    // An unknown topic fails the job before it starts, naming the topic.
    let env = StreamExecutionEnvironment::local();
    env.add_source(
        KafkaSource::builder()
            .bootstrap_servers(&broker.address)
            .topics(["no-such-topic"])
            .bounded()
            .deserializer(StringDeserializer)
            .build()
            .unwrap(),
    )
    .collect();
    let e = env
        .execute("unknown topic")
        .err()
        .expect("the job fails")
        .to_string();
    assert!(
        e.contains("no-such-topic") && e.contains("no such topic"),
        "{e}"
    );

    // A broker that does not answer: an error naming it, within the request timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let started = Instant::now();
    let env = StreamExecutionEnvironment::local();
    env.add_source(
        KafkaSource::builder()
            .bootstrap_servers(&address)
            .topics(["t"])
            .property("request.timeout.ms", "1500")
            .deserializer(StringDeserializer)
            .build()
            .unwrap(),
    )
    .collect();
    let e = env
        .execute("silent broker")
        .err()
        .expect("the job fails")
        .to_string();
    assert!(e.contains(&address), "{e}");
    assert!(started.elapsed() < Duration::from_secs(15), "{e}");

    // Records the deserializer rejects: the job fails naming topic, partition and offset,
    // or skips them when asked to.
    create_topic(&config(&broker), "mixed", 1).unwrap();
    produce(
        &broker,
        "mixed",
        vec!["1".into(), "2".into(), "x".into(), "4".into()],
    );
    let run = |skip: bool| {
        let env = StreamExecutionEnvironment::local();
        let mut builder = KafkaSource::builder()
            .bootstrap_servers(&broker.address)
            .topics(["mixed"])
            .bounded();
        if skip {
            builder = builder.skip_bad_records();
        }
        let source = builder
            .deserializer(|r: &hummer::connectors::kafka::KafkaRecord<'_>| {
                let text =
                    std::str::from_utf8(r.value.unwrap_or_default()).map_err(|e| e.to_string())?;
                text.parse::<u64>()
                    .map_err(|_| format!("'{text}' is not a number"))
            })
            .build()
            .unwrap();
        let out = env.add_source(source).collect();
        env.execute("bad records").map(|mut r| {
            let mut v = r.collected(&out).unwrap();
            v.sort();
            v
        })
    };
    let e = run(false).unwrap_err().to_string();
    assert!(
        e.contains("topic 'mixed' partition 0 offset") && e.contains("'x' is not a number"),
        "{e}"
    );
    assert_eq!(run(true).unwrap(), vec![1, 2, 4]);

    // Settings.
    let no_topic = KafkaSource::builder()
        .bootstrap_servers(&broker.address)
        .deserializer(StringDeserializer)
        .build();
    assert!(no_topic.is_err());
    let bad_server = KafkaSource::builder()
        .bootstrap_servers("nohost")
        .topics(["t"])
        .deserializer(StringDeserializer)
        .build();
    assert!(bad_server.is_err_and(|e| e.to_string().contains("nohost")));
}

/// The output topic holds every event once, and per key the counts 1..=n (KafkaCount's own
/// check, reading the topic back).
fn assert_exactly_once(broker: &Broker, topic: &str, events: u64, keys: u64, label: &str) {
    let verdict = hummer::jobs::kafka_count::verify(&broker.address, topic, events, keys)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(verdict.is_exactly_once(), "{label}: {verdict:?}");
}

#[test]
fn randomized_failures_keep_the_output_topic_exactly_once() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    let root = tempfile::tempdir().unwrap();
    for seed in trial_seeds(10, 104_729) {
        let mut rng = Rng::new(seed);
        let events = 3_000 + rng.below(7_000);
        let keys = 1 + rng.below(30);
        let parallelism = 1 + rng.below(3) as usize;
        let partitions = 1 + rng.below(4) as i32;
        let failures: Vec<u64> = (0..1 + rng.below(3)).map(|_| rng.below(events)).collect();
        let label = format!(
            "trial seed {seed}: {events} events, {keys} keys, p={parallelism}, {partitions} partitions, failures at {failures:?}"
        );
        eprintln!("{label}");
        let (input, output) = (format!("in-{seed}"), format!("out-{seed}"));
        create_topic(&config(&broker), &input, partitions).unwrap();
        create_topic(&config(&broker), &output, 1 + rng.below(3) as i32).unwrap();
        produce(
            &broker,
            &input,
            (0..events).map(|e| e.to_string()).collect(),
        );

        let env = StreamExecutionEnvironment::local();
        let mut checkpoints =
            CheckpointConfig::new(Duration::from_millis(30), root.path().join(&input));
        checkpoints.retain = 2;
        env.set_parallelism(parallelism)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(checkpoints)
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: 10,
                delay: Duration::from_millis(5),
            });
        KafkaCount {
            brokers: broker.address.clone(),
            input: input.clone(),
            output: output.clone(),
            keys,
            bounded: true,
            rate: None,
            fail_at: failures,
            fail_marker: None,
        }
        .build(&env)
        .unwrap();
        let result = env
            .execute("kafka exactly-once trial")
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(result.restarts >= 1, "{label}: no restart");
        assert_exactly_once(&broker, &output, events, keys, &label);
    }
}

#[test]
fn a_broker_unreachable_for_seconds_fails_over_and_the_output_stays_exactly_once() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    let root = tempfile::tempdir().unwrap();
    let events = 20_000;
    let keys = 7;
    create_topic(&config(&broker), "in", 3).unwrap();
    create_topic(&config(&broker), "out", 2).unwrap();
    produce(&broker, "in", (0..events).map(|e| e.to_string()).collect());

    let address = broker.address.clone();
    let checkpoint_dir = root.path().join("checkpoints");
    let job = std::thread::spawn(move || {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(2)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(CheckpointConfig::new(
                Duration::from_millis(50),
                checkpoint_dir,
            ))
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: 20,
                delay: Duration::from_millis(500),
            });
        // Slow enough to be running when the broker goes away.
        let source = KafkaSource::builder()
            .bootstrap_servers(&address)
            .topics(["in"])
            .bounded()
            .property("request.timeout.ms", "1500")
            .property("fetch.max.bytes", "2000")
            .deserializer(StringDeserializer)
            .build()
            .unwrap();
        let sink = KafkaSink::builder()
            .bootstrap_servers(&address)
            .topic("out")
            .property("request.timeout.ms", "1500")
            .serializer(StringSerializer)
            .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
            .build::<String>()
            .unwrap();
        env.add_source(source)
            .map(|s: String| {
                std::thread::sleep(Duration::from_micros(200));
                s.parse::<u64>().unwrap_or(u64::MAX)
            })
            .key_by(move |e: &u64| e % keys)
            .process(
                move |key: &u64,
                      e: u64,
                      count: &mut ValueState<u64>,
                      out: &mut Collector<String>| {
                    let n = count.get_or_insert_with(|| 0);
                    *n += 1;
                    out.collect(format!("{e} {key} {n}"));
                },
            )
            .add_sink(sink);
        env.execute("broker outage")
    });
    std::thread::sleep(Duration::from_millis(800));
    broker.pause();
    std::thread::sleep(Duration::from_secs(4));
    broker.resume();
    let result = job.join().unwrap().unwrap();
    assert!(result.restarts >= 1, "the outage failed the job over");
    assert_exactly_once(&broker, "out", events, keys, "broker outage");
}

#[test]
fn completed_checkpoints_commit_offsets_to_the_group_and_a_job_can_start_from_them() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    let root = tempfile::tempdir().unwrap();
    create_topic(&config(&broker), "clicks", 3).unwrap();
    produce(
        &broker,
        "clicks",
        (0..1_000).map(|i| format!("a{i}")).collect(),
    );
    let run = |n: usize| {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(2)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_checkpoint_config(CheckpointConfig::new(
                Duration::from_millis(20),
                root.path().join(format!("checkpoints-{n}")),
            ));
        let out = env
            .add_source(
                KafkaSource::builder()
                    .bootstrap_servers(&broker.address)
                    .topics(["clicks"])
                    .starting_offsets(StartingOffsets::Committed)
                    .property("group.id", "dashboard")
                    .bounded()
                    .deserializer(StringDeserializer)
                    .build()
                    .unwrap(),
            )
            .collect();
        let mut result = env.execute("committed").unwrap();
        let mut got = result.collected(&out).unwrap();
        got.sort();
        got
    };
    // No offsets committed yet: from the earliest.
    assert_eq!(run(1).len(), 1_000);
    // The final checkpoint committed the ends: nothing new.
    assert!(run(2).is_empty());
    produce(
        &broker,
        "clicks",
        (0..50).map(|i| format!("b{i}")).collect(),
    );
    let third = run(3);
    assert_eq!(third.len(), 50, "{third:?}");
    assert!(third.iter().all(|l| l.starts_with('b')));
    // Committed offsets need a group.
    assert!(
        KafkaSource::builder()
            .bootstrap_servers(&broker.address)
            .topics(["clicks"])
            .starting_offsets(StartingOffsets::Committed)
            .deserializer(StringDeserializer)
            .build()
            .is_err_and(|e| e.to_string().contains("group.id"))
    );
}

/// Collects into a shared vector (for a job that runs until cancelled).
struct Shared<T>(Arc<std::sync::Mutex<Vec<T>>>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T> Default for Shared<T> {
    fn default() -> Self {
        Shared(Arc::default())
    }
}

impl<T: Send + 'static> Sink<T> for Shared<T> {
    fn name(&self) -> String {
        "shared".into()
    }
    fn create_writer(
        &self,
        _: &hummer::operators::OperatorContext,
    ) -> hummer::Result<Box<dyn SinkWriter<T>>> {
        Ok(Box::new(self.clone()))
    }
}

impl<T: Send + 'static> SinkWriter<T> for Shared<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> hummer::Result<()> {
        self.0.lock().unwrap().append(batch);
        Ok(())
    }
    fn finish(&mut self) -> hummer::Result<()> {
        Ok(())
    }
}

/// The window counts collected so far, as `(key, window start, count)`.
/// Starts a streaming job at parallelism 1 counting the records of `topic` (event times as
/// their text) in one-second event-time windows into `counts`, with `strategy` per partition.
fn count_one_second_windows(
    broker: &Broker,
    topic: &str,
    strategy: WatermarkStrategy<String>,
    counts: &Shared<WindowResult<u8, u64>>,
) -> JobClient {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_auto_watermark_interval(Duration::from_millis(20));
    env.from_source(
        KafkaSource::builder()
            .bootstrap_servers(&broker.address)
            .topics([topic])
            .deserializer(StringDeserializer)
            .build()
            .unwrap(),
        strategy,
    )
    .key_by(|_: &String| 0u8)
    .window(TumblingEventTimeWindows::of(Duration::from_secs(1)))
    .aggregate(CountAggregate)
    .add_sink(counts.clone());
    env.execute_async(&format!("windows of {topic}")).unwrap()
}

fn window_counts(counts: &Shared<WindowResult<u8, u64>>) -> Vec<(u8, i64, u64)> {
    counts
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.key, r.window.start, r.value))
        .collect()
}

#[test]
fn a_running_source_finds_new_topics_of_its_pattern() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&config(&broker), "feed-a", 2).unwrap();
    produce(
        &broker,
        "feed-a",
        (0..100).map(|i| format!("a{i}")).collect(),
    );
    let seen = Shared::<String>::default();
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    env.add_source(
        KafkaSource::builder()
            .bootstrap_servers(&broker.address)
            .topic_pattern("feed-.*")
            .property("partition.discovery.interval.ms", "200")
            .deserializer(StringDeserializer)
            .build()
            .unwrap(),
    )
    .add_sink(seen.clone());
    let job = env.execute_async("discovery").unwrap();
    let wait_for = |n: usize| {
        let started = Instant::now();
        while seen.0.lock().unwrap().len() < n {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{} of {n} records",
                seen.0.lock().unwrap().len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(100);
    // A topic created while the job runs, and more records in the first.
    create_topic(&config(&broker), "feed-b", 3).unwrap();
    produce(
        &broker,
        "feed-b",
        (0..70).map(|i| format!("b{i}")).collect(),
    );
    produce(
        &broker,
        "feed-a",
        (100..130).map(|i| format!("a{i}")).collect(),
    );
    create_topic(&config(&broker), "other", 1).unwrap();
    produce(&broker, "other", vec!["x".into()]);
    wait_for(200);
    std::thread::sleep(Duration::from_millis(500));
    job.cancel();
    let _ = job.wait();
    let mut got = seen.0.lock().unwrap().clone();
    got.sort();
    let mut want: Vec<String> = (0..130)
        .map(|i| format!("a{i}"))
        .chain((0..70).map(|i| format!("b{i}")))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

/// Per-partition watermarks: a topic whose second partition gets no records. Each partition
/// has its own copy of the strategy; the empty one turns idle and stops holding the
/// subtask's watermark back, so the windows of the first close while the job runs (a single
/// watermark over both would never pass the empty partition's nothing).
#[test]
fn an_idle_partition_does_not_hold_back_the_windows_of_the_others() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&config(&broker), "ticks", 2).unwrap();
    // Event times 0..10 s, every 10 ms, all into partition 0 (one writer, fixed partitioner).
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1);
    env.from_collection((0..1_000i64).map(|i| (i * 10).to_string()).collect())
        .add_sink(
            KafkaSink::builder()
                .bootstrap_servers(&broker.address)
                .topic("ticks")
                .serializer(StringSerializer)
                .partitioner(Partitioner::Fixed)
                .build::<String>()
                .unwrap(),
        );
    env.execute("ticks").unwrap();

    let counts = Shared::<WindowResult<u8, u64>>::default();
    let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
        .with_timestamp_assigner(|s: &String, _| s.parse().unwrap_or(0))
        .with_idleness(Duration::from_millis(300));
    let job = count_one_second_windows(&broker, "ticks", strategy, &counts);
    let started = Instant::now();
    // Windows [0, 1 s) .. [8 s, 9 s) close on the watermark of 9.99 s; the last stays open.
    while window_counts(&counts).len() < 9 && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    job.cancel();
    let _ = job.wait();
    let mut got = window_counts(&counts);
    got.sort();
    let want: Vec<(u8, i64, u64)> = (0..9).map(|w| (0, w * 1_000, 100)).collect();
    assert_eq!(got, want);
}

/// Per-partition watermarks: a partition behind the other holds the subtask's watermark
/// back (its minimum), where one watermark over the subtask's interleaved records would run
/// ahead with the faster partition and drop the slow one's records as late.
#[test]
fn a_slow_partition_holds_back_the_watermark_of_its_subtask() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&config(&broker), "two-speeds", 2).unwrap();
    // A key for each partition (Kafka's murmur2 of the key picks it).
    let key_for = |p: usize| {
        (0..100)
            .map(|i| format!("k{i}"))
            .find(|k| Partitioner::KeyHash.partition(Some(k.as_bytes()), 2, 0, 0) == p)
            .unwrap()
    };
    let (fast, slow) = (key_for(0), key_for(1));
    // Partition 0: event times 0..10 s; partition 1: 0..2 s.
    let mut lines: Vec<(String, i64)> = (0..1_000i64).map(|i| (fast.clone(), i * 10)).collect();
    lines.extend((0..200i64).map(|i| (slow.clone(), i * 10)));
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1);
    env.from_collection(lines).add_sink(
        KafkaSink::builder()
            .bootstrap_servers(&broker.address)
            .topic("two-speeds")
            .serializer(
                |(k, t): &(String, i64)| hummer::connectors::kafka::ProducerRecord {
                    key: Some(k.clone().into_bytes()),
                    value: Some(t.to_string().into_bytes()),
                },
            )
            .build::<(String, i64)>()
            .unwrap(),
    );
    env.execute("two speeds").unwrap();

    let counts = Shared::<WindowResult<u8, u64>>::default();
    let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
        .with_timestamp_assigner(|s: &String, _| s.parse().unwrap_or(0));
    let job = count_one_second_windows(&broker, "two-speeds", strategy, &counts);
    let started = Instant::now();
    while window_counts(&counts).is_empty() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Everything is read within moments; give the watermark time to run ahead if it would.
    std::thread::sleep(Duration::from_millis(1_500));
    job.cancel();
    let _ = job.wait();
    let mut got = window_counts(&counts);
    got.sort();
    // The watermark is the slow partition's, 1.99 s: only [0, 1 s) has closed, with the
    // records of both partitions.
    assert_eq!(got, vec![(0, 0, 200)]);
}
